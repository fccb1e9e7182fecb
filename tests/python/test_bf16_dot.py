"""bfloat16 models on the bfloat16 dot product (graph/dot_weights.py, graph/ops/bf16_dot.py): dense layers and
matmuls on constant weights become dense_bf16_dot, direct convolutions conv2d_nchwc_bf16_dot, their weights
packed in pairs. The rewritten graphs compute what the originals do (reference, built on this CPU, PyTorch) on
awkward shapes (one row, 1 and 22 units, 3 and 6 channels, primes, strides); lower_graph rewrites only for CPUs
with AVX512-BF16 or AMX-BF16, whose code then has vdpbf16ps or tdpbf16ps (compiled for them and read, not run)."""
import re

import ml_dtypes
import numpy as np
import pytest

import autosched as ans
from autosched.graph import Graph, GraphError
from autosched.graph.dot_weights import has_bfloat16_dot_product, pack_bfloat16_weights
from autosched.graph.extract import lower_graph
from autosched.graph.layout import convert_layout

pytestmark = pytest.mark.needs_llvm

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(7)
SAPPHIRE_RAPIDS = "llvm -mcpu=sapphirerapids -no-host-check -num-cores=2"  # AVX512-BF16 and AMX
ZEN4 = "llvm -mcpu=znver4 -no-host-check -num-cores=2"  # AVX512-BF16
ZEN3 = "llvm -mcpu=znver3 -no-host-check"  # neither


def _bf16(*shape):
    return RNG.standard_normal(shape).astype(BF16)


def _ops(graph):
    return [n.op for n in graph.nodes]


def _assert_within_a_unit(got, want):
    """got equals want up to one bfloat16 unit in the last place (float32 sums in another order)."""
    got, want = np.asarray(got).astype(np.float32), np.asarray(want).astype(np.float32)
    unit = np.maximum(np.abs(want), np.finfo(np.float32).tiny) * 2.0 ** -7
    assert (np.abs(got - want) <= unit).all(), float((np.abs(got - want) / unit).max())


def _dense_graph(batch, k, units, bias=True, then_matmul=None):
    g = Graph("dense")
    g.add_input("x", batch + (k,), "bfloat16")
    ins = ["x", g.add_constant("w", _bf16(units, k))] + ([g.add_constant("b", _bf16(units))] if bias else [])
    out = g.add_node("relu", [g.add_node("dense", ins, name="fc")], name="act")
    if then_matmul is not None:
        out = g.add_node("matmul", [out, g.add_constant("m", _bf16(units, then_matmul))], name="mm")
    g.set_outputs([out])
    return g


@pytest.mark.parametrize("batch, k, units, bias, then_matmul", [
    ((1,), 38, 22, True, 33),   # one row; units not a multiple of 16
    ((2, 7), 38, 1, False, None),  # one unit, 3-D data
    ((3, 5), 64, 48, True, 16),
])
def test_packed_dense_and_matmul_compute_what_the_graph_does(batch, k, units, bias, then_matmul):
    g = _dense_graph(batch, k, units, bias, then_matmul)
    packed = pack_bfloat16_weights(g)
    assert _ops(packed).count("dense_bf16_dot") == 1 + (then_matmul is not None)
    x = _bf16(*batch, k)
    want = g.evaluate(x)[0]
    got = packed.evaluate(x)[0]
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))  # the same float32 sums, one rounding
    _assert_within_a_unit(ans.graph.build(packed, "llvm")(x), want)


def test_torch_runs_the_packed_ops_alike():
    pytest.importorskip("torch")
    from autosched.graph.torch_runner import TorchGraph
    g = _dense_graph((2, 3), 40, 20, True, 18)
    packed = convert_layout(pack_bfloat16_weights(_conv_graph(6, 10, (9, 7), 3, 1)), 8, bf16_dot=True)
    for graph, shape in ((pack_bfloat16_weights(g), (2, 3, 40)), (packed, (1, 6, 9, 7))):
        x = _bf16(*shape)
        _assert_within_a_unit(TorchGraph(graph)(x)[0], graph.evaluate(x)[0])


def test_what_the_pass_leaves_alone():
    odd = _dense_graph((4,), 37, 8)  # an odd K has no whole pairs
    assert pack_bfloat16_weights(odd) is odd
    g = Graph("f32")
    g.add_input("x", (4, 8), "float32")
    g.set_outputs([g.add_node("dense", ["x", g.add_constant("w", np.ones((3, 8), np.float32))])])
    assert pack_bfloat16_weights(g) is g
    g = Graph("weight_input")  # a weight that is an input, not a constant
    g.add_input("x", (4, 8), "bfloat16")
    g.add_input("w", (3, 8), "bfloat16")
    g.set_outputs([g.add_node("dense", ["x", "w"])])
    assert pack_bfloat16_weights(g) is g


