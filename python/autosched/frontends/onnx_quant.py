"""Quantized ONNX models (docs/quantized.md): the converters of the quantized operators, merged into
onnx_ops.CONVERTERS, and the QDQ form's fusion (fuse_qdq), run before the importer's walk.

    QUANT_CONVERTERS   QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (decomposed: min / max
                       reductions, its scale and zero point, quantize_linear), MatMulInteger, ConvInteger,
                       QLinearMatMul, QLinearConv (integer op + requantize), and the com.microsoft ops of
                       onnxruntime's QOperator form (MICROSOFT_OPS): QGemm, and the element-wise, pooling,
                       concat and softmax ones, written as dequantize -> float op -> quantize
    fuse_qdq(onnx, model)  the model's nodes with each DequantizeLinear pair -> Conv / MatMul / Gemm (+ Relu)
                       -> QuantizeLinear written as one QLinearConv / QLinearMatMul / QGemm (the integer path);
                       every other QDQ node imports with ONNX's float semantics, which are exact

The scales are float32, the integer values 8-bit (uint8 or int8). A requantize multiplier is computed in float32
in onnxruntime's order: (a_scale * b_scale) / y_scale (QGemm: ((alpha * a_scale) * b_scale) / y_scale). A zero
point that is a constant 0 is dropped (the integer op then has no correction term for it). Each converter is
called as (importer, inputs, attrs), as in onnx_ops.py.
"""
import numpy as np

from ._common import NotConvertible, reshape
from ._lowering import spatial_attrs

__all__ = ["QUANT_CONVERTERS", "QUANT_MULTI_OUTPUT", "MICROSOFT_OPS", "fuse_qdq"]

_8BIT = ("uint8", "int8")


def _opt(inputs, i):
    return inputs[i] if len(inputs) > i and inputs[i] else None


def _is_zero(ctx, name):
    """Whether ONNX value `name` is absent or a constant of zeros."""
    if not name:
        return True
    const = ctx.const(name)
    return const is not None and const.dtype != object and not np.any(const)


def _zero_point(ctx, name, dtype, hint):
    """The graph value of zero point `name`, or a constant 0 of `dtype` when it is absent."""
    if not name:
        return ctx.add_const(np.zeros((), dtype), hint)
    return ctx.value(name)


def _float32_scale(ctx, name, what):
    if ctx.dtype(name) != "float32":
        raise NotConvertible(f"{what} ({name}) has dtype {ctx.dtype(name)}; only float32 scales are supported")


def _vector(ctx, name):
    """A per-channel parameter as a graph value of shape () or (C,) (a constant of shape (1, C) is reshaped)."""
    const = ctx.const(name)
    if const is not None and const.dtype != object and const.ndim > 1 and const.size in const.shape:
        return ctx.add_const(const.reshape(-1), "param")
    return ctx.value(name)


# ---------------- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear ----------------


def _quantize(ctx, inputs, attrs):
    if attrs.get("block_size", 0):
        raise NotConvertible("blocked quantization (block_size) is not supported; quantize per tensor or per axis")
    if ctx.dtype(inputs[0]) != "float32":
        raise NotConvertible(f"QuantizeLinear of a {ctx.dtype(inputs[0])} input: only float32 is supported")
    _float32_scale(ctx, inputs[1], "the scale")
    dtype = ctx._np_type(attrs["output_dtype"]) if attrs.get("output_dtype") else "uint8"
    zero_point = _zero_point(ctx, _opt(inputs, 2), dtype, "zero_point")
    return ctx.emit("quantize_linear", [ctx.value(inputs[0]), _vector(ctx, inputs[1]), zero_point],
                    axis=attrs.get("axis", 1))


def _dequantize(ctx, inputs, attrs):
    if attrs.get("block_size", 0):
        raise NotConvertible("blocked quantization (block_size) is not supported; quantize per tensor or per axis")
    _float32_scale(ctx, inputs[1], "the scale")
    args = [ctx.value(inputs[0]), _vector(ctx, inputs[1])]
    if not _is_zero(ctx, _opt(inputs, 2)):
        args.append(_vector(ctx, inputs[2]))
    return ctx.emit("dequantize_linear", args, axis=attrs.get("axis", 1))


