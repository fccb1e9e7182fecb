"""The layout pass (graph/layout.py): every zoo network and the imported ONNX test models compute what they
computed before the pass and what onnxruntime computes, through the numpy reference and compiled by
graph.build(layout="NCHWc") (untuned); transforms sit only at the boundaries, never two in a row; channel
counts that are not a multiple of the block are padded and sliced off; extract_tasks and graph.build take the
same tasks; the blocked te builders refuse bad input by name."""
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import ops, te
from autosched.graph import Graph, zoo
from autosched.graph.extract import lower_graph
from autosched.graph.fusion import fold_batch_norm
from autosched.graph.layout import BLOCKED_OPS, block_for_target, convert_layout

RNG = np.random.default_rng(7)
# The blocked ops a float32 graph never gets (the uint8 x int8 convolution's: test_quantized_layout.py; the
# bfloat16 one's: test_bf16_dot.py).
FLOAT_FREE_OPS = {"conv2d_integer_nchwc", "conv2d_nchwc_bf16_dot"}

# The smallest inputs the zoo allows (the CNNs downsample 32 times).
ZOO = {"resnet18": dict(image_size=32, num_classes=10), "resnet50": dict(image_size=32, num_classes=10),
       "mobilenet_v2": dict(image_size=32, num_classes=10), "bert_layer": dict(seq_len=8),
       "lightglue_block": dict(num_keypoints=16, num_keypoints1=9)}
CNNS = ("resnet18", "resnet50", "mobilenet_v2")


def inputs_for(g):
    return [RNG.standard_normal(g.shape(v)).astype(np.float32) for v in g.inputs]


def assert_close(got, want, tol=1e-4):
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max())))


def run_onnxruntime(g, arrays):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    session = ort.InferenceSession(g.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(g.inputs, arrays)))


def transforms(g):
    return [n for n in g.nodes if n.op == "layout_transform"]


def assert_no_consecutive_transforms(g):
    for n in transforms(g):
        producer = g.producer(n.inputs[0])
        assert producer is None or producer.op != "layout_transform", f"{producer.name} -> {n.name}"


def convert(g, block, winograd=False):
    out = convert_layout(fold_batch_norm(g), block, winograd)
    assert out.inputs == g.inputs and out.outputs == g.outputs
    assert [out.shape(v) for v in out.outputs] == [g.shape(v) for v in g.outputs]
    assert_no_consecutive_transforms(out)
    return out


# ---------------- the zoo ----------------


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_keeps_its_outputs(name):
    g = zoo.get_model(name, **ZOO[name])
    arrays = inputs_for(g)
    want = g.evaluate(*arrays)
    assert_close(run_onnxruntime(g, arrays), want)
    for block in (8, 16, 5):
        blocked = convert(g, block)
        if name not in CNNS:
            assert blocked is fold_batch_norm(g) or blocked is g  # no convolution: nothing to convert
            continue
        ops_used = {n.op for n in blocked.nodes}
        assert {"conv2d_nchwc", "global_avg_pool2d_nchwc"} <= ops_used and "conv2d" not in ops_used
        assert "depthwise_conv2d_nchwc" in ops_used if name == "mobilenet_v2" else "max_pool2d_nchwc" in ops_used
        # the input's transform and the one before flatten: everything between stays blocked
        assert [blocked.producer(n.inputs[0]) is None for n in transforms(blocked)] == [True, False]
        assert_close(blocked.evaluate(*arrays), want)


@pytest.mark.parametrize("name", CNNS)
def test_zoo_cnn_builds_with_the_layout(name):
    g = zoo.get_model(name, **ZOO[name])
    arrays = inputs_for(g)
    want = run_onnxruntime(g, arrays)
    net = ans.graph.build(g, "llvm", verbose=False, layout="NCHWc")
    assert any(info.task.desc.startswith("conv2d_nchwc") for info in net.groups)
    assert_close(net(*arrays), want)
    if name == "resnet18":  # every 3x3 convolution of stride 1 by Winograd ("auto" takes none at this size)
        net = ans.graph.build(g, "llvm", verbose=False, layout="NCHWc", winograd=True)
        assert sum(info.task.desc.startswith("conv2d_winograd_nchwc") for info in net.groups) == 13
        assert_close(net(*arrays), want)


def test_networks_without_convolutions_are_left_as_they_are():
    g = zoo.get_model("bert_layer", **ZOO["bert_layer"])
    lowered = lower_graph(g, "llvm", layout="NCHWc")
    assert lowered.graph is g and lowered.block == block_for_target("llvm")
    assert convert_layout(g, 16) is g


