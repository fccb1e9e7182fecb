"""from_torch of PT2E-quantized models: small models written here, quantized by torchao's prepare_pt2e /
convert_pt2e (X86InductorQuantizer: uint8 activations, per-channel weights, static, reduce_range or dynamic;
XNNPACKQuantizer: int8 activations, per-channel or per-tensor weights, static or dynamic), imported, built
untuned for llvm and compared with the converted module on a random input. A quantized output is within one step
of its scale; a float output (X86's heads) within what one step of the head's quantized input moves it (static)
or equal up to float rounding (dynamic); Graph.evaluate agrees with the built graph. The integer path is checked
to be the one taken (conv2d_integer / matmul_integer; no float conv2d or dense, nor matmul where the quantizer
quantized the products), and the weights to stay int8 constants. The quantize, dequantize and choose_qparams ops
equal torch's bit for bit, near-ties included; a relu folds into the output's zero point; a pattern fusion does
not take runs in float; unsupported quantized ops are named; eager-mode quantized modules are refused with a
pointer to PT2E."""
import functools
import logging
import warnings

import numpy as np
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from autosched.graph import build

torch = pytest.importorskip("torch")
logging.getLogger("torchao").setLevel(logging.ERROR)  # its CUDA kernels do not load on a CPU build of torch
pt2e = pytest.importorskip("torchao.quantization.pt2e.quantize_pt2e")
x86 = pytest.importorskip("torchao.quantization.pt2e.quantizer.x86_inductor_quantizer")
xnnpack = pytest.importorskip("torchao.testing.pt2e._xnnpack_quantizer")
nn = torch.nn
qd = torch.ops.quantized_decomposed  # registered by torch.ao.quantization.fx._decomposed, which torchao imports

pytestmark = [pytest.mark.needs_llvm,
              pytest.mark.filterwarnings("ignore:XNNPACKQuantizer is deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:The input of maxpool2d is not quantized:UserWarning")]


