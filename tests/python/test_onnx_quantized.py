"""from_onnx of quantized models: float models (quantized_models.py) quantized by onnxruntime (quantize_static in
the QDQ and QOperator forms, per tensor and per channel, uint8 and int8 activations; quantize_dynamic), imported,
compiled untuned by graph.build for llvm and compared with onnxruntime on random inputs: within one quantization
step of the output's scale (most are equal), as is the graph's numpy reference (Graph.evaluate). The integer
path is checked to be the one taken (conv2d_integer / matmul_integer + requantize, no float convolution), the
requantization bit for bit against onnxruntime's kernels (ties included), DynamicQuantizeLinear's scale and zero
point exactly, and unsupported quantized operators are named.

onnxruntime's u8 x s8 kernels saturate pairs of products at int16 on CPUs without VNNI (AVX2), where ONNX
defines exact int32 sums: the models are quantized with reduce_range (7-bit weights), which those kernels
compute exactly; full-range weights are compared with onnxruntime running the QDQ nodes as ONNX defines them
(no fused kernels)."""
import warnings

import numpy as np
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from autosched.graph import GraphError, build

import quantized_models as qm
from import_checks import onnx_model

ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.needs_llvm

RNG = np.random.default_rng(23)


def run_onnxruntime(model, feeds, float_semantics=False):
    options = ort.SessionOptions()
    if float_semantics:  # every node as ONNX defines it: no fused integer kernels
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def import_all(model):
    """from_onnx, every node imported (an unsupported one fails the test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        return frontends.from_onnx(model)


def output_step(model):
    """The scale of the DequantizeLinear that computes output y: one quantization step of the output."""
    producer = {o: n for n in model.graph.node for o in n.output}
    node = producer["y"]
    while node.op_type != "DequantizeLinear":  # through an Identity
        node = producer[node.input[0]]
    scales = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return float(scales[node.input[1]])


def check_model(model, step, float_semantics=False):
    """Imports `model`, builds it and compares with onnxruntime and Graph.evaluate on a random input: the
    largest differences, in units of `step`. Returns the graph and the differences (onnxruntime, evaluate)."""
    graph = import_all(model)
    x = RNG.standard_normal(qm.input_shape(model)).astype(np.float32)
    (want,) = run_onnxruntime(model, {"x": x}, float_semantics)
    (got,) = build(graph, "llvm", verbose=False)(x)
    (reference,) = graph.evaluate(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    return graph, float(np.abs(got - want).max()) / step, float(np.abs(got - reference).max()) / step


def ops_of(graph):
    return [n.op for n in graph.nodes]


@pytest.mark.parametrize("bias", [0.0, 0.25])
def test_a_bias_shared_through_an_identity_still_fuses_where_it_requantizes_exactly(bias, tmp_path):
    """The quantizer gives a shared bias the first convolution's scale; the second reads its float values through
    an Identity. Zeros are whole multiples of any scale: the second convolution runs on integers too. Other
    values are not, and it keeps ONNX's float semantics."""
    model = qm.quantize(qm.shared_bias(bias=bias), "QDQ", True, "uint8", tmp_path=tmp_path)
    assert "Identity" in [n.op_type for n in model.graph.node]
    graph, vs_onnxruntime, vs_reference = check_model(model, output_step(model))
    assert ops_of(graph).count("conv2d_integer") == (2 if bias == 0.0 else 1)
    assert vs_onnxruntime <= 1.0 and vs_reference <= 1.0