def _scalar(ctx, value, dtype, hint):
    return ctx.add_const(np.asarray(value, dtype), hint)


def _dynamic_quantize(ctx, inputs, attrs):
    """DynamicQuantizeLinear as onnxruntime computes it: the range [min(x, 0), max(x, 0)] over uint8's 255
    steps (scale 1 where the range is empty), zero point saturate(round_half_to_even(-min / scale))."""
    if ctx.dtype(inputs[0]) != "float32":
        raise NotConvertible(f"DynamicQuantizeLinear of a {ctx.dtype(inputs[0])} input: only float32 is supported")
    x = ctx.value(inputs[0])
    axes = tuple(range(len(ctx.shape(inputs[0]))))
    zero = _scalar(ctx, 0.0, "float32", "zero")
    low = ctx.emit("minimum", [ctx.emit("reduce_min", [x], axes=axes, keepdims=False), zero])
    high = ctx.emit("maximum", [ctx.emit("reduce_max", [x], axes=axes, keepdims=False), zero])
    steps = ctx.emit("divide", [ctx.emit("subtract", [high, low]), _scalar(ctx, 255.0, "float32", "steps")])
    empty = ctx.emit("equal", [high, low])
    scale = ctx.emit("where", [empty, _scalar(ctx, 1.0, "float32", "one"), steps])
    zero_point = ctx.emit("quantize_linear", [ctx.emit("negative", [low]), scale,
                                              _scalar(ctx, 0, "uint8", "zero_point")])
    return [ctx.emit("quantize_linear", [x, scale, zero_point]), scale, zero_point]


# ---------------- the integer ops: MatMulInteger, ConvInteger ----------------


def _zero_point_args(ctx, names, inputs):
    """(zero_points attr, extra inputs) of an integer op: the zero points that are not a constant 0."""
    keep = [(n, i) for n, i in zip(names, inputs) if not _is_zero(ctx, i)]
    return tuple(n for n, _ in keep), [_vector(ctx, i) for _, i in keep]


def _as_matrix(ctx, value, axis):
    """A 1-D operand of a matrix product as a matrix: a row (axis 0) or a column (axis 1)."""
    shape = ctx.g.shape(value)
    if len(shape) != 1:
        return value
    return reshape(ctx.g, value, [1, shape[0]] if axis == 0 else [shape[0], 1], ctx.fresh_name("reshape"))


def _matmul_integer_values(ctx, a, b, a_zero_point, b_zero_point):
    """matmul_integer of graph values a and b (ONNX values of their zero points, or None), numpy's 1-D rules."""
    a_shape, b_shape = ctx.g.shape(a), ctx.g.shape(b)
    zero_points, extra = _zero_point_args(ctx, ("a", "b"), (a_zero_point, b_zero_point))
    out = ctx.emit("matmul_integer", [_as_matrix(ctx, a, 0), _as_matrix(ctx, b, 1)] + extra,
                   zero_points=zero_points)
    if len(a_shape) > 1 and len(b_shape) > 1:
        return out
    shape = list(ctx.g.shape(out))
    target = shape[:-2] + (shape[-2:-1] if len(a_shape) > 1 else []) + (shape[-1:] if len(b_shape) > 1 else [])
    return reshape(ctx.g, out, target, ctx.fresh_name("reshape"))


def _matmul_integer(ctx, inputs, attrs):
    return _matmul_integer_values(ctx, ctx.value(inputs[0]), ctx.value(inputs[1]), _opt(inputs, 2),
                                  _opt(inputs, 3))


