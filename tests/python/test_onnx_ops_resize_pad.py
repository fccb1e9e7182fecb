"""from_onnx of the ops real models still lacked: Pad (constant, reflect, edge; negative pads crop; pads on named
axes), Resize (nearest with each rounding, linear, every coordinate transformation, scales or sizes), Sin /
Cos (on large arguments too), Floor / Ceil / Round (halves to even) / Sign, Softplus / Elu / Selu / LeakyRelu /
PRelu, LogSoftmax, ReduceMin / ReduceProd, ArgMax / ArgMin, Einsum, ConvTranspose (2-D and 1-D) and 1-D
pooling. Each model is built with onnx.helper, imported, compiled untuned with graph.build (several ops per
model, one build each) and compared with onnxruntime on awkward shapes (broadcasting, negative axes, size-1
and prime dims)."""
import numpy as np
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from import_checks import check_onnx_import, onnx_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402

RNG = np.random.default_rng(11)


_model = onnx_model


def _check(model, feeds, tol=1e-5):
    return check_onnx_import(model, feeds, tol, reexport=True)


def _ints(values):
    return np.asarray(values, np.int64)


def test_pad_modes_crop_and_named_axes():
    x = RNG.standard_normal((2, 3, 5, 7)).astype(np.float32)
    pads = _ints([0, 1, 2, -1, 0, 0, -2, 3])  # a crop and a pad on the same axis
    nodes = [helper.make_node("Pad", ["x", "pads", "value"], ["constant"], mode="constant"),
             helper.make_node("Pad", ["x", "pads"], ["reflect"], mode="reflect"),
             helper.make_node("Pad", ["x", "pads"], ["edge"], mode="edge"),
             helper.make_node("Pad", ["x", "axes_pads", "", "axes"], ["named"], mode="reflect")]
    inits = [("pads", pads), ("value", np.asarray(1.5, np.float32)), ("axes_pads", _ints([1, 4, 3, 0])),
             ("axes", _ints([-1, 2]))]
    graph = _check(_model(nodes, [("x", x)], ["constant", "reflect", "edge", "named"], inits), {"x": x})
    assert [n.op for n in graph.nodes] == ["pad"] * 4


@pytest.mark.parametrize("coordinate", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
def test_resize_every_mode_by_scales_and_by_sizes(coordinate):
    x = RNG.standard_normal((1, 2, 5, 7)).astype(np.float32)
    nodes, outputs = [], []
    for mode, nearest in (("linear", "round_prefer_floor"), ("nearest", "round_prefer_floor"),
                          ("nearest", "round_prefer_ceil"), ("nearest", "floor"), ("nearest", "ceil")):
        for by, inputs in (("scales", ["x", "", "scales"]), ("sizes", ["x", "", "", "sizes"])):
            outputs.append(f"{mode}_{nearest}_{by}")
            nodes.append(helper.make_node("Resize", inputs, [outputs[-1]], mode=mode, nearest_mode=nearest,
                                          coordinate_transformation_mode=coordinate))
    # scales 2 and 1.5 (7 -> 10: the given scale, not 10 / 7, maps coordinates); sizes shrink one axis to 1
    inits = [("scales", np.asarray([1, 1, 2.0, 1.5], np.float32)), ("sizes", _ints([1, 2, 1, 11]))]
    _check(_model(nodes, [("x", x)], outputs, inits), {"x": x})


def test_resize_on_named_axes():
    x = RNG.standard_normal((1, 3, 4, 6)).astype(np.float32)
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", axes=[-1, 2])
    graph = _check(_model([node], [("x", x)], ["y"], [("sizes", _ints([9, 3]))]), {"x": x})
    assert graph.shape(graph.outputs[0]) == (1, 3, 3, 9)


def test_elementwise_ops():
    x = (RNG.standard_normal((3, 1, 5)) * 4).astype(np.float32)
    x[0, 0, :] = [0.5, 1.5, -2.5, -0.5, 2.0]  # Round's halves go to the even integer
    ops = ["Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Softplus", "Elu", "Selu", "LeakyRelu", "Reciprocal"]
    nodes = [helper.make_node(op, ["x"], [op]) for op in ops]
    nodes += [helper.make_node("Elu", ["x"], ["elu_alpha"], alpha=0.3),
              helper.make_node("LeakyRelu", ["x"], ["leaky_alpha"], alpha=0.2),
              helper.make_node("PRelu", ["x", "slope"], ["prelu"]),  # the slope broadcasts the size-1 axis
              helper.make_node("Mul", ["x", "big"], ["big_x"]),
              helper.make_node("Sin", ["big_x"], ["sin_big"]), helper.make_node("Cos", ["big_x"], ["cos_big"])]
    inits = [("slope", RNG.standard_normal((7, 1)).astype(np.float32)), ("big", np.asarray(300.0, np.float32))]
    outputs = ops + ["elu_alpha", "leaky_alpha", "prelu", "sin_big", "cos_big"]
    graph = _check(_model(nodes, [("x", x)], outputs, inits), {"x": x}, tol=1e-5)
    assert {"sin", "cos", "round", "softplus", "elu", "prelu"} <= {n.op for n in graph.nodes}


def test_log_softmax_and_reductions():
    x = RNG.integers(-3, 4, size=(2, 7, 1, 5)).astype(np.float32)  # ties: the first or last index is chosen
    nodes = [helper.make_node("LogSoftmax", ["x"], ["log_softmax"], axis=-3),
             helper.make_node("ReduceMin", ["x", "axes"], ["min"], keepdims=0),
             helper.make_node("ReduceProd", ["x", "axis1"], ["prod"], keepdims=1),
             helper.make_node("ArgMax", ["x"], ["argmax"], axis=-1, keepdims=0),
             helper.make_node("ArgMin", ["x"], ["argmin_last"], axis=1, select_last_index=1),
             helper.make_node("ArgMax", ["x"], ["argmax_1"], axis=2)]
    graph = _check(_model(nodes, [("x", x)], ["log_softmax", "min", "prod", "argmax", "argmin_last", "argmax_1"],
                          [("axes", _ints([-1, 1])), ("axis1", _ints([1]))]), {"x": x})
    assert [graph.dtype(v) for v in graph.outputs[3:]] == ["int64"] * 3


@pytest.mark.parametrize("equation, a_shape, b_shape", [
    ("bij,bjk->bik", (2, 3, 5), (2, 5, 7)),
    ("bhqd,bhkd->bhqk", (1, 2, 3, 4), (1, 2, 5, 4)),
    ("bhqk,bhkd->bhqd", (1, 2, 3, 5), (1, 2, 5, 4)),
    ("ij,jk", (3, 5), (5, 2)),            # implicit output
    ("...ij,...jk->...ik", (2, 1, 3, 4), (2, 5, 4, 3)),  # ellipsis with a broadcast batch axis
    ("bi,bj->bij", (3, 4), (3, 5)),       # outer product per batch
    ("ijk,k->ij", (2, 3, 7), (7,)),
    ("bid,bjd->bj", (2, 3, 4), (2, 5, 4)),  # an axis of one operand summed first
])
def test_einsum_lowers_to_matmul(equation, a_shape, b_shape):
    a, b = RNG.standard_normal(a_shape).astype(np.float32), RNG.standard_normal(b_shape).astype(np.float32)
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation)
    _check(_model([node], [("a", a), ("b", b)], ["y"]), {"a": a, "b": b}, tol=1e-4)