@pytest.mark.parametrize("activation", ["uint8", "int8"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_conv_net_quantized_statically(fmt, per_channel, activation, tmp_path):
    model = qm.quantize(qm.conv_net(), fmt, per_channel, activation, tmp_path=tmp_path)
    graph, vs_onnxruntime, vs_reference = check_model(model, output_step(model))
    ops = ops_of(graph)
    assert ops.count("conv2d_integer") == 3 and ops.count("matmul_integer") == 1 and ops.count("requantize") == 4
    assert not {"conv2d", "dense", "matmul"} & set(ops)  # every convolution and the head run on integers
    assert vs_onnxruntime <= 1.0 and vs_reference <= 1.0


def test_full_range_weights_follow_onnx_semantics(tmp_path):
    model = qm.quantize(qm.conv_net(), "QDQ", per_channel=True, reduce_range=False, tmp_path=tmp_path)
    weights = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name.endswith("_quantized")]
    assert max(int(np.abs(w.astype(np.int32)).max()) for w in weights if w.dtype == np.int8) > 100
    _, vs_onnx_semantics, vs_reference = check_model(model, output_step(model), float_semantics=True)
    assert vs_onnx_semantics <= 1.0 and vs_reference <= 1.0


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_branches_quantized_statically(fmt, tmp_path):
    """QLinearLeakyRelu, QLinearSigmoid, QLinearConcat and QLinearMul (QOperator), or their QDQ forms."""
    model = qm.quantize(qm.branches(), fmt, per_channel=True, tmp_path=tmp_path)
    graph, vs_onnxruntime, vs_reference = check_model(model, output_step(model))
    assert ops_of(graph).count("conv2d_integer") == 2 and {"leaky_relu", "sigmoid", "concat"} <= set(ops_of(graph))
    assert vs_onnxruntime <= 1.0 and vs_reference <= 1.0


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_mlp_quantized_statically(fmt, tmp_path):
    model = qm.quantize(qm.mlp(), fmt, per_channel=True, tmp_path=tmp_path)
    graph, vs_onnxruntime, vs_reference = check_model(model, output_step(model))
    assert ops_of(graph).count("matmul_integer") == 3 and "dense" not in ops_of(graph)
    assert vs_onnxruntime <= 1.0 and vs_reference <= 1.0


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_encoder_quantized_statically(fmt, tmp_path):
    """QDQ is compared with the nodes as ONNX defines them: onnxruntime's fused kernels of the QDQ form (its
    softmax and layer norm among them) land up to 3 steps away from both."""
    model = qm.quantize(qm.encoder(), fmt, tmp_path=tmp_path)
    graph, vs_onnxruntime, vs_reference = check_model(model, output_step(model), float_semantics=fmt == "QDQ")
    assert ops_of(graph).count("matmul_integer") == 8  # q, k, v, the two products of attention, o, ff1, ff2
    assert vs_onnxruntime <= 1.0 and vs_reference <= 1.0


@pytest.mark.parametrize("make", [qm.mlp, qm.encoder], ids=["mlp", "encoder"])
def test_quantized_dynamically(make, tmp_path):
    """quantize_dynamic's DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul -> Add: float outputs."""
    model = qm.quantize_dynamic(make(), tmp_path)
    graph = import_all(model)
    ops = ops_of(graph)
    assert "matmul_integer" in ops and "dense" not in ops and ops.count("reduce_min") == ops.count("reduce_max")
    x = RNG.standard_normal(qm.input_shape(model)).astype(np.float32)
    (want,) = run_onnxruntime(model, {"x": x})
    (got,) = build(graph, "llvm", verbose=False)(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    np.testing.assert_allclose(graph.evaluate(x)[0], want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_integer_outputs_equal_onnxruntime(tmp_path):
    """The conv net's quantized output itself (its last DequantizeLinear dropped): integers, equal."""
    model = qm.quantize(qm.conv_net(), "QOperator", per_channel=True, tmp_path=tmp_path)
    last = model.graph.node[-1]
    assert last.op_type == "DequantizeLinear"
    model.graph.node.remove(last)
    model.graph.output[0].CopyFrom(helper.make_empty_tensor_value_info(last.input[0]))
    graph = import_all(model)
    x = RNG.standard_normal(qm.input_shape(model)).astype(np.float32)
    (want,) = run_onnxruntime(model, {"x": x})
    (got,) = build(graph, "llvm", verbose=False)(x)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(graph.evaluate(x)[0], want)


# ---------------- single quantized operators, bit for bit ----------------


def _tensor(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _single_node_model(node, inputs, initializers, opset=17, domains=()):
    model = onnx_model([node], inputs, [node.output[0]], initializers, opset=opset)
    for domain in domains:
        model.opset_import.append(helper.make_opsetid(domain, 1))
    return model


def _check_equal(model, feeds):
    want = run_onnxruntime(model, feeds)
    graph = import_all(model)
    got = build(graph, "llvm", verbose=False)(**feeds)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    for r, w in zip(graph.evaluate(**feeds), want):
        np.testing.assert_array_equal(r, w)
    return graph


# Powers of two make the multiplier (x_scale * w_scale) / y_scale exact, so that many products land on a half:
# round-half-to-even decides them. Outputs also saturate at both ends.
TIE_SCALES = dict(x=np.float32(0.5), w=np.float32([0.125, 0.25, 0.0625, 0.125, 0.5]), y=np.float32(4.0))


@pytest.mark.parametrize("signed", [False, True], ids=["u8", "s8"])
def test_qlinear_matmul_requantizes_as_onnxruntime(signed):
    a_dtype, a_zp = (np.int8, np.int8(-7)) if signed else (np.uint8, np.uint8(131))
    lo, hi = np.iinfo(a_dtype).min, np.iinfo(a_dtype).max
    a = RNG.integers(lo, hi + 1, (13, 37)).astype(a_dtype)
    b = RNG.integers(-64, 64, (37, 5)).astype(np.int8)
    node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"],
                            ["y"])
    model = _single_node_model(node, [("a", a)], [
        ("a_scale", TIE_SCALES["x"]), ("a_zp", a_zp), ("b", b), ("b_scale", TIE_SCALES["w"]),
        ("b_zp", np.zeros(5, np.int8)), ("y_scale", TIE_SCALES["y"]), ("y_zp", a_zp)])
    graph = _check_equal(model, {"a": a})
    assert ops_of(graph) == ["matmul_integer", "requantize"]


def test_qlinear_conv_with_bias_requantizes_as_onnxruntime():
    """Grouped, strided and unevenly padded, per-channel scales, an int32 bias."""
    x = RNG.integers(0, 256, (2, 6, 7, 5)).astype(np.uint8)
    w = RNG.integers(-64, 64, (6, 3, 3, 2)).astype(np.int8)
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp",
                                            "bias"], ["y"], pads=[1, 0, 2, 1], strides=[2, 1], group=2)
    model = _single_node_model(node, [("x", x)], [
        ("x_scale", TIE_SCALES["x"]), ("x_zp", np.uint8(117)), ("w", w),
        ("w_scale", np.concatenate([TIE_SCALES["w"], TIE_SCALES["w"][:1]])), ("w_zp", np.zeros(6, np.int8)),
        ("y_scale", TIE_SCALES["y"]), ("y_zp", np.uint8(5)), ("bias", RNG.integers(-3000, 3000, 6).astype(np.int32))])
    graph = _check_equal(model, {"x": x})
    assert ops_of(graph) == ["conv2d_integer", "requantize"]


@pytest.mark.parametrize("quantized_output", [True, False], ids=["requantized", "float"])
def test_qgemm_matches_onnxruntime(quantized_output):
    """com.microsoft QGemm: B transposed, a bias, alpha; without y_scale the output is float32."""
    a = RNG.integers(0, 256, (3, 23)).astype(np.uint8)
    b = RNG.integers(-64, 64, (5, 23)).astype(np.int8)
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "bias"] + (["y_scale", "y_zp"] if quantized_output
                                                                        else [])
    node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", transB=1, alpha=0.5)
    inits = [("a_scale", TIE_SCALES["x"]), ("a_zp", np.uint8(100)), ("b", b), ("b_scale", TIE_SCALES["w"]),
             ("b_zp", np.zeros(5, np.int8)), ("bias", RNG.integers(-2000, 2000, 5).astype(np.int32))]
    if quantized_output:
        inits += [("y_scale", np.float32(1.0)), ("y_zp", np.uint8(128))]
    model = _single_node_model(node, [("a", a)], inits, domains=["com.microsoft"])
    _check_equal(model, {"a": a})