def _conv_integer_values(ctx, x, w, x_zero_point, w_zero_point, attrs, op_type):
    shape = ctx.g.shape(x)
    if shape is None or len(shape) != 4:
        raise NotConvertible(f"{op_type} of a {len(shape or ())}-D input: only 2-D convolutions (4-D NCHW input) "
                             f"are supported")
    if attrs.get("channels_last", 0):
        raise NotConvertible(f"{op_type} with channels_last=1: only NCHW is supported")
    strides, dilations, pads = spatial_attrs(shape, ctx.g.shape(w)[2:], attrs)
    zero_points, extra = _zero_point_args(ctx, ("x", "w"), (x_zero_point, w_zero_point))
    return ctx.emit("conv2d_integer", [x, w] + extra, strides=strides, pads=pads, dilations=dilations,
                    groups=attrs.get("group", 1), zero_points=zero_points)


def _conv_integer(ctx, inputs, attrs):
    return _conv_integer_values(ctx, ctx.value(inputs[0]), ctx.value(inputs[1]), _opt(inputs, 2), _opt(inputs, 3),
                                attrs, "ConvInteger")


# ---------------- QLinearMatMul, QLinearConv, QGemm: integer op + requantize ----------------


def _multiplier(ctx, scales, divisor, hint):
    """The requantize multiplier: the product of ONNX values `scales` (left to right), then / `divisor` (an ONNX
    value, or None), in float32: numpy on constants, graph ops on computed values."""
    for name in list(scales) + ([divisor] if divisor else []):
        if isinstance(name, str):
            _float32_scale(ctx, name, "a scale")
    consts = [np.float32(s) if not isinstance(s, str) else ctx.const(s) for s in scales]
    consts.append(ctx.const(divisor) if divisor else np.float32(1))
    if all(c is not None and c.dtype != object for c in consts):
        value = consts[0].reshape(-1) if consts[0].size > 1 else consts[0].reshape(())
        for c in consts[1:-1]:
            value = value * (c.reshape(-1) if c.size > 1 else c.reshape(()))
        if divisor:
            value = value / consts[-1].reshape(())
        return ctx.add_const(np.asarray(value, np.float32), hint)
    value = None
    for s in scales:
        term = _scalar(ctx, s, "float32", hint) if not isinstance(s, str) else _vector(ctx, s)
        value = term if value is None else ctx.emit("multiply", [value, term])
    return ctx.emit("divide", [value, _vector(ctx, divisor)]) if divisor else value


def _check_scalar_param(ctx, name, what, op_type):
    shape = ctx.shape(name)
    if shape is not None and len(shape) > 0 and not (len(shape) == 1 and shape[0] == 1):
        raise NotConvertible(f"{op_type}: {what} must be a scalar (per tensor), got shape {tuple(shape)}")


def _qlinear_matmul(ctx, inputs, attrs):
    """QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point."""
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = inputs
    _check_scalar_param(ctx, a_scale, "a_scale", "QLinearMatMul")
    acc = _matmul_integer_values(ctx, ctx.value(a), ctx.value(b), a_zp, b_zp)
    multiplier = _multiplier(ctx, [a_scale, b_scale], y_scale, "multiplier")
    return ctx.emit("requantize", [acc, multiplier, ctx.value(y_zp)], axis=len(ctx.g.shape(acc)) - 1)


def _qlinear_conv(ctx, inputs, attrs):
    """QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B (int32)]."""
    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp = inputs[:8]
    _check_scalar_param(ctx, x_scale, "x_scale", "QLinearConv")
    acc = _conv_integer_values(ctx, ctx.value(x), ctx.value(w), x_zp, w_zp, attrs, "QLinearConv")
    multiplier = _multiplier(ctx, [x_scale, w_scale], y_scale, "multiplier")
    args = [acc, multiplier, ctx.value(y_zp)]
    if _opt(inputs, 8):
        args.append(_vector(ctx, inputs[8]))
    return ctx.emit("requantize", args, axis=1)