# ---------------- imported ONNX models ----------------


def _import(proto):
    from autosched import frontends
    from autosched.frontends import UnsupportedOperatorWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        return frontends.from_onnx(proto)


def _ort_proto(proto, arrays):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})


def test_imported_resnet18_keeps_its_outputs():
    pytest.importorskip("onnx")
    pytest.importorskip("torch")
    import frontend_models as fm
    import torch
    x = torch.randn(1, 3, 32, 32)
    proto = fm.to_onnx(fm.resnet18(num_classes=10), [x], fold=False)  # batch norms kept: the pass folds them
    g = _import(proto)
    arrays = [x.numpy()]
    want = _ort_proto(proto, arrays)
    for block in (8, 16):
        assert_close(convert(g, block).evaluate(*arrays), want)
    net = ans.graph.build(g, "llvm", verbose=False, layout="NCHWc")
    assert_close(net(*arrays), want)


def _awkward_onnx():
    """Convolutions of 3, 20 and 12 channels (multiples of neither 8 nor 16) with a bias input and a bias Add,
    a depthwise convolution, an SE block (global pooling, 1x1 convolutions, Sigmoid, a broadcast Mul), Clip,
    Concats along channels (one whose first input is padded: NCHW only), max and average pooling in ceil mode,
    an Exp and a Div (on padded channels these must run in NCHW) and a Softmax over channels (NCHW only)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    def w(*shape, scale=0.3):
        return (RNG.standard_normal(shape) * scale).astype(np.float32)

    inits = {"w1": w(20, 3, 3, 3), "b1": w(20), "bias_add": w(1, 20, 1, 1), "dw": w(20, 1, 3, 3),
             "se1": w(4, 20, 1, 1), "se2": w(20, 4, 1, 1), "w2": w(12, 20, 1, 1), "w3": w(12, 3, 1, 1),
             "two": np.asarray([2.0], np.float32), "w4": w(16, 32, 3, 3), "w5": w(16, 20, 1, 1)}
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        n("Add", ["c1", "bias_add"], ["c1b"]),
        n("Relu", ["c1b"], ["r1"]),
        n("Conv", ["r1", "dw"], ["d1"], pads=[1, 1, 1, 1], group=20, strides=[2, 2]),
        n("Clip", ["d1", "zero", "six"], ["d1c"]),
        n("GlobalAveragePool", ["d1c"], ["gap"]),
        n("Conv", ["gap", "se1"], ["s1"]),
        n("Relu", ["s1"], ["s1r"]),
        n("Conv", ["s1r", "se2"], ["s2"]),
        n("Sigmoid", ["s2"], ["s2s"]),
        n("Mul", ["d1c", "s2s"], ["se"]),
        n("Conv", ["se", "w2"], ["c2"]),
        n("Conv", ["x", "w3"], ["c3"], strides=[2, 2]),
        n("Concat", ["c2", "c3"], ["cat"], axis=1),  # 12 + 12: padded in NCHW8c, so it runs in NCHW
        n("MaxPool", ["cat"], ["mp"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        n("Concat", ["se", "cat"], ["cat2"], axis=1),  # 20 + 24 channels
        n("Exp", ["c2"], ["e"]),
        n("Div", ["c3", "two"], ["half"]),
        n("Add", ["e", "half"], ["eh"]),
        n("AveragePool", ["eh"], ["ap"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        n("Softmax", ["cat2"], ["sm"], axis=1),
        n("Slice", ["sm", "s0", "s32", "ax1"], ["sm32"]),
        n("Conv", ["sm32", "w4"], ["out2"], pads=[1, 1, 1, 1]),
        n("Conv", ["se", "w5"], ["c5"]),
        n("Concat", ["c5", "c2"], ["cat3"], axis=1),  # 16 + 12: blocked in NCHW8c and NCHW16c
        n("MaxPool", ["r1"], ["mp1"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        n("AveragePool", ["se"], ["ap1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    ]
    consts = [numpy_helper.from_array(v, name=k) for k, v in inits.items()]
    consts += [numpy_helper.from_array(np.asarray(v, np.float32 if isinstance(v, float) else np.int64), name=k)
               for k, v in (("zero", 0.0), ("six", 6.0), ("s0", [0]), ("s32", [32]), ("ax1", [1]))]
    vi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 11, 13])]
    vo = [helper.make_tensor_value_info(v, TensorProto.FLOAT, s)
          for v, s in (("mp", [1, 24, 3, 3]), ("ap", [1, 12, 3, 4]), ("out2", [1, 16, 6, 7]), ("d1c", [1, 20, 6, 7]),
                       ("cat3", [1, 28, 6, 7]), ("mp1", [1, 20, 5, 6]), ("ap1", [1, 20, 4, 4]))]
    model = helper.make_model(helper.make_graph(nodes, "awkward", vi, vo, consts),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model


def test_channel_counts_not_divisible_by_the_block():
    proto = _awkward_onnx()
    g = _import(proto)
    arrays = [RNG.standard_normal((1, 3, 11, 13)).astype(np.float32)]
    want = _ort_proto(proto, arrays)
    assert_close(g.evaluate(*arrays), want)
    for block in (8, 16, 3):
        for winograd in (False, True):
            blocked = convert(g, block, winograd)
            assert_close(blocked.evaluate(*arrays), want)
            expected = BLOCKED_OPS - FLOAT_FREE_OPS - (set() if winograd else {"conv2d_winograd_nchwc"})
            assert expected <= {n.op for n in blocked.nodes}
    blocked = convert(g, 8)
    # 20 channels in NCHW8c: three blocks, the last half padding; the graph output d1c is sliced back
    assert blocked.shape(blocked.node("c1").name) == (1, 3, 11, 13, 8)
    assert blocked.node("d1c").op == "layout_transform" and blocked.node("d1c").attrs["channels"] == 20
    # exp and divide of padded values, softmax over channels: in NCHW
    for name in ("e", "half", "sm"):
        assert len(blocked.shape(name)) == 4, name
    assert blocked.node("se").op == "multiply" and len(blocked.shape("se")) == 5  # the SE scale broadcasts
    assert blocked.node("cat3.nchw8c").op == "concat" and blocked.shape("cat3.nchw8c") == (1, 4, 6, 7, 8)
    assert blocked.node("cat").op == "concat" and len(blocked.shape("cat")) == 4
    for winograd in (False, True):
        net = ans.graph.build(g, "llvm", verbose=False, layout="NCHWc", winograd=winograd)
        assert any(info.task.desc.startswith("conv2d_winograd_nchwc") for info in net.groups) == winograd
        assert_close(net(*arrays), want)


def test_padded_channels_are_zero_and_sliced_off():
    g = Graph("t")
    x = g.add_input("x", (1, 5, 2, 3))
    b = g.add_node("layout_transform", [x], dict(src_layout="NCHW", dst_layout="NCHW4c"), name="b")
    g.set_outputs([b, g.add_node("layout_transform", [b], dict(src_layout="NCHW4c", dst_layout="NCHW",
                                                                channels=5), name="back")])
    a = RNG.standard_normal((1, 5, 2, 3)).astype(np.float32)
    want_b = np.zeros((1, 2, 2, 3, 4), np.float32)
    for c in range(5):
        want_b[:, c // 4, :, :, c % 4] = a[:, c]
    for got_b, back in (g.evaluate(a), ans.graph.build(g, "llvm", verbose=False)(a)):
        np.testing.assert_array_equal(got_b, want_b)
        np.testing.assert_array_equal(back, a)


def test_graph_outputs_inside_the_blocked_region_and_shared_weights():
    g = Graph("t")
    x = g.add_input("x", (1, 6, 7, 7))
    w = g.add_constant("w", RNG.standard_normal((6, 6, 3, 3)).astype(np.float32))
    y1 = g.add_node("relu", [g.add_node("conv2d", [x, w], dict(pads=1), name="c1")], name="y1")
    y2 = g.add_node("conv2d", [y1, w], dict(pads=1), name="c2")  # the same weight, blocked once
    g.set_outputs([y1, g.add_node("add", [y2, y1], name="y"), y1])
    blocked = convert(g, 4)
    assert sum(k.startswith("w.") for k in blocked.constants) == 1
    assert blocked.node("y1").op == "layout_transform" and len(transforms(blocked)) == 3
    a = RNG.standard_normal((1, 6, 7, 7)).astype(np.float32)
    want = g.evaluate(a)
    assert_close(blocked.evaluate(a), want)
    assert_close(ans.graph.build(g, "llvm", verbose=False, layout="NCHWc")(a), want)


def test_blocked_ops_on_torch():
    pytest.importorskip("torch")
    from autosched.graph.torch_runner import TorchGraph
    g = _import(_awkward_onnx())
    blocked = convert(g, 8, winograd=True)
    assert BLOCKED_OPS - FLOAT_FREE_OPS <= {n.op for n in blocked.nodes}
    a = RNG.standard_normal((1, 3, 11, 13)).astype(np.float32)
    assert_close(TorchGraph(blocked)(a), blocked.evaluate(a))


# ---------------- the option ----------------


def test_extract_tasks_and_build_take_the_same_tasks():
    g = zoo.get_model("resnet18", **ZOO["resnet18"])
    tasks, weights = ans.extract_tasks(g, "llvm", layout="NCHWc")
    plain, _ = ans.extract_tasks(g, "llvm", layout="NCHW")
    assert sum(weights) == len(lower_graph(g, "llvm", layout="NCHWc").groups)
    assert any(t.desc.startswith("conv2d_nchwc") for t in tasks)
    assert not any("nchwc" in t.desc for t in plain)
    # "auto", the default, is the blocked layout on a CPU
    assert [t.workload_key for t in ans.extract_tasks(g, "llvm")[0]] == [t.workload_key for t in tasks]
    for layout, expected in (("NCHWc", tasks), ("NCHW", plain), ("auto", tasks)):
        net = ans.graph.build(g, "llvm", verbose=False, layout=layout)
        assert {t.workload_key for t in expected} == {info.task.workload_key for info in net.groups}
    with pytest.raises(ValueError, match="layout must be one of 'auto', 'NCHW', 'NCHWc', got 'NHWC'"):
        ans.extract_tasks(g, "llvm", layout="NHWC")
    with pytest.raises(ValueError, match="block must be a positive int"):
        convert_layout(g, 0)


def test_auto_is_off_on_gpus():
    g = zoo.get_model("resnet18", **ZOO["resnet18"])
    assert lower_graph(g, "opencl", layout="auto").block is None
    assert lower_graph(g, "llvm", layout="auto").block == block_for_target("llvm")
    assert lower_graph(g, "llvm", layout="NCHW").block is None


def test_block_follows_the_vector_width():
    assert block_for_target("llvm", ans.HardwareParams(-1, 32, 64, 0, 0, 0, 0, 0)) == 8
    assert block_for_target("llvm", ans.HardwareParams(-1, 64, 64, 0, 0, 0, 0, 0)) == 16
    assert block_for_target("llvm") == ans.Target("llvm").hardware_params.vector_unit_bytes // 4
    g = zoo.get_model("resnet18", **ZOO["resnet18"])
    tasks, _ = ans.extract_tasks(g, "llvm", hardware_params=ans.HardwareParams(-1, 32, 64, 0, 0, 0, 0, 0),
                                 layout="NCHWc")
    conv = next(t for t in tasks if t.desc.startswith("conv2d_nchwc"))
    assert conv.compute_dag.tensors[-1].shape[-1] == 8


# ---------------- the te builders refuse bad input ----------------


def test_blocked_te_builders_refuse_bad_input():
    x5 = te.placeholder((1, 2, 5, 5, 4), name="x5")
    with pytest.raises(ValueError, match="channel mismatch: data 'x5'.*2 blocks of 4 channels, kernel 'k'.*3 "
                                         "blocks of 4"):
        ops.conv2d_nchwc(x5, te.placeholder((1, 3, 3, 3, 4, 8), name="k"), 1, 1)
    with pytest.raises(ValueError, match="source and destination layouts are the same"):
        ops.layout_transform(x5, 4, 4)
    with pytest.raises(ValueError, match="has blocks of 4 channels, not 8"):
        ops.layout_transform(x5, 8, 0)
    with pytest.raises(ValueError, match=r"channels=3 does not fit 'x5'"):
        ops.layout_transform(x5, 4, 0, channels=3)
    with pytest.raises(ValueError, match="depthwise_conv2d_nchwc: channel mismatch"):
        ops.depthwise_conv2d_nchwc(x5, te.placeholder((2, 3, 3, 8), name="k"), 1, 1)
    g = Graph("bad")
    v = g.add_input("v", (1, 8, 4, 4))
    with pytest.raises(ans.graph.GraphError, match="layout must be 'NCHW' or 'NCHW<x>c'"):
        g.add_node("layout_transform", [v], dict(src_layout="NCHW", dst_layout="NHWC"))
    with pytest.raises(ans.graph.GraphError, match="channels=9 does not fit"):
        g.add_node("layout_transform", [v], dict(src_layout="NCHW", dst_layout="NCHW4c", channels=9))
