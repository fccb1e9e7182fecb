"""The quantized graph ops (graph/ops/quant.py) and the round_even intrinsic under them: each op's te compute
equals its numpy reference exactly, through the reference evaluator and compiled for llvm, on the dtype mixes
ONNX allows (uint8 / int8 operands, negative zero points, per-row and per-column zero points, per-channel scales,
batch broadcasting, K not a multiple of 4, sizes 1 and primes); round_even rounds halves to even in both code
generators; the integer ops keep their product a plain int32(a) * int32(b) reduction, fuse with their
requantization, and compute a constant weight's sums once; PyTorch runs the ops alike; bad inputs are refused
by name. (graph_cases.py holds the ops' cases that every op's tests run: test_graph_ops, test_graph_onnx.)"""
import numpy as np
import pytest

import autosched as ans
from autosched import te
from autosched.graph import Graph, GraphError, fusion, op_table

pytestmark = pytest.mark.needs_llvm

RNG = np.random.default_rng(29)

# Halves of both signs, values around them, large values (2^23 + 0.5 is no float32: 8388607.5 is the largest
# half), zeros, infinities.
ROUNDING = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, 2.5000002, -3.5000002, 8388607.5, -8388606.5, 1048577.5,
            -1e10, 1e30, 0.0, -0.0, np.inf, -np.inf, 3.5, 4.5, -7.25, 0.49999997]


def _round_even_dag(n, dtype):
    x = te.placeholder((n,), dtype, "x")
    return ans.ComputeDAG([x, te.compute((n,), lambda i: te.round_even(x[i]), name="y")])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lanes", [1, 8], ids=["scalar", "vector"])
def test_round_even_rounds_halves_to_even_on_llvm(dtype, lanes):
    x = np.array(ROUNDING * 2, dtype)[:40]
    dag = _round_even_dag(len(x), dtype)
    state = dag.get_init_state()
    if lanes > 1:
        _, inner = state.split("y", state["y"].iters[-1], [lanes])
        state.vectorize("y", inner)
    out = np.zeros_like(x)
    module = ans.build(dag, state, "llvm")
    module(x, out)
    np.testing.assert_array_equal(out, np.round(x))  # numpy rounds halves to even
    np.testing.assert_array_equal(np.signbit(out), np.signbit(np.round(x)))
    np.testing.assert_array_equal(ans.evaluate(dag, [x])[0], np.round(x))
    if lanes > 1 and dtype == "float32":
        assert "llvm.roundeven.v8f32" in module.get_source("ll")


def test_round_even_on_opencl():
    if not ans.opencl.available():
        pytest.skip("no OpenCL platform on this machine (install pocl-opencl-icd)")
    x = np.array(ROUNDING, np.float32)
    dag = _round_even_dag(len(x), "float32")
    module = ans.build(dag, target="opencl")
    assert "rint(" in module.get_source()
    out = np.zeros_like(x)
    module(x, out)
    np.testing.assert_array_equal(out, np.round(x))


def test_round_even_needs_a_float():
    with pytest.raises(TypeError, match="round_even needs a float argument, got int32"):
        te.round_even(te.const(3, "int32"))


# ---------------- every op's te against its numpy reference ----------------


def _ints(dtype, shape, low=None, high=None):
    info = np.iinfo(dtype)
    return RNG.integers(info.min if low is None else low, (info.max if high is None else high) + 1,
                        shape).astype(dtype)


def _scales(shape):
    return RNG.uniform(0.01, 0.1, shape).astype(np.float32)


