"""Neural-network operators: convolutions (2-D and 3-D), dense / matmul, pooling, bias_add, layer_norm.

Layouts: conv2d_nhwc takes data NHWC and kernel HWIO (KH, KW, CI / groups, CO); conv2d_nchw takes data NCHW
and kernel OIHW (CO, CI / groups, KH, KW); conv3d_ncdhw takes data NCDHW and kernel (CO, CI / groups, KD, KH,
KW). Depthwise kernels carry a channel multiplier M: (C, M, KH, KW) for NCHW, (KH, KW, C, M) for NHWC; output
channel c reads input channel c // M.
Padding: an int, (pad_h, pad_w), (top, left, bottom, right), "VALID" or "SAME". A padded input is a stage of
its own ("PaddedInput", tag "injective,pad") built with te.if_then_else, so no read is out of bounds.
`out_dtype` (default: the input dtype) casts both operands before the multiply (e.g. int8 in, int32 out).

FLOPs of a convolution: 2 * N * OH * OW * CO * KH * KW * CI / groups (one multiply and one add per step);
dense / matmul: 2 * M * N * K (+ M * N with a bias); batch_matmul: 2 * B * M * N * K.
"""
from ..core import te
from . import reduction
from ._utils import (as_pair, check_float, check_tensor, const, conv_out_size, elem_count, is_float,
                     normalize_axes, normalize_axis, padding_2d, accumulation_dtype)
from .injective import pad


def _check_rank(x, rank, op, what):
    check_tensor(x, op, what)
    if x.ndim != rank:
        raise ValueError(f"{op}: {what} '{x.name}' must have rank {rank}, got shape {x.shape}")


def _check_same_dtype(a, b, op):
    if a.dtype != b.dtype:
        raise TypeError(f"{op}: dtypes differ: '{a.name}' is {a.dtype}, '{b.name}' is {b.dtype}")


def _window(out_var, stride, red_var, dilation):
    """Input coordinate out*stride + red*dilation, without multiplications by 1."""
    base = out_var * stride if stride != 1 else out_var
    offset = red_var * dilation if dilation != 1 else red_var
    return base + offset


def _as_out(value, dtype, out_dtype):
    return value if out_dtype == dtype else te.cast(value, out_dtype)


class _ConvGeometry:
    """Strides, dilations, padding and output size of a 2-D window over (H, W)."""

    def __init__(self, op, in_hw, kernel_hw, stride, padding, dilation):
        self.stride = as_pair(stride, op, "stride")
        self.dilation = as_pair(dilation, op, "dilation")
        self.pads = padding_2d(padding, kernel_hw, self.dilation, op)  # top, left, bottom, right
        top, left, bottom, right = self.pads
        self.out_h = conv_out_size(in_hw[0], kernel_hw[0], self.stride[0], self.dilation[0], top, bottom, op,
                                   "height")
        self.out_w = conv_out_size(in_hw[1], kernel_hw[1], self.stride[1], self.dilation[1], left, right, op,
                                   "width")

    def padded(self, data, h_axis, w_axis, pad_value=0, extra_bottom=0, extra_right=0):
        top, left, bottom, right = self.pads
        if not any(self.pads) and not extra_bottom and not extra_right:
            return data
        before, after = [0] * data.ndim, [0] * data.ndim
        before[h_axis], before[w_axis] = top, left
        after[h_axis], after[w_axis] = bottom + extra_bottom, right + extra_right
        return pad(data, before, after, pad_value=pad_value, name="PaddedInput")


def _check_groups(op, in_channels, out_channels, kernel_in_channels, groups):
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    if in_channels % groups:
        raise ValueError(f"{op}: groups={groups} does not divide the {in_channels} input channels")
    if out_channels % groups:
        raise ValueError(f"{op}: groups={groups} does not divide the {out_channels} output channels")
    if kernel_in_channels != in_channels // groups:
        raise ValueError(f"{op}: channel mismatch: data has {in_channels} input channels "
                         f"({in_channels // groups} per group with groups={groups}) but the kernel expects "
                         f"{kernel_in_channels}")


def _conv_attrs(layout, geo, groups):
    return {"layout": layout, "strides": "%d,%d" % geo.stride, "dilation": "%d,%d" % geo.dilation,
            "padding": "%d,%d,%d,%d" % geo.pads, "groups": str(groups)}


