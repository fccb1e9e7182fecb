"""Every op of the graph op table: its te builder (run by the reference evaluator autosched.evaluate, and for
some ops built with the default schedule) equals its numpy reference, on small awkward shapes (prime sizes,
size 1, strides, groups, padding, broadcasting, ceil mode). Also Graph.evaluate's argument checks."""
import numpy as np
import pytest

import autosched as ans
from autosched import _core, te
from autosched.graph import Graph, GraphError, op_table

from graph_cases import CASES, one_node_graph, random_inputs

RNG = np.random.default_rng(3)


def te_dag(g):
    placeholders = [te.placeholder(g.shape(v), g.dtype(v), name=v) for v in g.inputs]
    node = g.nodes[0]
    out = op_table.te_builder(node.op)(node, *placeholders)
    assert tuple(out.shape) == node.shape and out.dtype == node.dtype
    return ans.ComputeDAG(placeholders + [out])


def check_op(op, shapes, attrs=None, dtype="float32"):
    g = one_node_graph(op, shapes, attrs, dtype)
    arrays = random_inputs(op, shapes, dtype)
    (want,) = g.evaluate(*arrays)
    assert want.shape == g.nodes[0].shape and want.dtype == np.dtype(g.nodes[0].dtype)
    dag = te_dag(g)
    (got,) = ans.evaluate(dag, arrays)
    tol = 1e-5 if want.dtype == np.float32 else 2e-3
    # Winograd's F(4x4, 3x3) scales values by up to 25 in its transforms before sums that cancel: its float32
    # error is a fraction of the output's largest magnitude, not of each element.
    atol = tol * float(np.abs(want).max()) if op == "conv2d_winograd_nchwc" else tol
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=atol)
    return dag, arrays, want