class ConvNet(nn.Module):
    """Two 3x3 convolutions (a relu, a residual add), a depthwise one of stride 2, max and average pooling, a
    Linear head."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, 12, 3, padding=1), nn.Conv2d(12, 12, 3, padding=1)
        self.depthwise = nn.Conv2d(12, 12, 3, stride=2, padding=1, groups=12)
        self.head = nn.Linear(12, 5)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        y = torch.relu(self.conv2(y) + y)
        y = torch.relu(self.depthwise(y))
        y = nn.functional.adaptive_avg_pool2d(nn.functional.max_pool2d(y, 2), 1)
        return self.head(y.flatten(1))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(37, 13), nn.Linear(13, 7)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Block(nn.Module):
    """One attention head (its two products of activations, softmax), a residual, a feed-forward of 29 with GELU."""

    def __init__(self, width=16, hidden=29):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        attention = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) / 4.0, dim=-1)
        h = x + self.o(attention @ self.v(x))
        return h + self.ff2(nn.functional.gelu(self.ff1(h)))


INPUTS = {ConvNet: (2, 3, 9, 9), MLP: (3, 37), Block: (2, 5, 16)}


def x86_quantizer(dynamic=False, reduce_range=False, matmul=False):
    quantizer = x86.X86InductorQuantizer()
    config = x86.get_default_x86_inductor_quantization_config(is_dynamic=dynamic, reduce_range=reduce_range)
    quantizer.set_global(config)
    if matmul:  # the products of two activations too
        quantizer.set_function_type_qconfig(torch.matmul, config)
    return quantizer


def xnnpack_quantizer(per_channel=True, dynamic=False):
    quantizer = xnnpack.XNNPACKQuantizer()
    quantizer.set_global(xnnpack.get_symmetric_quantization_config(is_per_channel=per_channel, is_dynamic=dynamic))
    return quantizer


def quantized(model_class, quantizer, seed=0):
    """(the converted module, its exported program, an input), calibrated on a few random inputs."""
    torch.manual_seed(seed)
    model = model_class().eval()
    x = torch.randn(INPUTS[model_class])
    prepared = pt2e.prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
    for _ in range(3):
        prepared(torch.randn_like(x))
    converted = pt2e.convert_pt2e(prepared)
    return converted, torch.export.export(converted, (x,)), torch.randn_like(x)


def output_step(program):
    """One quantization step of the output: the scale of the dequantize that computes it. A float output (X86
    leaves its heads float) moves by at most this when every element of the quantized inputs of the Linears that
    reach it through adds moves by one step: the sum over those heads of the input's scale times the largest L1
    norm of a row of the dequantized weight."""
    tensors = dict(program.state_dict, **program.constants)
    placeholders = {s.arg.name: tensors[s.target] for s in program.graph_signature.input_specs if s.target in tensors}

    def constant(node):  # a placeholder's tensor, or a dequantize of them
        if node.op == "placeholder":
            return placeholders[node.name]
        return node.target(*[constant(a) if isinstance(a, torch.fx.Node) else a for a in node.args])

    def step(node):
        if node.target == torch.ops.aten.add.Tensor:
            return sum(step(a) for a in node.args if isinstance(a, torch.fx.Node))
        if node.target != torch.ops.aten.linear.default:
            return 0.0
        return float(node.args[0].args[1]) * float(constant(node.args[1]).abs().sum(dim=1).max())

    out = program.graph.output_node().args[0][0]
    if out.target == qd.dequantize_per_tensor.default:
        return float(out.args[1])
    return step(out)


def ops_of(graph):
    return [n.op for n in graph.nodes]


def check(converted, program, x, fused_ops):
    """Imports the converted module (no unsupported op), builds it and runs it on x: (graph, |built - module| and
    |built - Graph.evaluate| in output steps). `fused_ops`: {graph op: how many the graph must have}."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_torch(converted, (x,))
    ops = ops_of(graph)
    assert {op: ops.count(op) for op in fused_ops} == fused_ops
    assert not {"conv2d", "dense"} & set(ops)  # every convolution and Linear runs on integers
    want = converted(x).detach().numpy()
    (got,) = build(graph, "llvm", verbose=False)(x.numpy())
    (reference,) = graph.evaluate(x.numpy())
    assert got.shape == want.shape and got.dtype == want.dtype
    step = output_step(program)
    # a difference of two dequantized float32 values is a whole number of steps up to rounding
    vs_torch, vs_reference = (round(float(np.abs(got - other).max()) / step, 3) for other in (want, reference))
    return graph, vs_torch, vs_reference


# name: (quantizer, requantize ops); quantizers are made in the test (XNNPACKQuantizer warns that it is deprecated)
STATIC_CONV_NET = {
    "x86": (x86_quantizer, 1),  # conv1 -> relu -> quantize: requantize; conv2 (-> add), depthwise, head: float out
    "x86_reduce_range": (functools.partial(x86_quantizer, reduce_range=True), 1),
    "xnnpack_per_channel": (xnnpack_quantizer, 4),
    "xnnpack_per_tensor": (functools.partial(xnnpack_quantizer, per_channel=False), 4),
}


@pytest.mark.parametrize("name", sorted(STATIC_CONV_NET))
def test_conv_net_quantized_statically(name):
    quantizer, requantizes = STATIC_CONV_NET[name]
    graph, vs_torch, vs_reference = check(*quantized(ConvNet, quantizer()), {
        "conv2d_integer": 3, "matmul_integer": 1, "requantize": requantizes})
    if name == "x86_reduce_range":  # [0, 127] of uint8: a minimum after each quantize
        assert ops_of(graph).count("minimum") == 4
    # the weights stay the int8 constants PT2E folded them into; no float copy of them is made
    weights = [graph.constants.get(n.inputs[1]) for n in graph.nodes if n.op.endswith("_integer")]
    assert all(w is not None and w.dtype == np.int8 for w in weights)
    assert all(c.dtype != np.float32 or c.size < 100 for c in graph.constants.values())
    assert vs_torch <= 1.0 and vs_reference <= 1.0


