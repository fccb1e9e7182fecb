"""Quantized graph ops, with ONNX's integer semantics (docs/quantized.md):

    quantize_linear(x, scale, zero_point)      saturate(round_half_to_even(x / scale) + zero_point)
    dequantize_linear(x, scale[, zero_point])  float32(int32(x) - int32(zero_point)) * scale
    requantize(acc, multiplier, zero_point[, bias])
                                               saturate(round_half_to_even(float32(acc + bias) * multiplier)
                                                        + zero_point), in float32 as onnxruntime computes it
    matmul_integer(a, b[, zero points])        int32 (a - a_zp) @ (b - b_zp), numpy batching (MatMulInteger)
    conv2d_integer(x, w[, zero points])        int32 conv2d of (x - x_zp) and (w - w_zp), NCHW (ConvInteger)

A scale, zero point, multiplier or bias is a scalar (shape () or (1,)) or one value per index of the axis `axis`
(per-channel); they are inputs, so they may be constants or computed values (DynamicQuantizeLinear computes
them). The integer ops are anchors: each computes the plain int32 reduction of the raw integers' products,
sum(int32(a) * int32(b)), as one stage, with the zero points' corrections as separate terms,

    sum (a - za)(b - zb) = sum a*b - za * colsum(b) - zb * rowsum(a) + K * za * zb,

so that the product stage is the u8 x s8 -> s32 dot product a code generator maps onto dot-product instructions.
A column sum of a constant weight is a stage that reads only constants: graph.build and the measurement compute
it once (prepacked constant stages). Which zero points an integer op has is its attr `zero_points` (a missing one
is 0 and costs nothing); they follow the two operands among the inputs. The others are injective (the integer
ops' epilogues). All run in NCHW (layout "nchw").
"""
import numpy as np

from ...core import te
from ...ops.injective import pad
from ...ops.quantized import DOT_GROUP, pack_dot_conv_weight
from ..errors import OpError
from ..opdef import OpDef
from .common import (broadcast_shapes, check_conv_channels, check_rank, fmt, int_attr, ints, pad_hw, pads_attr,
                     pair, same_dim, tap_windows, window_out)

__all__ = ["DEFS", "QUANTIZED_DTYPES", "quantized_range"]

DEFS = []

# The integer dtypes a quantized value may have (those of ONNX QuantizeLinear the IR has).
QUANTIZED_DTYPES = ("uint8", "int8", "int16")


def quantized_range(dtype):
    """(lowest, highest) value of a quantized dtype."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _check_dtype(dtype, allowed, what):
    if dtype is not None and dtype not in allowed:
        raise OpError(f"{what} has dtype {dtype}; expected one of {', '.join(allowed)}")


# ---------------- per-tensor or per-axis parameters ----------------


def _is_scalar(shape):
    return len(shape) == 0 or (len(shape) == 1 and shape[0] == 1)


def _check_param(attrs, x_shape, shape, what):
    """A scale, zero point, multiplier or bias: a scalar, or 1-D with one value per index of axis `axis` of x
    (attrs["axis"] is made non-negative then)."""
    if _is_scalar(shape):
        return
    if len(shape) != 1:
        raise OpError(f"{what} must be a scalar or 1-D (one value per index of the axis), got shape {fmt(shape)}")
    axis = attrs["axis"]
    if not -len(x_shape) <= axis < len(x_shape):
        raise OpError(f"axis {axis} is out of range for the input of shape {fmt(x_shape)}")
    attrs["axis"] = axis = axis % len(x_shape)
    if not same_dim(shape[0], x_shape[axis]):
        raise OpError(f"{what} has {shape[0]} values, but axis {axis} of the input {fmt(x_shape)} has "
                      f"{x_shape[axis]}")


def _param_array(param, ndim, axis):
    """A parameter array shaped to broadcast against an input of rank ndim (numpy)."""
    if param.size == 1:
        return param.reshape(())
    return param.reshape((-1,) + (1,) * (ndim - 1 - axis))


def _param_at(param, index, axis):
    """The te load of a parameter at output index `index`."""
    if param.ndim == 0:
        return param[()]
    if param.shape[0] == 1:
        return param[0]
    return param[index[axis]]


def _float_consts(dtype):
    lo, hi = quantized_range(dtype)
    return te.const(float(lo), "float32"), te.const(float(hi), "float32")


def _saturate_te(value, dtype):
    """float32 `value` (already rounded) clamped into `dtype`'s range and converted; NaN gives the lowest value,
    as onnxruntime's quantization does."""
    lo, hi = _float_consts(dtype)
    return te.cast(te.select(value > hi, hi, te.select(value >= lo, value, lo)), dtype)


