"""conv2d_integer_nchwc: the layout pass's form of conv2d_integer (ops/quant.py) for dot-product instructions.

A uint8 x int8 convolution reaches the CPU's dot-product instruction (VNNI's vpdpbusd, 4 byte products per 32-bit
lane) when 4 consecutive input channels of a pixel are adjacent in memory and the packed weight holds, for each
output lane, those 4 channels' bytes together (ops/quantized.py: conv2d_nchwc_dot, pack_dot_conv_weight). The
layout pass (graph/layout.py) rewrites a groups = 1 conv2d_integer with a constant weight into

    conv2d_integer_nchwc(layout_transform(x, NCHW -> NCHW{x}c), packed weight[, zero points])

whose output is NCHW int32 again: the requantize, dequantize and float ops after it keep their layout, and each
output element reads its accumulator from the blocked product in the same task. The zero points' corrections
are conv2d_integer's (sum (a - za)(b - zb) = sum a*b - za * colsum(b) - zb * rowsum(a) + K * za * zb); the border
of the input reads x's zero point, so it is the zero of the shifted values, as in conv2d_integer.

Attrs: strides, pads, dilations as conv2d_integer's; `channels` and `out_channels`, the real channel counts (the
blocked input and the packed weight are zero-padded up to whole blocks).
"""
import types

from ...core import te
from ...ops.quantized import DOT_GROUP, conv2d_nchwc_dot, unpack_dot_conv_weight
from ..errors import OpError
from ..opdef import OpDef
from .common import REQUIRED, check_rank, fmt, int_attr, pads_attr, pair, window_out
from .layout import _not_exportable, _torch_to_nchw
from .nchwc_arrays import to_nchw
from .quant import (_INTEGER_DTYPES, _check_dtype, _check_zero_point, _conv2d_integer_reference,
                    _conv2d_integer_torch, _corrected, _zero_point_inputs, _zero_points_attr, _zp_load)

__all__ = ["DEFS"]

DEFS = []

_NAMES = ("x", "w")


def _positive(what):
    def convert(value):
        value = int_attr(value, what)
        if value < 1:
            raise OpError(f"{what} must be at least 1, got {value}")
        return value
    return convert


def _infer(attrs, shapes, dtypes):
    zero_points = _zero_point_inputs(attrs, _NAMES, list(range(len(shapes))))
    data, weight = shapes[0], shapes[1]
    check_rank(data, 5, "x (N, C/x, H, W, x)")
    check_rank(weight, 7, f"w (O/y, C/x, KH, KW, x/{DOT_GROUP}, y, {DOT_GROUP})")
    _check_dtype(dtypes[0], _INTEGER_DTYPES, "x")
    _check_dtype(dtypes[1], _INTEGER_DTYPES, "w")
    if dtypes[0] is not None and dtypes[0] == dtypes[1]:
        raise OpError(f"x and w must be one uint8 and one int8 (the dot-product instruction's operands), got "
                      f"{dtypes[0]} for both")
    if weight[6] != DOT_GROUP or (weight[1], weight[4] * DOT_GROUP) != (data[1], data[4]):
        raise OpError(f"w {fmt(weight)} does not match x {fmt(data)}: expected ({data[1]} input blocks, "
                      f"{data[4] // DOT_GROUP} groups of {DOT_GROUP} channels)")
    channels, out_channels = attrs["channels"], attrs["out_channels"]
    if not (data[1] - 1) * data[4] < channels <= data[1] * data[4]:
        raise OpError(f"channels={channels} does not fill the {data[1]} blocks of {data[4]} of x {fmt(data)}")
    if not (weight[0] - 1) * weight[5] < out_channels <= weight[0] * weight[5]:
        raise OpError(f"out_channels={out_channels} does not fill the {weight[0]} blocks of {weight[5]} of w "
                      f"{fmt(weight)}")
    if "x" in zero_points:
        i = zero_points["x"]
        _check_zero_point(shapes[i], dtypes[i], dtypes[0], "x's zero point", None, None)
    if "w" in zero_points:
        i = zero_points["w"]
        _check_zero_point(shapes[i], dtypes[i], dtypes[1], "w's zero point", "output channel", out_channels)
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oh = window_out(data[2], weight[2], sh, dh, top, bottom, False, "height")
    ow = window_out(data[3], weight[3], sw, dw, left, right, False, "width")
    return (data[0], out_channels, oh, ow), "int32"


