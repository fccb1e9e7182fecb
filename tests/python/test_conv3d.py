"""3-D convolution and pooling (video models, medical imaging): ONNX Conv / MaxPool / AveragePool /
GlobalAveragePool / GlobalMaxPool of 5-D input and PyTorch's Conv3d / MaxPool3d / AvgPool3d /
AdaptiveAvgPool3d are imported as conv3d / max_pool3d / avg_pool3d (or a reduction), compiled untuned with
graph.build and compared with onnxruntime and torch on awkward shapes: prime sizes, stride 2, asymmetric
padding, dilation, groups, bias, batch 2, a depth of 1, ceil mode. The ops' ONNX export and TorchGraph runners
are checked against the same answers."""
import numpy as np
import pytest

from autosched.graph import Graph, GraphError
from import_checks import check_onnx_import, check_torch_import, onnx_model

RNG = np.random.default_rng(5)


def _randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------- ONNX ----------------


def _check_onnx(model, feeds, tol=1e-4):
    return check_onnx_import(model, feeds, tol, reexport=True)


def _node(*args, **attrs):
    from onnx import helper
    return helper.make_node(*args, **attrs)


def test_onnx_conv_of_5d_input_is_conv3d():
    x, flat = _randn(2, 4, 5, 7, 6), _randn(1, 3, 1, 11, 13)
    inits = [("w", _randn(6, 4, 3, 3, 3)), ("b", _randn(6)), ("wg", _randn(6, 2, 2, 3, 1)),
             ("wf", _randn(5, 3, 1, 3, 3))]
    nodes = [_node("Conv", ["x", "w", "b"], ["strided"], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1]),
             _node("Conv", ["x", "wg"], ["grouped"], group=2, dilations=[2, 1, 1], pads=[1, 0, 2, 0, 1, 0]),
             _node("Conv", ["flat", "wf"], ["same"], auto_pad="SAME_UPPER", strides=[1, 2, 2])]
    graph = _check_onnx(onnx_model(nodes, [("x", x), ("flat", flat)], ["strided", "grouped", "same"], inits),
                        {"x": x, "flat": flat})
    assert [n.op for n in graph.nodes] == ["conv3d"] * 3
    assert [graph.shape(o) for o in graph.outputs] == [(2, 6, 3, 4, 3), (2, 6, 4, 6, 8), (1, 5, 1, 6, 7)]


def test_onnx_pooling_of_5d_input():
    x = _randn(2, 3, 5, 7, 11)
    nodes = [_node("MaxPool", ["x"], ["max"], kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1]),
             _node("MaxPool", ["x"], ["max_ceil"], kernel_shape=[2, 3, 2], strides=[2, 2, 3], ceil_mode=1),
             _node("MaxPool", ["x"], ["max_dilated"], kernel_shape=[2, 2, 3], dilations=[2, 1, 2],
                   pads=[0, 1, 1, 0, 0, 1]),
             _node("AveragePool", ["x"], ["avg"], kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 1]),
             _node("AveragePool", ["x"], ["avg_pad"], kernel_shape=[3, 3, 3], strides=[2, 2, 2],
                   pads=[1, 1, 1, 1, 1, 1], count_include_pad=1),
             _node("AveragePool", ["x"], ["avg_ceil"], kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1),
             _node("GlobalAveragePool", ["x"], ["global_avg"]),
             _node("GlobalMaxPool", ["x"], ["global_max"])]
    outputs = [n.output[0] for n in nodes]
    graph = _check_onnx(onnx_model(nodes, [("x", x)], outputs), {"x": x})
    assert [n.op for n in graph.nodes] == ["max_pool3d"] * 3 + ["avg_pool3d"] * 3 + ["reduce_mean", "reduce_max"]


# ---------------- PyTorch ----------------


def _check_torch(module, *inputs, tol=1e-4):
    return check_torch_import(module, *inputs, tol=tol, torch_runner=True)


def _torch():
    return pytest.importorskip("torch")


def _parallel(*modules):
    torch = _torch()

    class Parallel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.branches = torch.nn.ModuleList(modules)

        def forward(self, x):
            return tuple(m(x) for m in self.branches)
    return Parallel()


