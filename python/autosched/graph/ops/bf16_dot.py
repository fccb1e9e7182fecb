"""dense_bf16_dot and conv2d_nchwc_bf16_dot: bfloat16 products over weights packed in pairs for the CPU's
bfloat16 dot product.

AVX512-BF16's vdpbf16ps adds to each float32 lane the products of two adjacent bfloat16 elements of each
operand (AMX's tdpbf16ps does the same for whole tiles). A dense layer vectorized over its output units gets it
when its weight holds, for each unit, two consecutive input features together, in panels of 16 units that the
reduction walks contiguously: ops/quantized.py's layout, [ceil(N/16), K/2, 16, 2]
(`pack_dot_weight(weight.T, 16, 2)`). graph/dot_weights.py rewrites a bfloat16 dense or matmul with a constant
weight into this op on CPUs with those instructions; the weight is packed there, once.

    y[..., n] = bfloat16(sum_k float32(data[..., k]) * float32(weight[n, k]) (+ float32(bias[n])))

Inputs: data (..., K) bfloat16 with K even, the packed weight, an optional bias (N,). Attr `units`: N (the
packed weight is zero-padded up to whole panels). The product is one float32 stage over the panels; the
output stage reads it back as (..., N), adds the bias and rounds once, as `dense` does in bfloat16.

conv2d_nchwc_bf16_dot is conv2d_nchwc (groups = 1) with its kernel packed the same way: (O/y, C/x, KH, KW, x/2,
y, 2), each output lane's two consecutive input channels together (`pack_dot_conv_weight(w, x, y, 2)`), x even.
The layout pass (graph/layout.py) writes it for a bfloat16 convolution where lower_graph asks it to
(has_bfloat16_dot_product). Its product is ops/quantized.py's conv2d_nchwc_dot in float32; the bias is added in
float32 and the blocked output rounded once.
"""
import numpy as np

from ...core import te
from ...ops.quantized import conv2d_nchwc_dot, dot_group, unpack_dot_conv_weight
from ..errors import GraphError, OpError
from ..opdef import OpDef
from . import nn as nn_ops
from .common import REQUIRED, check_rank, fmt, int_attr, window_out
from .layout import (_CONV_ATTRS, _as_node, _check_blocked, _check_blocked_operands, _nchw_shape, _torch_to_blocked,
                     _torch_to_nchw)
from .layout import _not_exportable as _blocked_not_exportable
from .nchwc_arrays import to_blocked, to_nchw
from .quant import DOT_PANEL  # units per panel: the float32 lanes of a 512-bit vector

__all__ = ["DEFS", "DOT_PANEL", "DOT_PAIR", "unpack_dense_weight"]

DEFS = []

DOT_PAIR = dot_group("bfloat16")  # bfloat16 elements per float32 lane of vdpbf16ps


def unpack_dense_weight(packed, units):
    """The (units, K) weight that `pack_dot_weight(weight.T, DOT_PANEL, DOT_PAIR)` packed, padding dropped."""
    panels, pairs, lanes, pair = packed.shape
    return packed.transpose(0, 2, 1, 3).reshape(panels * lanes, pairs * pair)[:units]


def _not_exportable(w, node):
    raise GraphError(f"to_onnx: node '{node.name}' ({node.op}) holds its weight packed for the CPU's bfloat16 dot "
                     "product, which ONNX does not have: export the graph before graph.build and extract_tasks "
                     "pack it")


def _units(value):
    value = int_attr(value, "units")
    if value < 1:
        raise OpError(f"units must be at least 1, got {value}")
    return value


