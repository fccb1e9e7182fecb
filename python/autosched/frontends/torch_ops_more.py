"""More of from_torch's ATen table (torch_ops.py holds the rest and merges these into ATEN): pad and its
mode-specific forms, roll, upsampling (interpolate's nearest and (bi)linear forms), type_as, activations with
parameters, log_softmax, amin / prod / argmax / argmin, einsum, transposed convolutions, 1-D pooling, and 3-D
convolution and pooling. Each converter is called with the FX node's own arguments, as in torch_ops.py."""
import numpy as np

from ..graph.ops.activation import SELU_ALPHA, SELU_SCALE
from ._common import NotConvertible, reshape
from ._lowering import conv_transpose2d, drop_unit_height, einsum, unit_height

__all__ = ["MORE_ATEN", "conv_transpose", "conv3d"]


def _ints(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return [int(x) for x in (v * n if len(v) == 1 else v)]


def _axis(a, rank):
    return a + rank if a < 0 else a


# ---------------- pad ----------------

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _pad(ctx, x, pad, mode="constant", value=None):
    """torch's pad widths run from the last axis backwards: (left, right, top, bottom, ...)."""
    if mode not in _PAD_MODES:
        raise NotConvertible(f"pad mode '{mode}' (constant, reflect and replicate are supported)")
    rank = len(ctx.shape(x))
    widths = [int(p) for p in pad]
    begin, end = [0] * rank, [0] * rank
    for k in range(len(widths) // 2):
        begin[rank - 1 - k], end[rank - 1 - k] = widths[2 * k], widths[2 * k + 1]
    return ctx.emit("pad", [ctx.value(x)], pads=tuple(begin + end), mode=_PAD_MODES[mode],
                    value=0.0 if value is None else float(value))


def _mode_pad(mode):
    return lambda ctx, x, padding: _pad(ctx, x, padding, mode)


def _roll(ctx, x, shifts, dims=()):
    """torch.roll: per axis, the last `shift` elements moved to the front (two slices and a concat)."""
    out, shape = ctx.value(x), ctx.shape(x)
    shifts = _ints(shifts, 1)
    if not dims:  # the flattened tensor
        flat = reshape(ctx.g, out, [-1], ctx.fresh_name("reshape"))
        rolled = _roll_axis(ctx, flat, 0, shifts[0])
        return reshape(ctx.g, rolled, list(shape), ctx.fresh_name("reshape"))
    for shift, dim in zip(shifts, _ints(dims, len(shifts))):
        out = _roll_axis(ctx, out, _axis(dim, len(shape)), shift)
    return out


def _roll_axis(ctx, x, axis, shift):
    extent = ctx.g.shape(x)[axis]
    if not isinstance(extent, int):
        raise NotConvertible(f"roll along a dynamic dim {extent}")
    shift %= extent
    if not shift:
        return x
    tail = ctx.emit("strided_slice", [x], begin=(extent - shift,), end=(extent,), axes=(axis,))
    head = ctx.emit("strided_slice", [x], begin=(0,), end=(extent - shift,), axes=(axis,))
    return ctx.emit("concat", [tail, head], axis=axis)


# ---------------- upsampling ----------------


def _upsample(mode, spatial):
    """upsample_nearest{1,2,3}d / upsample_(bi|tri)linear{1,2,3}d (F.interpolate), both overloads: .vec
    (output_size or scale_factors) and the default one (output_size and a scale per axis, each optional). A
    given scale is what torch divides coordinates by, as ONNX Resize's scales are."""
    def convert(ctx, x, output_size, *args):
        align_corners = False
        if mode == "linear":
            align_corners, args = bool(args[0]), args[1:]
        shape = ctx.shape(x)
        if any(not isinstance(d, int) for d in shape):
            raise NotConvertible(f"upsampling of an input with dynamic dims {shape}")
        size = shape[-spatial:]
        if getattr(ctx.node.target, "_overloadname", "") == "vec":
            given = list(args[0]) if args and args[0] is not None else [None] * spatial
        else:
            given = list(args) + [None] * (spatial - len(args))
        given = given * spatial if len(given) == 1 else given
        if output_size is None:
            out = [int(np.floor(i * float(f))) for i, f in zip(size, given)]
        else:
            out = [int(o) for o in output_size]
        scales = [o / i if f is None else float(f) for o, i, f in zip(out, size, given)]
        coordinate = "asymmetric" if mode == "nearest" else ("align_corners" if align_corners else "half_pixel")
        return ctx.emit("resize", [ctx.value(x)], shape=tuple(shape[:-spatial]) + tuple(out),
                        scales=(1.0,) * (len(shape) - spatial) + tuple(scales), mode=mode, coordinate=coordinate,
                        nearest="floor")
    return convert


# ---------------- element-wise ----------------


def _type_as(ctx, x, other):
    xv, dtype = ctx.value(x), ctx.g.dtype(ctx.value(other))
    return xv if ctx.g.dtype(xv) == dtype else ctx.emit("cast", [xv], dtype=dtype)


def _reciprocal(ctx, x):
    xv = ctx.value(x)
    return ctx.emit("divide", [ctx.operand(1.0, ctx.g.dtype(xv)), xv])


def _softplus(ctx, x, beta=1.0, threshold=20.0):
    # above the threshold torch returns x itself, which differs from softplus by less than exp(-threshold)
    return ctx.emit("softplus", [ctx.value(x)], beta=float(beta))


def _elu(ctx, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if input_scale != 1:
        raise NotConvertible(f"elu with input_scale={input_scale}")
    return ctx.emit("elu", [ctx.value(x)], alpha=float(alpha), scale=float(scale))


def _prelu(ctx, x, weight):
    """The slope applies along axis 1 (one per channel) or everywhere (one value)."""
    shape, wv = ctx.shape(x), ctx.value(weight)
    slopes = ctx.g.shape(wv)
    if len(slopes) == 1 and len(shape) > 2:
        wv = reshape(ctx.g, wv, [slopes[0]] + [1] * (len(shape) - 2), ctx.fresh_name("reshape"))
    return ctx.emit("prelu", [ctx.value(x), wv])


def _log_softmax(ctx, x, dim, *unused):
    return ctx.emit("log_softmax", [ctx.value(x)], axis=int(dim))


# ---------------- reductions ----------------


def _amin(ctx, x, dim=(), keepdim=False):
    rank = len(ctx.shape(x))
    dims = [_axis(int(d), rank) for d in _ints(dim, 1)] if dim not in (None, [], ()) else list(range(rank))
    return ctx.emit("reduce_min", [ctx.value(x)], axes=tuple(dims), keepdims=bool(keepdim))


def _prod(ctx, x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        raise NotConvertible("prod with dtype=")
    rank = len(ctx.shape(x))
    dims = list(range(rank)) if dim is None else [_axis(int(dim), rank)]
    return ctx.emit("reduce_prod", [ctx.value(x)], axes=tuple(dims), keepdims=bool(keepdim))


def _arg(op):
    def convert(ctx, x, dim=None, keepdim=False):
        xv = ctx.value(x)
        if dim is None:  # over the flattened tensor
            xv = reshape(ctx.g, xv, [-1], ctx.fresh_name("reshape"))
            out = ctx.emit(op, [xv], axis=0, keepdims=False)
            return reshape(ctx.g, out, [1] * len(ctx.shape(x)), ctx.fresh_name("reshape")) if keepdim else out
        return ctx.emit(op, [xv], axis=int(dim), keepdims=bool(keepdim))
    return convert


# ---------------- einsum, transposed convolution, 1-D pooling ----------------


def _einsum(ctx, equation, tensors, path=None):
    return einsum(ctx, equation, [ctx.value(t) for t in tensors])


def conv_transpose(ctx, x, weight, bias, stride, padding, dilation, output_padding, groups):
    """A 1-D or 2-D transposed convolution by a constant weight (a 1-D one over a unit height)."""
    w = ctx.const(weight)
    if w is None:
        raise NotConvertible("a transposed convolution by a weight computed at run time")
    rank = len(ctx.shape(x))
    if rank not in (3, 4):
        raise NotConvertible(f"a transposed convolution of a {rank - 2}-D input (1-D and 2-D are supported)")
    xv, bv = ctx.value(x), (ctx.value(bias) if bias is not None else None)
    n = rank - 2
    stride, padding, dilation, output_padding = (_ints(v, n) for v in (stride, padding, dilation, output_padding))
    if n == 1:
        xv, w = unit_height(ctx, xv), w[:, :, None, :]
        stride, dilation, padding, output_padding = [1] + stride, [1] + dilation, [0] + padding, [0] + output_padding
    out = conv_transpose2d(ctx, xv, w, bv, tuple(stride), tuple(padding) * 2, tuple(dilation), tuple(output_padding),
                           int(groups))
    return drop_unit_height(ctx, out) if n == 1 else out


def _conv_transpose_nd(ctx, x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return conv_transpose(ctx, x, weight, bias, stride, padding, dilation, output_padding, groups)


def _max_pool1d(ctx, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    (k,) = _ints(kernel, 1)
    (s,) = _ints(stride, 1) if stride else (k,)
    out = ctx.emit("max_pool2d", [unit_height(ctx, ctx.value(x))], kernel=(1, k), strides=(1, s),
                   pads=(0, _ints(padding, 1)[0]) * 2, dilations=(1, _ints(dilation, 1)[0]), ceil_mode=bool(ceil_mode))
    return drop_unit_height(ctx, out)


def _avg_pool1d(ctx, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    (k,) = _ints(kernel, 1)
    (s,) = _ints(stride, 1) if stride else (k,)
    out = ctx.emit("avg_pool2d", [unit_height(ctx, ctx.value(x))], kernel=(1, k), strides=(1, s),
                   pads=(0, _ints(padding, 1)[0]) * 2, ceil_mode=bool(ceil_mode),
                   count_include_pad=bool(count_include_pad))
    return drop_unit_height(ctx, out)


# ---------------- 3-D convolution and pooling (NCDHW) ----------------


def conv3d(ctx, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv3d.default and conv3d.padding ("valid", or "same" at stride 1); also convolution of a 5-D input."""
    dilation = _ints(dilation, 3)
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0] * 6
        else:
            total = [d * (k - 1) for d, k in zip(dilation, ctx.shape(weight)[2:])]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        pads = _ints(padding, 3) * 2
    args = [ctx.value(x), ctx.value(weight)] + ([ctx.value(bias)] if bias is not None else [])
    return ctx.emit("conv3d", args, strides=tuple(_ints(stride, 3)), pads=tuple(pads), dilations=tuple(dilation),
                    groups=int(groups))


def _max_pool3d(ctx, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    kernel = tuple(_ints(kernel, 3))
    return ctx.emit("max_pool3d", [ctx.value(x)], kernel=kernel, strides=tuple(_ints(stride, 3)) if stride else kernel,
                    pads=tuple(_ints(padding, 3)) * 2, dilations=tuple(_ints(dilation, 3)), ceil_mode=bool(ceil_mode))


def _avg_pool3d(ctx, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    if divisor_override is not None:
        raise NotConvertible("divisor_override")
    kernel = tuple(_ints(kernel, 3))
    return ctx.emit("avg_pool3d", [ctx.value(x)], kernel=kernel, strides=tuple(_ints(stride, 3)) if stride else kernel,
                    pads=tuple(_ints(padding, 3)) * 2, ceil_mode=bool(ceil_mode),
                    count_include_pad=bool(count_include_pad))


def _adaptive_avg_pool3d(ctx, x, output_size):
    """To (1, 1, 1): the mean over D, H, W; to sizes that divide the input's: avg_pool3d."""
    out, shape = tuple(_ints(output_size, 3)), ctx.shape(x)
    if out == (1, 1, 1):
        return ctx.emit("reduce_mean", [ctx.value(x)], axes=(2, 3, 4), keepdims=True)
    size = shape[-3:]
    if all(isinstance(s, int) and o is not None and s % o == 0 for s, o in zip(size, out)):
        kernel = tuple(s // o for s, o in zip(size, out))
        return ctx.emit("avg_pool3d", [ctx.value(x)], kernel=kernel, strides=kernel)
    raise NotConvertible(f"adaptive pooling of {shape} to {out} (windows of different sizes)")


MORE_ATEN = {
    "pad": _pad, "constant_pad_nd": lambda ctx, x, pad, value=0: _pad(ctx, x, pad, "constant", value),
    "reflection_pad1d": _mode_pad("reflect"), "reflection_pad2d": _mode_pad("reflect"),
    "reflection_pad3d": _mode_pad("reflect"), "replication_pad1d": _mode_pad("replicate"),
    "replication_pad2d": _mode_pad("replicate"), "replication_pad3d": _mode_pad("replicate"),
    "upsample_nearest1d": _upsample("nearest", 1), "upsample_nearest2d": _upsample("nearest", 2),
    "upsample_nearest3d": _upsample("nearest", 3), "upsample_linear1d": _upsample("linear", 1),
    "upsample_bilinear2d": _upsample("linear", 2), "upsample_trilinear3d": _upsample("linear", 3),
    "roll": _roll, "type_as": _type_as, "reciprocal": _reciprocal, "softplus": _softplus, "elu": _elu,
    "selu": lambda ctx, x: ctx.emit("elu", [ctx.value(x)], alpha=SELU_ALPHA, scale=SELU_SCALE),
    "leaky_relu": lambda ctx, x, negative_slope=0.01: ctx.emit("leaky_relu", [ctx.value(x)],
                                                                alpha=float(negative_slope)),
    "prelu": _prelu, "_prelu_kernel": _prelu, "log_softmax": _log_softmax, "_log_softmax": _log_softmax,
    "amin": _amin, "prod": _prod, "argmax": _arg("argmax"), "argmin": _arg("argmin"), "einsum": _einsum,
    "conv_transpose1d": _conv_transpose_nd, "conv_transpose2d": _conv_transpose_nd,
    "max_pool1d": _max_pool1d, "avg_pool1d": _avg_pool1d, "conv3d": conv3d, "max_pool3d": _max_pool3d,
    "max_pool3d_with_indices": _max_pool3d, "avg_pool3d": _avg_pool3d, "adaptive_avg_pool3d": _adaptive_avg_pool3d,
}