# (op, input arrays, attrs): the dtype mixes graph_cases.py leaves out.
CASES = [
    ("quantize_linear", [RNG.standard_normal((2, 5, 3)).astype(np.float32) * 6, _scales((5,)),
                         _ints("int8", (5,))], dict(axis=1)),
    ("quantize_linear", [np.float32([[0.5, 1.5, -2.5, 300.0], [np.nan, np.inf, -np.inf, -0.5]]), np.float32(1.0),
                         np.int8(-1)], {}),
    ("quantize_linear", [RNG.standard_normal((3, 7)).astype(np.float32) * 10000, np.float32([0.5]),
                         np.int16(-300)], {}),
    ("dequantize_linear", [_ints("uint8", (4, 3, 2)), _scales((3,)), _ints("uint8", (3,))], dict(axis=-2)),
    ("dequantize_linear", [_ints("int32", (6,), -2 ** 30, 2 ** 30), np.float32(1e-4)], {}),
    ("requantize", [_ints("int32", (3, 11), -20000, 20000), np.float32(0.01), np.uint8(128),
                    _ints("int32", (1,), -100, 100)], {}),
    ("requantize", [_ints("int32", (2, 4, 1, 3), -2 ** 31, 2 ** 31 - 1), _scales((4,)), np.int8(-20),
                    _ints("int32", (4,), -2 ** 31, 2 ** 31 - 1)], dict(axis=1)),  # int32 sums wrap
    ("matmul_integer", [_ints("int8", (7, 13)), _ints("uint8", (13, 3)), np.int8([-3]), _ints("uint8", (3,))],
     dict(zero_points=("a", "b"))),
    ("matmul_integer", [_ints("uint8", (3, 1, 5, 37)), _ints("int8", (2, 37, 1)), _ints("uint8", (5,)),
                        np.int8(7)], dict(zero_points=("a", "b"))),  # per-row a zero points, a batch of 3 x 2
    ("matmul_integer", [_ints("int8", (1, 1)), _ints("int8", (1, 1)), np.int8(-128)], dict(zero_points="b")),
    ("conv2d_integer", [_ints("int8", (2, 5, 7, 6)), _ints("uint8", (3, 5, 2, 3)), np.int8(-9), _ints("uint8", (3,))],
     dict(strides=(1, 2), pads=(0, 2, 1, 1), zero_points=("x", "w"))),
    ("conv2d_integer", [_ints("uint8", (1, 6, 5, 5)), _ints("int8", (4, 3, 1, 1)), _ints("int8", (4,))],
     dict(groups=2, zero_points="w")),
    ("conv2d_integer", [_ints("uint8", (1, 1, 1, 1)), _ints("int8", (1, 1, 1, 1))], {}),
]


def _one_node(op, arrays, attrs):
    g = Graph(op)
    names = [g.add_input(f"in{i}", a.shape, a.dtype) for i, a in enumerate(arrays)]
    g.set_outputs([g.add_node(op, names, attrs=attrs, name="out")])
    return g