def test_qlinear_where_and_a_concat_of_equal_quantizations():
    """com.microsoft QLinearWhere (dequantize both, select, quantize); QLinearConcat of inputs quantized as its
    output is concatenates the integers as they are."""
    cond = RNG.integers(0, 2, (3, 1, 4)).astype(bool)
    x = RNG.integers(0, 256, (3, 5, 4)).astype(np.uint8)
    y = RNG.integers(0, 256, (1, 5, 4)).astype(np.uint8)
    node = helper.make_node("QLinearWhere", ["c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"], ["out"],
                            domain="com.microsoft")
    model = _single_node_model(node, [("c", cond), ("x", x), ("y", y)], [
        ("xs", np.float32(0.05)), ("xz", np.uint8(128)), ("ys", np.float32(0.02)), ("yz", np.uint8(3)),
        ("zs", np.float32(0.04)), ("zz", np.uint8(100))], domains=["com.microsoft"])
    graph = import_all(model)
    want = run_onnxruntime(model, {"c": cond, "x": x, "y": y})[0].astype(np.int32)
    got = build(graph, "llvm", verbose=False)(c=cond, x=x, y=y)[0].astype(np.int32)
    assert np.abs(got - want).max() <= 1
    node = helper.make_node("QLinearConcat", ["s", "z", "x", "s", "z", "y", "s", "z"], ["out"], axis=0,
                            domain="com.microsoft")
    model = _single_node_model(node, [("x", x), ("y", y)], [("s", np.float32(0.05)), ("z", np.uint8(7))],
                               domains=["com.microsoft"])
    assert ops_of(_check_equal(model, {"x": x, "y": y})) == ["concat"]


