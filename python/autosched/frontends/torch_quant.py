"""Quantized PyTorch programs (docs/quantized.md): what PT2E quantization leaves in an exported program
(torchao's prepare_pt2e / convert_pt2e, then torch.export), imported with PyTorch's arithmetic.

    plan_quantized(torch, program)   run before the importer's walk: {fx node: converter, or SKIPPED}.
        - Every node of the quantized_decomposed namespace gets its converter (QUANT_OPS: quantize and dequantize
          per tensor and per channel, their .tensor overloads, choose_qparams), or one that says why it is not
          supported (per-token and grouped quantization, ...).
        - Each conv2d, linear and matmul whose operands are dequantized 8-bit values (the activations per
          tensor, a constant weight per tensor or per output channel) becomes conv2d_integer / matmul_integer
          (onnx_quant.py's helpers): + requantize where its output goes only (through a relu) into a
          quantize_per_tensor of constant scale, else + dequantize_linear and the float bias, a float32 result.
          The dequantize nodes that only fed such ops, and the relu taken in, are SKIPPED.
    check_eager_quantized(torch, module)   the error for eager-mode quantized modules (quantize_dynamic's
        nn.quantized.dynamic.Linear ...), which torch.export cannot export.

PyTorch's arithmetic, matched exactly (torch/ao/quantization/fx/_decomposed.py):
    quantize     clamp(round_half_even(x * float32(1 / scale)) + zero_point, quant_min, quant_max): a multiply by
                 the reciprocal (computed in double from a Python float), quantize_linear of scale 1, and a
                 maximum / minimum where [quant_min, quant_max] is narrower than the dtype
    dequantize   float32(x - zero_point) * float32(scale)
    choose_qparams   scale max((max(x, 0) - min(x, 0)) / (quant_max - quant_min), eps) in float32, zero point
                 clamp(quant_min - round_half_even(min(x, 0) / scale))
The fused integer ops compute the int32 sums exactly where PyTorch sums the dequantized products in float32,
and requantize adds the float bias rounded to int32 at scale x_scale * w_scale: within one step of PyTorch.
"""
import numpy as np

from ..deploy.torch_tensors import tensor_to_numpy
from ..graph.ops.quant import QUANTIZED_DTYPES, quantized_range
from ._common import NotConvertible
from .onnx_quant import _conv_integer_values, _matmul_integer_values

__all__ = ["SKIPPED", "QUANT_OPS", "plan_quantized", "check_eager_quantized"]

SKIPPED = "skipped"  # a node whose value only the fused op that took it in reads
_8BIT = ("uint8", "int8")
# Namespaces whose every op is planned: those not in QUANT_OPS become unsupported nodes that name them.
_NAMESPACES = ("quantized_decomposed", "quantized", "torchao")
_PT2E = ("quantize with PT2E instead: torchao.quantization.pt2e.quantize_pt2e.prepare_pt2e / convert_pt2e on "
         "torch.export.export(model, args).module(), e.g. with X86InductorQuantizer (docs/quantized.md)")


def _schema(node):
    """(namespace, op name, overload) of a call_function node with a schema, else None."""
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None:
        return None
    namespace, _, name = schema.name.partition("::")
    return namespace, name, node.target._overloadname


def _dtype_name(dtype, allowed=QUANTIZED_DTYPES):
    name = str(dtype).replace("torch.", "")
    if name not in allowed:
        raise NotConvertible(f"quantized dtype {name}: only {', '.join(allowed)} are supported")
    return name


def _number(ctx, value, what):
    """An int or float argument, or (the .tensor2 overloads) a constant tensor of one value."""
    if isinstance(value, ctx.torch.fx.Node):
        const = ctx.const(value)
        if const is None or const.size != 1:
            raise NotConvertible(f"{what} is computed at run time; only a constant is supported")
        return const.reshape(()).item()
    return value