@pytest.mark.parametrize("name", ["x86", "xnnpack"])
def test_mlp_quantized_statically(name):
    quantizer = x86_quantizer() if name == "x86" else xnnpack_quantizer()
    converted, program, x = quantized(MLP, quantizer)
    graph, vs_torch, vs_reference = check(converted, program, x, {"matmul_integer": 2,
                                                                  "requantize": 1 if name == "x86" else 2})
    assert vs_torch <= 1.0 and vs_reference <= 1.0
    if name == "xnnpack":  # quantize -> two integer layers -> dequantize: the same integers everywhere
        (got,) = build(graph, "llvm", verbose=False)(x.numpy())
        np.testing.assert_array_equal(got, graph.evaluate(x.numpy())[0])


def test_block_quantized_statically():
    """XNNPACK quantizes the Linears; X86 with a matmul config the two products of activations too."""
    _, vs_torch, vs_reference = check(*quantized(Block, xnnpack_quantizer()), {"matmul_integer": 6, "matmul": 2})
    assert vs_torch <= 1.0 and vs_reference <= 1.0
    _, vs_torch, vs_reference = check(*quantized(Block, x86_quantizer(matmul=True)),
                                      {"matmul_integer": 8, "matmul": 0})
    assert vs_torch <= 1.0 and vs_reference <= 1.0


DYNAMIC = {
    "conv_net_x86": (ConvNet, functools.partial(x86_quantizer, dynamic=True), {"conv2d_integer": 3,
                                                                               "matmul_integer": 1}),
    "mlp_xnnpack": (MLP, functools.partial(xnnpack_quantizer, dynamic=True), {"matmul_integer": 2}),
    "block_x86": (Block, functools.partial(x86_quantizer, dynamic=True, matmul=True), {"matmul_integer": 8,
                                                                                      "matmul": 0}),
}


@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_quantized_dynamically(name):
    """choose_qparams -> quantize -> dequantize of each activation (with run-time scales) -> the integer op ->
    dequantize_linear + bias: float outputs."""
    model_class, quantizer, fused_ops = DYNAMIC[name]
    converted, program, x = quantized(model_class, quantizer())
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_torch(program)
    ops = ops_of(graph)
    assert {op: ops.count(op) for op in fused_ops} == fused_ops and "dense" not in ops
    assert ops.count("reduce_min") == ops.count("reduce_max") > 0
    want = converted(x).detach().numpy()
    (got,) = build(graph, "llvm", verbose=False)(x.numpy())
    tolerance = dict(rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, **tolerance)
    np.testing.assert_allclose(graph.evaluate(x.numpy())[0], want, **tolerance)


