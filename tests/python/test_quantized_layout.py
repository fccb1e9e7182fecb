"""The layout pass on quantized convolutions (graph/ops/quant.py's converter, graph/ops/quant_blocked.py): a
uint8 x int8 conv2d_integer with a constant weight becomes conv2d_integer_nchwc on its input blocked for the
dot-product instruction. Built results equal the NCHW graph's exactly on awkward shapes (1, 3 and 37 channels,
17 outputs, strides, dilations, asymmetric pads, zero points of both operands, per channel); layout="auto" does
it only for targets with VNNI, whose code then has vpdpbusd (compiled for a Sapphire Rapids and read, not run);
convolutions the instruction cannot take stay NCHW."""
import re

import numpy as np
import pytest

import autosched as ans
from autosched.graph import Graph
from autosched.graph.extract import lower_graph
from autosched.graph.layout import convert_layout, has_integer_dot_product_block

pytestmark = pytest.mark.needs_llvm

RNG = np.random.default_rng(41)
AVX512_VNNI = "llvm -mcpu=sapphirerapids -no-host-check"
AVX_VNNI = "llvm -mcpu=alderlake -no-host-check"
NO_VNNI = "llvm -mcpu=sapphirerapids -mattr=-avx512vnni,-avxvnni -no-host-check"
AVX2 = "llvm -mcpu=znver3 -no-host-check"
SSE_ONLY = "llvm -mcpu=x86-64 -no-host-check"  # no AVX2: the blocked product would be ordinary code


def _ints(dtype, shape, low, high):
    return RNG.integers(low, high + 1, shape).astype(dtype)