@pytest.mark.parametrize("x", [
    RNG.standard_normal((3, 11)).astype(np.float32) * 3,
    np.abs(RNG.standard_normal((5,))).astype(np.float32) + 1,  # positive only: the range starts at 0
    -np.abs(RNG.standard_normal((2, 1, 7))).astype(np.float32),  # negative only: zero point 255
    np.zeros((4,), np.float32),  # an empty range: scale 1
    np.float32([-1.0, 0.5, 0.0, 254.0 / 255.0 * 3]),
], ids=["mixed", "positive", "negative", "zeros", "ties"])
def test_dynamic_quantize_linear_equals_onnxruntime(x):
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"])
    model = onnx_model([node], [("x", x)], ["y", "y_scale", "y_zero_point"])
    want = run_onnxruntime(model, {"x": x})
    graph = import_all(model)
    got = build(graph, "llvm", verbose=False)(x)
    for g, w, r in zip(got, want, graph.evaluate(x)):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(r, w)


def test_matmul_integer_and_conv_integer_on_their_own():
    """MatMulInteger of a 1-D left operand with per-column zero points, and of batched matrices; ConvInteger with
    zero points, groups and dilations: int32, equal."""
    a = RNG.integers(0, 256, (23,)).astype(np.uint8)
    b = RNG.integers(0, 256, (23, 7)).astype(np.uint8)
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"])
    model = _single_node_model(node, [("a", a), ("b", b)], [("a_zp", np.uint8(9)),
                                                            ("b_zp", RNG.integers(0, 256, 7).astype(np.uint8))])
    _check_equal(model, {"a": a, "b": b})
    a = RNG.integers(-128, 128, (2, 3, 23)).astype(np.int8)
    b = RNG.integers(-128, 128, (2, 23, 7)).astype(np.int8)
    model = _single_node_model(node, [("a", a), ("b", b)], [("a_zp", np.int8(-9)), ("b_zp", np.int8(4))])
    _check_equal(model, {"a": a, "b": b})
    x = RNG.integers(-128, 128, (1, 4, 9, 8)).astype(np.int8)
    w = RNG.integers(-64, 64, (6, 2, 3, 3)).astype(np.int8)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], group=2, dilations=[2, 1],
                            pads=[2, 1, 2, 1])
    model = _single_node_model(node, [("x", x)], [("w", w), ("x_zp", np.int8(-5)), ("w_zp", np.int8(3))])
    assert ops_of(_check_equal(model, {"x": x})) == ["conv2d_integer"]


def test_qdq_relu_between_convolution_and_quantize_is_a_maximum():
    """DequantizeLinear pair -> Conv -> Relu -> QuantizeLinear: the integer convolution, its requantization and
    the Relu as a maximum with the output's zero point. The weight's DequantizeLinear has no zero point (0 of
    int8, the weight's dtype)."""
    w = RNG.integers(-127, 128, (7, 3, 3, 3)).astype(np.int8)
    bias = RNG.integers(-500, 500, 7).astype(np.int32)
    x_scale, w_scale = np.float32(0.02), np.float32(0.01)
    node = helper.make_node
    nodes = [node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
             node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xf"]),
             node("DequantizeLinear", ["w", "w_scale"], ["wf"]),
             node("DequantizeLinear", ["bias", "bias_scale"], ["bf"]),
             node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             node("Relu", ["c"], ["r"]),
             node("QuantizeLinear", ["r", "y_scale", "y_zp"], ["yq"]),
             node("DequantizeLinear", ["yq", "y_scale", "y_zp"], ["y"])]
    x = RNG.standard_normal((1, 3, 5, 6)).astype(np.float32)
    model = onnx_model(nodes, [("x", x)], ["y"], [
        ("x_scale", x_scale), ("x_zp", np.uint8(128)), ("w", w), ("w_scale", w_scale),
        ("bias", bias), ("bias_scale", np.float32(x_scale * w_scale)), ("y_scale", np.float32(0.03)),
        ("y_zp", np.uint8(90))], opset=17)
    graph = import_all(model)
    assert ops_of(graph) == ["quantize_linear", "conv2d_integer", "requantize", "maximum", "dequantize_linear"]
    (want,) = run_onnxruntime(model, {"x": x}, float_semantics=True)
    (got,) = build(graph, "llvm", verbose=False)(x)
    assert float(np.abs(got - want).max()) <= 0.03 * 1.0001
    assert float(want.min()) == 0.0  # the Relu clipped some


