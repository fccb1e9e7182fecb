"""from_onnx of the ops transformers and mobile nets need (comparisons, logic, Where, Expand, Split,
GatherElements, CumSum, HardSigmoid / HardSwish, Mish, InstanceNormalization, GroupNormalization, 1-D Conv):
each model is built with onnx.helper, imported, compiled untuned with graph.build and compared with
onnxruntime on awkward shapes (broadcasting, negative axes, size-1 and prime dims, uneven splits). Nodes on
constants only fold at import, whatever their op, and shape arithmetic over bound inputs folds into Reshape
and Expand targets."""
import numpy as np
import pytest

from autosched import frontends
from autosched.graph import build
from import_checks import check_onnx_import, onnx_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(7)


_model = onnx_model
_check = check_onnx_import


def _ints(shape):
    return RNG.integers(-2, 3, size=shape).astype(np.float32)  # small ints: ties are frequent


@pytest.mark.parametrize("op", ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"])
@pytest.mark.parametrize("a_shape, b_shape", [((3, 1, 5), (4, 1)), ((), (2, 3)), ((7,), (7,))])
def test_comparisons_broadcast_to_bool(op, a_shape, b_shape):
    a, b = _ints(a_shape), _ints(b_shape)
    _check(_model([helper.make_node(op, ["a", "b"], ["y"])], [("a", a), ("b", b)], ["y"]), {"a": a, "b": b})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic_on_bools(op):
    a, b = RNG.integers(0, 2, (3, 1, 5)).astype(bool), RNG.integers(0, 2, (4, 1)).astype(bool)
    nodes = [helper.make_node(op, ["a", "b"], ["t"]), helper.make_node("Not", ["t"], ["y"])]
    _check(_model(nodes, [("a", a), ("b", b)], ["y", "t"]), {"a": a, "b": b})


def test_isnan_isinf_and_where_pick_special_values():
    x = RNG.standard_normal((2, 3, 7)).astype(np.float32)
    x.reshape(-1)[::4] = np.nan
    x.reshape(-1)[1::5] = np.inf
    x.reshape(-1)[2::6] = -np.inf
    zero = np.zeros((1, 7), np.float32)
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"]), helper.make_node("IsInf", ["x"], ["inf"]),
             helper.make_node("IsInf", ["x"], ["neg"], detect_positive=0),
             helper.make_node("Or", ["nan", "inf"], ["bad"]),
             helper.make_node("Where", ["bad", "zero", "x"], ["y"])]
    _check(_model(nodes, [("x", x)], ["y", "neg"], [("zero", zero)]), {"x": x})


@pytest.mark.parametrize("c_shape, x_shape, y_shape", [((3, 1, 5), (4, 1), (5,)), ((), (2, 3), ()),
                                                       ((7, 1), (1,), (1, 3))])
def test_where_broadcasts_all_three_inputs(c_shape, x_shape, y_shape):
    c = RNG.integers(0, 2, c_shape).astype(bool)
    x, y = RNG.standard_normal(x_shape).astype(np.float32), RNG.standard_normal(y_shape).astype(np.float32)
    model = _model([helper.make_node("Where", ["c", "x", "y"], ["out"])], [("c", c), ("x", x), ("y", y)], ["out"])
    _check(model, {"c": c, "x": x, "y": y})


@pytest.mark.parametrize("x_shape, target", [((3, 1), (2, 3, 5)), ((2, 1, 5), (7, 1)), ((1, 5), (5,)),
                                             ((3, 1), (1, 1))])
def test_expand_broadcasts_to_the_target(x_shape, target):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    model = _model([helper.make_node("Expand", ["x", "shape"], ["y"])], [("x", x)], ["y"],
                   [("shape", np.asarray(target, np.int64))])
    _check(model, {"x": x})


@pytest.mark.parametrize("axis, split, outputs, opset, attrs", [
    (1, [2, 3, 2], 3, 17, {}),                 # the split input
    (-1, None, 3, 18, {"num_outputs": 3}),     # 7 into 3: 3, 3, 1
    (0, None, 2, 17, {}),                      # equal pieces
    (1, [7], 1, 17, {}),                       # one piece: the input itself
])
def test_split_gives_every_output(axis, split, outputs, opset, attrs):
    x = RNG.standard_normal((4, 7)).astype(np.float32)
    inputs = ["x"] + (["split"] if split is not None else [])
    names = [f"y{k}" for k in range(outputs)]
    nodes = [helper.make_node("Split", inputs, names, axis=axis, **attrs)]
    nodes += [helper.make_node("Relu", [n], [n + "_r"]) for n in names]
    inits = [("split", np.asarray(split, np.int64))] if split is not None else []
    _check(_model(nodes, [("x", x)], [n + "_r" for n in names], inits, opset=opset), {"x": x})


def test_split_with_an_empty_piece_imports_the_others():
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    nodes = [helper.make_node("Split", ["x", "split"], ["a", "empty", "b"], axis=1)]
    model = _model(nodes, [("x", x)], ["a", "b"], [("split", np.asarray([2, 0, 3], np.int64))])
    _check(model, {"x": x})


@pytest.mark.parametrize("data_shape, index_shape, axis", [((5, 7), (5, 7), 0), ((3, 7, 4), (2, 3, 4), -2),
                                                           ((3, 5), (1, 2), 1)])
def test_gather_elements_with_negative_indices(data_shape, index_shape, axis):
    data = RNG.standard_normal(data_shape).astype(np.float32)
    extent = data_shape[axis]
    idx = RNG.integers(-extent, extent, index_shape).astype(np.int64)
    model = _model([helper.make_node("GatherElements", ["data", "idx"], ["y"], axis=axis)],
                   [("data", data), ("idx", idx)], ["y"])
    _check(model, {"data": data, "idx": idx})


