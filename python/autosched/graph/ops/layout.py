"""Channel-blocked graph ops (NCHW[x]c, see autosched/ops/nchwc.py): layout_transform, conv2d_nchwc,
depthwise_conv2d_nchwc, max_pool2d_nchwc, avg_pool2d_nchwc, global_avg_pool2d_nchwc. The layout pass
(graph/layout.py) writes them; a graph in which they appear is not exportable to ONNX (export the graph before
the pass). Each OpDef below is everything about its op; the numpy helpers that move arrays between the layouts
are in nchwc_arrays.py (and exported here too). Each op's layout facet is "blocked": it is the blocked form;
the convolutions' bias_input is unset, so their fused-group names and task descriptions read the op alone.

A blocked value is (N, C/x, H, W, x), channels padded with zeros up to a whole block; its real channel count
is known to the pass and to layout_transform (attr `channels`), which drops the padding on the way back.
"""
import re
import types

import numpy as np

from ... import ops
from ..errors import GraphError, OpError
from ..opdef import OpDef
from . import nn as nn_ops
from . import pool as pool_ops
from .common import (REQUIRED, anchor_dtype, boolean, check_rank, fmt, int_attr, ints, is_known, pads_attr, pair,
                     same_dtypes, window_out)
from .nchwc_arrays import (_blocks, _unblock_weight, block_depthwise_weight, block_vector, block_weight, to_blocked,
                           to_nchw)

__all__ = ["DEFS", "layout_block", "layout_name", "to_blocked", "to_nchw", "block_weight", "block_depthwise_weight",
           "block_vector"]

DEFS = []

_BLOCKED = re.compile(r"NCHW([1-9][0-9]*)c")

# ---------------- numpy: arrays between the layouts ----------------


def layout_block(layout):
    """0 for "NCHW", x for "NCHW{x}c"; OpError otherwise."""
    if layout == "NCHW":
        return 0
    m = _BLOCKED.fullmatch(layout) if isinstance(layout, str) else None
    if m is None:
        raise OpError(f"layout must be 'NCHW' or 'NCHW<x>c' (e.g. 'NCHW16c'), got {layout!r}")
    return int(m.group(1))


def layout_name(block):
    return f"NCHW{block}c" if block else "NCHW"


def _as_node(node, op, shape, **attrs):
    """A stand-in for `node` as the NCHW op computing it over all lanes (for the NCHW references)."""
    return types.SimpleNamespace(op=op, name=node.name, inputs=node.inputs, attrs=dict(node.attrs, **attrs),
                                 shape=shape, dtype=node.dtype)


def _nchw_shape(shape):
    n, cb, h, w, x = shape
    return (n, cb * x, h, w)


def _not_exportable(w, node):
    raise GraphError(f"to_onnx: node '{node.name}' ({node.op}) is in the channel-blocked layout, which ONNX does "
                     "not have: export the graph before the layout pass (it runs inside extract_tasks and "
                     "graph.build) and run the pass after importing it again")


def _torch_to_nchw(t):
    n, cb, h, w, x = t.shape
    return t.permute(0, 1, 4, 2, 3).reshape(n, cb * x, h, w)