def _bounds(ctx, quant_min, quant_max, dtype):
    low, high = int(_number(ctx, quant_min, "quant_min")), int(_number(ctx, quant_max, "quant_max"))
    lo, hi = quantized_range(dtype)
    if not lo <= low <= high <= hi:
        raise NotConvertible(f"[quant_min, quant_max] = [{low}, {high}] is not within {dtype}'s range")
    return low, high


def _clamped(ctx, q, dtype, low, high):
    """`q` (saturated to `dtype`) clamped to [low, high] where that is narrower (reduce_range's 0..127)."""
    lo, hi = quantized_range(dtype)
    if low > lo:
        q = ctx.emit("maximum", [q, ctx.add_const(np.asarray(low, dtype), "quant_min")])
    if high < hi:
        q = ctx.emit("minimum", [q, ctx.add_const(np.asarray(high, dtype), "quant_max")])
    return q


def _float32_input(ctx, x, what):
    dtype = ctx.g.dtype(ctx.value(x))
    if dtype in ("float16", "bfloat16"):  # torch quantizes those as float32 too
        return ctx.emit("cast", [ctx.value(x)], dtype="float32")
    if dtype != "float32":
        raise NotConvertible(f"{what} of a {dtype} input: only float32 (and float16, bfloat16) are supported")
    return ctx.value(x)


def _scale(ctx, scale):
    """A per-tensor scale as a float32 graph value: torch multiplies by float32(scale)."""
    if isinstance(scale, ctx.torch.fx.Node) and ctx.const(scale) is None:
        value = ctx.value(scale)
        if ctx.g.dtype(value) != "float32" or len(ctx.g.shape(value)) > 1 or np.prod(ctx.g.shape(value)) != 1:
            raise NotConvertible("a computed scale must be one float32 value (choose_qparams' scale is)")
        return value
    return ctx.add_const(np.float32(_number(ctx, scale, "the scale")), "scale")


def _inverse_scale(ctx, scale):
    """float32(1 / scale), what torch's quantize multiplies by: from a constant in double, then rounded; of a
    computed float32 scale a float32 division, the same number (a quotient of float32 values rounded to double
    and then to float32 is the float32 quotient)."""
    if isinstance(scale, ctx.torch.fx.Node) and ctx.const(scale) is None:
        value = _scale(ctx, scale)
        return ctx.emit("divide", [ctx.add_const(np.float32(1), "one"), value])
    return ctx.add_const(np.float32(1.0 / float(_number(ctx, scale, "the scale"))), "inverse_scale")


def _zero_point(ctx, zero_point, dtype, optional=False):
    """A per-tensor zero point as a graph value of `dtype` (None for a constant 0 where `optional`)."""
    if isinstance(zero_point, ctx.torch.fx.Node) and ctx.const(zero_point) is None:
        value = ctx.value(zero_point)
        if ctx.g.dtype(value) != dtype:
            raise NotConvertible(f"a computed zero point of dtype {ctx.g.dtype(value)}; only one of the quantized "
                                 f"dtype {dtype} (choose_qparams') is supported")
        return value
    value = int(_number(ctx, zero_point, "the zero point"))
    lo, hi = quantized_range(dtype)
    if not lo <= value <= hi:
        raise NotConvertible(f"zero point {value} is outside {dtype}'s range")
    return None if optional and value == 0 else ctx.add_const(np.asarray(value, dtype), "zero_point")


# ---------------- quantized_decomposed: quantize, dequantize, choose_qparams ----------------


def _quantized(ctx, x, inverse_scale, zero_point, dtype, bounds, axis=1):
    scaled = ctx.emit("multiply", [x, inverse_scale])
    q = ctx.emit("quantize_linear", [scaled, ctx.add_const(np.float32(1), "one"), zero_point], axis=axis)
    return _clamped(ctx, q, dtype, *bounds)


def _quantize_per_tensor(ctx, x, scale, zero_point, quant_min, quant_max, dtype):
    dtype = _dtype_name(dtype)
    x = _float32_input(ctx, x, "quantize_per_tensor")
    return _quantized(ctx, x, _inverse_scale(ctx, scale), _zero_point(ctx, zero_point, dtype), dtype,
                      _bounds(ctx, quant_min, quant_max, dtype))


