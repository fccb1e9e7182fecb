"""bfloat16 models end to end: PyTorch modules after ``.to(torch.bfloat16)`` (an MLP, a CNN, a transformer
encoder layer) imported with from_torch, and ONNX models whose initializers and values are BFLOAT16, built with
graph.build and run, against torch's own bfloat16 output.

The graph's numpy reference (Graph.evaluate: ml_dtypes arrays, each op computed in float32 and rounded once)
equals torch bit for bit on these models, but for attention (torch's fused kernel keeps the scores in float32,
the graph rounds them between its ops). A built network agrees with torch to within two bfloat16 units of
each value, plus half a unit of the output's largest value for values that cancel. The differences: the
convolutions round their sums before the bias is added (torch adds it in float32), fusion folds BatchNorm into
the convolution's weights (rounded to bfloat16), and erf (GELU) is a float32 polynomial within 4e-7, which is
many units of GELU's tiny values in its left tail. onnxruntime has no bfloat16 CPU kernels: the ONNX models
are compared with torch, and with onnxruntime where it can run them."""
import numpy as np
import pytest

import autosched as ans
from autosched import frontends
from autosched.deploy.torch_module import TorchModule

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

pytestmark = pytest.mark.needs_llvm

BF16 = ml_dtypes.bfloat16
nn = torch.nn


def as_numpy(tensor):
    return tensor.detach().contiguous().view(torch.int16).numpy().view(BF16)


def as_torch(array):
    return torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).view(torch.bfloat16)


def unit(values):
    """One bfloat16 unit in the last place of each value (8 significant bits)."""
    return np.exp2(np.floor(np.log2(np.maximum(np.abs(values), np.finfo(np.float32).tiny))) - 7)


def assert_close_in_units(got, want, units=2, share_beyond_one=0.02):
    """Every value within `units` bfloat16 units of its own plus one unit of the largest value (where a sum
    cancels, a value is small but its error is not), and at most `share_beyond_one` of the values more than
    one unit away."""
    got, want = np.asarray(got).astype(np.float32), np.asarray(want).astype(np.float32)
    error = np.abs(got - want)
    allowed = units * unit(want) + unit(np.abs(want).max())
    assert (error <= allowed).all(), (float((error / unit(want)).max()), got[error > allowed][:5],
                                      want[error > allowed][:5])
    assert (error > unit(want)).mean() <= share_beyond_one, (error > unit(want)).mean()


def import_and_build(model, x, exact_reference=True):
    """The model in bfloat16 imported, evaluated and built: (network, its output, torch's output). The graph's
    reference equals torch's output (exact_reference) or lies within a unit of it."""
    model = model.eval().to(torch.bfloat16)
    x = x.to(torch.bfloat16)
    graph = frontends.from_torch(model, (x,))
    assert graph.problems() == []
    assert {graph.dtype(v) for v in graph.inputs + graph.outputs} == {"bfloat16"}
    with torch.no_grad():
        want = as_numpy(model(x))
    (ref,) = graph.evaluate(as_numpy(x))
    assert ref.dtype == BF16
    if exact_reference:
        np.testing.assert_array_equal(ref.view(np.uint16), want.view(np.uint16))
    else:
        assert_close_in_units(ref, want)
    net = ans.graph.build(graph, "llvm", verbose=False)
    (got,) = net(as_numpy(x))
    assert got.dtype == BF16
    assert_close_in_units(got, ref, units=1, share_beyond_one=0)  # float32 sums in another order at most
    return net, got, want


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 13, 3, stride=2, padding=1)
        self.bn, self.fc = nn.BatchNorm2d(13), nn.Linear(13, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.relu(self.bn(self.conv2(x)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def test_mlp_matches_torch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(37, 64), nn.GELU(), nn.Linear(64, 10))
    net, got, want = import_and_build(model, torch.randn(3, 37))
    assert_close_in_units(got, want)
    # As a torch module: bfloat16 tensors in and out, sharing their bits with the arrays.
    with torch.no_grad():
        x = torch.randn(3, 37).to(torch.bfloat16)
        out = TorchModule(net)(x)
        assert out.dtype == torch.bfloat16
        assert_close_in_units(as_numpy(out), as_numpy(model(x)))


def test_cnn_matches_torch():
    torch.manual_seed(1)
    model = CNN()
    with torch.no_grad():  # BatchNorm statistics of a trained model, not the identity
        model.bn.running_mean.uniform_(-0.2, 0.2)
        model.bn.running_var.uniform_(0.5, 1.5)
    _, got, want = import_and_build(model, torch.randn(2, 3, 15, 15))
    assert_close_in_units(got, want)


def test_transformer_layer_matches_torch():
    import frontend_models
    model, x = frontend_models.encoder_layer(seed=2), torch.randn(2, 7, 32)
    # torch's float32 exp (softmax) and erf (GELU) differ from numpy's in their last bits, which sends a few
    # values to the other bfloat16 neighbour; later sums carry that on.
    _, got, want = import_and_build(model, x, exact_reference=False)
    assert_close_in_units(got, want)


def test_exported_network_keeps_its_bfloat16_weights(tmp_path):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))
    net, got, _ = import_and_build(model, torch.randn(2, 16))
    path = str(tmp_path / "mlp.so")
    net.export_library(path)
    loaded = ans.graph.load_module(path)
    x = as_numpy(torch.randn(2, 16).to(torch.bfloat16))
    np.testing.assert_array_equal(loaded(x)[0].view(np.uint16), net(x)[0].view(np.uint16))


