"""Grouped convolutions in the channel-blocked layout (graph/layout.py, conv2d's converter in graph/ops/nn.py):
groups whose channels are whole blocks run as a grouped conv2d_nchwc, groups that are not have up to
MAX_GROUP_MERGE adjacent groups merged (block-diagonal weights), padded channels and groups too small to merge
stay NCHW; graph.build computes what onnxruntime computes in every case, extract_tasks takes a grouped
conv2d_nchwc task with no transform around it, the expert schedule blocks it, and the te builder and the graph
op refuse groups that are not whole blocks."""
import numpy as np
import pytest

import autosched as ans
from autosched import ops, te
from autosched.graph import Graph
from autosched.graph.extract import lower_graph
from autosched.graph.ops.nn import MAX_GROUP_MERGE, blocked_groups

RNG = np.random.default_rng(11)


def hardware(block):
    """The hardware parameters of a CPU with vectors of `block` fp32 lanes (the layout pass's block)."""
    return ans.HardwareParams(-1, 4 * block, 64, 0, 0, 0, 0, 0)


def weights(*shape):
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def grouped_graph(channels, out_channels, groups, batch=1, size=9, kernel=3, strides=1, pads=1, dilations=1,
                  bias=False, relu=False, residual=False):
    """x -> conv2d (groups) [+ bias] [-> relu] [+ x]: one grouped convolution between the graph's boundaries."""
    g = Graph("grouped")
    x = g.add_input("x", (batch, channels, size, size))
    ins = [x, g.add_constant("w", weights(out_channels, channels // groups, kernel, kernel))]
    if bias:
        ins.append(g.add_constant("b", weights(out_channels)))
    y = g.add_node("conv2d", ins, dict(strides=strides, pads=pads, dilations=dilations, groups=groups), name="conv")
    if relu:
        y = g.add_node("relu", [y], name="relu")
    if residual:
        y = g.add_node("add", [y, x], name="residual")
    g.set_outputs([y])
    return g


def run_onnxruntime(g, arrays):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    session = ort.InferenceSession(g.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(g.inputs, arrays)))


def assert_close(got, want, tol=1e-4):
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max())))


def blocked_conv(g, block):
    """The node computing `conv` in the graph the layout pass makes of `g` with `block`."""
    lowered = lower_graph(g, "llvm", hardware_params=hardware(block), layout="NCHWc")
    return next(n for n in lowered.graph.nodes if n.op.startswith("conv2d")), lowered.graph


# (channels, out_channels, groups, block, the groups conv2d_nchwc runs with (None: NCHW), other attributes)
CASES = [
    (16, 16, 2, 8, 2, dict(bias=True, relu=True)),                   # groups of 8 channels, blocks of 8
    (32, 32, 4, 8, 4, dict(strides=2)),                              # strided
    (48, 48, 2, 8, 2, dict(pads=2, dilations=2, bias=True)),         # dilated: groups of 24 = 3 blocks
    (32, 64, 4, 8, 4, dict(batch=2, relu=True)),                     # batch 2, O = 2 C
    (48, 48, 4, 16, 1, dict(residual=True, relu=True)),              # groups of 12 -> one group (4x the work)
    (32, 32, 2, 16, 2, dict(bias=True, residual=True)),              # groups of 16: one block each
    (64, 64, 8, 16, 4, dict(bias=True, relu=True, residual=True)),   # groups of 8 channels, blocks of 16: merged 2
    (64, 64, 16, 16, 4, dict(strides=2, pads=(0, 1, 1, 0))),         # groups of 4, blocks of 16: merged 4
    (48, 48, 4, 8, 2, dict(kernel=1, pads=0)),                       # groups of 12, blocks of 8: merged 2
    (24, 24, 2, 16, None, dict(bias=True, relu=True)),               # 24 channels: padded in NCHW16c
    (20, 20, 2, 8, None, dict()),                                    # 20 channels: padded in NCHW8c
    (32, 32, 16, 16, None, dict(relu=True)),                         # groups of 2: 8 groups to merge
    (4, 4, 2, 8, 1, dict(relu=True)),                                # fewer channels than the block: x = 4
]