def test_a_weight_two_layers_share_is_packed_once():
    g = Graph("shared")
    g.add_input("x", (4, 8), "bfloat16")
    w = g.add_constant("w", _bf16(8, 8))
    h = g.add_node("dense", ["x", w], name="a")
    g.set_outputs([g.add_node("dense", [h, w], name="b")])
    packed = pack_bfloat16_weights(g)
    assert [n.inputs[1] for n in packed.nodes] == ["w.bf16_pairs", "w.bf16_pairs"]
    x = _bf16(4, 8)
    np.testing.assert_array_equal(packed.evaluate(x)[0].view(np.uint16), g.evaluate(x)[0].view(np.uint16))


def _conv_graph(channels, out_channels, size, kernel, stride, pads=None):
    g = Graph("conv")
    g.add_input("x", (1, channels) + size, "bfloat16")
    w = g.add_constant("w", _bf16(out_channels, channels, kernel, kernel))
    pad = kernel // 2 if pads is None else pads
    conv = g.add_node("conv2d", ["x", w, g.add_constant("b", _bf16(out_channels))],
                      dict(strides=(stride, stride), pads=(pad,) * 4), name="conv")
    g.set_outputs([g.add_node("relu", [conv], name="act")])
    return g


@pytest.mark.parametrize("channels, out_channels, size, kernel, stride, block", [
    (16, 24, (13, 11), 3, 1, 16),
    (6, 17, (9, 7), 3, 2, 8),   # a block of 6 channels (3 pairs); 17 outputs
    (32, 16, (1, 1), 1, 1, 16),  # a 1x1 image
    (24, 8, (5, 6), 1, 2, 8),
])
def test_packed_convolutions_compute_what_the_graph_does(channels, out_channels, size, kernel, stride, block):
    g = _conv_graph(channels, out_channels, size, kernel, stride)
    blocked = convert_layout(g, block, bf16_dot=True)
    assert "conv2d_nchwc_bf16_dot" in _ops(blocked)
    x = _bf16(1, channels, *size)
    want = g.evaluate(x)[0]
    np.testing.assert_array_equal(blocked.evaluate(x)[0].view(np.uint16), want.view(np.uint16))
    _assert_within_a_unit(ans.graph.build(blocked, "llvm")(x), want)


def test_convolutions_without_whole_pairs_stay_as_they_were():
    g = _conv_graph(3, 16, (8, 8), 3, 1)  # 3 input channels: a block of 3, no whole pairs
    assert "conv2d_nchwc_bf16_dot" not in _ops(convert_layout(g, 16, bf16_dot=True))
    assert "conv2d_nchwc_bf16_dot" not in _ops(convert_layout(_conv_graph(16, 16, (8, 8), 3, 1), 16))


def test_cpus_with_a_bfloat16_dot_product_get_it_and_others_keep_their_code():
    assert has_bfloat16_dot_product(SAPPHIRE_RAPIDS) and has_bfloat16_dot_product(ZEN4)
    assert not has_bfloat16_dot_product(ZEN3) and not has_bfloat16_dot_product("opencl")
    g = _dense_graph((128,), 256, 64, True)
    conv = _conv_graph(32, 32, (14, 14), 3, 1)
    assert "dense_bf16_dot" not in _ops(lower_graph(g, ZEN3).graph)
    assert "conv2d_nchwc_bf16_dot" not in _ops(lower_graph(conv, ZEN3).graph)
    for target, graph, instruction in ((ZEN4, g, "vdpbf16ps"), (ZEN4, conv, "vdpbf16ps"),
                                       (SAPPHIRE_RAPIDS, g, "tdpbf16ps"), (SAPPHIRE_RAPIDS, conv, "vdpbf16ps")):
        tasks, _ = ans.graph.extract_tasks(graph, target)
        (task,) = [t for t in tasks if "bf16_dot" in t.desc]
        asm = ans.build(task.compute_dag, ans.search.expert_schedule(task), target).get_source("asm")
        assert len(re.findall(rf"\b{instruction}\b", asm)) > 0, (target, task.desc)


@pytest.mark.parametrize("data, weight, attrs, message", [
    (np.zeros((2, 8), np.float32), np.zeros((1, 4, 16, 2), BF16), dict(units=3), "data must be bfloat16"),
    (np.zeros((2, 8), BF16), np.zeros((1, 3, 16, 2), BF16), dict(units=3), r"expected \(1, 4, 16, 2\)"),
    (np.zeros((2, 7), BF16), np.zeros((1, 3, 16, 2), BF16), dict(units=3), "odd count"),
])
def test_bad_operands_are_refused_with_a_message(data, weight, attrs, message):
    g = Graph("bad")
    g.add_input("x", data.shape, data.dtype.name)
    with pytest.raises(GraphError, match=message):
        g.add_node("dense_bf16_dot", ["x", g.add_constant("w", weight)], attrs)


def test_the_packed_graph_does_not_export_to_onnx(tmp_path):
    packed = pack_bfloat16_weights(_dense_graph((2,), 8, 4))
    with pytest.raises(GraphError, match="packed for the CPU's bfloat16 dot product"):
        packed.to_onnx(str(tmp_path / "m.onnx"))
