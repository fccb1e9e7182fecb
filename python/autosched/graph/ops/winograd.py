"""conv2d_winograd_nchwc: a 3x3 convolution of stride 1 in the channel-blocked layout, by Winograd's F(m x m, 3 x 3)
(autosched/ops/winograd.py). The layout pass writes it for the convolutions where it pays, with the weights
transformed once at that time: data (N, C/x, H, W, x), weight U = G g G^T (alpha, alpha, O/y, C/x, x, y),
bias (O/y, y). The references here compute the same algorithm in numpy and PyTorch from U.
"""
import numpy as np

from ... import ops
from ...ops.winograd import WINOGRAD_TILES, winograd_matrices
from ..errors import OpError
from ..opdef import OpDef
from .common import anchor_dtype, check_rank, fmt, int_attr, pads_attr, same_dtypes
from .layout import (_check_blocked, _check_blocked_operands, _not_exportable, _torch_to_blocked, _torch_to_nchw,
                     to_blocked, to_nchw)

__all__ = ["DEFS"]

DEFS = []


def _tile_attr(value):
    tile = int_attr(value, "tile")
    if tile not in WINOGRAD_TILES:
        raise OpError(f"tile must be one of {WINOGRAD_TILES}, got {tile}")
    return tile


def _infer(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    _check_blocked(data, "data")
    check_rank(weight, 6, "weight (alpha, alpha, O/y, C/x, x, y)")
    alpha = attrs["tile"] + 2
    if tuple(weight[:2]) != (alpha, alpha):
        raise OpError(f"weight {fmt(weight)} is not transformed for tile {attrs['tile']} (its first two axes "
                      f"must be {alpha}, {alpha})")
    _check_blocked_operands(shapes, (3, 4), (2, 5))
    top, left, bottom, right = attrs["pads"]
    oh, ow = data[2] + top + bottom - 2, data[3] + left + right - 2
    if oh < 1 or ow < 1:
        raise OpError(f"a 3x3 window does not fit data {fmt(data)} with pads {attrs['pads']}")
    return (data[0], weight[2], oh, ow, weight[5]), same_dtypes(dtypes)


def _winograd(lib, data, u, tile, pads):
    """Y = A^T [sum over channels of U * (B^T d B)] A for NCHW data (N, C, H, W) and U (alpha, alpha, O, C);
    `lib` is numpy or torch (einsum, stack and a zero-padding function of (array, top, bottom, left, right))."""
    einsum, stack, pad, as_array = lib
    a_t, b_t, _ = (as_array(m) for m in winograd_matrices(tile))
    top, left, bottom, right = pads
    h, w = data.shape[2], data.shape[3]
    oh, ow = h + top + bottom - 2, w + left + right - 2
    th, tw = -(-oh // tile), -(-ow // tile)
    padded = pad(data, top, bottom + th * tile - oh, left, right + tw * tile - ow)
    alpha = tile + 2
    tiles = stack([stack([padded[:, :, i:i + th * tile:tile, j:j + tw * tile:tile] for j in range(alpha)])
                   for i in range(alpha)])  # (alpha, alpha, N, C, th, tw)
    v = einsum("ei,fj,ijncyx->efncyx", b_t, b_t, tiles)
    m = einsum("efoc,efncyx->efnoyx", u, v)
    y = einsum("ve,wf,efnoyx->noyvxw", a_t, a_t, m)
    n, o = y.shape[0], y.shape[1]
    return y.reshape(n, o, th * tile, tw * tile)[:, :, :oh, :ow]


def _nchw_weight(u):
    """(alpha, alpha, O/y, C/x, x, y) -> (alpha, alpha, O, C)."""
    a, b, ob, cb, x, y = u.shape
    order = (0, 1, 2, 5, 3, 4)
    moved = u.permute(*order) if hasattr(u, "permute") else u.transpose(order)
    return moved.reshape(a, b, ob * y, cb * x)


_NUMPY = (np.einsum, np.stack,
          lambda d, t, b, l, r: np.pad(d, ((0, 0), (0, 0), (t, b), (l, r))),
          lambda m: m)


def _reference(node, data, weight, bias=None):
    y = weight.shape[5]
    out = _winograd(_NUMPY, to_nchw(data).astype(np.float64), _nchw_weight(weight).astype(np.float64),
                    node.attrs["tile"], node.attrs["pads"])
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return to_blocked(out.astype(data.dtype), y)


def _te(node, data, weight, bias=None):
    a = node.attrs
    name = node.name if bias is None else node.name + "_conv"
    out = ops.conv2d_winograd_nchwc(data, weight, a["tile"], a["pads"], anchor_dtype(data, bias), name=name)
    return out if bias is None else ops.bias_add_nchwc(out, bias, name=node.name, out_dtype=data.dtype)


def _torch(torch, node, x, w, b=None):
    lib = (torch.einsum, torch.stack,
           lambda d, t, bottom, l, r: torch.nn.functional.pad(d, (l, r, t, bottom)),
           lambda m: torch.as_tensor(m, dtype=x.dtype, device=x.device))
    y = w.shape[5]
    out = _winograd(lib, _torch_to_nchw(x), _nchw_weight(w), node.attrs["tile"], node.attrs["pads"])
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return _torch_to_blocked(out.contiguous(), y)


DEFS.append(OpDef("conv2d_winograd_nchwc", (2, 3), _infer,
                  {"tile": (2, _tile_attr), "pads": ((0, 0, 0, 0), pads_attr)}, fusion="anchor",
                  layout="blocked", reference=_reference, te=_te, onnx=_not_exportable, torch=_torch))