@pytest.mark.parametrize("axis, exclusive, reverse", [(1, 0, 0), (0, 1, 0), (-1, 0, 1), (0, 1, 1)])
def test_cumsum(axis, exclusive, reverse):
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    model = _model([helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
                   [("x", x)], ["y"], [("axis", np.asarray(axis, np.int64))])
    _check(model, {"x": x})


@pytest.mark.parametrize("node", [helper.make_node("HardSigmoid", ["x"], ["y"]),
                                  helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4),
                                  helper.make_node("HardSwish", ["x"], ["y"]),
                                  helper.make_node("Mish", ["x"], ["y"])])
def test_activations(node):
    x = (RNG.standard_normal((3, 11)) * 4).astype(np.float32)
    _check(_model([node], [("x", x)], ["y"], opset=18), {"x": x})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_opset_20_in_both_forms(approximate):
    x = (RNG.standard_normal((3, 11)) * 3).astype(np.float32)
    node = helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)
    _check(_model([node], [("x", x)], ["y"], opset=20), {"x": x})


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 5, 11)])
def test_instance_normalization(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    scale, bias = RNG.standard_normal(shape[1]).astype(np.float32), RNG.standard_normal(shape[1]).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)
    _check(_model([node], [("x", x)], ["y"], [("s", scale), ("b", bias)]), {"x": x}, tol=1e-4)


@pytest.mark.parametrize("opset, per", [(18, "group"), (21, "channel")])
def test_group_normalization(opset, per):
    x = RNG.standard_normal((2, 6, 5, 3)).astype(np.float32)
    n = 3 if per == "group" else 6
    scale, bias = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-4)
    _check(_model([node], [("x", x)], ["y"], [("s", scale), ("b", bias)], opset=opset), {"x": x}, tol=1e-4)


@pytest.mark.parametrize("attrs, w_shape", [(dict(pads=[1, 2], strides=[2]), (4, 3, 3)),
                                            (dict(dilations=[2], group=3), (6, 1, 3)),
                                            (dict(auto_pad="SAME_UPPER"), (5, 3, 4))])
def test_conv_1d_runs_as_a_2d_conv(attrs, w_shape):
    x = RNG.standard_normal((2, 3, 13)).astype(np.float32)
    w, b = RNG.standard_normal(w_shape).astype(np.float32), RNG.standard_normal(w_shape[0]).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[w_shape[2]], **attrs)
    graph = _check(_model([node], [("x", x)], ["y"], [("w", w), ("b", b)]), {"x": x}, tol=1e-4)
    # x gets its unit height, the weight is reshaped in numpy, the output drops the height again
    assert [n.op for n in graph.nodes] == ["reshape", "conv2d", "reshape"]


def test_any_node_on_constants_folds_at_import():
    """GatherElements, And, GreaterOrEqual and Where over constants (BERT's and T5's masks) become constants,
    not tasks; only the Add on the input is a node."""
    data = RNG.standard_normal((3, 4)).astype(np.float32)
    idx = RNG.integers(-4, 4, (3, 4)).astype(np.int64)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("GatherElements", ["data", "idx"], ["g"], axis=1),
             helper.make_node("GreaterOrEqual", ["g", "zero"], ["ge"]),
             helper.make_node("And", ["ge", "yes"], ["both"]),
             helper.make_node("Where", ["both", "g", "zero"], ["w"]),
             helper.make_node("HardSwish", ["w"], ["hs"]),
             helper.make_node("Add", ["x", "hs"], ["y"])]
    inits = [("data", data), ("idx", idx), ("zero", np.zeros((), np.float32)), ("yes", np.ones((1, 4), bool))]
    graph = _check(_model(nodes, [("x", x)], ["y"], inits), {"x": x})
    assert [n.op for n in graph.nodes] == ["add"]


def test_shape_chains_fold_into_reshape_and_expand_when_inputs_are_bound():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, and Shape -> ConstantOfShape -> Equal -> Where ->
    Expand (torch's export of expand(-1, ...)), with the batch dim dynamic in the model and bound at import."""
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    m = RNG.standard_normal((1, 1, 4)).astype(np.float32)
    i64 = lambda v: np.asarray(v, np.int64)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
             helper.make_node("Unsqueeze", ["batch", "axes"], ["b1"]),
             helper.make_node("Concat", ["b1", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["flat"]),
             helper.make_node("Equal", ["want", "minus_ones"], ["keep"]),
             helper.make_node("Where", ["keep", "s", "want"], ["expand_to"]),
             helper.make_node("Expand", ["m", "expand_to"], ["mb"]),
             helper.make_node("Add", ["x", "mb"], ["sum"])]
    inits = [("zero", i64(0)), ("axes", i64([0])), ("minus_one", i64([-1])), ("want", i64([-1, 3, -1])),
             ("minus_ones", i64([-1, -1, -1])), ("m", m)]
    vi = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3, 4])
    out = [onnx.ValueInfoProto(name=n) for n in ("flat", "sum")]
    model = helper.make_model(helper.make_graph(nodes, "m", [vi], out, [numpy_helper.from_array(a, n)
                                                                        for n, a in inits]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    graph = frontends.from_onnx(model, shape_dict={"batch": 2})
    assert not graph.problems()
    assert {n.op for n in graph.nodes} <= {"reshape", "expand", "add"}
    got = build(graph, "llvm", verbose=False)(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