class QuantOps(nn.Module):
    """Every form of the quantized_decomposed ops PT2E writes, on activations."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scales", torch.tensor([0.5, 0.25, 0.1, 1 / 3]))
        self.register_buffer("zero_points", torch.tensor([0, 3, -2, 5]))

    def forward(self, x):
        per_tensor = qd.quantize_per_tensor(x, 0.0070881242863833, 3, 0, 127, torch.uint8)  # reduce_range
        per_channel = qd.quantize_per_channel(x, self.scales, self.zero_points, 1, -128, 127, torch.int8)
        scale, zero_point = qd.choose_qparams.tensor(x, -128, 127, 2 ** -12, torch.int8)
        dynamic = qd.quantize_per_tensor.tensor(x, scale, zero_point, -128, 127, torch.int8)
        return (per_tensor, qd.dequantize_per_tensor(per_tensor, 0.0070881242863833, 3, 0, 127, torch.uint8),
                per_channel, qd.dequantize_per_channel(per_channel, self.scales, self.zero_points, 1, -128, 127,
                                                       torch.int8),
                dynamic, qd.dequantize_per_tensor.tensor(dynamic, scale, zero_point, -128, 127, torch.int8))


def near_halves(scale, count):
    """Values at and one float32 unit beside (k + 1/2) * scale: x * (1 / scale) and x / scale round differently
    for many of them, and rounding halves to even differs from rounding them away from zero."""
    halves = ((np.arange(count) - count // 2 + 0.5) * scale).astype(np.float32)
    return np.concatenate([halves, np.nextafter(halves, np.float32(np.inf)),
                           np.nextafter(halves, np.float32(-np.inf))])


def test_quantize_ops_equal_torch_bit_for_bit():
    x = np.random.default_rng(3).standard_normal((2, 4, 9, 10)).astype(np.float32)
    x[0].reshape(4, -1)[:, :90] = near_halves(0.0070881242863833, 30)  # every channel
    x[1, 0].reshape(-1)[:90] = near_halves(0.5, 30)  # per channel: exact halves of the first channel's scale
    model = QuantOps()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_torch(model, (torch.from_numpy(x),))
    want = [t.numpy() for t in model(torch.from_numpy(x))]
    got = build(graph, "llvm", verbose=False)(x)
    for value, built, reference in zip(want, got, graph.evaluate(x)):
        assert built.dtype == value.dtype
        np.testing.assert_array_equal(built, value)
        np.testing.assert_array_equal(reference, value)


class ConvRelu(nn.Module):
    """conv2d + relu between dequantize and quantize, written by hand: an output zero point above quant_min (the
    relu is then a maximum with it), weight zero points other than 0. padding="same" (conv2d.padding) is not
    fused: it runs as dequantize, float conv2d, quantize."""

    def __init__(self, padding):
        super().__init__()
        torch.manual_seed(5)
        self.padding = padding
        self.register_buffer("weight", torch.randint(-127, 128, (6, 3, 3, 3), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(6) * 0.01 + 0.001)
        self.register_buffer("zero_points", torch.randint(-3, 4, (6,)))
        self.register_buffer("bias", torch.randn(6) * 0.1)

    def forward(self, x):
        x = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, 0.02, 128, 0, 255, torch.uint8), 0.02, 128, 0, 255,
                                     torch.uint8)
        weight = qd.dequantize_per_channel(self.weight, self.scales, self.zero_points, 0, -128, 127, torch.int8)
        y = torch.relu(nn.functional.conv2d(x, weight, self.bias, padding=self.padding))
        return qd.dequantize_per_tensor(qd.quantize_per_tensor(y, 0.01, 20, 0, 255, torch.uint8), 0.01, 20, 0, 255,
                                        torch.uint8)


@pytest.mark.parametrize("padding", [1, "same"])
def test_conv_relu_with_zero_points(padding):
    model, x = ConvRelu(padding), torch.randn(2, 3, 7, 7)
    graph = frontends.from_torch(model, (x,))
    fused = padding == 1
    assert ("conv2d_integer" in ops_of(graph)) == fused and ("conv2d" in ops_of(graph)) != fused
    (got,) = build(graph, "llvm", verbose=False)(x.numpy())
    want = model(x).numpy()
    assert want.min() == 0 and float(np.abs(got - want).max()) <= 0.01 * 1.001  # one step


class PerToken(nn.Module):
    def forward(self, x):
        scale, zero_point = qd.choose_qparams_per_token_asymmetric(x, torch.int8)
        return qd.quantize_per_token(x, scale, zero_point, -128, 127, torch.int8)


def test_unsupported_quantized_ops_are_named():
    with pytest.warns(UnsupportedOperatorWarning, match="quantized_decomposed::quantize_per_token"):
        graph = frontends.from_torch(PerToken(), (torch.randn(3, 8),))
    reasons = {name: why for name, _, why in graph.problems()}
    assert "per-token and grouped quantization are not supported" in reasons["quantize_per_token"]


def test_eager_quantized_modules_are_refused():
    """quantize_dynamic's modules hold packed weights torch.export cannot export: the error says so and points to
    PT2E."""
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU()).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation
        eager = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    with pytest.raises(ValueError, match=r"'0' is an eager-mode quantized module \(torch.ao.nn.quantized.dynamic.*"
                                         r"Linear\).*torch.export cannot export.*prepare_pt2e"):
        frontends.from_torch(eager, (torch.randn(2, 8),))