@pytest.mark.parametrize("op, arrays, attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_te_equals_the_numpy_reference(op, arrays, attrs):
    arrays = [np.asarray(a) for a in arrays]
    g = _one_node(op, arrays, attrs)
    (want,) = g.evaluate(*arrays)
    node = g.nodes[0]
    placeholders = [te.placeholder(a.shape, a.dtype, name=f"in{i}") for i, a in enumerate(arrays)]
    out = op_table.te_builder(op)(node, *placeholders)
    assert tuple(out.shape) == node.shape and out.dtype == node.dtype == want.dtype
    dag = ans.ComputeDAG(placeholders + [out])
    np.testing.assert_array_equal(ans.evaluate(dag, arrays)[0], want)
    got = np.zeros(want.shape, want.dtype)
    ans.build(ans.SearchTask(compute_dag=dag, target="llvm"))(*arrays, got)
    np.testing.assert_array_equal(got, want)


def test_the_references_by_hand():
    """Values worked out by hand: halves to even, saturation, NaN to the lowest value, zero points."""
    g = _one_node("quantize_linear", [np.zeros(6, np.float32), np.float32(0.5), np.uint8(10)], {})
    x = np.float32([0.25, 0.75, -1.25, 200.0, -200.0, np.nan])
    np.testing.assert_array_equal(g.evaluate(x, np.asarray(np.float32(0.5)), np.asarray(np.uint8(10)))[0],
                                  [10, 12, 8, 255, 0, 0])
    acc = np.int32([[5, -5], [15, 1000]])
    g = _one_node("requantize", [acc, np.float32([0.1, 0.1]), np.int8(1), np.int32([0, 0])], dict(axis=1))
    np.testing.assert_array_equal(g.evaluate(acc, np.float32([0.1, 0.1]), np.asarray(np.int8(1)), np.int32([0, 0]))[0],
                                  [[1, 1], [3, 101]])  # 0.5 -> 0, -0.5 -> -0, 1.5 -> 2
    a, b = np.uint8([[1, 2]]), np.int8([[3], [4]])
    g = _one_node("matmul_integer", [a, b, np.uint8(1), np.int8(-1)], dict(zero_points=("a", "b")))
    np.testing.assert_array_equal(g.evaluate(a, b, np.asarray(np.uint8(1)), np.asarray(np.int8(-1)))[0],
                                  [[0 * 4 + 1 * 5]])


# ---------------- the integer ops in a graph: fusion, the plain product, constant sums ----------------


def _quantized_conv_graph(x_zero_point=131):
    g = Graph("qconv")
    x = g.add_input("x", (1, 5, 9, 7), "uint8")
    w = g.add_constant("w", _ints("int8", (11, 5, 3, 3), -64, 63))
    zp = g.add_constant("x_zp", np.uint8(x_zero_point))
    conv = g.add_node("conv2d_integer", [x, w, zp], dict(pads=1, zero_points="x"), name="conv")
    q = g.add_node("requantize", [conv, g.add_constant("m", _scales((11,)) / 50), g.add_constant("y_zp", np.uint8(3)),
                                  g.add_constant("bias", _ints("int32", (11,), -999, 999))], dict(axis=1), name="rq")
    g.set_outputs([q])
    return g


def test_an_integer_convolution_fuses_with_its_requantization():
    g = _quantized_conv_graph()
    assert [[n.name for n in grp.nodes] for grp in fusion.partition(g)] == [["conv", "rq"]]
    net = ans.graph.build(g, "llvm", verbose=False, layout="NCHW")  # the blocked form: test_quantized_layout.py
    (info,) = net.groups
    assert info.prepacked == ["conv_wsum"]  # the weight's sums: computed once, from the constant
    x = _ints("uint8", (1, 5, 9, 7))
    np.testing.assert_array_equal(net(x)[0], g.evaluate(x)[0])


def test_the_product_stage_is_a_plain_integer_reduction():
    """sum(int32(x) * int32(w)) of the raw values: the zero points are separate terms, so a code generator can
    map the product onto dot-product instructions."""
    g = _quantized_conv_graph()
    (task,), _ = ans.extract_tasks(g, "llvm", layout="NCHW")
    text = str(task.compute_dag)
    product = next(line for line in text.splitlines() if line.startswith("conv_product("))
    assert "+= (int32(conv_pad[" in product and "*int32(w[" in product and "x_zp" not in product
    assert "(int32(x_zp[])*conv_wsum[ff])" in text


def test_a_zero_point_of_zero_costs_nothing():
    g = Graph("mm")
    a = g.add_input("a", (4, 16), "uint8")
    g.set_outputs([g.add_node("matmul_integer", [a, g.add_constant("b", _ints("int8", (16, 8)))], name="mm")])
    (task,), _ = ans.extract_tasks(g, "llvm")
    assert "colsum" not in str(task.compute_dag) and "rowsum" not in str(task.compute_dag)


def test_torch_runs_the_quantized_ops_alike():
    pytest.importorskip("torch")
    from autosched.graph.torch_runner import TorchGraph
    g = _quantized_conv_graph()
    deq = g.add_node("dequantize_linear", [g.outputs[0], g.add_constant("s", np.float32(0.1)),
                                           g.add_constant("z", np.uint8(3))], name="deq")
    q = g.add_node("quantize_linear", [deq, g.add_constant("s2", np.float32(0.07)), g.add_constant("z2", np.int8(-4))],
                   name="q")
    b = g.add_constant("b", _ints("int8", (7, 5)))
    mm = g.add_node("matmul_integer", [q, b, g.add_constant("z3", np.int8(-4))], dict(zero_points="a"), name="mm")
    g.set_outputs([mm])
    x = _ints("uint8", (1, 5, 9, 7))
    np.testing.assert_array_equal(TorchGraph(g)(x)[0], g.evaluate(x)[0])


@pytest.mark.parametrize("op, arrays, attrs, message", [
    ("quantize_linear", [np.zeros(3, np.float16), np.float32(1), np.uint8(0)], {}, "x has dtype float16"),
    ("quantize_linear", [np.zeros((2, 3), np.float32), np.ones(2, np.float32), np.uint8(0)], dict(axis=1),
     r"scale has 2 values, but axis 1 of the input \(2, 3\) has 3"),
    ("quantize_linear", [np.zeros(3, np.float32), np.float32(1), np.float32(0)], {}, "zero_point has dtype float32"),
    ("dequantize_linear", [np.zeros(3, np.uint8), np.float32(1), np.int8(0)], {}, "zero_point has dtype int8, x has "
                                                                                   "uint8"),
    ("requantize", [np.zeros(3, np.int32), np.float32(1), np.uint8(0), np.zeros(3, np.int8)], dict(axis=0),
     "bias has dtype int8"),
    ("matmul_integer", [np.zeros((2, 3), np.uint8), np.zeros((4, 5), np.int8)], {}, "inner dimensions differ"),
    ("matmul_integer", [np.zeros((2, 3), np.uint8), np.zeros((3, 5), np.int8), np.int8(0)], dict(zero_points="a"),
     "a's zero point has dtype int8, its operand uint8"),
    ("matmul_integer", [np.zeros((2, 3), np.uint8), np.zeros((3, 5), np.int8), np.zeros(4, np.int8)],
     dict(zero_points="b"), r"b's zero point must be a scalar or one value per column of b \(5\)"),
    ("matmul_integer", [np.zeros((2, 3), np.uint8), np.zeros((3, 5), np.int8)], dict(zero_points="c"),
     "zero_points must name operands among"),
    ("matmul_integer", [np.zeros((2, 3), np.float32), np.zeros((3, 5), np.int8)], {}, "a has dtype float32"),
    ("conv2d_integer", [np.zeros((1, 4, 5, 5), np.uint8), np.zeros((2, 4, 3, 3), np.int8), np.zeros(2, np.uint8)],
     dict(zero_points="x"), r"x's zero point must be a scalar, got shape \(2,\)"),
    ("conv2d_integer", [np.zeros((1, 4, 5, 5), np.uint8), np.zeros((2, 4, 3, 3), np.int8), np.uint8(0)], {},
     r"takes 2 inputs with zero_points=\(\), got 3"),
    # the layout pass's blocked form (graph/ops/quant_blocked.py)
    ("conv2d_integer_nchwc", [np.zeros((1, 2, 5, 5, 8), np.uint8), np.zeros((1, 2, 3, 3, 2, 8, 4), np.uint8)],
     dict(channels=16, out_channels=8), "one uint8 and one int8"),
    ("conv2d_integer_nchwc", [np.zeros((1, 2, 5, 5, 8), np.uint8), np.zeros((1, 1, 3, 3, 2, 8, 4), np.int8)],
     dict(channels=16, out_channels=8), "does not match x"),
    ("conv2d_integer_nchwc", [np.zeros((1, 2, 5, 5, 8), np.uint8), np.zeros((1, 2, 3, 3, 2, 8, 4), np.int8)],
     dict(channels=7, out_channels=8), "channels=7 does not fill the 2 blocks of 8"),
    ("conv2d_integer_nchwc", [np.zeros((1, 2, 5, 5, 8), np.uint8), np.zeros((1, 2, 3, 3, 2, 8, 4), np.int8)],
     dict(channels=16, out_channels=9), "out_channels=9 does not fill the 1 blocks of 8"),
])
def test_bad_inputs_are_refused_by_name(op, arrays, attrs, message):
    with pytest.raises(GraphError, match=message):
        _one_node(op, [np.asarray(a) for a in arrays], attrs)