def _quantized_conv(channels=5, out_channels=11, size=(9, 7), kernel=3, x_zero_point=131, w_zero_points=False,
                    x_dtype="uint8", w_dtype="int8", groups=1, **conv_attrs):
    """x (uint8) -> conv2d_integer -> requantize (per channel, bias) -> uint8."""
    g = Graph("qconv")
    x = g.add_input("x", (1, channels) + size, x_dtype)
    w_range = (-64, 63) if w_dtype == "int8" else (0, 255)
    inputs = [x, g.add_constant("w", _ints(w_dtype, (out_channels, channels // groups, kernel, kernel), *w_range))]
    zero_points = []
    if x_zero_point is not None:
        inputs.append(g.add_constant("x_zp", np.array(x_zero_point, x_dtype)))
        zero_points.append("x")
    if w_zero_points:
        inputs.append(g.add_constant("w_zp", _ints(w_dtype, (out_channels,), -9, 9) if w_dtype == "int8"
                                     else _ints(w_dtype, (out_channels,), 0, 9)))
        zero_points.append("w")
    conv = g.add_node("conv2d_integer", inputs, dict(conv_attrs, groups=groups, zero_points=tuple(zero_points)),
                      name="conv")
    multiplier = (RNG.random(out_channels).astype(np.float32) + 0.5) / (40 * channels * kernel * kernel)
    out = g.add_node("requantize", [conv, g.add_constant("m", multiplier), g.add_constant("y_zp", np.uint8(7)),
                                    g.add_constant("bias", _ints("int32", (out_channels,), -999, 999))],
                     dict(axis=1), name="y")
    g.set_outputs([out])
    return g


def _ops(graph):
    return [n.op for n in graph.nodes]


CASES = [
    dict(),
    dict(channels=3, out_channels=17, size=(11, 10), strides=2, pads=(1, 0, 2, 1), w_zero_points=True),
    dict(channels=37, out_channels=9, size=(6, 13), dilations=(1, 2), pads=2, x_zero_point=None,
         w_zero_points=True),
    dict(channels=1, out_channels=1, size=(1, 1), kernel=1),
    dict(channels=16, out_channels=32, size=(5, 5), kernel=1, x_zero_point=0),
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
@pytest.mark.parametrize("block", [16, 8])
def test_blocked_integer_convolution_equals_the_nchw_one(case, block):
    g = _quantized_conv(**case)
    blocked = convert_layout(g, block, integer_convs=True)
    assert _ops(blocked) == ["layout_transform", "conv2d_integer_nchwc", "requantize"]
    x = _ints("uint8", g.shape("x"), 0, 255)
    (want,) = g.evaluate(x)
    np.testing.assert_array_equal(blocked.evaluate(x)[0], want)
    # this host's code: vpdpbusd where it has VNNI, the same sums in ordinary vector code elsewhere
    np.testing.assert_array_equal(ans.graph.build(g, "llvm", verbose=False, layout="NCHWc")(x)[0], want)


def test_the_pass_leaves_integer_convolutions_alone_unless_asked():
    g = _quantized_conv()
    assert convert_layout(g, 16) is g  # integer_convs off: nothing converts
    with pytest.raises(TypeError, match="integer_convs"):
        convert_layout(g, 16, integer_convs="yes")


@pytest.mark.parametrize("case", [dict(x_dtype="int8", x_zero_point=-3),  # s8 x s8: no such instruction
                                  dict(w_dtype="uint8"),  # u8 x u8
                                  dict(channels=6, out_channels=4, groups=2)],  # grouped
                         ids=["s8s8", "u8u8", "grouped"])
def test_convolutions_the_instruction_cannot_take_stay_nchw(case):
    g = _quantized_conv(**case)
    assert convert_layout(g, 16, integer_convs=True) is g


def test_targets_with_vnni_or_its_widening_form_block_the_convolution_by_default_and_get_vpdpbusd():
    assert has_integer_dot_product_block(AVX512_VNNI) and has_integer_dot_product_block(AVX_VNNI)
    assert has_integer_dot_product_block(NO_VNNI) and has_integer_dot_product_block(AVX2)  # vpmaddwd
    assert not has_integer_dot_product_block(SSE_ONLY) and not has_integer_dot_product_block("opencl")
    g = _quantized_conv(channels=32, out_channels=32, size=(14, 14), w_zero_points=True)
    assert "conv2d_integer_nchwc" in _ops(lower_graph(g, AVX512_VNNI).graph)
    assert "conv2d_integer_nchwc" in _ops(lower_graph(g, AVX2).graph)
    assert "conv2d_integer_nchwc" not in _ops(lower_graph(g, SSE_ONLY).graph)
    assert "conv2d_integer_nchwc" not in _ops(lower_graph(g, AVX512_VNNI, layout="NCHW").graph)
    tasks, _ = ans.graph.extract_tasks(g, AVX512_VNNI)
    (task,) = [t for t in tasks if "conv2d_integer_nchwc" in t.desc]
    module = ans.build(task.compute_dag, ans.search.expert_schedule(task), AVX512_VNNI)
    assert len(re.findall(r"\bvpdpbusd\b", module.get_source("asm"))) > 0


def test_a_quantize_before_the_convolution_writes_the_blocked_input():
    """The activation's quantization and its layout transform are one task: the transform costs no extra
    pass over the activation."""
    g = Graph("qq")
    x = g.add_input("x", (1, 12, 8, 8))
    q = g.add_node("quantize_linear", [x, g.add_constant("s", np.float32(0.05)), g.add_constant("z", np.uint8(128))],
                   name="q")
    w = g.add_constant("w", _ints("int8", (8, 12, 3, 3), -64, 63))
    conv = g.add_node("conv2d_integer", [q, w, "z"], dict(pads=1, zero_points="x"), name="conv")
    g.set_outputs([conv])
    lowered = lower_graph(g, "llvm", layout="NCHWc")
    assert [[n.op for n in group.nodes] for group in lowered.groups] == [
        ["quantize_linear", "layout_transform"], ["conv2d_integer_nchwc"]]
    a = RNG.standard_normal((1, 12, 8, 8)).astype(np.float32) * 4
    np.testing.assert_array_equal(ans.graph.build(g, "llvm", verbose=False, layout="NCHWc")(a)[0],
                                  g.evaluate(a)[0])


def test_a_statically_quantized_onnx_model_builds_blocked_alike(tmp_path):
    pytest.importorskip("onnxruntime")
    import quantized_models as qm
    model = qm.quantize(qm.conv_net(), "QDQ", True, "uint8", tmp_path=tmp_path)
    graph = ans.frontends.from_onnx(model)
    assert _ops(lower_graph(graph, "llvm", layout="NCHWc").graph).count("conv2d_integer_nchwc") == 2
    x = RNG.standard_normal(graph.shape(graph.inputs[0])).astype(np.float32)
    (want,) = ans.graph.build(graph, "llvm", verbose=False, layout="NCHW")(x)
    np.testing.assert_array_equal(ans.graph.build(graph, "llvm", verbose=False, layout="NCHWc")(x)[0], want)