def _saturate_np(value, dtype):
    lo, hi = (np.float32(v) for v in quantized_range(dtype))
    with np.errstate(invalid="ignore"):
        return np.where(value > hi, hi, np.where(value >= lo, value, lo)).astype(dtype)


def _axis_attr():
    return {"axis": (1, lambda v: int_attr(v, "axis"))}


def _param_torch(torch, param, ndim, axis):
    return param.reshape(()) if param.numel() == 1 else param.reshape((-1,) + (1,) * (ndim - 1 - axis))


def _reshape_for_axis(w, node, value, ndim, axis):
    """ONNX export: `value` (a scalar or one value per index of `axis`) reshaped to broadcast against rank ndim."""
    shape = w.graph.shape(value)
    if _is_scalar(shape) or axis == ndim - 1:
        return value
    target = w.const(node.name + "_shape", np.asarray([-1] + [1] * (ndim - 1 - axis), np.int64))
    return w.node("Reshape", [value, target], w.fresh(node.name + "_param"))


# ---------------- quantize_linear ----------------


def _quantize_infer(attrs, shapes, dtypes):
    x, scale, zero_point = shapes
    _check_dtype(dtypes[0], ("float32",), "x")
    _check_dtype(dtypes[1], ("float32",), "scale")
    _check_dtype(dtypes[2], QUANTIZED_DTYPES, "zero_point")
    _check_param(attrs, x, scale, "scale")
    _check_param(attrs, x, zero_point, "zero_point")
    return tuple(x), dtypes[2]


def _quantize_reference(node, x, scale, zero_point):
    axis = node.attrs["axis"]
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero scale saturates
        value = x / _param_array(scale, x.ndim, axis)
    rounded = np.rint(value) + _param_array(zero_point, x.ndim, axis).astype(np.float32)
    return _saturate_np(rounded, zero_point.dtype)


def _quantize_te(node, x, scale, zero_point):
    axis = node.attrs["axis"]

    def fcompute(*i):
        value = x[i] / _param_at(scale, i, axis)
        return _saturate_te(te.round_even(value) + te.cast(_param_at(zero_point, i, axis), "float32"),
                            zero_point.dtype)

    return te.compute(x.shape, fcompute, name=node.name, tag="elemwise")


def _quantize_torch(torch, node, x, scale, zero_point):
    axis, ndim = node.attrs["axis"], x.dim()
    lo, hi = quantized_range(str(zero_point.dtype).replace("torch.", ""))
    value = torch.round(x / _param_torch(torch, scale, ndim, axis))  # torch.round: halves to even
    value = value + _param_torch(torch, zero_point, ndim, axis).to(torch.float32)
    return torch.clamp(torch.nan_to_num(value, nan=lo), lo, hi).to(zero_point.dtype)


DEFS.append(OpDef("quantize_linear", 3, _quantize_infer, _axis_attr(), out_dtype=lambda attrs, dtypes: dtypes[2],
                  fusion="injective", layout="nchw", reference=_quantize_reference, te=_quantize_te,
                  onnx=lambda w, node: w.node("QuantizeLinear", list(node.inputs), node.name,
                                              axis=node.attrs["axis"]),
                  torch=_quantize_torch))

# ---------------- dequantize_linear ----------------


def _dequantize_infer(attrs, shapes, dtypes):
    x, scale = shapes[0], shapes[1]
    _check_dtype(dtypes[0], QUANTIZED_DTYPES + ("int32",), "x")
    _check_dtype(dtypes[1], ("float32",), "scale")
    _check_param(attrs, x, scale, "scale")
    if len(shapes) == 3:
        if dtypes[2] is not None and dtypes[0] is not None and dtypes[2] != dtypes[0]:
            raise OpError(f"zero_point has dtype {dtypes[2]}, x has {dtypes[0]}: they must agree")
        _check_param(attrs, x, shapes[2], "zero_point")
    return tuple(x), "float32"