def _dequantize_per_tensor(ctx, x, scale, zero_point, quant_min, quant_max, dtype, *, out_dtype=None):
    dtype = _dtype_name(dtype, QUANTIZED_DTYPES + ("int32",))
    if out_dtype is not None and str(out_dtype) != "torch.float32":
        raise NotConvertible(f"out_dtype {out_dtype}: only float32 is supported")
    if ctx.g.dtype(ctx.value(x)) != dtype:
        raise NotConvertible(f"the input has dtype {ctx.g.dtype(ctx.value(x))}, the op says {dtype}")
    args = [ctx.value(x), _scale(ctx, scale)]
    if dtype == "int32":  # torch converts x to float32 before subtracting: the same only for a zero point of 0
        if isinstance(zero_point, ctx.torch.fx.Node) or _number(ctx, zero_point, "the zero point") != 0:
            raise NotConvertible("an int32 input with a zero point other than a constant 0")
        return ctx.emit("dequantize_linear", args)
    zero = _zero_point(ctx, zero_point, dtype, optional=True)
    return ctx.emit("dequantize_linear", args + ([zero] if zero is not None else []))


def _channel_params(ctx, rank, scales, zero_points, axis, dtype):
    """(scales, zero points or None, axis) of a per-channel op: float32 constants, one per index of `axis`."""
    scale_array, zero_array = ctx.const(scales), None if zero_points is None else ctx.const(zero_points)
    if scale_array is None or (zero_points is not None and zero_array is None):
        raise NotConvertible("per-channel scales and zero points computed at run time; only constants are "
                             "supported")
    if scale_array.dtype != np.float32:  # torch would compute in the scales' dtype (float64) and round
        raise NotConvertible(f"per-channel scales of dtype {scale_array.dtype}; only float32 is supported")
    axis = int(axis) % rank
    lo, hi = quantized_range(dtype)
    if zero_array is not None and (zero_array.min(initial=0) < lo or zero_array.max(initial=0) > hi):
        raise NotConvertible(f"zero points outside {dtype}'s range")
    return scale_array.reshape(-1), None if zero_array is None else zero_array.reshape(-1).astype(dtype), axis


def _quantize_per_channel(ctx, x, scales, zero_points, axis, quant_min, quant_max, dtype):
    dtype = _dtype_name(dtype)
    x = _float32_input(ctx, x, "quantize_per_channel")
    rank = len(ctx.g.shape(x))
    scale_array, zero_array, axis = _channel_params(ctx, rank, scales, zero_points, axis, dtype)
    inverse = (np.float32(1) / scale_array).reshape((-1,) + (1,) * (rank - 1 - axis))  # float32, as torch
    zero = ctx.add_const(zero_array, "zero_point")
    return _quantized(ctx, x, ctx.add_const(inverse, "inverse_scale"), zero, dtype,
                      _bounds(ctx, quant_min, quant_max, dtype), axis=axis)


def _dequantize_per_channel(ctx, x, scales, zero_points, axis, quant_min, quant_max, dtype, *, out_dtype=None):
    dtype = _dtype_name(dtype)
    if out_dtype is not None and str(out_dtype) != "torch.float32":
        raise NotConvertible(f"out_dtype {out_dtype}: only float32 is supported")
    if ctx.g.dtype(ctx.value(x)) != dtype:
        raise NotConvertible(f"the input has dtype {ctx.g.dtype(ctx.value(x))}, the op says {dtype}")
    scale_array, zero_array, axis = _channel_params(ctx, len(ctx.shape(x)), scales, zero_points, axis, dtype)
    args = [ctx.value(x), ctx.add_const(scale_array, "scale")]
    if zero_array is not None and np.any(zero_array):
        args.append(ctx.add_const(zero_array, "zero_point"))
    return ctx.emit("dequantize_linear", args, axis=axis)