def conv2d_nhwc(data, kernel, stride, padding, dilation=1, groups=1, out_dtype=None, name="Conv2dOutput"):
    op = "conv2d_nhwc"
    _check_rank(data, 4, op, "data")
    _check_rank(kernel, 4, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, in_h, in_w, in_c = data.shape
    k_h, k_w, k_c, out_c = kernel.shape
    _check_groups(op, in_c, out_c, k_c, groups)
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    padded = geo.padded(data, 1, 2)
    group_out = out_c // groups
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation

    def fcompute(nn, yy, xx, ff):
        ry = te.reduce_axis((0, k_h), name="ry")
        rx = te.reduce_axis((0, k_w), name="rx")
        rc = te.reduce_axis((0, k_c), name="rc")
        channel = rc if groups == 1 else (ff // group_out) * k_c + rc
        pixel = padded[nn, _window(yy, s_h, ry, d_h), _window(xx, s_w, rx, d_w), channel]
        weight = kernel[ry, rx, rc, ff]
        value = _as_out(pixel, data.dtype, out_dtype) * _as_out(weight, kernel.dtype, out_dtype)
        return te.sum(value, axis=[ry, rx, rc])

    return te.compute((n, geo.out_h, geo.out_w, out_c), fcompute, name=name, tag="conv2d_nhwc",
                      attrs=_conv_attrs("NHWC", geo, groups))


def conv2d_nchw(data, kernel, stride, padding, dilation=1, groups=1, out_dtype=None, name="Conv2dOutput"):
    op = "conv2d_nchw"
    _check_rank(data, 4, op, "data")
    _check_rank(kernel, 4, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, in_c, in_h, in_w = data.shape
    out_c, k_c, k_h, k_w = kernel.shape
    _check_groups(op, in_c, out_c, k_c, groups)
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    padded = geo.padded(data, 2, 3)
    group_out = out_c // groups
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation

    def fcompute(nn, ff, yy, xx):
        rc = te.reduce_axis((0, k_c), name="rc")
        ry = te.reduce_axis((0, k_h), name="ry")
        rx = te.reduce_axis((0, k_w), name="rx")
        channel = rc if groups == 1 else (ff // group_out) * k_c + rc
        pixel = padded[nn, channel, _window(yy, s_h, ry, d_h), _window(xx, s_w, rx, d_w)]
        weight = kernel[ff, rc, ry, rx]
        value = _as_out(pixel, data.dtype, out_dtype) * _as_out(weight, kernel.dtype, out_dtype)
        return te.sum(value, axis=[rc, ry, rx])

    return te.compute((n, out_c, geo.out_h, geo.out_w), fcompute, name=name, tag="conv2d_nchw",
                      attrs=_conv_attrs("NCHW", geo, groups))


def _triple(value, op, what):
    items = list(value) if isinstance(value, (list, tuple)) else [value] * 3
    if len(items) != 3 or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in items):
        raise ValueError(f"{op}: {what} must be a positive int or 3 of them (depth, height, width), got {value!r}")
    return tuple(items)


def _pads_3d(padding, op):
    """An int, (d, h, w) or (front, top, left, back, bottom, right) -> the 6 values."""
    items = list(padding) if isinstance(padding, (list, tuple)) else [padding] * 3
    if len(items) == 3:
        items = items * 2
    if len(items) != 6 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in items):
        raise ValueError(f"{op}: padding must be a non-negative int, (d, h, w) or (front, top, left, back, bottom, "
                         f"right), got {padding!r}")
    return tuple(items)


def conv3d_ncdhw(data, kernel, stride, padding, dilation=1, groups=1, out_dtype=None, name="Conv3dOutput"):
    """3-D convolution of data NCDHW with kernel (CO, CI / groups, KD, KH, KW); padding an int, (d, h, w) or
    (front, top, left, back, bottom, right)."""
    op = "conv3d_ncdhw"
    _check_rank(data, 5, op, "data")
    _check_rank(kernel, 5, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, in_c = data.shape[:2]
    out_c, k_c = kernel.shape[:2]
    _check_groups(op, in_c, out_c, k_c, groups)
    out_dtype = out_dtype or data.dtype
    strides, dilations = _triple(stride, op, "stride"), _triple(dilation, op, "dilation")
    pads = _pads_3d(padding, op)
    out_size = [conv_out_size(size, k, s, d, pads[i], pads[3 + i], op, what)
                for i, (size, k, s, d, what) in enumerate(zip(data.shape[2:], kernel.shape[2:], strides, dilations,
                                                               ("depth", "height", "width")))]
    padded = data if not any(pads) else pad(data, (0, 0) + pads[:3], (0, 0) + pads[3:], name="PaddedInput")
    group_out = out_c // groups

    def fcompute(nn, ff, zz, yy, xx):
        rc = te.reduce_axis((0, k_c), name="rc")
        rz, ry, rx = (te.reduce_axis((0, k), name=f"r{axis}") for k, axis in zip(kernel.shape[2:], "zyx"))
        channel = rc if groups == 1 else (ff // group_out) * k_c + rc
        spatial = [_window(o, s, r, d) for o, s, r, d in zip((zz, yy, xx), strides, (rz, ry, rx), dilations)]
        pixel = padded[(nn, channel) + tuple(spatial)]
        weight = kernel[ff, rc, rz, ry, rx]
        value = _as_out(pixel, data.dtype, out_dtype) * _as_out(weight, kernel.dtype, out_dtype)
        return te.sum(value, axis=[rc, rz, ry, rx])

    attrs = {"layout": "NCDHW", "strides": "%d,%d,%d" % strides, "dilation": "%d,%d,%d" % dilations,
             "padding": ",".join(map(str, pads)), "groups": str(groups)}
    return te.compute((n, out_c) + tuple(out_size), fcompute, name=name, tag="conv3d_ncdhw", attrs=attrs)


def depthwise_conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype=None,
                          name="DepthwiseConv2d"):
    """Kernel (C, M, KH, KW); output (N, C * M, OH, OW)."""
    op = "depthwise_conv2d_nchw"
    _check_rank(data, 4, op, "data")
    _check_rank(kernel, 4, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, in_c, in_h, in_w = data.shape
    k_c, mult, k_h, k_w = kernel.shape
    if k_c != in_c:
        raise ValueError(f"{op}: channel mismatch: data has {in_c} channels but the kernel has {k_c}")
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    padded = geo.padded(data, 2, 3)
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation

    def fcompute(b, c, i, j):
        di = te.reduce_axis((0, k_h), name="di")
        dj = te.reduce_axis((0, k_w), name="dj")
        channel, m = (c, 0) if mult == 1 else (c // mult, c % mult)
        value = (_as_out(padded[b, channel, _window(i, s_h, di, d_h), _window(j, s_w, dj, d_w)], data.dtype,
                         out_dtype) * _as_out(kernel[channel, m, di, dj], kernel.dtype, out_dtype))
        return te.sum(value, axis=[di, dj])

    return te.compute((n, in_c * mult, geo.out_h, geo.out_w), fcompute, name=name,
                      tag="depthwise_conv2d_nchw", attrs=_conv_attrs("NCHW", geo, in_c))


def depthwise_conv2d_nhwc(data, kernel, stride, padding, dilation=1, out_dtype=None,
                          name="DepthwiseConv2d"):
    """Kernel (KH, KW, C, M); output (N, OH, OW, C * M)."""
    op = "depthwise_conv2d_nhwc"
    _check_rank(data, 4, op, "data")
    _check_rank(kernel, 4, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, in_h, in_w, in_c = data.shape
    k_h, k_w, k_c, mult = kernel.shape
    if k_c != in_c:
        raise ValueError(f"{op}: channel mismatch: data has {in_c} channels but the kernel has {k_c}")
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    padded = geo.padded(data, 1, 2)
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation

    def fcompute(b, i, j, c):
        di = te.reduce_axis((0, k_h), name="di")
        dj = te.reduce_axis((0, k_w), name="dj")
        channel, m = (c, 0) if mult == 1 else (c // mult, c % mult)
        value = (_as_out(padded[b, _window(i, s_h, di, d_h), _window(j, s_w, dj, d_w), channel], data.dtype,
                         out_dtype) * _as_out(kernel[di, dj, channel, m], kernel.dtype, out_dtype))
        return te.sum(value, axis=[di, dj])

    return te.compute((n, geo.out_h, geo.out_w, in_c * mult), fcompute, name=name,
                      tag="depthwise_conv2d_nhwc", attrs=_conv_attrs("NHWC", geo, in_c))


def _largest_divisor_at_most(n, limit):
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def conv2d_nchw_spatial_pack(data, kernel, stride, padding, dilation=1, out_dtype=None, tile=(2, 2, 4),
                             name="output_unpack"):
    """conv2d_nchw computed on packed tiles, as mobile-GPU schedules do.

    Stages: data_vec (N, OH/VH, OW/VW, CI, window_h, window_w) holds the input window of each VH x VW output
    tile; kernel_vec (CO/VC, CI, KH, KW, VC) groups VC output channels innermost; conv (N, CO/VC, OH/VH,
    OW/VW, VH, VW, VC) is the tiled convolution; output_unpack (N, CO, OH, OW) reads it back.
    tile = (VH, VW, VC): OH / OW need not be multiples (tiles are rounded up and the input padded further; the
    extra outputs are computed and dropped, so FLOPs exceed the formula then); VC must divide CO (the default
    takes the largest divisor of CO not above tile[2]). groups = 1 only.
    """
    op = "conv2d_nchw_spatial_pack"
    _check_rank(data, 4, op, "data")
    _check_rank(kernel, 4, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, in_c, in_h, in_w = data.shape
    out_c, k_c, k_h, k_w = kernel.shape
    _check_groups(op, in_c, out_c, k_c, 1)
    tile = tuple(tile)
    if len(tile) != 3 or not all(isinstance(t, int) and t >= 1 for t in tile):
        raise ValueError(f"{op}: tile must be three positive ints (VH, VW, VC), got {tile!r}")
    v_h, v_w, v_c = tile
    if out_c % v_c:
        v_c = _largest_divisor_at_most(out_c, v_c)
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation
    tiles_h, tiles_w = -(-geo.out_h // v_h), -(-geo.out_w // v_w)
    # Input rows / columns one tile of outputs reads.
    win_h, win_w = (v_h - 1) * s_h + (k_h - 1) * d_h + 1, (v_w - 1) * s_w + (k_w - 1) * d_w + 1
    top, left, bottom, right = geo.pads
    extra_bottom = max(0, (tiles_h - 1) * v_h * s_h + win_h - (in_h + top + bottom))
    extra_right = max(0, (tiles_w - 1) * v_w * s_w + win_w - (in_w + left + right))
    padded = geo.padded(data, 2, 3, extra_bottom=extra_bottom, extra_right=extra_right)

    data_vec = te.compute(
        (n, tiles_h, tiles_w, in_c, win_h, win_w),
        lambda b, h, w, ci, vh, vw: padded[b, ci, h * (v_h * s_h) + vh, w * (v_w * s_w) + vw],
        name="data_vec", tag="injective")
    kernel_vec = te.compute(
        (out_c // v_c, in_c, k_h, k_w, v_c),
        lambda co, ci, kh, kw, vc: kernel[co * v_c + vc, ci, kh, kw], name="kernel_vec", tag="injective")

    def fconv(b, co, h, w, vh, vw, vc):
        ci = te.reduce_axis((0, in_c), name="ci")
        kh = te.reduce_axis((0, k_h), name="kh")
        kw = te.reduce_axis((0, k_w), name="kw")
        window = data_vec[b, h, w, ci, _window(vh, s_h, kh, d_h), _window(vw, s_w, kw, d_w)]
        value = (_as_out(window, data.dtype, out_dtype) *
                 _as_out(kernel_vec[co, ci, kh, kw, vc], kernel.dtype, out_dtype))
        return te.sum(value, axis=[ci, kh, kw])

    conv = te.compute((n, out_c // v_c, tiles_h, tiles_w, v_h, v_w, v_c), fconv, name="conv",
                      tag="spatial_conv2d", attrs=_conv_attrs("NCHW", geo, 1))
    return te.compute(
        (n, out_c, geo.out_h, geo.out_w),
        lambda b, co, h, w: conv[b, co // v_c, h // v_h, w // v_w, h % v_h, w % v_w, co % v_c],
        name=name, tag="spatial_conv2d_output")


def matmul(a, b, transpose_a=False, transpose_b=False, out_dtype=None, name="T_matmul"):
    """2-D matrix product op(a) @ op(b), op transposing when asked."""
    op = "matmul"
    _check_rank(a, 2, op, "a")
    _check_rank(b, 2, op, "b")
    _check_same_dtype(a, b, op)
    m, k = (a.shape[1], a.shape[0]) if transpose_a else a.shape
    k_b, n = (b.shape[1], b.shape[0]) if transpose_b else b.shape
    if k != k_b:
        raise ValueError(f"matmul: inner dimensions differ: '{a.name}' {a.shape} (transpose_a={transpose_a}) "
                         f"and '{b.name}' {b.shape} (transpose_b={transpose_b})")
    out_dtype = out_dtype or a.dtype

    def fcompute(i, j):
        r = te.reduce_axis((0, k), name="k")
        lhs = a[r, i] if transpose_a else a[i, r]
        rhs = b[j, r] if transpose_b else b[r, j]
        return te.sum(_as_out(lhs, a.dtype, out_dtype) * _as_out(rhs, b.dtype, out_dtype), axis=r)

    return te.compute((m, n), fcompute, name=name, tag="matmul")


def dense(data, weight, bias=None, out_dtype=None, name="T_dense"):
    """data (M, K) times weight (N, K) transposed -> (M, N), plus bias (N,) when given."""
    op = "dense"
    _check_rank(data, 2, op, "data")
    _check_rank(weight, 2, op, "weight")
    _check_same_dtype(data, weight, op)
    if data.shape[1] != weight.shape[1]:
        raise ValueError(f"dense: reduction dimensions differ: data '{data.name}' {data.shape} and weight "
                         f"'{weight.name}' {weight.shape} (weight is (units, in_features))")
    out_dtype = out_dtype or data.dtype
    k = data.shape[1]

    def fcompute(i, j):
        r = te.reduce_axis((0, k), name="k")
        return te.sum(_as_out(data[i, r], data.dtype, out_dtype) * _as_out(weight[j, r], weight.dtype,
                                                                             out_dtype), axis=r)

    out = te.compute((data.shape[0], weight.shape[0]), fcompute, name=name, tag="dense")
    if bias is None:
        return out
    _check_rank(bias, 1, op, "bias")
    if bias.shape[0] != weight.shape[0]:
        raise ValueError(f"dense: bias '{bias.name}' {bias.shape} does not match {weight.shape[0]} units")
    if bias.dtype != out_dtype:
        raise TypeError(f"dense: bias '{bias.name}' is {bias.dtype}, the output is {out_dtype}")
    return te.compute(out.shape, lambda i, j: out[i, j] + bias[j], name="T_dense_bias", tag="broadcast")


def batch_matmul(x, y, transpose_a=False, transpose_b=True, out_dtype=None, name="T_batch_matmul"):
    """Batched product of x (B, M, K) and y (B, N, K) (transpose_b=True, the default) or y (B, K, N);
    a batch of 1 broadcasts to the other's batch."""
    op = "batch_matmul"
    _check_rank(x, 3, op, "x")
    _check_rank(y, 3, op, "y")
    _check_same_dtype(x, y, op)
    batch_x, m, k = (x.shape[0], x.shape[2], x.shape[1]) if transpose_a else x.shape
    batch_y, k_y, n = (y.shape[0], y.shape[2], y.shape[1]) if transpose_b else y.shape
    if batch_x != batch_y and 1 not in (batch_x, batch_y):
        raise ValueError(f"batch_matmul: batch sizes of {x.shape} and {y.shape} differ")
    if k != k_y:
        raise ValueError(f"batch_matmul: inner dimensions differ: '{x.name}' {x.shape} "
                         f"(transpose_a={transpose_a}) and '{y.name}' {y.shape} (transpose_b={transpose_b})")
    out_dtype = out_dtype or x.dtype
    batch = max(batch_x, batch_y)

    def fcompute(bb, i, j):
        r = te.reduce_axis((0, k), name="k")
        bx = bb if batch_x != 1 else 0
        by = bb if batch_y != 1 else 0
        lhs = x[bx, r, i] if transpose_a else x[bx, i, r]
        rhs = y[by, j, r] if transpose_b else y[by, r, j]
        return te.sum(_as_out(lhs, x.dtype, out_dtype) * _as_out(rhs, y.dtype, out_dtype), axis=r)

    return te.compute((batch, m, n), fcompute, name=name, tag="batch_matmul")


def check_bias_dtype(x, bias, out_dtype, op):
    """The output dtype of x + bias (default x's); bias is of x's dtype or of that one."""
    out_dtype = out_dtype or x.dtype
    if bias.dtype not in (x.dtype, out_dtype):
        raise TypeError(f"{op}: bias '{bias.name}' is {bias.dtype}, '{x.name}' is {x.dtype}")
    return out_dtype


def bias_add(x, bias, axis=1, name="T_bias_add", out_dtype=None):
    """x + bias broadcast along `axis` (bias is 1-D with x.shape[axis] elements), added in x's dtype and given
    as out_dtype (default x's): the float32 sum of a 16-bit convolution plus its 16-bit bias, rounded once."""
    check_tensor(x, "bias_add")
    _check_rank(bias, 1, "bias_add", "bias")
    out_dtype = check_bias_dtype(x, bias, out_dtype, "bias_add")
    axis = normalize_axis(axis, x.ndim, "bias_add")
    if bias.shape[0] != x.shape[axis]:
        raise ValueError(f"bias_add: bias '{bias.name}' {bias.shape} does not match axis {axis} of "
                         f"'{x.name}' {x.shape}")
    return te.compute(x.shape, lambda *i: te.cast(x[i] + te.cast(bias[i[axis]], x.dtype), out_dtype), name=name,
                      tag="broadcast")


def layer_norm(x, gamma, beta, axis=-1, epsilon=1e-5, name="T_layer_norm"):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over `axis` (int or list); gamma and beta have the
    shape of the normalised axes."""
    op = "layer_norm"
    check_tensor(x, op)
    check_float(x, op)
    axes = normalize_axes(axis, x.ndim, op)
    norm_shape = tuple(x.shape[d] for d in axes)
    for what, t in (("gamma", gamma), ("beta", beta)):
        check_tensor(t, op, what)
        _check_same_dtype(x, t, op)
        if t.shape != norm_shape:
            raise ValueError(f"{op}: {what} '{t.name}' has shape {t.shape}, expected {norm_shape} (the shape "
                             f"of axes {tuple(axes)} of '{x.name}' {x.shape})")
    stat = accumulation_dtype(x.dtype)
    wide = x if stat == x.dtype else te.compute(x.shape, lambda *i: te.cast(x[i], stat), name=f"{name}_{stat}",
                                                tag="elemwise")
    avg = reduction.mean(wide, axes, keepdims=True, name=f"{name}_mean")
    dev_sum = reduction.squared_deviation_sum(wide, avg, axes, True, f"{name}_var_sum")
    inv_count = const(1.0 / elem_count([x.shape[d] for d in axes]), stat)
    eps = const(epsilon, stat)
    inv_std = te.compute(dev_sum.shape, lambda *i: te.rsqrt(dev_sum[i] * inv_count + eps),
                         name=f"{name}_inv_std", tag="elemwise")

    def fcompute(*i):
        row = tuple(0 if d in axes else v for d, v in enumerate(i))
        param = tuple(i[d] for d in axes)
        normed = (wide[i] - avg[row]) * inv_std[row] * te.cast(gamma[param], stat) + te.cast(beta[param], stat)
        return te.cast(normed, x.dtype)

    return te.compute(x.shape, fcompute, name=name, tag="layer_norm")


def _pool_geometry(op, data, pool_size, strides, padding, dilation, layout):
    check_tensor(data, op, "data")
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"{op}: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    _check_rank(data, 4, op, "data")
    h_axis, w_axis = (2, 3) if layout == "NCHW" else (1, 2)
    kernel = as_pair(pool_size, op, "pool_size")
    geo = _ConvGeometry(op, (data.shape[h_axis], data.shape[w_axis]), kernel, strides, padding, dilation)
    top, left, bottom, right = geo.pads
    ext_h = (kernel[0] - 1) * geo.dilation[0] + 1
    ext_w = (kernel[1] - 1) * geo.dilation[1] + 1
    if max(top, bottom) >= ext_h or max(left, right) >= ext_w:
        raise ValueError(f"{op}: padding {geo.pads} must be smaller than the pooling window "
                         f"({ext_h}, {ext_w}), or some windows would hold only padding")
    return h_axis, w_axis, kernel, geo


def _pool_shape(data, h_axis, w_axis, geo):
    shape = list(data.shape)
    shape[h_axis], shape[w_axis] = geo.out_h, geo.out_w
    return tuple(shape)


def _pool_index(i, h_axis, w_axis, geo, rh, rw):
    idx = list(i)
    idx[h_axis] = _window(i[h_axis], geo.stride[0], rh, geo.dilation[0])
    idx[w_axis] = _window(i[w_axis], geo.stride[1], rw, geo.dilation[1])
    return tuple(idx)


def max_pool2d(data, pool_size, strides, padding, dilation=1, layout="NCHW", name="pool_max"):
    op = "max_pool2d"
    h_axis, w_axis, (k_h, k_w), geo = _pool_geometry(op, data, pool_size, strides, padding, dilation, layout)
    padded = geo.padded(data, h_axis, w_axis, pad_value=te.min_value(data.dtype))

    def fcompute(*i):
        rh = te.reduce_axis((0, k_h), name="rv0")
        rw = te.reduce_axis((0, k_w), name="rv1")
        return te.max(padded[_pool_index(i, h_axis, w_axis, geo, rh, rw)], axis=[rh, rw])

    return te.compute(_pool_shape(data, h_axis, w_axis, geo), fcompute, name=name, tag="pool_max")


def _valid_taps(out_var, stride, pad_lo, dilation, kernel, size):
    """Number of window taps r in [0, kernel) with 0 <= out*stride - pad_lo + r*dilation < size."""
    start = out_var * stride - pad_lo if stride != 1 else out_var - pad_lo
    zero = const(0, "int32")
    # First tap: ceil(-start / d) == -floor(start / d), at least 0.
    first = te.max(-te.floordiv(start, dilation) if dilation != 1 else -start, zero)
    last = te.min(te.floordiv(size - 1 - start, dilation) if dilation != 1 else size - 1 - start,
                  const(kernel - 1, "int32"))
    return last - first + 1


def avg_pool2d(data, pool_size, strides, padding, dilation=1, layout="NCHW", count_include_pad=True,
               name="pool_avg"):
    """Window average; count_include_pad=False divides by the number of taps inside the input."""
    op = "avg_pool2d"
    h_axis, w_axis, (k_h, k_w), geo = _pool_geometry(op, data, pool_size, strides, padding, dilation, layout)
    padded = geo.padded(data, h_axis, w_axis)
    shape = _pool_shape(data, h_axis, w_axis, geo)

    def fsum(*i):
        rh = te.reduce_axis((0, k_h), name="rv0")
        rw = te.reduce_axis((0, k_w), name="rv1")
        return te.sum(padded[_pool_index(i, h_axis, w_axis, geo, rh, rw)], axis=[rh, rw])

    pool_sum = te.compute(shape, fsum, name="pool_sum", tag="pool_sum")
    top, left = geo.pads[0], geo.pads[1]

    def favg(*i):
        if count_include_pad or not any(geo.pads):
            return pool_sum[i] / const(k_h * k_w, data.dtype)
        count_h = _valid_taps(i[h_axis], geo.stride[0], top, geo.dilation[0], k_h, data.shape[h_axis])
        count_w = _valid_taps(i[w_axis], geo.stride[1], left, geo.dilation[1], k_w, data.shape[w_axis])
        return pool_sum[i] / te.cast(count_h * count_w, data.dtype)

    return te.compute(shape, favg, name=name, tag="pool_avg",
                      attrs={"count_include_pad": str(bool(count_include_pad)).lower()})


def _global_pool(kind, data, layout, name):
    op = f"global_{kind}_pool2d"
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"{op}: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    _check_rank(data, 4, op, "data")
    axes = [2, 3] if layout == "NCHW" else [1, 2]
    if kind == "max":
        return reduction.max(data, axes, keepdims=True, name=name)
    if not is_float(data.dtype):
        raise TypeError(f"{op}: needs a floating-point tensor, got '{data.name}' of dtype {data.dtype}")
    return reduction.mean(data, axes, keepdims=True, name=name)


def global_avg_pool2d(data, layout="NCHW", name="adaptive_pool_avg"):
    return _global_pool("avg", data, layout, name)


def global_max_pool2d(data, layout="NCHW", name="adaptive_pool_max"):
    return _global_pool("max", data, layout, name)