# ---- ONNX ----

def bfloat16_onnx_model(float_io):
    """x @ W + b, Relu, @ W2 with BFLOAT16 initializers; float_io: float32 input and output, converted with Cast
    nodes (a float model converted to bfloat16), else BFLOAT16 input and output. Returns (model, weights)."""
    rng = np.random.default_rng(7)
    weights = {"W": rng.standard_normal((37, 24)).astype(BF16), "b": rng.standard_normal(24).astype(BF16),
               "W2": rng.standard_normal((24, 5)).astype(BF16)}
    io_type = TensorProto.FLOAT if float_io else TensorProto.BFLOAT16
    nodes = [helper.make_node("MatMul", ["xb", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "W2"], ["yb"])]
    if float_io:
        nodes = ([helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16)] + nodes +
                 [helper.make_node("Cast", ["yb"], ["y"], to=TensorProto.FLOAT)])
    else:
        nodes[0].input[0], nodes[-1].output[0] = "x", "y"
    graph = helper.make_graph(nodes, "bf16_mlp", [helper.make_tensor_value_info("x", io_type, (3, 37))],
                              [helper.make_tensor_value_info("y", io_type, (3, 5))],
                              [numpy_helper.from_array(w, name) for name, w in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model, weights


def onnxruntime_output(model, x):
    """onnxruntime's output, or None where it has no bfloat16 kernel for the model's operators."""
    ort = pytest.importorskip("onnxruntime")
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's own exception types (NOT_IMPLEMENTED)
        assert "NOT_IMPLEMENTED" in str(e), e
        return None
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("float_io", [True, False], ids=["cast_from_float32", "bfloat16_io"])
def test_onnx_bfloat16_model_matches_torch(float_io):
    model, w = bfloat16_onnx_model(float_io)
    graph = frontends.from_onnx(model)
    assert [graph.node(n.name).dtype for n in graph.nodes if n.op == "dense"] == ["bfloat16", "bfloat16"]
    x32 = np.random.default_rng(8).standard_normal((3, 37)).astype(np.float32)
    x = x32 if float_io else x32.astype(BF16)
    with torch.no_grad():
        t = torch.relu(torch.from_numpy(x32).to(torch.bfloat16) @ as_torch(w["W"]) + as_torch(w["b"]))
        want = as_numpy(t @ as_torch(w["W2"]))
    (ref,) = graph.evaluate(x)
    (got,) = ans.graph.build(graph, "llvm", verbose=False)(x)
    assert got.dtype == ref.dtype == (np.float32 if float_io else BF16)
    np.testing.assert_array_equal(ref.astype(BF16).view(np.uint16), want.view(np.uint16))
    assert_close_in_units(got.astype(BF16), want, units=1)
    from_ort = onnxruntime_output(model, x)
    if from_ort is not None:
        assert_close_in_units(np.asarray(from_ort).astype(BF16), want, units=1)


# ---- the command line's inputs ----

class _Signature:
    """What the command line knows of a model's inputs: names, dtypes and shapes."""

    def __init__(self, **inputs):
        self.inputs, self._inputs = list(inputs), inputs

    def dtype(self, name):
        return self._inputs[name][0]

    def shape(self, name):
        return self._inputs[name][1]


def test_command_line_inputs_of_bfloat16_models(tmp_path):
    from autosched.cli.files import CommandError, read_inputs
    from autosched.cli.run_report import fill_inputs
    signature = _Signature(x=("bfloat16", (2, 3)), y=("bfloat16", (4,)))
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3) / 3, np.array([1.5, -2, 1e38, 0.1], np.float32)
    path = str(tmp_path / "inputs.npz")
    np.savez(path, x=x.astype(BF16), y=y)  # .npz keeps a bfloat16 array as raw 2-byte values
    got_x, got_y = read_inputs(path, ["x", "y"], signature)
    assert got_x.dtype == got_y.dtype == BF16
    np.testing.assert_array_equal(got_x.view(np.uint16), x.astype(BF16).view(np.uint16))
    np.testing.assert_array_equal(got_y.view(np.uint16), y.astype(BF16).view(np.uint16))  # rounded, finite
    np.savez(path, x=x.astype(BF16), y=np.array([1, 2, 3, 1e39], np.float64))
    with pytest.raises(CommandError, match="beyond bfloat16's range"):
        read_inputs(path, ["x", "y"], signature)
    filled = fill_inputs(signature)
    assert [a.dtype for a in filled] == [BF16, BF16]
    values = filled[0].astype(np.float32)
    assert not np.array_equal(values, np.round(values))  # normal floats, not the integers of an index input