def _torch_to_blocked(t, x):
    n, c, h, w = t.shape
    return t.reshape(n, c // x, x, h, w).permute(0, 1, 3, 4, 2).contiguous()


def _check_blocked(shape, what):
    check_rank(shape, 5, f"{what} (NCHW[x]c)")
    if not (is_known(shape[1]) and is_known(shape[4])):
        raise OpError(f"{what} {fmt(shape)} must have known channel blocks")


def _check_blocked_operands(shapes, in_axes, out_axes):
    """A blocked convolution's weight matches its data's channel blocks (the weight's axes `in_axes`: blocks,
    lanes) and its bias, if any, the output blocks (`out_axes`)."""
    data, weight = shapes[0], shapes[1]
    (in_blocks, in_lanes), (out_blocks, out_lanes) = in_axes, out_axes
    if (weight[in_blocks], weight[in_lanes]) != (data[1], data[4]):
        raise OpError(f"channel mismatch: data {fmt(data)} has {data[1]} blocks of {data[4]} channels, weight "
                      f"{fmt(weight)} expects {weight[in_blocks]} blocks of {weight[in_lanes]}")
    if len(shapes) == 3 and tuple(shapes[2]) != (weight[out_blocks], weight[out_lanes]):
        raise OpError(f"bias {fmt(shapes[2])} does not match the output blocks ({weight[out_blocks]}, "
                      f"{weight[out_lanes]}) of weight {fmt(weight)}")


# ---------------- layout_transform ----------------


def _layout_attr(what):
    def convert(value):
        layout_block(value)
        return value
    return convert


def _channels_attr(value):
    return None if value is None else int_attr(value, "channels")


def _transform_infer(attrs, shapes, dtypes):
    x = shapes[0]
    src, dst = layout_block(attrs["src_layout"]), layout_block(attrs["dst_layout"])
    if src == dst:
        raise OpError(f"src_layout and dst_layout are both {attrs['src_layout']}")
    if src:
        _check_blocked(x, "x")
        if x[4] != src:
            raise OpError(f"x {fmt(x)} has blocks of {x[4]} channels, not the {src} of {attrs['src_layout']}")
        total, low = x[1] * src, x[1] * src - src
    else:
        check_rank(x, 4, "x (NCHW)")
        if not is_known(x[1]):
            raise OpError(f"x {fmt(x)} must have a known channel count")
        total, low = x[1], x[1] - 1
    channels = total if attrs["channels"] is None else attrs["channels"]
    if not low < channels <= total:
        raise OpError(f"channels={channels} does not fit x {fmt(x)} in {attrs['src_layout']}"
                      + (f" ({low + 1} to {total})" if src else ""))
    attrs["channels"] = channels
    n, h, w = x[0], x[2], x[3]
    return ((n, channels, h, w) if not dst else (n, _blocks(channels, dst), h, w, dst)), dtypes[0]


def _transform_reference(node, x):
    a = node.attrs
    src, dst = layout_block(a["src_layout"]), layout_block(a["dst_layout"])
    nchw = to_nchw(x, a["channels"]) if src else x
    return to_blocked(nchw, dst) if dst else nchw


def _transform_te(node, x):
    a = node.attrs
    return ops.layout_transform(x, layout_block(a["src_layout"]), layout_block(a["dst_layout"]), a["channels"],
                                name=node.name)


def _transform_torch(torch, node, x):
    a = node.attrs
    src, dst = layout_block(a["src_layout"]), layout_block(a["dst_layout"])
    if src:
        x = _torch_to_nchw(x)[:, :a["channels"]]
    if dst:
        n, c, h, w = x.shape
        cb = _blocks(c, dst)
        x = torch.nn.functional.pad(x, (0, 0, 0, 0, 0, cb * dst - c))
        x = _torch_to_blocked(x, dst)
    return x.contiguous()


DEFS.append(OpDef("layout_transform", 1, _transform_infer,
                  {"src_layout": (REQUIRED, _layout_attr("src_layout")),
                   "dst_layout": (REQUIRED, _layout_attr("dst_layout")), "channels": (None, _channels_attr)},
                  fusion="injective", layout="blocked", reference=_transform_reference, te=_transform_te,
                  onnx=_not_exportable, torch=_transform_torch))

# ---------------- conv2d_nchwc: data (N, C/x, H, W, x), weight (O/y, (C/groups)/x, KH, KW, x, y), bias (O/y, y) ------


def _conv_infer(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    _check_blocked(data, "data")
    check_rank(weight, 6, "weight (O/y, (C/groups)/x, KH, KW, x, y)")
    groups = attrs["groups"]
    if groups == 1:
        _check_blocked_operands(shapes, (1, 4), (0, 5))
    else:
        _check_grouped_operands(shapes, groups)
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oh = window_out(data[2], weight[2], sh, dh, top, bottom, False, "height")
    ow = window_out(data[3], weight[3], sw, dw, left, right, False, "width")
    return (data[0], weight[0], oh, ow, weight[5]), same_dtypes(dtypes)


def _check_grouped_operands(shapes, groups):
    """A grouped blocked convolution: each group's input and output channels are whole blocks, the weight holds
    one group's input blocks, the bias (if any) the output blocks."""
    data, weight = shapes[0], shapes[1]
    for what, blocks, lanes in (("input", data[1], data[4]), ("output", weight[0], weight[5])):
        if blocks % groups:
            raise OpError(f"groups={groups} does not split the {blocks} {what} blocks of {lanes} channels into "
                          "whole blocks per group (each group's channels must be a multiple of the block)")
    if (weight[1] * groups, weight[4]) != (data[1], data[4]):
        raise OpError(f"channel mismatch: data {fmt(data)} has {data[1]} blocks of {data[4]} channels, weight "
                      f"{fmt(weight)} expects {weight[1]} blocks of {weight[4]} per group x {groups} groups")
    if len(shapes) == 3 and tuple(shapes[2]) != (weight[0], weight[5]):
        raise OpError(f"bias {fmt(shapes[2])} does not match the output blocks ({weight[0]}, {weight[5]}) of "
                      f"weight {fmt(weight)}")


def _conv_reference(node, data, weight, bias=None):
    y = weight.shape[5]
    nchw = nn_ops._conv2d_reference(_as_node(node, "conv2d", _nchw_shape(node.shape)), to_nchw(data),
                                    _unblock_weight(weight), None if bias is None else bias.reshape(-1))
    return to_blocked(nchw, y)


def _conv_te(node, data, weight, bias=None):
    a = node.attrs
    name = node.name if bias is None else node.name + "_conv"
    out = ops.conv2d_nchwc(data, weight, a["strides"], a["pads"], a["dilations"], a["groups"],
                           anchor_dtype(data, bias), name=name)
    return out if bias is None else ops.bias_add_nchwc(out, bias, name=node.name, out_dtype=data.dtype)


def _conv_torch(torch, node, x, w, b=None):
    y = w.shape[5]
    nchw = nn_ops._conv2d_torch(torch, _as_node(node, "conv2d", None), _torch_to_nchw(x),
                                w.permute(0, 5, 1, 4, 2, 3).reshape(w.shape[0] * y, -1, w.shape[2], w.shape[3]),
                                None if b is None else b.reshape(-1))
    return _torch_to_blocked(nchw, y)


_CONV_ATTRS = {"strides": ((1, 1), pair("strides")), "pads": ((0, 0, 0, 0), pads_attr),
               "dilations": ((1, 1), pair("dilations"))}

DEFS.append(OpDef("conv2d_nchwc", (2, 3), _conv_infer,
                  dict(_CONV_ATTRS, groups=(1, lambda v: ints([v], "groups", 1, 1)[0])), fusion="anchor",
                  layout="blocked", reference=_conv_reference, te=_conv_te, onnx=_not_exportable, torch=_conv_torch))

# ---------------- depthwise_conv2d_nchwc: data (N, C/x, H, W, x), weight (C/x, KH, KW, x), bias (C/x, x) ----------


def _depthwise_infer(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    _check_blocked(data, "data")
    check_rank(weight, 4, "weight (C/x, KH, KW, x)")
    if (weight[0], weight[3]) != (data[1], data[4]):
        raise OpError(f"channel mismatch: data {fmt(data)} has {data[1]} blocks of {data[4]} channels, weight "
                      f"{fmt(weight)} has {weight[0]} blocks of {weight[3]}")
    if len(shapes) == 3 and tuple(shapes[2]) != (data[1], data[4]):
        raise OpError(f"bias {fmt(shapes[2])} does not match the channel blocks ({data[1]}, {data[4]}) of data")
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oh = window_out(data[2], weight[1], sh, dh, top, bottom, False, "height")
    ow = window_out(data[3], weight[2], sw, dw, left, right, False, "width")
    return (data[0], data[1], oh, ow, data[4]), same_dtypes(dtypes)


def _nchw_depthwise_weight(weight):
    cb, kh, kw, x = weight.shape
    return weight.transpose(0, 3, 1, 2).reshape(cb * x, 1, kh, kw)


def _depthwise_reference(node, data, weight, bias=None):
    channels = data.shape[1] * data.shape[4]
    nchw = nn_ops._conv2d_reference(_as_node(node, "conv2d", _nchw_shape(node.shape), groups=channels),
                                    to_nchw(data), _nchw_depthwise_weight(weight),
                                    None if bias is None else bias.reshape(-1))
    return to_blocked(nchw, data.shape[4])


def _depthwise_te(node, data, weight, bias=None):
    a = node.attrs
    name = node.name if bias is None else node.name + "_conv"
    out = ops.depthwise_conv2d_nchwc(data, weight, a["strides"], a["pads"], a["dilations"], anchor_dtype(data, bias),
                                     name=name)
    return out if bias is None else ops.bias_add_nchwc(out, bias, name=node.name, out_dtype=data.dtype)


def _depthwise_torch(torch, node, x, w, b=None):
    cb, kh, kw, lanes = w.shape
    nchw = nn_ops._conv2d_torch(torch, _as_node(node, "conv2d", None, groups=cb * lanes), _torch_to_nchw(x),
                                w.permute(0, 3, 1, 2).reshape(cb * lanes, 1, kh, kw),
                                None if b is None else b.reshape(-1))
    return _torch_to_blocked(nchw, lanes)


DEFS.append(OpDef("depthwise_conv2d_nchwc", (2, 3), _depthwise_infer, dict(_CONV_ATTRS), fusion="anchor",
                  layout="blocked",
                  reference=_depthwise_reference, te=_depthwise_te, onnx=_not_exportable, torch=_depthwise_torch))

# ---------------- pooling over H, W of (N, C/x, H, W, x) ----------------


def _pool_infer(attrs, shapes, dtypes):
    x = shapes[0]
    _check_blocked(x, "x")
    shape, dtype = pool_ops._infer_pool(attrs, [tuple(x[:4])], dtypes)
    return tuple(shape) + (x[4],), dtype


def _pool_reference(nchw_reference):
    def reference(node, x):
        out = nchw_reference(_as_node(node, node.op[:-len("_nchwc")], _nchw_shape(node.shape)), to_nchw(x))
        return to_blocked(out, x.shape[4])
    return reference


def _max_pool_te(node, x):
    a = node.attrs
    return ops.max_pool2d_nchwc(x, a["kernel"], a["strides"], a["pads"], a["dilations"], a["ceil_mode"],
                                name=node.name)


def _avg_pool_te(node, x):
    a = node.attrs
    return ops.avg_pool2d_nchwc(x, a["kernel"], a["strides"], a["pads"], a["dilations"], a["ceil_mode"],
                                a["count_include_pad"], name=node.name)


def _pool_torch(kind):
    nchw_run = pool_ops._pool_torch(kind)

    def run(torch, node, x):
        return _torch_to_blocked(nchw_run(torch, node, _torch_to_nchw(x)), x.shape[4])
    return run


DEFS.append(OpDef("max_pool2d_nchwc", 1, _pool_infer, dict(pool_ops._POOL_ATTRS), fusion="anchor",
                  layout="blocked",
                  reference=_pool_reference(pool_ops._max_pool2d_reference), te=_max_pool_te, onnx=_not_exportable,
                  torch=_pool_torch("max")))
DEFS.append(OpDef("avg_pool2d_nchwc", 1, _pool_infer,
                  dict(pool_ops._POOL_ATTRS, count_include_pad=(False, boolean("count_include_pad"))),
                  float_only=True, fusion="anchor", layout="blocked",
                  reference=_pool_reference(pool_ops._avg_pool2d_reference),
                  te=_avg_pool_te, onnx=_not_exportable, torch=_pool_torch("avg")))


def _global_pool_infer(attrs, shapes, dtypes):
    x = shapes[0]
    _check_blocked(x, "x")
    return (x[0], x[1], 1, 1, x[4]), dtypes[0]


DEFS.append(OpDef("global_avg_pool2d_nchwc", 1, _global_pool_infer, float_only=True, fusion="anchor",
                  layout="blocked",
                  reference=lambda node, x: x.mean(axis=(2, 3), keepdims=True),
                  te=lambda node, x: ops.global_avg_pool2d_nchwc(x, name=node.name), onnx=_not_exportable,
                  torch=lambda torch, node, x: torch.mean(x, (2, 3), keepdim=True)))
