"""Small float models written with onnx.helper and quantized by onnxruntime.quantization for the quantized
import tests: a conv net (a residual add, max and average pooling, a depthwise convolution, a sigmoid, global
average pooling and a Gemm head), two branches (LeakyRelu, Sigmoid, Concat, a broadcast Mul), an MLP (K = 37, 23, 13: not multiples of 4) and a transformer encoder layer
(two heads, attention's two products of activations, softmax, LayerNorm, a feed-forward of 29 units).

    model = quantize(conv_net(), "QDQ", per_channel=True, activation="int8", reduce_range=True)

Shapes and channel counts are awkward (3 and 12 channels, 9 x 9 images, a sequence of 7, prime sizes)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(17)
OPSET = 17


def _model(nodes, name, x_shape, y_shape, inits):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class _Weights:
    def __init__(self):
        self.inits = []

    def __call__(self, name, shape, scale=0.3):
        self.inits.append(numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name


def conv_net(channels=3, size=9, width=12, classes=10):
    w = _Weights()
    node = helper.make_node
    nodes = [
        node("Conv", ["x", w("w1", (width, channels, 3, 3)), w("b1", (width,), 0.1)], ["c1"], pads=[1, 1, 1, 1],
             name="conv1"),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        node("Conv", ["p1", w("w2", (width, width, 3, 3), 0.15), w("b2", (width,), 0.1)], ["c2"],
             pads=[1, 1, 1, 1], name="conv2"),
        node("Add", ["c2", "p1"], ["a2"], name="residual"),
        node("Relu", ["a2"], ["r2"], name="relu2"),
        node("Conv", ["r2", w("w3", (width, 1, 3, 3)), w("b3", (width,), 0.1)], ["c3"], pads=[1, 1, 1, 1],
             group=width, name="depthwise"),
        node("Sigmoid", ["c3"], ["s3"], name="sigmoid"),
        node("AveragePool", ["s3"], ["ap"], kernel_shape=[2, 2], name="avgpool"),
        node("GlobalAveragePool", ["ap"], ["g"], name="gap"),
        node("Flatten", ["g"], ["f"], name="flatten"),
        node("Gemm", ["f", w("wf", (classes, width)), w("bf", (classes,), 0.1)], ["y"], transB=1, name="fc"),
    ]
    return _model(nodes, "conv_net", [1, channels, size, size], [1, classes], w.inits)


def shared_bias(channels=4, size=7, width=8, bias=0.0):
    """Two convolutions whose biases are one tensor, the second reading it through an Identity, as torch's
    exporter shares equal initializers (the zero biases of batch norms folded at their initial values)."""
    w = _Weights()
    node = helper.make_node
    nodes = [
        node("Conv", ["x", w("w1", (width, channels, 3, 3)), w.const("b", np.full(width, bias, np.float32))], ["c1"],
             pads=[1, 1, 1, 1], name="conv1"),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("Identity", ["b"], ["b_shared"], name="share"),
        node("Conv", ["r1", w("w2", (width, width, 3, 3), 0.15), "b_shared"], ["c2"], pads=[1, 1, 1, 1],
             name="conv2"),
        node("Relu", ["c2"], ["y"], name="relu2"),
    ]
    return _model(nodes, "shared_bias", [1, channels, size, size], [1, width, size, size], w.inits)


def branches(channels=5, size=7, width=6):
    """Two convolutions of one input, a LeakyRelu on one and a Sigmoid on the other, concatenated along the
    channels, then a Mul by the input's first channel (broadcast)."""
    w = _Weights()
    node = helper.make_node
    nodes = [
        node("Conv", ["x", w("wa", (width, channels, 1, 1)), w("ba", (width,), 0.1)], ["ca"], name="conv_a"),
        node("LeakyRelu", ["ca"], ["la"], alpha=0.1, name="leaky"),
        node("Conv", ["x", w("wb", (width, channels, 3, 3)), w("bb", (width,), 0.1)], ["cb"], pads=[1, 1, 1, 1],
             name="conv_b"),
        node("Sigmoid", ["cb"], ["sb"], name="sigmoid"),
        node("Concat", ["la", "sb"], ["cat"], axis=1, name="concat"),
        node("Slice", ["x", w.const("starts", np.int64([0])), w.const("ends", np.int64([1])),
                       w.const("axes", np.int64([1]))], ["first"]),
        node("Mul", ["cat", "first"], ["y"], name="gate"),
    ]
    return _model(nodes, "branches", [1, channels, size, size], [1, 2 * width, size, size], w.inits)


