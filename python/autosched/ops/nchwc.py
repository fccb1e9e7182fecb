"""Channel-blocked (NCHW[x]c) operators: the layout in which a CPU convolution vectorizes its output channels.

A value in NCHW[x]c is (N, C/x, H, W, x): channel c sits in block c // x, lane c % x. Channel counts that are
not a multiple of x are padded with zero channels up to the next block (the transform writes the zeros;
layout_transform back to NCHW drops them). Weights of conv2d_nchwc are (O/y, I/x, KH, KW, x, y): the input
block x of the data, the output block y of the result (N, O/y, OH, OW, y), so the innermost output axis is y
contiguous lanes and the weight reads along y are contiguous too. With groups > 1 the weights are
(O/y, (I/groups)/x, KH, KW, x, y): each group's input and output channels are whole blocks, and an output
block reads only its group's input blocks. depthwise_conv2d_nchwc keeps the block: data (N, C/x, H, W, x),
weight (C/x, KH, KW, x). Biases are (O/y, y). Pooling works on axes 2 and 3 (H, W)
of the blocked value, lane by lane.

    x5 = layout_transform(x, 0, 16)                   # NCHW -> NCHW16c, channels padded with zeros
    y5 = conv2d_nchwc(x5, w6, stride=1, padding=1)    # w6: (O/16, C/16, 3, 3, 16, 16)
    y = layout_transform(y5, 16, 0, channels=O)       # back to NCHW, padded channels dropped

A block of 0 in layout_transform means plain NCHW.
"""
from ..core import te
from . import reduction
from ._utils import as_pair, check_tensor, const, is_float
from .injective import pad
from .nn import _ConvGeometry, _as_out, _check_rank, _check_same_dtype, _window, check_bias_dtype

__all__ = ["layout_transform", "conv2d_nchwc", "depthwise_conv2d_nchwc", "bias_add_nchwc", "max_pool2d_nchwc",
           "avg_pool2d_nchwc", "global_avg_pool2d_nchwc"]