def _choose_qparams(ctx, x, quant_min, quant_max, eps, dtype):
    """[scale (float32, shape ()), zero point (of `dtype`, shape ())], as torch's determine_qparams computes them
    for per_tensor_affine (its float64 scale holds the float32 value computed here)."""
    dtype = _dtype_name(dtype, _8BIT)
    low_bound, high_bound = _bounds(ctx, quant_min, quant_max, dtype)
    if ctx.g.dtype(ctx.value(x)) != "float32":
        raise NotConvertible(f"choose_qparams of a {ctx.g.dtype(ctx.value(x))} input: only float32 is supported")
    x = ctx.value(x)
    axes = tuple(range(len(ctx.g.shape(x))))
    zero = ctx.add_const(np.float32(0), "zero")
    low = ctx.emit("minimum", [ctx.emit("reduce_min", [x], axes=axes, keepdims=False), zero])
    high = ctx.emit("maximum", [ctx.emit("reduce_max", [x], axes=axes, keepdims=False), zero])
    steps = ctx.add_const(np.float32(high_bound - low_bound), "steps")
    scale = ctx.emit("maximum", [ctx.emit("divide", [ctx.emit("subtract", [high, low]), steps]),
                                 ctx.add_const(np.float32(eps), "eps")])
    # quant_min - round(low / scale) is quantize_linear(-low, scale, quant_min): round_half_even(-v) = -round(v)
    zero_point = ctx.emit("quantize_linear", [ctx.emit("negative", [low]), scale,
                                              ctx.add_const(np.asarray(low_bound, dtype), "quant_min")])
    return [scale, _clamped(ctx, zero_point, dtype, low_bound, high_bound)]


QUANT_OPS = {
    "quantize_per_tensor": _quantize_per_tensor, "dequantize_per_tensor": _dequantize_per_tensor,
    "quantize_per_channel": _quantize_per_channel, "dequantize_per_channel": _dequantize_per_channel,
    "choose_qparams": _choose_qparams,
}


def _refused(namespace, name):
    """The converter of an op of the quantized namespaces that is not imported: it says why."""
    if namespace == "quantized":
        why = f"an eager-mode quantized kernel (packed weights); {_PT2E}"
    elif "token" in name or "group" in name:
        why = "per-token and grouped quantization are not supported, only per tensor and per channel"
    else:
        why = f"of the quantized ops only quantized_decomposed's {', '.join(sorted(QUANT_OPS))} are supported"

    def convert(ctx, *args, **kwargs):
        raise NotConvertible(why)
    return convert


# ---------------- the fusion of dequantize -> conv2d / linear / matmul (-> relu) (-> quantize) ----------------

class _GraphValues:
    """The torch importer as onnx_quant.py's helpers read an ONNX importer: values named by their graph names,
    the constants those of the graph; emit, add_const and fresh_name are the importer's."""

    def __init__(self, importer):
        self.importer, self.g = importer, importer.g

    def __getattr__(self, name):
        return getattr(self.importer, name)

    def const(self, name):
        return self.g.constants.get(name) if name else None

    def value(self, name):
        return name

    def shape(self, name):
        return self.g.shape(name)

    def dtype(self, name):
        return self.g.dtype(name)


class _Operand:
    """A dequantized 8-bit operand of a fusible op. An activation has `source`, the fx node of its quantized
    value, and a scale and zero point that are numbers (float32 scale) or fx nodes (computed: choose_qparams');
    a constant weight has `array`, its integers, and a float32 `scale` and int64 `zero_point` array of one value,
    or of one value per index of axis `axis`."""

    def __init__(self, dq, dtype, scale, zero_point, source=None, array=None, axis=None):
        self.dq, self.dtype, self.scale, self.zero_point = dq, dtype, scale, zero_point
        self.source, self.array, self.axis = source, array, axis

    def static(self, torch):
        return not isinstance(self.scale, torch.fx.Node)