def _qgemm(ctx, inputs, attrs):
    """com.microsoft QGemm: A, a_scale, a_zp, B, b_scale, b_zp[, C (int32)][, y_scale, y_zp]; alpha, transA,
    transB. Without y_scale the output is float32(acc) * alpha * a_scale * b_scale."""
    a, a_scale, a_zp, b, b_scale, b_zp = inputs[:6]
    bias, y_scale, y_zp = _opt(inputs, 6), _opt(inputs, 7), _opt(inputs, 8)
    _check_scalar_param(ctx, a_scale, "a_scale", "QGemm")
    a_value = ctx.value(a)
    if attrs.get("transA", 0):
        a_value = ctx.emit("transpose", [a_value], perm=(1, 0))
    weight = ctx.const(b)
    if attrs.get("transB", 0):
        b_value = ctx.add_const(weight.T, "weight") if weight is not None and weight.dtype != object else \
            ctx.emit("transpose", [ctx.value(b)], perm=(1, 0))
    else:
        b_value = ctx.value(b)
    acc = _matmul_integer_values(ctx, a_value, b_value, a_zp, b_zp)
    extra = []
    if bias is not None:
        shape = tuple(ctx.shape(bias))
        if len(shape) <= 1 or shape[0] == 1:  # (), (N,), (1, N): the same value on every row
            extra = [_vector(ctx, bias)]
        else:  # (M, 1) or (M, N): added as it broadcasts
            acc = ctx.emit("add", [acc, ctx.value(bias)])
    alpha = float(np.float32(attrs.get("alpha", 1.0)))
    multiplier = _multiplier(ctx, [alpha, a_scale, b_scale], y_scale, "multiplier")
    if y_scale is None:
        if extra:
            acc = ctx.emit("add", [acc, extra[0]])
        return ctx.emit("multiply", [ctx.emit("cast", [acc], dtype="float32"), multiplier])
    return ctx.emit("requantize", [acc, multiplier, ctx.value(y_zp)] + extra, axis=1)


# ---------------- com.microsoft QLinear* ops: dequantize -> float op -> quantize ----------------


def _dequantized(ctx, x, scale, zero_point):
    args = [ctx.value(x), ctx.value(scale)]
    if not _is_zero(ctx, zero_point):
        args.append(ctx.value(zero_point))
    return ctx.emit("dequantize_linear", args)


def _quantized(ctx, value, scale, zero_point, like):
    """quantize_linear of graph value `value`; an absent zero point is 0 of the dtype of ONNX value `like`."""
    return ctx.emit("quantize_linear", [value, ctx.value(scale), _zero_point(ctx, zero_point, ctx.dtype(like),
                                                                              "zero_point")])


def _qlinear_float_op(op_type, operands):
    """A com.microsoft QLinear op whose `operands` quantized inputs (each x, x_scale, x_zero_point) are followed by
    the output's scale and zero point: dequantize each, the float ONNX op `op_type` on them, quantize."""
    def convert(ctx, inputs, attrs):
        if attrs.get("channels_last", 0):
            raise NotConvertible(f"QLinear{op_type} with channels_last=1: only NCHW is supported")
        values = [_dequantized(ctx, *[_opt(inputs, 3 * k + j) for j in range(3)]) for k in range(operands)]
        out = ctx.convert(op_type, values, {k: v for k, v in attrs.items() if k != "channels_last"})
        return _quantized(ctx, out, inputs[3 * operands], _opt(inputs, 3 * operands + 1), inputs[0])
    return convert


def _qlinear_concat(ctx, inputs, attrs):
    """QLinearConcat: y_scale, y_zero_point, then (x, x_scale, x_zero_point) per input. Inputs quantized as the
    output is are concatenated as they are; the others are dequantized and quantized again."""
    y_scale, y_zp = inputs[0], inputs[1]
    triples = [inputs[k:k + 3] for k in range(2, len(inputs), 3)]
    consts = [ctx.const(n) for n in (y_scale, y_zp)]

    def same(scale, zp):
        theirs = [ctx.const(n) for n in (scale, zp)]
        return all(c is not None and t is not None and c.dtype != object and np.array_equal(c, t)
                   for c, t in zip(consts, theirs))

    if all(same(s, z) for _, s, z in triples):
        return ctx.emit("concat", [ctx.value(x) for x, _, _ in triples], axis=attrs["axis"])
    values = [_dequantized(ctx, x, s, z) for x, s, z in triples]
    out = ctx.emit("concat", values, axis=attrs["axis"])
    return _quantized(ctx, out, y_scale, y_zp, triples[0][0])