def test_torch_conv3d_modules():
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(0)
    module = _parallel(nn.Conv3d(4, 6, 3, stride=2, padding=1),
                       nn.Conv3d(4, 6, (2, 3, 1), groups=2, dilation=(2, 1, 1), padding=(1, 0, 1), bias=False),
                       nn.Conv3d(4, 5, (3, 1, 3), padding="same", dilation=(1, 1, 2)))
    graph = _check_torch(module, torch.randn(2, 4, 5, 7, 6))
    assert [n.op for n in graph.nodes] == ["conv3d"] * 3


def test_torch_conv3d_of_a_depth_of_one():
    torch = _torch()
    torch.manual_seed(1)
    conv = torch.nn.Conv3d(3, 5, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
    graph = _check_torch(torch.nn.Sequential(conv, torch.nn.ReLU()), torch.randn(1, 3, 1, 11, 13))
    assert graph.shape(graph.outputs[0]) == (1, 5, 1, 6, 7)


def test_torch_aten_convolution_of_5d_input():
    """aten.convolution (what core ATen decomposes conv3d into) with 3 spatial dims."""
    torch = _torch()

    class Convolution(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 1, 3, 2, 3), requires_grad=False)
            self.b = torch.nn.Parameter(torch.randn(4), requires_grad=False)

        def forward(self, x):
            return torch.ops.aten.convolution(x, self.w, self.b, [2, 1, 2], [1, 0, 1], [1, 2, 1], False, [0, 0, 0], 2)

    graph = _check_torch(Convolution(), torch.randn(2, 2, 7, 5, 9))
    assert [n.op for n in graph.nodes] == ["conv3d"]


def test_torch_pooling_3d_modules():
    torch = _torch()
    nn = torch.nn
    module = _parallel(nn.MaxPool3d(3, stride=2, padding=1), nn.MaxPool3d((2, 3, 2), stride=2, ceil_mode=True),
                       nn.MaxPool3d(2, dilation=(2, 1, 2), padding=(1, 0, 1)),
                       nn.AvgPool3d(3, stride=2, padding=1), nn.AvgPool3d(3, stride=2, padding=1,
                                                                       count_include_pad=False, ceil_mode=True),
                       nn.AvgPool3d((1, 2, 2)), nn.AdaptiveAvgPool3d(1), nn.AdaptiveAvgPool3d((5, 1, 1)))
    graph = _check_torch(module, torch.randn(2, 3, 5, 7, 11))
    assert [n.op for n in graph.nodes] == ["max_pool3d"] * 3 + ["avg_pool3d"] * 3 + ["reduce_mean", "avg_pool3d"]


def test_a_small_video_net_end_to_end():
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(2)
    net = nn.Sequential(nn.Conv3d(3, 8, 3, padding=1), nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
                        nn.Conv3d(8, 8, 3, stride=2, padding=1, groups=2), nn.ReLU(), nn.AdaptiveAvgPool3d(1),
                        nn.Flatten(), nn.Linear(8, 5))
    with torch.no_grad():
        net[1].running_mean.uniform_(-1, 1)
        net[1].running_var.uniform_(0.5, 2)
    _check_torch(net, torch.randn(2, 3, 4, 9, 9))


# ---------------- bad input ----------------


def test_bad_conv3d_and_pool3d_input_is_named():
    g = Graph("bad")
    x = g.add_input("x", (1, 4, 5, 5, 5))
    with pytest.raises(GraphError, match=r"weight \(O, C/groups, KD, KH, KW\) must have rank 5"):
        g.add_node("conv3d", [x, g.add_input("w", (6, 4, 3, 3))])
    with pytest.raises(GraphError, match="channel mismatch"):
        g.add_node("conv3d", [x, g.add_input("w2", (6, 3, 3, 3, 3))])
    with pytest.raises(GraphError, match="groups=4 does not divide the 6 output channels"):
        g.add_node("conv3d", [x, g.add_input("w3", (6, 1, 3, 3, 3))], dict(groups=4))
    with pytest.raises(GraphError, match=r"pads must be \(front, top, left, back, bottom, right\)"):
        g.add_node("max_pool3d", [x], dict(kernel=2, pads=(1, 1, 1, 1)))
    with pytest.raises(GraphError, match=r"x \(NCDHW\) must have rank 5"):
        g.add_node("avg_pool3d", [g.add_input("y", (1, 4, 5, 5))], dict(kernel=2))
    with pytest.raises(GraphError, match="depth: window of extent 7 does not fit"):
        g.add_node("max_pool3d", [x], dict(kernel=(7, 1, 1)))