def _dequantize_reference(node, x, scale, zero_point=None):
    axis = node.attrs["axis"]
    shifted = x.astype(np.int32)
    if zero_point is not None:
        shifted = shifted - _param_array(zero_point, x.ndim, axis).astype(np.int32)
    return shifted.astype(np.float32) * _param_array(scale, x.ndim, axis)


def _dequantize_te(node, x, scale, zero_point=None):
    axis = node.attrs["axis"]

    def fcompute(*i):
        shifted = te.cast(x[i], "int32")
        if zero_point is not None:
            shifted = shifted - te.cast(_param_at(zero_point, i, axis), "int32")
        return te.cast(shifted, "float32") * _param_at(scale, i, axis)

    return te.compute(x.shape, fcompute, name=node.name, tag="elemwise")


def _dequantize_torch(torch, node, x, scale, zero_point=None):
    axis, ndim = node.attrs["axis"], x.dim()
    shifted = x.to(torch.int32)
    if zero_point is not None:
        shifted = shifted - _param_torch(torch, zero_point, ndim, axis).to(torch.int32)
    return shifted.to(torch.float32) * _param_torch(torch, scale, ndim, axis)


DEFS.append(OpDef("dequantize_linear", (2, 3), _dequantize_infer, _axis_attr(),
                  out_dtype=lambda attrs, dtypes: "float32", fusion="injective", layout="nchw",
                  reference=_dequantize_reference, te=_dequantize_te,
                  onnx=lambda w, node: w.node("DequantizeLinear", list(node.inputs), node.name,
                                              axis=node.attrs["axis"]),
                  torch=_dequantize_torch))

# ---------------- requantize: an int32 accumulator (+ int32 bias) to a quantized value ----------------


def _requantize_infer(attrs, shapes, dtypes):
    acc, multiplier, zero_point = shapes[:3]
    _check_dtype(dtypes[0], ("int32",), "acc")
    _check_dtype(dtypes[1], ("float32",), "multiplier")
    _check_dtype(dtypes[2], QUANTIZED_DTYPES, "zero_point")
    _check_param(attrs, acc, multiplier, "multiplier")
    _check_param(attrs, acc, zero_point, "zero_point")
    if len(shapes) == 4:
        _check_dtype(dtypes[3], ("int32",), "bias")
        _check_param(attrs, acc, shapes[3], "bias")
    return tuple(acc), dtypes[2]


def _requantize_reference(node, acc, multiplier, zero_point, bias=None):
    axis = node.attrs["axis"]
    total = acc if bias is None else acc + _param_array(bias, acc.ndim, axis)  # int32, wraps
    value = total.astype(np.float32) * _param_array(multiplier, acc.ndim, axis)
    rounded = np.rint(value) + _param_array(zero_point, acc.ndim, axis).astype(np.float32)
    return _saturate_np(rounded, zero_point.dtype)


def _requantize_te(node, acc, multiplier, zero_point, bias=None):
    axis = node.attrs["axis"]

    def fcompute(*i):
        total = acc[i] if bias is None else acc[i] + _param_at(bias, i, axis)
        value = te.cast(total, "float32") * _param_at(multiplier, i, axis)
        return _saturate_te(te.round_even(value) + te.cast(_param_at(zero_point, i, axis), "float32"),
                            zero_point.dtype)

    return te.compute(acc.shape, fcompute, name=node.name, tag="elemwise")


def _requantize_onnx(w, node):
    """Add (the bias), Cast, Mul (the multiplier) and a QuantizeLinear of scale 1: the same float32 steps."""
    acc, multiplier, zero_point = node.inputs[:3]
    ndim, axis = len(node.shape), node.attrs["axis"]
    total = acc
    if len(node.inputs) == 4:
        total = w.node("Add", [acc, _reshape_for_axis(w, node, node.inputs[3], ndim, axis)],
                       w.fresh(node.name + "_biased"))
    value = w.node("Cast", [total], w.fresh(node.name + "_float"), to=w.helper.np_dtype_to_tensor_dtype(
        np.dtype("float32")))
    scaled = w.node("Mul", [value, _reshape_for_axis(w, node, multiplier, ndim, axis)],
                    w.fresh(node.name + "_scaled"))
    one = w.scalar(node.name + "_one", 1.0, "float32")
    return w.node("QuantizeLinear", [scaled, one, zero_point], node.name, axis=axis)