def _qlinear_softmax(ctx, inputs, attrs):
    """QLinearSoftmax: x, x_scale, x_zero_point, y_scale, y_zero_point; axis (as Softmax of opset `opset`)."""
    rank = len(ctx.shape(inputs[0]))
    axis = attrs.get("axis", -1 if attrs.get("opset", 13) >= 13 else 1)
    if attrs.get("opset", 13) < 13 and axis % rank != rank - 1:
        raise NotConvertible("QLinearSoftmax of opset < 13 over axes other than the last")
    value = _dequantized(ctx, *inputs[:3])
    out = ctx.emit("softmax", [value], axis=axis)
    return _quantized(ctx, out, inputs[3], _opt(inputs, 4), inputs[0])


def _qlinear_where(ctx, inputs, attrs):
    """QLinearWhere: condition, x, x_scale, x_zp, y, y_scale, y_zp, z_scale, z_zp."""
    x, y = _dequantized(ctx, *inputs[1:4]), _dequantized(ctx, *inputs[4:7])
    out = ctx.emit("where", [ctx.value(inputs[0]), x, y])
    return _quantized(ctx, out, inputs[7], _opt(inputs, 8), inputs[1])


MICROSOFT_CONVERTERS = {
    "QGemm": _qgemm,
    "QLinearAdd": _qlinear_float_op("Add", 2), "QLinearMul": _qlinear_float_op("Mul", 2),
    "QLinearSigmoid": _qlinear_float_op("Sigmoid", 1), "QLinearLeakyRelu": _qlinear_float_op("LeakyRelu", 1),
    "QLinearAveragePool": _qlinear_float_op("AveragePool", 1),
    "QLinearGlobalAveragePool": _qlinear_float_op("GlobalAveragePool", 1),
    "QLinearConcat": _qlinear_concat, "QLinearSoftmax": _qlinear_softmax, "QLinearWhere": _qlinear_where,
}
# The com.microsoft ops the importer converts (other ops of that domain are unsupported).
MICROSOFT_OPS = frozenset(MICROSOFT_CONVERTERS)

QUANT_CONVERTERS = dict({
    "QuantizeLinear": _quantize, "DequantizeLinear": _dequantize, "DynamicQuantizeLinear": _dynamic_quantize,
    "MatMulInteger": _matmul_integer, "ConvInteger": _conv_integer,
    "QLinearMatMul": _qlinear_matmul, "QLinearConv": _qlinear_conv,
}, **MICROSOFT_CONVERTERS)
# Quantized ops with several outputs (their converters return one value per output).
QUANT_MULTI_OUTPUT = {"DynamicQuantizeLinear"}

# ---------------- the QDQ form: DequantizeLinear pair -> Conv / MatMul / Gemm -> QuantizeLinear ----------------