@pytest.mark.parametrize("channels, out_channels, groups, block, runs_with, attrs", CASES)
def test_grouped_conv_builds_in_the_blocked_layout(channels, out_channels, groups, block, runs_with, attrs):
    g = grouped_graph(channels, out_channels, groups, **attrs)
    arrays = [RNG.standard_normal(g.shape(g.inputs[0])).astype(np.float32)]
    want = run_onnxruntime(g, arrays)
    assert_close(g.evaluate(*arrays), want)
    conv, blocked = blocked_conv(g, block)
    if runs_with is None:
        assert conv.op == "conv2d" and conv.attrs["groups"] == groups
    else:
        assert conv.op == "conv2d_nchwc" and conv.attrs["groups"] == runs_with
        lanes = min(block, channels)
        assert blocked.shape(conv.inputs[0])[1:] == (channels // lanes, 9, 9, lanes)
        assert blocked.shape(conv.inputs[1])[1] * runs_with == channels // lanes
    assert_close(blocked.evaluate(*arrays), want)
    net = ans.graph.build(g, "llvm", hardware_params=hardware(block), verbose=False, layout="NCHWc")
    assert_close(net(*arrays), want)


def test_groups_merge_only_into_whole_blocks_and_at_most_four():
    assert MAX_GROUP_MERGE == 4
    assert blocked_groups(64, 64, 8, 8, 8) == 8                # groups of 8, blocks of 8: as they are
    assert blocked_groups(64, 64, 8, 16, 16) == 4              # groups of 8 with blocks of 16: pairs
    assert blocked_groups(64, 128, 8, 16, 16) == 4             # the output's groups of 16 are whole already
    assert blocked_groups(64, 64, 16, 16, 16) == 4             # groups of 4: four merged
    assert blocked_groups(64, 64, 32, 16, 16) is None          # groups of 2: eight would be merged
    assert blocked_groups(96, 96, 3, 16, 16) == 3              # groups of 32
    assert blocked_groups(96, 96, 6, 32, 32) == 3              # groups of 16 with blocks of 32: pairs
    assert blocked_groups(96, 96, 2, 64, 64) is None           # 96 channels: padded in blocks of 64
    assert blocked_groups(80, 80, 5, 16, 16) == 5              # an odd count of groups
    assert blocked_groups(80, 80, 10, 16, 16) == 5


def test_merged_groups_keep_their_channels_apart():
    """A merged group's weight is block-diagonal: each output channel still reads only its own group's input
    channels (the result does not change when another group's input does)."""
    g = grouped_graph(64, 64, 16, pads=1)
    conv, blocked = blocked_conv(g, 16)
    assert conv.op == "conv2d_nchwc" and conv.attrs["groups"] == 4
    a = RNG.standard_normal((1, 64, 9, 9)).astype(np.float32)
    changed = a.copy()
    changed[:, 4:8] += 1.0  # the second group's input channels
    before, after = blocked.evaluate(a)[0], blocked.evaluate(changed)[0]
    np.testing.assert_array_equal(np.delete(before, np.s_[4:8], axis=1), np.delete(after, np.s_[4:8], axis=1))
    assert not np.allclose(before[:, 4:8], after[:, 4:8])


def _network(block_channels=32, groups=4):
    """conv (groups 1) -> relu -> grouped conv -> relu -> conv (groups 1): the grouped one inside the blocked
    region."""
    g = Graph("net")
    x = g.add_input("x", (1, 8, 10, 10))
    y = g.add_node("relu", [g.add_node("conv2d", [x, g.add_constant("w1", weights(block_channels, 8, 3, 3))],
                                       dict(pads=1), name="c1")], name="r1")
    w2 = g.add_constant("w2", weights(block_channels, block_channels // groups, 3, 3))
    y = g.add_node("relu", [g.add_node("conv2d", [y, w2, g.add_constant("b2", weights(block_channels))],
                                       dict(pads=1, groups=groups), name="c2")], name="r2")
    g.set_outputs([g.add_node("conv2d", [y, g.add_constant("w3", weights(16, block_channels, 1, 1))], name="c3")])
    return g


def test_extract_tasks_takes_a_grouped_blocked_conv_without_transforms():
    g = _network()
    tasks, _ = ans.extract_tasks(g, "llvm", hardware_params=hardware(8), layout="NCHWc")
    descs = [t.desc for t in tasks]
    assert not any(d.startswith("conv2d") and "nchwc" not in d for d in descs), descs  # no NCHW convolution
    grouped = [t for t in tasks if "floordiv(ob, " in str(t.compute_dag)]
    assert len(grouped) == 1 and grouped[0].desc.startswith("conv2d_nchwc"), descs
    lowered = lower_graph(g, "llvm", hardware_params=hardware(8), layout="NCHWc")
    transforms = [n for n in lowered.graph.nodes if n.op == "layout_transform"]
    assert [n.inputs[0] for n in transforms] == ["x", "c3.nchw8c"]  # only at the graph's boundaries
    arrays = [RNG.standard_normal((1, 8, 10, 10)).astype(np.float32)]
    net = ans.graph.build(g, "llvm", hardware_params=hardware(8), verbose=False, layout="NCHWc")
    assert_close(net(*arrays), run_onnxruntime(g, arrays))


def test_expert_schedule_blocks_a_grouped_blocked_conv():
    g = grouped_graph(64, 64, 8, size=14)
    tasks, _ = ans.extract_tasks(g, "llvm", hardware_params=hardware(8), layout="NCHWc")
    task = next(t for t in tasks if t.desc.startswith("conv2d_nchwc"))
    state, reason, _ = ans.search.expert_schedule_info(task)
    assert state is not None, reason


def test_blocked_torch_runner_runs_grouped_convs():
    pytest.importorskip("torch")
    from autosched.graph.torch_runner import TorchGraph
    g = grouped_graph(64, 64, 8, bias=True, relu=True, residual=True)
    _, blocked = blocked_conv(g, 16)
    a = RNG.standard_normal((1, 64, 9, 9)).astype(np.float32)
    assert_close(TorchGraph(blocked)(a), blocked.evaluate(a))


def test_groups_one_keeps_its_compute():
    """groups = 1 reads the input block rc itself, as before grouped convolutions (tuning records key on it)."""
    x = te.placeholder((1, 4, 9, 9, 8), name="x")
    k = te.placeholder((2, 4, 3, 3, 8, 8), name="k")
    text = str(ans.ComputeDAG([x, k, ops.conv2d_nchwc(x, k, 1, 1)]))
    assert "PaddedInput[nn, rc, (yy + ry), (xx + rx), ri]*k[ob, rc, ry, rx, ri, oy]" in text
    k2 = te.placeholder((2, 2, 3, 3, 8, 8), name="k")
    grouped = str(ans.ComputeDAG([x, k2, ops.conv2d_nchwc(x, k2, 1, 1, groups=2)]))
    assert "PaddedInput[nn, ((floordiv(ob, 1)*2) + rc)" in grouped


def test_grouped_blocked_conv_refuses_groups_that_are_not_whole_blocks():
    x = te.placeholder((1, 6, 9, 9, 8), name="x")
    with pytest.raises(ValueError, match=r"groups=4 does not split the 6 input blocks of 8 channels of 'x'.*into "
                                         "whole blocks per group"):
        ops.conv2d_nchwc(x, te.placeholder((4, 1, 3, 3, 8, 8), name="k"), 1, 1, groups=4)
    with pytest.raises(ValueError, match="groups=2 does not split the 3 output blocks"):
        ops.conv2d_nchwc(x, te.placeholder((3, 3, 3, 3, 8, 8), name="k"), 1, 1, groups=2)
    with pytest.raises(ValueError, match=r"channel mismatch.*expects 2 blocks of 8 per group x 2 groups"):
        ops.conv2d_nchwc(x, te.placeholder((2, 2, 3, 3, 8, 8), name="k"), 1, 1, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive int, got 0"):
        ops.conv2d_nchwc(x, te.placeholder((2, 6, 3, 3, 8, 8), name="k"), 1, 1, groups=0)
    g = Graph("bad")
    v = g.add_input("v", (1, 6, 9, 9, 8))
    w = g.add_constant("w", weights(4, 1, 3, 3, 8, 8))
    with pytest.raises(ans.graph.GraphError, match="groups=4 does not split the 6 input blocks of 8 channels"):
        g.add_node("conv2d_nchwc", [v, w], dict(pads=1, groups=4))
    w3 = g.add_constant("w3", weights(4, 3, 3, 3, 8, 8))
    with pytest.raises(ans.graph.GraphError, match=r"bias \(4, 4\) does not match the output blocks \(4, 8\)"):
        g.add_node("conv2d_nchwc", [v, w3, g.add_constant("b", weights(4, 4))], dict(pads=1, groups=2))
    with pytest.raises(ans.graph.GraphError, match="groups must be >= 1"):
        g.add_node("conv2d_nchwc", [v, w3], dict(pads=1, groups=0))