def _nchw_node(node):
    """A stand-in for `node` as the conv2d_integer it computes, for that op's reference and PyTorch evaluation."""
    attrs = {k: node.attrs[k] for k in ("strides", "pads", "dilations", "zero_points")}
    return types.SimpleNamespace(op="conv2d_integer", name=node.name, inputs=node.inputs, shape=node.shape,
                                 dtype=node.dtype, attrs=dict(attrs, groups=1))


def _reference(node, x, w, *zero_points):
    a = node.attrs
    weight = unpack_dot_conv_weight(w, a["out_channels"], a["channels"])
    return _conv2d_integer_reference(_nchw_node(node), to_nchw(x, a["channels"]), weight, *zero_points)


def _torch(torch, node, x, w, *zero_points):
    a = node.attrs
    weight = torch.from_numpy(unpack_dot_conv_weight(w.cpu().numpy(), a["out_channels"], a["channels"]))
    return _conv2d_integer_torch(torch, _nchw_node(node), _torch_to_nchw(x)[:, :a["channels"]], weight,
                                 *zero_points)


def _te(node, x, w, *zero_points):
    a = node.attrs
    zp = dict(zip(a["zero_points"], zero_points))
    name, out_shape = node.name, tuple(node.shape)
    channels, lanes = a["channels"], x.shape[4]
    out_lanes, k_h, k_w = w.shape[5], w.shape[2], w.shape[3]
    fill = te.const(0, x.dtype) if "x" not in zp else (zp["x"][()] if zp["x"].ndim == 0 else zp["x"][0])
    acc = conv2d_nchwc_dot(x, w, a["strides"], a["pads"], a["dilations"], name=name + "_product", pad_value=fill)
    wsum = xsum = None
    if "x" in zp:  # per output channel, over the packed weight (its padding is zero): a constant-only stage
        def weight_sum(ff):
            rc, ry, rx, rg, ri = (te.reduce_axis((0, e), name=v) for e, v in (
                (w.shape[1], "rc"), (k_h, "ry"), (k_w, "rx"), (w.shape[4], "rg"), (DOT_GROUP, "ri")))
            return te.sum(te.cast(w[ff // out_lanes, rc, ry, rx, rg, ff % out_lanes, ri], "int32"),
                          axis=[rc, ry, rx, rg, ri])
        wsum = te.compute((out_shape[1],), weight_sum, name=name + "_wsum", tag="comm_reduce")
    if "w" in zp:  # per image and output pixel: the window sums of the real channels, the border reading zx
        (sh, sw), (dh, dw) = a["strides"], a["dilations"]
        top, left = a["pads"][0], a["pads"][1]
        height, width = x.shape[2], x.shape[3]

        def window_sum(nn, yy, xx):
            rc, ry, rx = (te.reduce_axis((0, e), name=v) for e, v in ((channels, "rc"), (k_h, "ry"), (k_w, "rx")))
            row, col = yy * sh + ry * dh - top, xx * sw + rx * dw - left
            inside = te.all(row >= 0, row < height, col >= 0, col < width)
            pixel = te.if_then_else(inside, x[nn, rc // lanes, row, col, rc % lanes], fill)
            return te.sum(te.cast(pixel, "int32"), axis=[rc, ry, rx])
        xsum = te.compute((out_shape[0],) + out_shape[2:], window_sum, name=name + "_xsum", tag="comm_reduce")

    def fcompute(nn, ff, yy, xx):
        col = None if wsum is None else wsum[ff]
        row = None if xsum is None else xsum[nn, yy, xx]
        product = acc[nn, ff // out_lanes, yy, xx, ff % out_lanes]
        return _corrected(product, _zp_load(zp.get("x"), 0), col, _zp_load(zp.get("w"), ff), row,
                          channels * k_h * k_w)

    return te.compute(out_shape, fcompute, name=name, tag="elemwise")


DEFS.append(OpDef("conv2d_integer_nchwc", (2, 4), _infer,
                  dict({"strides": ((1, 1), pair("strides")), "pads": ((0, 0, 0, 0), pads_attr),
                        "dilations": ((1, 1), pair("dilations")),
                        "channels": (REQUIRED, _positive("channels")),
                        "out_channels": (REQUIRED, _positive("out_channels"))},
                       **_zero_points_attr(_NAMES)),
                  out_dtype=lambda attrs, dtypes: "int32", fusion="anchor", layout="blocked",
                  reference=_reference, te=_te, onnx=_not_exportable, torch=_torch))