def test_a_constant_dequantized_weight_folds():
    """DequantizeLinear of a constant weight that is no QDQ pattern (a float activation) folds at import: the
    float product ONNX defines (onnxruntime's optimized session quantizes x on the fly instead)."""
    w = RNG.integers(-127, 128, (5, 4)).astype(np.int8)
    nodes = [helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zp"], ["wf"], axis=1),
             helper.make_node("MatMul", ["x", "wf"], ["y"])]
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    scales = np.float32([0.1, 0.2, 0.3, 0.4])
    model = onnx_model(nodes, [("x", x)], ["y"], [("w", w), ("w_scale", scales), ("w_zp", np.int8([1, 0, -1, 2]))])
    graph = import_all(model)
    assert ops_of(graph) == ["dense"]
    (want,) = run_onnxruntime(model, {"x": x}, float_semantics=True)
    np.testing.assert_allclose(build(graph, "llvm", verbose=False)(x)[0], want, rtol=1e-5, atol=1e-5)


def test_unsupported_quantized_operators_are_named():
    """What cannot be imported becomes an unsupported node whose reason names the operator and the limit, and
    graph.build refuses the graph naming them."""
    x1 = RNG.standard_normal((1, 2, 9)).astype(np.float32)
    node = helper.make_node
    nodes = [
        node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
        node("QLinearConv", ["xq", "s", "z", "w", "s", "wz", "s", "z"], ["conv1d"], name="conv1d"),
        node("DequantizeLinear", ["conv1d", "s", "z"], ["c"]),
        node("DynamicQuantizeMatMul", ["x", "mw", "ms", "mz"], ["mm"], domain="com.microsoft", name="dqmm"),
        node("QuantizeLinear", ["x", "bs", "z"], ["blocked"], axis=2, block_size=3, name="blocked"),
        node("DequantizeLinear", ["blocked", "bs", "z"], ["b"], axis=2, block_size=3),
    ]
    inits = [("s", np.float32(0.1)), ("z", np.uint8(3)), ("w", RNG.integers(-5, 5, (4, 2, 3)).astype(np.int8)),
             ("wz", np.int8(0)), ("mw", np.ones((9, 4), np.int8)), ("ms", np.float32(0.1)), ("mz", np.int8(0)),
             ("bs", np.full((1, 2, 3), 0.1, np.float32))]
    model = onnx_model(nodes, [("x", x1)], ["c", "mm", "b"], inits, opset=21)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.warns(UnsupportedOperatorWarning) as caught:
        graph = frontends.from_onnx(model)
    text = str(caught[0].message)
    assert "QLinearConv (node conv1d): QLinearConv of a 3-D input: only 2-D convolutions" in text
    assert "DynamicQuantizeMatMul (node dqmm): operator of domain 'com.microsoft' (of that domain, the quantized " \
           "ops QGemm" in text
    assert "QuantizeLinear (node blocked): blocked quantization (block_size) is not supported" in text
    with pytest.raises(GraphError, match=r"(?s)cannot be built.*conv1d \(unsupported\).*QLinearConv"):
        build(graph, "llvm", verbose=False)


def test_quantize_linear_of_a_float16_input_is_refused_by_name():
    x = np.ones((2, 3), np.float16)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q16")]
    model = onnx_model(nodes, [("x", x)], ["y"], [("s", np.float16(0.5)), ("z", np.uint8(0))])
    with pytest.warns(UnsupportedOperatorWarning, match=r"QuantizeLinear \(node q16\): QuantizeLinear of a "
                                                        r"float16 input: only float32 is supported"):
        frontends.from_onnx(model)