def _infer(attrs, shapes, dtypes):
    data, packed = shapes[0], shapes[1]
    check_rank(data, 1, "data", at_least=True)
    check_rank(packed, 4, f"w (ceil(N/{DOT_PANEL}), K/{DOT_PAIR}, {DOT_PANEL}, {DOT_PAIR})")
    for what, dtype in zip(("data", "w", "bias"), dtypes):
        if dtype is not None and dtype != "bfloat16":
            raise OpError(f"{what} must be bfloat16 (the dot product's operands), got {dtype}")
    units, k = attrs["units"], data[-1]
    want = (-(-units // DOT_PANEL), None if not isinstance(k, int) else k // DOT_PAIR, DOT_PANEL, DOT_PAIR)
    if isinstance(k, int) and k % DOT_PAIR:
        raise OpError(f"data {fmt(data)} has {k} features: an odd count has no whole pairs")
    if any(w is not None and isinstance(p, int) and p != w for p, w in zip(packed, want)):
        raise OpError(f"w {fmt(packed)} is not {units} units x {k} features packed in pairs: expected "
                      f"{fmt(tuple('?' if w is None else w for w in want))}")
    if len(shapes) == 3:
        check_rank(shapes[2], 1, "bias")
        if isinstance(shapes[2][0], int) and shapes[2][0] != units:
            raise OpError(f"bias {fmt(shapes[2])} does not match units={units}")
    return tuple(data[:-1]) + (units,), "bfloat16"


def _reference(node, data, packed, bias=None):
    out = np.matmul(data, unpack_dense_weight(packed, node.attrs["units"]).T)
    return out + bias if bias is not None else out


def _torch(torch, node, data, packed, bias=None):
    weight = torch.from_numpy(unpack_dense_weight(packed.view(torch.int16).cpu().numpy(), node.attrs["units"]))
    return torch.nn.functional.linear(data, weight.view(torch.bfloat16).to(data.device), bias)


def _te(node, data, packed, bias=None):
    batch, pairs = tuple(data.shape[:-1]), packed.shape[1]

    def product(*idx):
        ko = te.reduce_axis((0, pairs), name="ko")
        ki = te.reduce_axis((0, DOT_PAIR), name="ki")
        lhs = data[idx[:-2] + (ko * DOT_PAIR + ki,)]
        rhs = packed[idx[-2], ko, idx[-1], ki]
        return te.sum(te.cast(lhs, "float32") * te.cast(rhs, "float32"), axis=[ko, ki])

    acc = te.compute(batch + (packed.shape[0], DOT_PANEL), product, name=node.name + "_product", tag="matmul_dot")

    def output(*idx):
        value = acc[idx[:-1] + (idx[-1] // DOT_PANEL, idx[-1] % DOT_PANEL)]
        if bias is not None:
            value = value + te.cast(bias[idx[-1]], "float32")
        return te.cast(value, "bfloat16")

    return te.compute(tuple(node.shape), output, name=node.name, tag="elemwise")


DEFS.append(OpDef("dense_bf16_dot", (2, 3), _infer, {"units": (REQUIRED, _units)},
                  out_dtype=lambda attrs, dtypes: "bfloat16", fusion="anchor", layout="nchw", bias_input=2,
                  reference=_reference, te=_te, onnx=_not_exportable, torch=_torch))


# ---------------- conv2d_nchwc_bf16_dot: data (N, C/x, H, W, x), weight (O/y, C/x, KH, KW, x/2, y, 2) ----------------


def _conv_infer(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    _check_blocked(data, "data")
    check_rank(weight, 7, f"weight (O/y, C/x, KH, KW, x/{DOT_PAIR}, y, {DOT_PAIR})")
    for what, dtype in zip(("data", "weight", "bias"), dtypes):
        if dtype is not None and dtype != "bfloat16":
            raise OpError(f"{what} must be bfloat16 (the dot product's operands), got {dtype}")
    if weight[6] != DOT_PAIR:
        raise OpError(f"weight {fmt(weight)} must hold pairs of input channels (its last axis {DOT_PAIR})")
    pairs = (weight[0], weight[1], weight[2], weight[3], weight[4] * DOT_PAIR, weight[5])
    _check_blocked_operands([data, pairs] + list(shapes[2:]), (1, 4), (0, 5))
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oh = window_out(data[2], weight[2], sh, dh, top, bottom, False, "height")
    ow = window_out(data[3], weight[3], sw, dw, left, right, False, "width")
    return (data[0], weight[0], oh, ow, weight[5]), "bfloat16"


def _oihw(weight):
    """The whole (padded) OIHW kernel of a packed one."""
    return unpack_dot_conv_weight(weight, weight.shape[0] * weight.shape[5], weight.shape[1] * weight.shape[4] * DOT_PAIR)


def _conv_reference(node, data, weight, bias=None):
    nchw = nn_ops._conv2d_reference(_as_node(node, "conv2d", _nchw_shape(node.shape), groups=1), to_nchw(data),
                                    _oihw(weight), None if bias is None else bias.reshape(-1))
    return to_blocked(nchw, weight.shape[5])


def _conv_torch(torch, node, x, w, b=None):
    kernel = torch.from_numpy(_oihw(w.view(torch.int16).cpu().numpy())).view(torch.bfloat16).to(x.device)
    nchw = nn_ops._conv2d_torch(torch, _as_node(node, "conv2d", None, groups=1), _torch_to_nchw(x), kernel,
                                None if b is None else b.reshape(-1))
    return _torch_to_blocked(nchw, w.shape[5])


def _conv_te(node, data, weight, bias=None):
    a = node.attrs
    acc = conv2d_nchwc_dot(data, weight, a["strides"], a["pads"], a["dilations"], name=node.name + "_product")

    def output(n, ob, y, x, lane):
        value = acc[n, ob, y, x, lane]
        if bias is not None:
            value = value + te.cast(bias[ob, lane], "float32")
        return te.cast(value, "bfloat16")

    return te.compute(tuple(node.shape), output, name=node.name, tag="elemwise")


DEFS.append(OpDef("conv2d_nchwc_bf16_dot", (2, 3), _conv_infer, dict(_CONV_ATTRS),
                  out_dtype=lambda attrs, dtypes: "bfloat16", fusion="anchor", layout="blocked", bias_input=2,
                  reference=_conv_reference, te=_conv_te, onnx=_blocked_not_exportable, torch=_conv_torch))