def _requantize_torch(torch, node, acc, multiplier, zero_point, bias=None):
    axis, ndim = node.attrs["axis"], acc.dim()
    total = acc if bias is None else acc + _param_torch(torch, bias, ndim, axis)
    value = total.to(torch.float32) * _param_torch(torch, multiplier, ndim, axis)
    lo, hi = quantized_range(str(zero_point.dtype).replace("torch.", ""))
    value = torch.round(value) + _param_torch(torch, zero_point, ndim, axis).to(torch.float32)
    return torch.clamp(value, lo, hi).to(zero_point.dtype)


DEFS.append(OpDef("requantize", (3, 4), _requantize_infer, _axis_attr(),
                  out_dtype=lambda attrs, dtypes: dtypes[2], fusion="injective", layout="nchw", bias_input=3,
                  reference=_requantize_reference, te=_requantize_te, onnx=_requantize_onnx,
                  torch=_requantize_torch))

# ---------------- the integer ops' zero points ----------------

_INTEGER_DTYPES = ("uint8", "int8")


def _zero_points_attr(names):
    """The attr `zero_points`: which of the operands `names` have a zero point among the inputs (in that
    order, after the two operands)."""
    def convert(value):
        items = (value,) if isinstance(value, str) else tuple(value)
        if any(v not in names for v in items) or len(set(items)) != len(items):
            raise OpError(f"zero_points must name operands among {names}, each once, got {value!r}")
        return tuple(n for n in names if n in items)
    return {"zero_points": ((), convert)}


def _zero_point_inputs(attrs, names, inputs):
    """{operand name: its zero point input} of a node's inputs (operands first)."""
    count = 2 + len(attrs["zero_points"])
    if len(inputs) != count:
        raise OpError(f"takes {count} inputs with zero_points={attrs['zero_points']}, got {len(inputs)}")
    return dict(zip(attrs["zero_points"], inputs[2:]))


def _check_zero_point(shape, dtype, operand_dtype, what, per_index, extent):
    """A zero point: the dtype of its operand, a scalar or (per_index) one value per index of `extent`."""
    if dtype is not None and operand_dtype is not None and dtype != operand_dtype:
        raise OpError(f"{what} has dtype {dtype}, its operand {operand_dtype}: they must agree")
    if _is_scalar(shape):
        return
    if per_index is None or len(shape) != 1 or not same_dim(shape[0], extent):
        allowed = "a scalar" if per_index is None else f"a scalar or one value per {per_index} ({extent})"
        raise OpError(f"{what} must be {allowed}, got shape {fmt(shape)}")


def _zero_point_np(zero_point):
    """A zero point array as int64 (0 when absent)."""
    return np.int64(0) if zero_point is None else zero_point.astype(np.int64)


def _zp_load(zero_point, index):
    """te: an int32 zero point (0 when absent) at `index` of its per-index axis."""
    if zero_point is None:
        return None
    value = zero_point[()] if zero_point.ndim == 0 else zero_point[0 if zero_point.shape[0] == 1 else index]
    return te.cast(value, "int32")


def _corrected(product, za, colsum, zb, rowsum, k):
    """sum (a - za)(b - zb) from sum a*b: - za*colsum(b) - zb*rowsum(a) + K*za*zb (int32, wrapping), the
    terms of absent zero points (None) left out."""
    value = product
    if za is not None:
        value = value - za * colsum
    if zb is not None:
        value = value - zb * rowsum
    if za is not None and zb is not None:
        value = value + te.const(k, "int32") * za * zb
    return value


# ---------------- matmul_integer: MatMulInteger, numpy batching, operands of rank >= 2 ----------------

_MATMUL_NAMES = ("a", "b")