class _QdqModel:
    """What fuse_qdq reads of a model: constants (initializers, Constant nodes), producers, consumers, outputs."""

    def __init__(self, onnx, graph, nodes):
        self.onnx = onnx
        self.consts = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
        for node in nodes:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                value = [a for a in node.attribute if a.name == "value"]
                if value:
                    self.consts[node.output[0]] = onnx.numpy_helper.to_array(value[0].t)
        self.producer = {o: n for n in nodes for o in n.output if o}
        self.consumers = {}
        for node in nodes:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.outputs = {o.name for o in graph.output}
        self.names = set(self.producer) | set(self.consts) | {i.name for i in graph.input}

    def attr(self, node, name, default):
        for a in node.attribute:
            if a.name == name:
                return self.onnx.helper.get_attribute_value(a)
        return default

    def dequantized(self, name, size=None, axis=None):
        """(x, scale, zero point) names of the DequantizeLinear computing `name` from an 8-bit x with a constant
        float32 scale and zero point (no zero point: "", for a constant x): one value, or (size, axis given) one
        per index of that axis of x; None otherwise."""
        node = self.producer.get(name)
        if node is None or node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
            return None
        x, scale = self.consts.get(node.input[0]), self.consts.get(node.input[1])
        zp_name = node.input[2] if len(node.input) > 2 else ""
        zero_point = self.consts.get(zp_name) if zp_name else None
        dtype = zero_point.dtype.name if zero_point is not None else None if x is None or zp_name else x.dtype.name
        if scale is None or scale.dtype != np.float32 or dtype not in _8BIT or self.attr(node, "block_size", 0):
            return None
        if zero_point is not None and zero_point.size != scale.size:
            return None
        if scale.size != 1:
            rank = None if x is None else x.ndim
            if size is None or rank is None or scale.size != size or self.attr(node, "axis", 1) % rank != axis:
                return None
        return node.input[0], node.input[1], zp_name

    def only_consumer(self, name, op_type):
        """The one consumer of `name`, if it is an op of `op_type` and `name` is not a graph output."""
        users = self.consumers.get(name, [])
        if len(users) != 1 or name in self.outputs or users[0].op_type != op_type:
            return None
        return users[0] if users[0].domain in ("", "ai.onnx") else None

    def requantized(self, node):
        """(the nodes after `node` that fusion takes: [Relu,] QuantizeLinear; the output's scale, zero point)."""
        taken = []
        out = node.output[0]
        relu = self.only_consumer(out, "Relu")
        if relu is not None:
            taken.append(relu)
            out = relu.output[0]
        quantize = self.only_consumer(out, "QuantizeLinear")
        if quantize is None or len(quantize.input) < 3 or not quantize.input[2]:
            return None
        scale, zero_point = self.consts.get(quantize.input[1]), self.consts.get(quantize.input[2])
        if scale is None or zero_point is None or scale.size != 1 or zero_point.size != 1:
            return None
        if scale.dtype != np.float32 or zero_point.dtype.name not in _8BIT:
            return None
        return taken + [quantize], quantize.input[1], quantize.input[2]

    def bias(self, name, n, scale):
        """(the int32 constant, the nodes that make it) for the bias `name` of a product whose scale is `scale`
        (the input scale times the weight scales, float32, for each of the `n` outputs): a DequantizeLinear of
        int32 constants of that scale and zero point 0, maybe through Identity nodes; or one of another scale
        whose float32 values are whole multiples of `scale` (an exporter shares equal biases, zeros above all,
        between layers through Identity nodes, and the quantizer gives the first user's scale), requantized
        exactly into a new Constant node. None otherwise."""
        node = self.producer.get(name)
        while node is not None and node.op_type == "Identity" and node.domain in ("", "ai.onnx"):
            node = self.producer.get(node.input[0])
        if node is None or node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
            return None
        values, bias_scale = self.consts.get(node.input[0]), self.consts.get(node.input[1])
        zero_point = self.consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if values is None or bias_scale is None or values.dtype != np.int32 or values.size not in (1, n):
            return None
        if values.ndim > 1 or (zero_point is not None and np.any(zero_point)) or bias_scale.size not in (1, n):
            return None
        scale = np.broadcast_to(np.asarray(scale, np.float32).reshape(-1), (n,))
        if np.array_equal(np.broadcast_to(bias_scale.reshape(-1), (n,)), scale):
            return node.input[0], []
        floats = np.broadcast_to(values.reshape(-1), (n,)).astype(np.float32) * bias_scale.reshape(-1)
        steps = np.rint(floats / scale)
        if np.any(np.abs(steps) >= 2 ** 31) or not np.array_equal(steps.astype(np.float32) * scale, floats):
            return None
        const = self.fresh(f"{name}/requantized")
        tensor = self.onnx.numpy_helper.from_array(steps.astype(np.int32), const)
        return const, [self.onnx.helper.make_node("Constant", [], [const], name=const, value=tensor)]

    def fresh(self, base):
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name