def _constants(program):
    """{placeholder node: numpy array} of the program's parameters, buffers and lifted constants."""
    specs = {spec.arg.name: spec for spec in program.graph_signature.input_specs
             if spec.kind.name in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR")}
    out = {}
    for node in program.graph_module.graph.nodes:
        spec = specs.get(node.name) if node.op == "placeholder" else None
        if spec is not None:
            tensors = program.state_dict if spec.target in program.state_dict else program.constants
            out[node] = tensor_to_numpy(tensors[spec.target].cpu())
    return out


def _const_number(torch, value, consts):
    """A Python number, or the one value of a constant tensor; the fx node of a computed value; None otherwise."""
    if not isinstance(value, torch.fx.Node):
        return value
    if value not in consts:
        return value
    return consts[value].reshape(()).item() if consts[value].size == 1 else None


def _dequantized(torch, node, consts):
    """The _Operand that dequantize node `node` computes, None where it is not one fusion takes."""
    op = _schema(node) if isinstance(node, torch.fx.Node) else None
    if op is None or op[0] != "quantized_decomposed" or node.kwargs.get("out_dtype") not in (None, torch.float32):
        return None
    per_tensor = op[1:] in (("dequantize_per_tensor", "default"), ("dequantize_per_tensor", "tensor"))
    if not per_tensor and op[1:] != ("dequantize_per_channel", "default"):
        return None
    x, dtype = node.args[0], str(node.args[5 if per_tensor else 6]).replace("torch.", "")
    if dtype not in _8BIT or (x in consts and consts[x].dtype.name != dtype):
        return None
    lo, hi = quantized_range(dtype)
    if per_tensor:
        scale, zero_point = (_const_number(torch, v, consts) for v in node.args[1:3])
        computed = isinstance(scale, torch.fx.Node) or isinstance(zero_point, torch.fx.Node)
        if scale is None or zero_point is None or (not computed and not lo <= int(zero_point) <= hi):
            return None
        scale = scale if isinstance(scale, torch.fx.Node) else np.float32(scale)
        zero_point = zero_point if isinstance(zero_point, torch.fx.Node) else int(zero_point)
        if x not in consts:
            return _Operand(node, dtype, scale, zero_point, source=x)
        return None if computed else _Operand(node, dtype, scale, np.int64(zero_point), array=consts[x])
    scales, zero_points, axis = node.args[1:4]
    if x not in consts or scales not in consts or consts[scales].dtype != np.float32 or \
            (zero_points is not None and zero_points not in consts):
        return None
    zeros = np.zeros(consts[scales].size, np.int64) if zero_points is None else consts[zero_points].reshape(-1)
    if zeros.min() < lo or zeros.max() > hi:
        return None
    return _Operand(node, dtype, consts[scales].reshape(-1), zeros, array=consts[x], axis=int(axis) % consts[x].ndim)


def _pair(value):
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(int(v) for v in (items * 2 if len(items) == 1 else items))


def _match(torch, node, consts):
    """(kind, a, b, float bias array or None, conv attrs) of a conv2d / linear / matmul of dequantized operands:
    the activation per tensor, a weight per tensor or per output channel; None otherwise."""
    op = _schema(node)
    if op is None or op[0] != "aten" or op[2] != "default" or op[1] not in ("conv2d", "linear", "matmul") or \
            node.kwargs:
        return None
    a = _dequantized(torch, node.args[0], consts)
    b = _dequantized(torch, node.args[1], consts) if len(node.args) > 1 else None
    if a is None or b is None or a.source is None or not isinstance(a.source.meta.get("val"), torch.Tensor):
        return None
    bias = node.args[2] if len(node.args) > 2 and op[1] != "matmul" else None
    if bias is not None and (bias not in consts or consts[bias].dtype != np.float32 or consts[bias].ndim != 1):
        return None
    bias = None if bias is None else consts[bias]
    per_channel = b.source is None and b.scale.size > 1
    if op[1] == "conv2d":
        if b.source is not None or b.array.ndim != 4 or len(a.source.meta["val"].shape) != 4:
            return None
        stride, padding, dilation, groups = (list(node.args[3:]) + [1, 0, 1, 1][len(node.args) - 3:])[:4]
        if isinstance(padding, str) or (per_channel and b.axis != 0):
            return None
        attrs = {"strides": _pair(stride), "dilations": _pair(dilation), "pads": _pair(padding) * 2,
                 "group": int(groups)}
        return op[1], a, b, bias, attrs
    if op[1] == "linear":
        if b.source is not None or b.array.ndim != 2 or (per_channel and b.axis != 0):
            return None
        return op[1], a, b, bias, None
    if b.source is None and (per_channel or b.array.ndim != 2):  # matmul: a per-tensor constant is a weight
        return None
    return op[1], a, b, None, None


def _requantized_tail(torch, node, operands):
    """(the relu taken in or None, the quantize_per_tensor node) where `node`'s output goes only (through a relu)
    into a quantize of constant scale and zero point, and every operand's scale is a constant; else None."""
    if not all(o.static(torch) for o in operands):
        return None
    relu, users = None, list(node.users)
    if len(users) == 1 and _schema(users[0]) == ("aten", "relu", "default"):
        relu, users = users[0], list(users[0].users)
    if len(users) != 1 or _schema(users[0]) != ("quantized_decomposed", "quantize_per_tensor", "default"):
        return None
    q = users[0]
    _, scale, zero_point, quant_min, quant_max, dtype = q.args[:6]
    dtype = str(dtype).replace("torch.", "")
    if dtype not in _8BIT or isinstance(scale, torch.fx.Node) or isinstance(zero_point, torch.fx.Node):
        return None
    lo, hi = quantized_range(dtype)
    if not lo <= quant_min <= zero_point <= quant_max <= hi:
        return None
    return relu, q


def _int32_bias(bias, product):
    """The float bias as int32 at scale x_scale * w_scale (rounded half to even), None where it does not fit."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.rint(bias.astype(np.float64) / product)
    if not np.all(np.isfinite(value)) or np.abs(value).max() >= 2 ** 30:  # room for the sums it is added to
        return None
    return value.astype(np.int32)


def _zero_point_value(ctx, operand):
    """The graph value of an operand's zero point, None where it is a constant 0."""
    if isinstance(operand.zero_point, ctx.torch.fx.Node):
        return _zero_point(ctx, operand.zero_point, operand.dtype, optional=True)
    zeros = np.asarray(operand.zero_point)
    if not np.any(zeros):
        return None
    return ctx.add_const(zeros.astype(operand.dtype).reshape(() if zeros.size == 1 else (-1,)), "zero_point")


def _operand_value(ctx, operand):
    return ctx.value(operand.source) if operand.source is not None else ctx.value(operand.dq.args[0])


def _integer_op(ctx, kind, a, b, attrs):
    """(the int32 product of the operands' integers, the axis of its output channels)."""
    view = _GraphValues(ctx)
    x, x_zero = _operand_value(ctx, a), _zero_point_value(ctx, a)
    if kind == "conv2d":
        acc = _conv_integer_values(view, x, _operand_value(ctx, b), x_zero, _zero_point_value(ctx, b), attrs,
                                   "conv2d")
        return acc, 1
    w = ctx.add_const(np.ascontiguousarray(b.array.T), "weight") if kind == "linear" else _operand_value(ctx, b)
    acc = _matmul_integer_values(view, x, w, x_zero, _zero_point_value(ctx, b))
    return acc, len(ctx.g.shape(acc)) - 1


def _product_scale(ctx, a, b):
    """x_scale * w_scale as a float32 graph value (one value, or one per output channel)."""
    if a.static(ctx.torch) and b.static(ctx.torch):
        return ctx.add_const(np.float32(np.float64(a.scale) * b.scale.astype(np.float64)), "scale")
    values = [_scale(ctx, o.scale) if not o.static(ctx.torch) else ctx.add_const(o.scale, "scale")
              for o in (a, b)]
    return ctx.emit("multiply", values)


def _fused(kind, a, b, bias, attrs, tail):
    """The converter of a fusible op node: its integer op, then requantize (+ clip) to the quantized output of
    `tail` (the quantize node), or dequantize_linear + the float bias to a float32 output."""
    def convert(ctx, *args, **kwargs):
        acc, axis = _integer_op(ctx, kind, a, b, attrs)
        if tail is None:
            out = ctx.emit("dequantize_linear", [acc, _product_scale(ctx, a, b)], axis=axis)
            if bias is None:
                return out
            shape = (-1,) + (1,) * (len(ctx.g.shape(out)) - 1 - axis)
            return ctx.emit("add", [out, ctx.add_const(bias.reshape(shape), "bias")])
        relu, q = tail
        _, scale, zero_point, quant_min, quant_max, dtype = q.args[:6]
        dtype = str(dtype).replace("torch.", "")
        product = np.float64(a.scale) * b.scale.astype(np.float64)
        multiplier = np.float32(product / np.float64(np.float32(scale)))
        args = [acc, ctx.add_const(multiplier, "multiplier"), ctx.add_const(np.asarray(zero_point, dtype),
                                                                                "zero_point")]
        if bias is not None:
            args.append(ctx.add_const(_int32_bias(bias, product), "bias"))
        out = ctx.emit("requantize", args, axis=axis)
        # relu before quantizing is the maximum with the zero point after it
        return _clamped(ctx, out, dtype, max(quant_min, zero_point) if relu is not None else quant_min, quant_max)
    return convert


def _alias(node):
    def convert(ctx, *args, **kwargs):
        return ctx.value(node)
    return convert


def plan_quantized(torch, program):
    """{fx node: its converter, or SKIPPED} for the quantized nodes of `program` (module docstring); empty for a
    program without quantized ops."""
    plan = {}
    for node in program.graph_module.graph.nodes:
        op = _schema(node)
        if op is not None and op[0] in _NAMESPACES:
            known = QUANT_OPS.get(op[1]) if op[0] == "quantized_decomposed" else None
            plan[node] = known or _refused(op[0], op[1])
    if not plan:
        return plan
    consts = _constants(program)
    fused = set()
    for node in program.graph_module.graph.nodes:
        match = _match(torch, node, consts)
        if match is None:
            continue
        kind, a, b, bias, attrs = match
        tail = _requantized_tail(torch, node, (a, b))
        if tail is not None and bias is not None:
            if _int32_bias(bias, np.float64(a.scale) * b.scale.astype(np.float64)) is None:
                tail = None
        plan[node] = _fused(kind, a, b, bias, attrs, tail)
        if tail is not None:
            relu, q = tail
            if relu is not None:
                plan[relu] = SKIPPED
            plan[q] = _alias(node)
        fused.add(node)
    for node in fused:  # the activations' dequantize nodes that only fused ops read
        for dq in node.args[:2]:
            operand = _dequantized(torch, dq, consts)
            if operand is not None and operand.source is not None and all(u in fused for u in dq.users):
                plan[dq] = SKIPPED
    return plan


def check_eager_quantized(torch, module):
    """Raises ValueError naming the first eager-mode quantized submodule of `module` (torch.ao.nn.quantized ...,
    what quantize_dynamic and convert put in), which torch.export cannot export."""
    for name, sub in module.named_modules():
        kind = type(sub).__module__
        quantized = kind.startswith("torch.") and ".quantized" in kind
        if quantized or any(t.is_quantized for t in list(sub.parameters(recurse=False)) +
                            list(sub.buffers(recurse=False))):
            where = f"'{name}'" if name else "the module itself"
            raise ValueError(f"from_torch: {where} is an eager-mode quantized module ({kind}.{type(sub).__name__}), "
                             f"and torch.export cannot export eager-mode quantized models (their weights are packed "
                             f"in TorchScript objects); {_PT2E}")