def _matmul_integer_infer(attrs, shapes, dtypes):
    zero_points = _zero_point_inputs(attrs, _MATMUL_NAMES, list(range(len(shapes))))
    a, b = shapes[0], shapes[1]
    check_rank(a, 2, "a", at_least=True)
    check_rank(b, 2, "b", at_least=True)
    _check_dtype(dtypes[0], _INTEGER_DTYPES, "a")
    _check_dtype(dtypes[1], _INTEGER_DTYPES, "b")
    if not same_dim(a[-1], b[-2]):
        raise OpError(f"inner dimensions differ: a {fmt(a)} and b {fmt(b)}")
    if "a" in zero_points:
        i = zero_points["a"]
        _check_zero_point(shapes[i], dtypes[i], dtypes[0], "a's zero point", "row of a", a[-2])
    if "b" in zero_points:
        i = zero_points["b"]
        _check_zero_point(shapes[i], dtypes[i], dtypes[1], "b's zero point", "column of b", b[-1])
    batch = broadcast_shapes([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else ()
    return tuple(batch) + (a[-2], b[-1]), "int32"


def _matmul_integer_reference(node, a, b, *zero_points):
    zp = dict(zip(node.attrs["zero_points"], zero_points))
    za, zb = _zero_point_np(zp.get("a")), _zero_point_np(zp.get("b"))
    lhs = a.astype(np.int64) - (za.reshape(-1, 1) if za.ndim else za)
    rhs = b.astype(np.int64) - zb
    return np.matmul(lhs, rhs).astype(np.int32)  # wraps as int32 arithmetic does


def _batch_index(shape, out_batch, batch):
    """Indices into the batch dims `shape` (right-aligned, size-1 dims broadcast) of output batch index."""
    offset = len(out_batch) - len(shape)
    return tuple(0 if shape[d] == 1 and out_batch[offset + d] != 1 else batch[offset + d]
                 for d in range(len(shape)))


def _matmul_integer_te(node, a, b, *zero_points):
    zp = dict(zip(node.attrs["zero_points"], zero_points))
    out_shape = tuple(node.shape)
    batch_shape, k = out_shape[:-2], a.shape[-1]
    a_batch, b_batch = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    name = node.name

    def a_at(batch, i, r):
        return a[_batch_index(a_batch, batch_shape, batch) + (i, r)]

    def b_at(batch, r, j):
        return b[_batch_index(b_batch, batch_shape, batch) + (r, j)]

    def product(*idx):
        r = te.reduce_axis((0, k), name="k")
        batch, i, j = idx[:-2], idx[-2], idx[-1]
        return te.sum(te.cast(a_at(batch, i, r), "int32") * te.cast(b_at(batch, r, j), "int32"), axis=r)

    if _dot_packable(a, b):
        acc_at = _dot_product(a, b, out_shape, a_batch, name)
    else:
        acc = te.compute(out_shape, product, name=name + "_product", tag="matmul_integer")
        acc_at = acc.__getitem__
    colsum = rowsum = None
    if "a" in zp:  # sum over k of b, per column: constant where b is
        def column_sum(*idx):
            r = te.reduce_axis((0, k), name="k")
            return te.sum(te.cast(b[idx[:-1] + (r, idx[-1])], "int32"), axis=r)
        colsum = te.compute(b_batch + (b.shape[-1],), column_sum, name=name + "_colsum_b", tag="comm_reduce")
    if "b" in zp:
        def row_sum(*idx):
            r = te.reduce_axis((0, k), name="k")
            return te.sum(te.cast(a[idx + (r,)], "int32"), axis=r)
        rowsum = te.compute(a_batch + (a.shape[-2],), row_sum, name=name + "_rowsum_a", tag="comm_reduce")

    def fcompute(*idx):
        batch, i, j = idx[:-2], idx[-2], idx[-1]
        col = None if colsum is None else colsum[_batch_index(b_batch, batch_shape, batch) + (j,)]
        row = None if rowsum is None else rowsum[_batch_index(a_batch, batch_shape, batch) + (i,)]
        return _corrected(acc_at(idx), _zp_load(zp.get("a"), i), col, _zp_load(zp.get("b"), j), row, k)

    return te.compute(out_shape, fcompute, name=name, tag="elemwise")


# The product of a uint8 x int8 matmul over a 2-D weight reads the weight packed for dot-product instructions
# (ops/quantized.py: panels of DOT_PANEL columns, each lane's DOT_GROUP reduction elements adjacent), so that the
# code generator emits VNNI's vpdpbusd where the CPU has it. The packing stage reads only the weight: for a
# constant weight graph.build and the measurements run it once (pre-packed constants, docs/deploy.md).
DOT_PANEL = 16


def _dot_packable(a, b):
    return len(b.shape) == 2 and {a.dtype, b.dtype} == {"uint8", "int8"} and a.shape[-1] % DOT_GROUP == 0


def _dot_product(a, b, out_shape, a_batch, name):
    """The int32 product of a (..., M, K) and a 2-D b (K, N) through b packed as (N/16, K/4, 16, 4): a function
    of an output index giving the product's element."""
    k, n = b.shape
    panels, groups = -(-n // DOT_PANEL), k // DOT_GROUP

    def pack(jo, ko, ji, t):
        column = jo * DOT_PANEL + ji
        value = b[ko * DOT_GROUP + t, column]
        return value if n % DOT_PANEL == 0 else te.if_then_else(column < n, value, te.const(0, b.dtype))

    packed = te.compute((panels, groups, DOT_PANEL, DOT_GROUP), pack, name=name + "_packed_b", tag="injective")

    def product(*idx):
        batch, i, jo, ji = idx[:-3], idx[-3], idx[-2], idx[-1]
        ko = te.reduce_axis((0, groups), name="ko")
        t = te.reduce_axis((0, DOT_GROUP), name="ki")
        lhs = a[_batch_index(a_batch, out_shape[:-2], batch) + (i, ko * DOT_GROUP + t)]
        return te.sum(te.cast(lhs, "int32") * te.cast(packed[jo, ko, ji, t], "int32"), axis=[ko, t])

    acc = te.compute(tuple(out_shape[:-1]) + (panels, DOT_PANEL), product, name=name + "_product",
                     tag="matmul_integer")
    return lambda idx: acc[tuple(idx[:-1]) + (idx[-1] // DOT_PANEL, idx[-1] % DOT_PANEL)]


def _optional_inputs(node, names):
    zp = dict(zip(node.attrs["zero_points"], node.inputs[2:]))
    return list(node.inputs[:2]) + [zp.get(n, "") for n in names]


def _matmul_integer_torch(torch, node, a, b, *zero_points):
    zp = dict(zip(node.attrs["zero_points"], zero_points))
    lhs, rhs = a.to(torch.int64), b.to(torch.int64)
    if "a" in zp:
        za = zp["a"].to(torch.int64)
        lhs = lhs - (za.reshape(-1, 1) if za.numel() > 1 else za.reshape(()))
    if "b" in zp:
        rhs = rhs - zp["b"].to(torch.int64).reshape(-1 if zp["b"].numel() > 1 else ())
    # float64 holds every sum of 8-bit products of K < 2**37 exactly; int64 matmul has no CPU kernel
    return torch.matmul(lhs.to(torch.float64), rhs.to(torch.float64)).to(torch.int64).to(torch.int32)


DEFS.append(OpDef("matmul_integer", (2, 4), _matmul_integer_infer, _zero_points_attr(_MATMUL_NAMES),
                  out_dtype=lambda attrs, dtypes: "int32", fusion="anchor", layout="nchw",
                  reference=_matmul_integer_reference, te=_matmul_integer_te,
                  onnx=lambda w, node: w.node("MatMulInteger", _optional_inputs(node, _MATMUL_NAMES), node.name),
                  torch=_matmul_integer_torch))

# ---------------- conv2d_integer: ConvInteger, NCHW, weight (O, C / groups, kh, kw) ----------------

_CONV_NAMES = ("x", "w")


def _conv2d_integer_infer(attrs, shapes, dtypes):
    zero_points = _zero_point_inputs(attrs, _CONV_NAMES, list(range(len(shapes))))
    data, weight = shapes[0], shapes[1]
    check_rank(data, 4, "x (NCHW)")
    check_rank(weight, 4, "w (OIHW)")
    _check_dtype(dtypes[0], _INTEGER_DTYPES, "x")
    _check_dtype(dtypes[1], _INTEGER_DTYPES, "w")
    check_conv_channels(data, weight, attrs["groups"])
    if "x" in zero_points:
        i = zero_points["x"]
        _check_zero_point(shapes[i], dtypes[i], dtypes[0], "x's zero point", None, None)
    if "w" in zero_points:
        i = zero_points["w"]
        _check_zero_point(shapes[i], dtypes[i], dtypes[1], "w's zero point", "output channel", weight[0])
    n, _, h, w = data
    o, _, kh, kw = weight
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oh = window_out(h, kh, sh, dh, top, bottom, False, "height")
    ow = window_out(w, kw, sw, dw, left, right, False, "width")
    return (n, o, oh, ow), "int32"


def _conv2d_integer_reference(node, x, w, *zero_points):
    a = node.attrs
    zp = dict(zip(a["zero_points"], zero_points))
    groups = a["groups"]
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    oh, ow = node.shape[2], node.shape[3]
    zw = _zero_point_np(zp.get("w"))
    shifted = x.astype(np.int64) - _zero_point_np(zp.get("x")).reshape(())
    weights = (w.astype(np.int64) - (zw.reshape(-1, 1, 1, 1) if zw.ndim else zw)).reshape(
        groups, o // groups, cg, kh, kw)
    out = np.zeros((n, groups, o // groups, oh, ow), np.int64)
    padded = pad_hw(shifted, a["pads"], 0)  # the zero of the shifted values is the raw zero point
    for r, s, window in tap_windows(padded, (kh, kw), a["strides"], a["dilations"], (oh, ow)):
        out += np.einsum("ngchw,goc->ngohw", window.reshape(n, groups, cg, oh, ow), weights[:, :, :, r, s])
    return out.reshape(n, o, oh, ow).astype(np.int32)


def _conv2d_integer_te(node, x, w, *zero_points):
    a = node.attrs
    zp = dict(zip(a["zero_points"], zero_points))
    groups, (sh, sw), (dh, dw) = a["groups"], a["strides"], a["dilations"]
    o, cg, kh, kw = w.shape
    group_out = o // groups
    out_shape, name = tuple(node.shape), node.name
    top, left, bottom, right = a["pads"]
    fill = 0 if "x" not in zp else (zp["x"][()] if zp["x"].ndim == 0 else zp["x"][0])
    padded = pad(x, (0, 0, top, left), (0, 0, bottom, right), pad_value=fill, name=name + "_pad") \
        if any(a["pads"]) else x

    def window(nn, ff_group, yy, xx, rc, ry, rx):
        return padded[nn, ff_group * cg + rc, yy * sh + ry * dh, xx * sw + rx * dw]

    def product(nn, ff, yy, xx):
        rc, ry, rx = (te.reduce_axis((0, e), name=v) for e, v in ((cg, "rc"), (kh, "ry"), (kw, "rx")))
        pixel = window(nn, ff // group_out if groups > 1 else 0, yy, xx, rc, ry, rx)
        return te.sum(te.cast(pixel, "int32") * te.cast(w[ff, rc, ry, rx], "int32"), axis=[rc, ry, rx])

    acc = te.compute(out_shape, product, name=name + "_product", tag="conv2d_integer")
    wsum = xsum = None
    if "x" in zp:  # per output channel: constant where the weight is
        def weight_sum(ff):
            rc, ry, rx = (te.reduce_axis((0, e), name=v) for e, v in ((cg, "rc"), (kh, "ry"), (kw, "rx")))
            return te.sum(te.cast(w[ff, rc, ry, rx], "int32"), axis=[rc, ry, rx])
        wsum = te.compute((o,), weight_sum, name=name + "_wsum", tag="comm_reduce")
    if "w" in zp:  # per image, group and output pixel: the window sums of the padded input
        def window_sum(nn, gg, yy, xx):
            rc, ry, rx = (te.reduce_axis((0, e), name=v) for e, v in ((cg, "rc"), (kh, "ry"), (kw, "rx")))
            return te.sum(te.cast(window(nn, gg, yy, xx, rc, ry, rx), "int32"), axis=[rc, ry, rx])
        xsum = te.compute((out_shape[0], groups) + out_shape[2:], window_sum, name=name + "_xsum",
                          tag="comm_reduce")

    def fcompute(nn, ff, yy, xx):
        zx = _zp_load(zp.get("x"), 0)
        col = None if wsum is None else wsum[ff]
        group = ff // group_out if groups > 1 else 0
        row = None if xsum is None else xsum[nn, group, yy, xx]
        return _corrected(acc[nn, ff, yy, xx], zx, col, _zp_load(zp.get("w"), ff), row, cg * kh * kw)

    return te.compute(out_shape, fcompute, name=name, tag="elemwise")


def _conv2d_integer_onnx(w, node):
    a = node.attrs
    kh, kw = w.graph.shape(node.inputs[1])[2:]
    return w.node("ConvInteger", _optional_inputs(node, _CONV_NAMES), node.name, kernel_shape=[kh, kw],
                  strides=list(a["strides"]), pads=list(a["pads"]), dilations=list(a["dilations"]),
                  group=a["groups"])


def _conv2d_integer_torch(torch, node, x, w, *zero_points):
    a = node.attrs
    zp = dict(zip(a["zero_points"], zero_points))
    data, weight = x.to(torch.float64), w.to(torch.float64)
    if "x" in zp:
        data = data - zp["x"].to(torch.float64).reshape(())
    if "w" in zp:
        weight = weight - zp["w"].to(torch.float64).reshape((-1, 1, 1, 1) if zp["w"].numel() > 1 else ())
    top, left, bottom, right = a["pads"]
    data = torch.nn.functional.pad(data, (left, right, top, bottom))  # zeros of the shifted values
    out = torch.nn.functional.conv2d(data, weight, stride=a["strides"], dilation=a["dilations"],
                                     groups=a["groups"])
    return out.to(torch.int64).to(torch.int32)  # exact: float64 holds these sums


def _conv2d_integer_to_blocked(rewriter, node):
    """conv2d_integer's layout converter (graph/layout.py): a groups = 1 uint8 x int8 convolution with a constant
    weight becomes conv2d_integer_nchwc (ops/quant_blocked.py) on its input blocked in channels of the pass's
    block (a multiple of the dot-product group; fewer channels: them, rounded up to the group) and its weight
    packed once for the dot-product instruction, output blocks of the pass's block; the output stays NCHW."""
    g, a = rewriter.graph, node.attrs
    data, weight = node.inputs[0], node.inputs[1]
    if a["groups"] != 1 or weight not in g.constants or rewriter.block % DOT_GROUP:
        return False
    if {g.dtype(data), g.dtype(weight)} != set(_INTEGER_DTYPES):
        return False
    channels, out_channels = g.shape(data)[1], g.shape(weight)[0]
    x = rewriter.layout_for(channels, block=min(rewriter.block, -(-channels // DOT_GROUP) * DOT_GROUP))
    y = rewriter.layout_for(out_channels, block=rewriter.block)
    packed = rewriter.derived(weight, f"dot{x.block}i{y.block}o",
                              lambda arr: pack_dot_conv_weight(arr, x.block, y.block))
    attrs = {k: a[k] for k in ("strides", "pads", "dilations", "zero_points")}
    attrs.update(channels=channels, out_channels=out_channels)
    ins = [rewriter.get(data, x), packed] + [rewriter.get(v, None) for v in node.inputs[2:]]
    rewriter.emit(node, "conv2d_integer_nchwc", ins, attrs, None)
    return True


DEFS.append(OpDef("conv2d_integer", (2, 4), _conv2d_integer_infer,
                  dict({"strides": ((1, 1), pair("strides")), "pads": ((0, 0, 0, 0), pads_attr),
                        "dilations": ((1, 1), pair("dilations")),
                        "groups": (1, lambda v: ints([v], "groups", 1, 1)[0])}, **_zero_points_attr(_CONV_NAMES)),
                  out_dtype=lambda attrs, dtypes: "int32", fusion="anchor", layout=_conv2d_integer_to_blocked,
                  reference=_conv2d_integer_reference, te=_conv2d_integer_te, onnx=_conv2d_integer_onnx,
                  torch=_conv2d_integer_torch))