def _fuse_node(m, node):
    """The nodes that compute, in integers, what `node` (Conv, MatMul, Gemm between DequantizeLinear and
    QuantizeLinear) and the nodes after it compute; (new nodes, nodes they replace) or None."""
    helper = m.onnx.helper
    tail = m.requantized(node)
    if tail is None:
        return None
    taken, y_scale, y_zp = tail
    a = m.dequantized(node.input[0])
    weight = m.consts.get(m.producer[node.input[1]].input[0]) if node.input[1] in m.producer else None
    if a is None or (weight is None and node.op_type != "MatMul"):
        return None  # a computed second operand: per tensor, MatMul only (attention's products)
    attrs = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    if node.op_type == "Conv":
        if weight.ndim != 4:
            return None
        outputs, axis, op_type, domain = weight.shape[0], 0, "QLinearConv", ""
    elif node.op_type == "MatMul":
        if weight is not None and weight.ndim != 2:
            return None
        outputs, axis, op_type, domain = None if weight is None else weight.shape[1], 1, "QLinearMatMul", ""
    else:  # Gemm
        if weight.ndim != 2 or attrs.get("transA", 0):
            return None
        axis = 0 if attrs.get("transB", 0) else 1
        outputs, op_type, domain = weight.shape[axis], "QGemm", "com.microsoft"
        attrs = {k: v for k, v in attrs.items() if k in ("alpha", "transB")}
    b = m.dequantized(node.input[1], outputs, axis)
    if b is None:
        return None
    inputs = list(a) + list(b)
    if len(node.input) > 2 and node.input[2]:
        product = m.consts[a[1]].reshape(()) * m.consts[b[1]].reshape(-1)  # float32, as the quantizer has it
        found = m.bias(node.input[2], outputs, product)
        if found is None or (op_type == "QGemm" and (attrs.get("alpha", 1.0) != 1.0 or
                                                     m.attr(node, "beta", 1.0) != 1.0)):
            return None
        bias, bias_nodes = found
    else:
        bias, bias_nodes = "", []
    inputs += ([bias] if op_type == "QGemm" else []) + [y_scale, y_zp] + ([bias] if op_type == "QLinearConv"
                                                                         and bias else [])
    out = taken[-1].output[0]
    relu = len(taken) == 2
    fused_out = m.fresh(f"{out}/before_relu") if relu else out
    fused = bias_nodes + [helper.make_node(op_type, inputs, [fused_out], name=node.name, domain=domain, **attrs)]
    if relu:  # relu of a quantized value is its maximum with the zero point
        fused.append(helper.make_node("Max", [fused_out, y_zp], [out], name=taken[0].name))
    return fused, [node] + taken


_FUSIBLE = ("Conv", "MatMul", "Gemm")


def fuse_qdq(onnx, model):
    """The nodes of `model` (a list, in order) with every Conv, MatMul and Gemm of the QDQ form (its inputs
    DequantizeLinear of 8-bit values, per-tensor for the activation, per-tensor or per output channel for the
    weight, the bias an int32 DequantizeLinear of scale input scale x weight scale; its output only through an
    optional Relu into a QuantizeLinear) replaced by one QLinearConv / QLinearMatMul / com.microsoft QGemm at the
    QuantizeLinear's place (a Relu becomes a Max with the output's zero point). The DequantizeLinear nodes stay;
    those left without consumers are never imported. The model itself is not changed."""
    nodes = list(model.graph.node)  # one Python object per node: they are told apart by identity
    m = _QdqModel(onnx, model.graph, nodes)
    replacement, removed = {}, set()
    for node in nodes:
        if node.op_type not in _FUSIBLE or node.domain not in ("", "ai.onnx"):
            continue
        fused = _fuse_node(m, node)
        if fused is not None:
            new_nodes, old = fused
            replacement[id(old[-1])] = new_nodes
            removed.update(id(n) for n in old)
    if not replacement:
        return nodes
    out = []
    for node in nodes:
        if id(node) in replacement:
            out.extend(replacement[id(node)])
        elif id(node) not in removed:
            out.append(node)
    return out