def mlp(batch=3, sizes=(37, 23, 13, 5)):
    w = _Weights()
    nodes, prev = [], "x"
    for k, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        nodes.append(helper.make_node("MatMul", [prev, w(f"w{k}", (n_in, n_out))], [f"mm{k}"], name=f"fc{k}"))
        out = "y" if k == len(sizes) - 2 else f"h{k}"
        nodes.append(helper.make_node("Add", [f"mm{k}", w(f"b{k}", (n_out,), 0.1)], [out], name=f"bias{k}"))
        if out != "y":
            nodes.append(helper.make_node("Relu", [out], [f"r{k}"], name=f"relu{k}"))
            prev = f"r{k}"
    return _model(nodes, "mlp", [batch, sizes[0]], [batch, sizes[-1]], w.inits)


def encoder(seq=7, d=20, heads=2, ff=29):
    """One post-norm transformer encoder layer of batch 1."""
    w, nodes, head = _Weights(), [], d // heads
    node = helper.make_node

    def linear(x, n_in, n_out, name):
        nodes.append(node("MatMul", [x, w(name + ".w", (n_in, n_out))], [name + ".mm"], name=name))
        nodes.append(node("Add", [name + ".mm", w(name + ".b", (n_out,), 0.1)], [name + ".out"], name=name + ".bias"))
        return name + ".out"

    def split_heads(x, name):  # (1, seq, d) -> (1, heads, seq, head)
        target = w.const(name + ".shape", np.array([1, seq, heads, head], np.int64))
        nodes.append(node("Reshape", [x, target], [name + ".r"]))
        nodes.append(node("Transpose", [name + ".r"], [name], perm=[0, 2, 1, 3]))
        return name

    q, k, v = (split_heads(linear("x", d, d, n), n + "h") for n in "qkv")
    nodes += [node("Transpose", [k], ["kT"], perm=[0, 1, 3, 2]),
              node("MatMul", [q, "kT"], ["scores"], name="qk"),
              node("Mul", ["scores", w.const("scale", np.float32(1 / np.sqrt(head)))], ["scaled"]),
              node("Softmax", ["scaled"], ["probs"], axis=-1, name="softmax"),
              node("MatMul", ["probs", v], ["context"], name="pv"),
              node("Transpose", ["context"], ["context.t"], perm=[0, 2, 1, 3]),
              node("Reshape", ["context.t", w.const("merge", np.array([1, seq, d], np.int64))], ["merged"])]
    nodes.append(node("Add", ["x", linear("merged", d, d, "o")], ["res1"]))
    nodes.append(node("LayerNormalization", ["res1", w("ln1.g", (d,)), w("ln1.b", (d,), 0.1)], ["ln1"], axis=-1))
    nodes.append(node("Relu", [linear("ln1", d, ff, "ff1")], ["ff1.relu"]))
    nodes.append(node("Add", ["ln1", linear("ff1.relu", ff, d, "ff2")], ["res2"]))
    nodes.append(node("LayerNormalization", ["res2", w("ln2.g", (d,)), w("ln2.b", (d,), 0.1)], ["y"], axis=-1))
    return _model(nodes, "encoder", [1, seq, d], [1, seq, d], w.inits)


def input_shape(model):
    return tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)


class _Calibration:
    """onnxruntime's CalibrationDataReader protocol: a few random batches of the model's input."""

    def __init__(self, shape, batches=4):
        self.batches = iter([{"x": RNG.standard_normal(shape).astype(np.float32)} for _ in range(batches)])

    def get_next(self):
        return next(self.batches, None)


def _quantization():
    return pytest.importorskip("onnxruntime.quantization")


def quantize(model, fmt, per_channel=False, activation="uint8", reduce_range=True, tmp_path=None):
    """`model` quantized by onnxruntime's quantize_static in format `fmt` ("QDQ" or "QOperator"), weights int8,
    activations `activation`. reduce_range: 7-bit weights, which onnxruntime's u8 x s8 kernels compute exactly on
    CPUs without VNNI (their int16 pairs of products saturate otherwise)."""
    q = _quantization()
    src, dst = tmp_path / "float.onnx", tmp_path / f"{fmt}.onnx"
    onnx.save(model, str(src))
    q.quantize_static(str(src), str(dst), _Calibration(input_shape(model)),
                      quant_format=getattr(q.QuantFormat, fmt), per_channel=per_channel,
                      activation_type=q.QuantType.QInt8 if activation == "int8" else q.QuantType.QUInt8,
                      weight_type=q.QuantType.QInt8, reduce_range=reduce_range)
    return onnx.load(str(dst))


def quantize_dynamic(model, tmp_path):
    """`model` quantized by onnxruntime's quantize_dynamic (DynamicQuantizeLinear -> MatMulInteger), 7-bit
    weights."""
    q = _quantization()
    src, dst = tmp_path / "float.onnx", tmp_path / "dynamic.onnx"
    onnx.save(model, str(src))
    q.quantize_dynamic(str(src), str(dst), reduce_range=True)
    return onnx.load(str(dst))