@pytest.mark.parametrize("op, shapes, attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_te_builder_matches_numpy_reference(op, shapes, attrs):
    check_op(op, shapes, attrs)


def test_every_op_is_covered():
    tested = {c[0] for c in CASES}
    assert tested == set(op_table.OPS) - {"unsupported"}
    for op in tested:
        assert callable(op_table.reference(op)) and callable(op_table.te_builder(op))
    with pytest.raises(op_table.OpError, match="no te builder"):
        op_table.te_builder("unsupported")


def test_numpy_reference_of_ops_by_hand():
    """A few references against values worked out independently of reference.py."""
    g = one_node_graph("avg_pool2d", [(1, 1, 3, 3)], dict(kernel=2, strides=2, ceil_mode=True))
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    np.testing.assert_allclose(g.evaluate(x)[0][0, 0], [[2.0, 3.5], [6.5, 8.0]])
    g = one_node_graph("avg_pool2d", [(1, 1, 3, 3)], dict(kernel=2, strides=2, pads=1, count_include_pad=True))
    np.testing.assert_allclose(g.evaluate(x)[0][0, 0], [[0.0, 0.75], [2.25, 6.0]])
    w = np.array([2, 3], np.float32).reshape(2, 1, 1, 1)
    x = np.ones((1, 2, 2, 2), np.float32)
    g2 = Graph()
    y = g2.add_node("conv2d", [g2.add_input("x", (1, 2, 2, 2)), g2.add_constant("w", w)], attrs=dict(groups=2))
    g2.set_outputs([y])
    np.testing.assert_allclose(g2.evaluate(x)[0][0, :, 0, 0], [2.0, 3.0])


BUILT = [
    ("conv2d", [(1, 4, 9, 9), (6, 2, 3, 3), (6,)], dict(groups=2, strides=2, pads=1)),
    ("conv2d", [(1, 5, 7, 7), (5, 1, 3, 3)], dict(groups=5, pads=1)),
    ("dense", [(2, 3, 7), (5, 7), (5,)], {}),
    ("matmul", [(2, 1, 3, 5), (3, 5, 4)], {}),
    ("avg_pool2d", [(1, 2, 8, 9)], dict(kernel=3, strides=2, pads=1, ceil_mode=True)),
    ("batch_norm", [(2, 3, 4, 5)] + [(3,)] * 4, {}),
    ("softmax", [(3, 5)], {}),
    ("layer_norm", [(2, 3, 5), (5,), (5,)], {}),
    ("gelu", [(3, 7)], dict(approximate="tanh")),
    ("clip", [(3, 7)], dict(min=0.0)),
    ("strided_slice", [(5, 7, 11)], dict(begin=(-4, 1), end=(100, -1), strides=(2, 3), axes=(0, -1))),
    ("take", [(5, 7), (2, 3)], dict(axis=0)),
    ("where", [(3, 1, 5), (4, 1), (5,)], {}),
    ("isnan", [(3, 7)], {}),
    ("isinf", [(2, 1, 5)], {}),
    ("greater_equal", [(2, 3, 5), (5,)], {}),
    ("logical_xor", [(1, 7), (3, 1)], {}),
    ("expand", [(2, 1, 5)], dict(shape=(7, 1))),
    ("gather_elements", [(3, 7, 4), (2, 3, 4)], dict(axis=-2)),
    ("cumsum", [(4, 3)], dict(axis=0, exclusive=True, reverse=True)),
    ("group_norm", [(2, 6, 5, 3), (6,), (6,)], dict(num_groups=3)),
    ("mish", [(3, 7)], {}),
]


@pytest.mark.skipif(not _core.has_llvm(), reason="built without the LLVM backend")
@pytest.mark.parametrize("op, shapes, attrs", BUILT, ids=[f"{c[0]}-{i}" for i, c in enumerate(BUILT)])
def test_te_builder_builds_with_the_default_schedule(op, shapes, attrs):
    dag, arrays, want = check_op(op, shapes, attrs)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    mod = ans.build(task)
    out = np.zeros(want.shape, want.dtype)
    mod(*arrays, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_evaluate_checks_its_arguments():
    g = Graph("g")
    a = g.add_input("a", (2, 3))
    b = g.add_input("b", (3,))
    g.set_outputs([g.add_node("add", [a, b], name="s")])
    x, y = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    np.testing.assert_allclose(g.evaluate(x, y)[0], 2 * x)
    np.testing.assert_allclose(g.evaluate(x, b=y)[0], 2 * x)
    np.testing.assert_allclose(g.evaluate(b=y, a=x)[0], 2 * x)
    with pytest.raises(GraphError, match="missing input b"):
        g.evaluate(x)
    with pytest.raises(GraphError, match="has 2 inputs, got 3"):
        g.evaluate(x, y, y)
    with pytest.raises(GraphError, match="no input 'c'"):
        g.evaluate(x, y, c=y)
    with pytest.raises(GraphError, match="given twice"):
        g.evaluate(x, y, a=x)
    with pytest.raises(GraphError, match="must have shape \\(3,\\)"):
        g.evaluate(x, x)
    with pytest.raises(TypeError, match="dtype float32, got float64"):
        g.evaluate(x, y.astype(np.float64))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        g.evaluate(x, [1.0, 1.0, 1.0])


def test_evaluate_refuses_graphs_with_problems():
    g = Graph("dyn")
    x = g.add_input("x", ("n", 3))
    g.set_outputs([g.add_node("relu", [x], name="r")])
    with pytest.raises(GraphError, match="r \\(relu\\): input 'x' has the dynamic dim 'n'"):
        g.evaluate(np.ones((2, 3), np.float32))
    np.testing.assert_allclose(g.bind(n=2).evaluate(np.ones((2, 3), np.float32))[0], 1.0)
    h = Graph("u")
    h.set_outputs([h.add_unsupported("Loop", [h.add_input("x", (2,))], name="loop", shape=(2,), dtype="float32")])
    with pytest.raises(GraphError, match="loop \\(unsupported\\): unsupported op 'Loop'"):
        h.evaluate(np.ones(2, np.float32))
    with pytest.raises(GraphError, match="no outputs"):
        e = Graph("empty")
        e.add_node("relu", [e.add_input("x", (2,))])
        e.evaluate(np.ones(2, np.float32))


def test_shared_values_and_repeated_inputs():
    g = Graph()
    x = g.add_input("x", (2, 3))
    s = g.add_node("multiply", [x, x], name="sq")
    t = g.add_node("add", [s, x], name="t")
    g.set_outputs([t, s])
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    out_t, out_s = g.evaluate(a)
    np.testing.assert_allclose(out_t, a * a + a, rtol=1e-6)
    np.testing.assert_allclose(out_s, a * a, rtol=1e-6)