def test_einsum_of_one_operand():
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    nodes = [helper.make_node("Einsum", ["x"], ["t"], equation="abc->cab"),
             helper.make_node("Einsum", ["x"], ["s"], equation="abc->b")]
    _check(_model(nodes, [("x", x)], ["t", "s"]), {"x": x})


@pytest.mark.parametrize("attrs, w_shape", [
    (dict(strides=[2, 2], pads=[1, 0, 1, 2]), (3, 4, 3, 3)),
    (dict(strides=[3, 2], output_padding=[1, 1], dilations=[1, 2]), (3, 2, 2, 3)),
    (dict(group=3, strides=[2, 1], pads=[2, 1, 0, 1]), (3, 2, 3, 2)),  # a pad larger than k - 1 crops
    (dict(strides=[2, 2], output_shape=[10, 12], auto_pad="SAME_UPPER"), (3, 1, 3, 3)),
])
def test_conv_transpose_2d(attrs, w_shape):
    x = RNG.standard_normal((1, 3, 5, 6)).astype(np.float32)
    inits = [("w", RNG.standard_normal(w_shape).astype(np.float32)),
             ("b", RNG.standard_normal(w_shape[1] * attrs.get("group", 1)).astype(np.float32))]
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    _check(_model([node], [("x", x)], ["y"], inits), {"x": x}, tol=1e-4)


def test_conv_transpose_and_pooling_in_1d():
    x = RNG.standard_normal((2, 3, 11)).astype(np.float32)
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["up"], strides=[2], pads=[1, 0]),
             helper.make_node("MaxPool", ["x"], ["max"], kernel_shape=[3], strides=[2], pads=[1, 1]),
             helper.make_node("AveragePool", ["x"], ["avg"], kernel_shape=[2], ceil_mode=1)]
    _check(_model(nodes, [("x", x)], ["up", "max", "avg"], [("w", RNG.standard_normal((3, 4, 3)).astype(np.float32))]),
           {"x": x}, tol=1e-4)


@pytest.mark.parametrize("node, reason", [
    (helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap"), "Pad mode 'wrap'"),
    (helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic"), "Resize mode 'cubic'"),
    (helper.make_node("Einsum", ["x"], ["y"], equation="ii->i"), "a diagonal"),
])
def test_unsupported_forms_are_reported(node, reason):
    x = RNG.standard_normal((3, 3)).astype(np.float32)
    inits = [("pads", _ints([1, 1, 1, 1])), ("scales", np.asarray([1, 2], np.float32))]
    with pytest.warns(UnsupportedOperatorWarning, match=reason):
        frontends.from_onnx(_model([node], [("x", x)], ["y"], inits))


def test_scatter_nd_on_constants_folds_at_import():
    """Swin's attention mask: zeros with a value written into each window's region, then used."""
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    indices = _ints([[[0, 1]], [[1, 2]]])
    nodes = [helper.make_node("ScatterND", ["zeros", "indices", "updates"], ["mask"]),
             helper.make_node("ScatterND", ["mask", "indices", "updates"], ["twice"], reduction="add"),
             helper.make_node("Add", ["x", "twice"], ["y"])]
    inits = [("zeros", np.zeros((2, 3), np.float32)), ("indices", indices),
             ("updates", np.asarray([[5.0], [-2.0]], np.float32))]
    graph = _check(_model(nodes, [("x", x)], ["y"], inits, opset=18), {"x": x})
    assert [n.op for n in graph.nodes] == ["add"]
