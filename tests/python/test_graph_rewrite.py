"""expand_small_powers (graph/rewrite.py): a power whose exponent is a constant scalar 2, 3 or 4 becomes
multiplies of its base, so GPT-2's tanh GELU compiles without a powf call per element; other exponents (2.5, a
tensor of exponents, a variable one) stay powers. The rewritten graph and its build equal the original."""
import numpy as np
import pytest

import autosched as ans
from autosched.graph import Graph
from autosched.graph.extract import extract_tasks
from autosched.graph.rewrite import expand_small_powers

RNG = np.random.default_rng(3)


def _gelu_tanh(exponent, shape=(3, 17)):
    """GPT-2's gelu_new, x ** `exponent` where it has x ** 3, as importers write it (Pow on a constant)."""
    g = Graph("gelu")
    x = g.add_input("x", shape)
    c = lambda name, v: g.add_constant(name, np.asarray(v, np.float32))  # noqa: E731
    cube = g.add_node("power", [x, c("three", exponent)], name="cube")
    inner = g.add_node("multiply", [g.add_node("add", [x, g.add_node("multiply", [cube, c("k", 0.044715)])]),
                                    c("s", np.sqrt(2 / np.pi))])
    t = g.add_node("add", [g.add_node("tanh", [inner]), c("one", 1.0)])
    g.set_outputs([g.add_node("multiply", [g.add_node("multiply", [x, c("half", 0.5)]), t], name="gelu")])
    return g


@pytest.mark.parametrize("exponent", [2.0, 3.0, 4.0, [[3.0]]])
def test_small_constant_exponents_become_multiplies_and_the_build_equals_the_graph(exponent):
    g = _gelu_tanh(exponent)
    rewritten = expand_small_powers(g)
    assert "power" not in [n.op for n in rewritten.nodes]
    assert rewritten.outputs == g.outputs and "cube" in [n.name for n in rewritten.nodes]
    x = RNG.uniform(-4, 4, (3, 17)).astype(np.float32)
    np.testing.assert_allclose(rewritten.evaluate(x)[0], g.evaluate(x)[0], rtol=1e-5, atol=1e-6)
    tasks, _ = extract_tasks(g, "llvm")
    assert all("pow(" not in str(t.compute_dag) for t in tasks)
    net = ans.graph.build(g, "llvm", verbose=False)
    np.testing.assert_allclose(net(x)[0], g.evaluate(x)[0], rtol=1e-5, atol=1e-6)


def test_other_exponents_stay_powers():
    assert expand_small_powers(_gelu_tanh(2.5)).nodes[0].op == "power"
    assert expand_small_powers(_gelu_tanh([3.0] * 17)).nodes[0].op == "power"  # one exponent per column
    g = Graph("variable")
    x, e = g.add_input("x", (4,)), g.add_input("e", (4,))
    g.set_outputs([g.add_node("power", [x, e])])
    assert expand_small_powers(g) is g
