"""conv3d: data NCDHW, weight (O, C/groups, KD, KH, KW), optional bias (O); pads (front, top, left, back,
bottom, right). The layout pass leaves it NCDHW (its blocked layout NCHW[x]c is 2-D only)."""
import numpy as np

from ... import ops
from ..opdef import OpDef
from .common import (anchor_dtype, check_conv_channels, check_rank, ints, pad_spatial, pads3d_attr, same_dtypes,
                     tap_windows_nd, triple, window_out)

__all__ = ["DEFS"]

DEFS = []

_AXES = ("depth", "height", "width")


def _conv3d_infer(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    check_rank(data, 5, "data (NCDHW)")
    check_rank(weight, 5, "weight (O, C/groups, KD, KH, KW)")
    n, o = data[0], weight[0]
    check_conv_channels(data, weight, attrs["groups"], shapes[2] if len(shapes) == 3 else None)
    pads = attrs["pads"]
    out = tuple(window_out(size, k, s, d, pads[i], pads[3 + i], False, what)
                for i, (size, k, s, d, what) in enumerate(zip(data[2:], weight[2:], attrs["strides"],
                                                               attrs["dilations"], _AXES)))
    return (n, o) + out, same_dtypes(dtypes)


def _conv3d_reference(node, data, weight, bias=None):
    a = node.attrs
    groups = a["groups"]
    n = data.shape[0]
    o, cg = weight.shape[:2]
    out_size = tuple(node.shape[2:])
    padded = pad_spatial(data, a["pads"])
    out = np.zeros((n, groups, o // groups) + out_size, data.dtype)
    w = weight.reshape((groups, o // groups, cg) + weight.shape[2:])
    for taps, window in tap_windows_nd(padded, weight.shape[2:], a["strides"], a["dilations"], out_size):
        win = window.reshape((n, groups, cg) + out_size)
        out += np.einsum("ngcdhw,goc->ngodhw", win, w[(slice(None),) * 3 + taps])
    out = out.reshape((n, o) + out_size)
    if bias is not None:
        out += bias.reshape(1, o, 1, 1, 1)
    return out


def _conv3d_te(node, data, weight, bias=None):
    a = node.attrs
    name = node.name if bias is None else node.name + "_conv"
    out = ops.conv3d_ncdhw(data, weight, a["strides"], a["pads"], a["dilations"], a["groups"],
                           anchor_dtype(data, bias), name=name)
    return out if bias is None else ops.bias_add(out, bias, axis=1, name=node.name, out_dtype=data.dtype)


def _conv3d_onnx(w, node):
    a = node.attrs
    kernel = w.graph.shape(node.inputs[1])[2:]
    return w.node("Conv", list(node.inputs), node.name, kernel_shape=list(kernel), strides=list(a["strides"]),
                  pads=list(a["pads"]), dilations=list(a["dilations"]), group=a["groups"])


def _conv3d_torch(torch, node, x, w, b=None):
    a = node.attrs
    begin, end = a["pads"][:3], a["pads"][3:]
    if begin != end:  # F.pad lists (begin, end) pairs from the last axis
        x = torch.nn.functional.pad(x, (begin[2], end[2], begin[1], end[1], begin[0], end[0]))
        begin = 0
    return torch.nn.functional.conv3d(x, w, b, stride=a["strides"], padding=begin, dilation=a["dilations"],
                                      groups=a["groups"])


DEFS.append(OpDef("conv3d", (2, 3), _conv3d_infer,
                  {"strides": ((1, 1, 1), triple("strides")), "pads": ((0,) * 6, pads3d_attr),
                   "dilations": ((1, 1, 1), triple("dilations")),
                   "groups": (1, lambda v: ints([v], "groups", 1, 1)[0])},
                  fusion="anchor", layout="nchw", bias_input=2, reference=_conv3d_reference, te=_conv3d_te,
                  onnx=_conv3d_onnx, torch=_conv3d_torch))