def _block_count(channels, block):
    return -(-channels // block)


def _check_block(value, op, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{op}: {what} must be a non-negative int (0: NCHW), got {value!r}")
    return value


def layout_transform(x, src_block, dst_block, channels=None, name="T_layout_trans"):
    """x from NCHW[src_block]c to NCHW[dst_block]c (a block of 0: NCHW). `channels`: the real channel count
    of a blocked source (default: all its lanes); channels past it are dropped, and a blocked result is padded
    with zero channels up to a whole block."""
    op = "layout_transform"
    check_tensor(x, op)
    src_block, dst_block = _check_block(src_block, op, "src_block"), _check_block(dst_block, op, "dst_block")
    if src_block == dst_block:
        raise ValueError(f"{op}: source and destination layouts are the same (block {src_block})")
    if src_block:
        _check_rank(x, 5, op, "x (NCHW[x]c)")
        n, cb, h, w, lanes = x.shape
        if lanes != src_block:
            raise ValueError(f"{op}: '{x.name}' {x.shape} has blocks of {lanes} channels, not {src_block}")
        total = cb * lanes
    else:
        _check_rank(x, 4, op, "x (NCHW)")
        n, total, h, w = x.shape
    channels = total if channels is None else channels
    if not isinstance(channels, int) or not (total - (src_block or 1) < channels <= total):
        raise ValueError(f"{op}: channels={channels!r} does not fit '{x.name}' {x.shape}")

    def read(nn, c, hh, ww):
        return x[nn, c // src_block, hh, ww, c % src_block] if src_block else x[nn, c, hh, ww]

    if not dst_block:
        return te.compute((n, channels, h, w), read, name=name, tag="injective")
    zero = const(0, x.dtype)

    def fcompute(nn, cb_out, hh, ww, lane):
        c = cb_out * dst_block + lane
        value = read(nn, c, hh, ww)
        return value if channels % dst_block == 0 else te.if_then_else(c < channels, value, zero)

    return te.compute((n, _block_count(channels, dst_block), h, w, dst_block), fcompute, name=name,
                      tag="injective")


def _conv_attrs(geo, groups):
    return {"layout": "NCHWc", "strides": "%d,%d" % geo.stride, "dilation": "%d,%d" % geo.dilation,
            "padding": "%d,%d,%d,%d" % geo.pads, "groups": str(groups)}


def conv2d_nchwc(data, kernel, stride, padding, dilation=1, groups=1, out_dtype=None, name="conv2d_NCHWc"):
    """data (N, C/x, H, W, x), kernel (O/y, (C/groups)/x, KH, KW, x, y) -> (N, O/y, OH, OW, y). Each group's
    channels are whole blocks: output block ob reads the input blocks of its group,
    (ob // ((O/groups)/y)) * ((C/groups)/x) + rc."""
    op = "conv2d_nchwc"
    _check_rank(data, 5, op, "data")
    _check_rank(kernel, 6, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, in_cb, in_h, in_w, in_x = data.shape
    out_cb, k_cb, k_h, k_w, k_x, out_y = kernel.shape
    _check_block_groups(op, data, kernel, groups)
    if (k_cb * groups, k_x) != (in_cb, in_x):
        per_group = "" if groups == 1 else f" per group x {groups} groups"
        raise ValueError(f"{op}: channel mismatch: data '{data.name}' {data.shape} has {in_cb} blocks of {in_x} "
                         f"channels, kernel '{kernel.name}' {kernel.shape} expects {k_cb} blocks of {k_x}"
                         + per_group)
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    padded = _padded(data, geo)
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation
    group_out_cb = out_cb // groups

    def fcompute(nn, ob, yy, xx, oy):
        rc = te.reduce_axis((0, k_cb), name="rc")
        ry = te.reduce_axis((0, k_h), name="ry")
        rx = te.reduce_axis((0, k_w), name="rx")
        ri = te.reduce_axis((0, in_x), name="ri")
        block = rc if groups == 1 else (ob // group_out_cb) * k_cb + rc  # groups = 1: today's expression
        pixel = padded[nn, block, _window(yy, s_h, ry, d_h), _window(xx, s_w, rx, d_w), ri]
        value = _as_out(pixel, data.dtype, out_dtype) * _as_out(kernel[ob, rc, ry, rx, ri, oy], kernel.dtype,
                                                                 out_dtype)
        return te.sum(value, axis=[rc, ry, rx, ri])

    return te.compute((n, out_cb, geo.out_h, geo.out_w, out_y), fcompute, name=name, tag="conv2d_nchwc",
                      attrs=_conv_attrs(geo, groups))


def _check_block_groups(op, data, kernel, groups):
    """groups is a positive int that splits the input and output channel blocks into whole blocks per group."""
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    in_cb, in_x, out_cb, out_y = data.shape[1], data.shape[4], kernel.shape[0], kernel.shape[5]
    for what, blocks, lanes, tensor in (("input", in_cb, in_x, data), ("output", out_cb, out_y, kernel)):
        if blocks % groups:
            raise ValueError(f"{op}: groups={groups} does not split the {blocks} {what} blocks of {lanes} channels "
                             f"of '{tensor.name}' {tensor.shape} into whole blocks per group (each group's "
                             "channels must be a multiple of the block)")


def depthwise_conv2d_nchwc(data, kernel, stride, padding, dilation=1, out_dtype=None,
                           name="depthwise_conv2d_NCHWc"):
    """data (N, C/x, H, W, x), kernel (C/x, KH, KW, x) -> (N, C/x, OH, OW, x): channel c reads channel c."""
    op = "depthwise_conv2d_nchwc"
    _check_rank(data, 5, op, "data")
    _check_rank(kernel, 4, op, "kernel")
    _check_same_dtype(data, kernel, op)
    n, cb, in_h, in_w, lanes = data.shape
    k_cb, k_h, k_w, k_x = kernel.shape
    if (k_cb, k_x) != (cb, lanes):
        raise ValueError(f"{op}: channel mismatch: data '{data.name}' {data.shape} has {cb} blocks of {lanes} "
                         f"channels, kernel '{kernel.name}' {kernel.shape} expects {k_cb} blocks of {k_x}")
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    padded = _padded(data, geo)
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation

    def fcompute(nn, c, yy, xx, lane):
        ry = te.reduce_axis((0, k_h), name="ry")
        rx = te.reduce_axis((0, k_w), name="rx")
        pixel = padded[nn, c, _window(yy, s_h, ry, d_h), _window(xx, s_w, rx, d_w), lane]
        value = _as_out(pixel, data.dtype, out_dtype) * _as_out(kernel[c, ry, rx, lane], kernel.dtype, out_dtype)
        return te.sum(value, axis=[ry, rx])

    return te.compute((n, cb, geo.out_h, geo.out_w, lanes), fcompute, name=name,
                      tag="depthwise_conv2d_nchwc", attrs=_conv_attrs(geo, cb * lanes))


def _padded(data, geo, value=0, extra_bottom=0, extra_right=0):
    top, left, bottom, right = geo.pads
    if not any(geo.pads) and not extra_bottom and not extra_right:
        return data
    return pad(data, (0, 0, top, left, 0), (0, 0, bottom + extra_bottom, right + extra_right, 0), pad_value=value,
               name="PaddedInput")


def bias_add_nchwc(x, bias, name="T_bias_add", out_dtype=None):
    """x (N, C/y, H, W, y) + bias (C/y, y), added in x's dtype and given as out_dtype (default x's), as bias_add."""
    op = "bias_add_nchwc"
    _check_rank(x, 5, op, "x")
    _check_rank(bias, 2, op, "bias")
    out_dtype = check_bias_dtype(x, bias, out_dtype, op)
    if tuple(bias.shape) != (x.shape[1], x.shape[4]):
        raise ValueError(f"{op}: bias '{bias.name}' {bias.shape} does not match the channel blocks of '{x.name}' "
                         f"{x.shape}")
    return te.compute(x.shape, lambda n, c, h, w, lane: te.cast(x[n, c, h, w, lane] + te.cast(bias[c, lane], x.dtype),
                                                                out_dtype), name=name, tag="broadcast")


class _PoolGeometry:
    """The window of a pooling over axes 2, 3 with torch's ceil mode: the last window may run past the padding
    (extra trailing padding) but starts inside the input or the leading padding."""

    def __init__(self, op, data, kernel, strides, pads, dilation, ceil_mode):
        self.kernel = as_pair(kernel, op, "kernel")
        self.stride = as_pair(strides, op, "strides")
        self.dilation = as_pair(dilation, op, "dilation")
        pads = tuple(pads)
        if len(pads) != 4 or any(not isinstance(p, int) or p < 0 for p in pads):
            raise ValueError(f"{op}: pads must be four non-negative ints (top, left, bottom, right), got {pads!r}")
        self.pads = pads
        self.out, self.extra = [], []
        for d, (lo, hi) in enumerate(((pads[0], pads[2]), (pads[1], pads[3]))):
            size, k, s, dil = data.shape[2 + d], self.kernel[d], self.stride[d], self.dilation[d]
            extent = (k - 1) * dil + 1
            span = size + lo + hi - extent
            if span < 0:
                raise ValueError(f"{op}: window of extent {extent} does not fit the padded input of size "
                                 f"{size + lo + hi}")
            out = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (out - 1) * s >= size + lo:
                out -= 1
            self.out.append(out)
            self.extra.append(max(0, (out - 1) * s + extent - (size + lo + hi)))

    def shape(self, data):
        n, cb, _, _, lanes = data.shape
        return (n, cb, self.out[0], self.out[1], lanes)


def _pool_window(op, data, geo, combiner, fill, name, tag):
    top, left, bottom, right = geo.pads
    padded = pad(data, (0, 0, top, left, 0), (0, 0, bottom + geo.extra[0], right + geo.extra[1], 0),
                 pad_value=fill, name=name + "_pad") if any(geo.pads) or any(geo.extra) else data
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.stride, geo.dilation

    def fcompute(n, c, i, j, lane):
        rh = te.reduce_axis((0, kh), name="rv0")
        rw = te.reduce_axis((0, kw), name="rv1")
        return combiner(padded[n, c, _window(i, sh, rh, dh), _window(j, sw, rw, dw), lane], axis=[rh, rw])

    return te.compute(geo.shape(data), fcompute, name=name, tag=tag)


def max_pool2d_nchwc(data, kernel, strides, pads=(0, 0, 0, 0), dilation=1, ceil_mode=False, name="pool_max"):
    """Window maximum over H, W of data (N, C/x, H, W, x)."""
    op = "max_pool2d_nchwc"
    _check_rank(data, 5, op, "data")
    geo = _PoolGeometry(op, data, kernel, strides, pads, dilation, ceil_mode)
    return _pool_window(op, data, geo, te.max, te.min_value(data.dtype), name, "pool_max")


def _tap_count(out_var, stride, lo, dilation, kernel, low, high):
    """The taps r in [0, kernel) with low <= out * stride - lo + r * dilation < high (an int32 expression)."""
    start = out_var * stride - lo
    zero = const(0, "int32")
    first = te.max(-te.floordiv(start - low, dilation), zero)
    last = te.min(te.floordiv(high - 1 - start, dilation), const(kernel - 1, "int32"))
    return last - first + 1


def avg_pool2d_nchwc(data, kernel, strides, pads=(0, 0, 0, 0), dilation=1, ceil_mode=False,
                     count_include_pad=False, name="pool_avg"):
    """Window average over H, W of data (N, C/x, H, W, x): divided by the window's taps inside the padded input
    (count_include_pad) or inside the input."""
    op = "avg_pool2d_nchwc"
    _check_rank(data, 5, op, "data")
    if not is_float(data.dtype):
        raise TypeError(f"{op}: needs a floating-point tensor, got '{data.name}' of dtype {data.dtype}")
    geo = _PoolGeometry(op, data, kernel, strides, pads, dilation, ceil_mode)
    total = _pool_window(op, data, geo, te.sum, 0.0, name + "_sum", "pool_sum")
    top, left, bottom, right = geo.pads
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.stride, geo.dilation
    h, w = data.shape[2], data.shape[3]
    rows = (-top, h + bottom) if count_include_pad else (0, h)
    cols = (-left, w + right) if count_include_pad else (0, w)
    uniform = not any(geo.extra) and (count_include_pad or not any(geo.pads))

    def favg(n, c, i, j, lane):
        if uniform:
            return total[n, c, i, j, lane] / const(kh * kw, data.dtype)
        count = _tap_count(i, sh, top, dh, kh, *rows) * _tap_count(j, sw, left, dw, kw, *cols)
        return total[n, c, i, j, lane] / te.cast(count, data.dtype)

    return te.compute(total.shape, favg, name=name, tag="pool_avg")


def global_avg_pool2d_nchwc(data, name="adaptive_pool_avg"):
    """Mean over H, W of data (N, C/x, H, W, x) -> (N, C/x, 1, 1, x)."""
    op = "global_avg_pool2d_nchwc"
    _check_rank(data, 5, op, "data")
    if not is_float(data.dtype):
        raise TypeError(f"{op}: needs a floating-point tensor, got '{data.name}' of dtype {data.dtype}")
    return reduction.mean(data, [2, 3], keepdims=True, name=name)
