"""3-D pooling graph ops: max_pool3d, avg_pool3d (NCDHW; pads (front, top, left, back, bottom, right); the
semantics of the 2-D ones of pool.py: torch's ceil_mode, count_include_pad). The layout pass leaves them NCDHW.
Global average pooling of 5-D input is reduce_mean over axes (2, 3, 4)."""
import numpy as np

from ... import ops
from ...core import te
from ..errors import GraphError
from ..opdef import OpDef
from .common import (REQUIRED, boolean, check_rank, check_windows_see_input, ints, pad_spatial, pads3d_attr,
                     tap_windows_nd, triple, window_out)
from .pool import _ceil_extra, _tap_count, _tap_counts

__all__ = ["DEFS"]

DEFS = []

_AXES = ("depth", "height", "width")


def _infer_pool3d(attrs, shapes, dtypes):
    x = shapes[0]
    check_rank(x, 5, "x (NCDHW)")
    if attrs["strides"] is None:
        attrs["strides"] = attrs["kernel"]
    kernel, strides, dil, pads = attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["pads"]
    out = []
    for d, what in enumerate(_AXES):
        size = x[2 + d]
        o = window_out(size, kernel[d], strides[d], dil[d], pads[d], pads[3 + d], attrs["ceil_mode"], what)
        if o is not None:
            check_windows_see_input(size, o, kernel[d], strides[d], dil[d], pads[d], what)
        out.append(o)
    return (x[0], x[1]) + tuple(out), dtypes[0]


_POOL3D_ATTRS = {"kernel": (REQUIRED, triple("kernel")),
                 "strides": (None, lambda v: None if v is None else ints(v, "strides", 3, 1)),
                 "pads": ((0,) * 6, pads3d_attr), "dilations": ((1, 1, 1), triple("dilations")),
                 "ceil_mode": (False, boolean("ceil_mode"))}


def _padding(node, in_size):
    """(begins, ends) of the padded input: the pads, the ends grown by what a ceil-mode last window needs."""
    a = node.attrs
    begins, ends = list(a["pads"][:3]), list(a["pads"][3:])
    for d in range(3):
        ends[d] += _ceil_extra(in_size[d], node.shape[2 + d], a["kernel"][d], a["strides"][d], a["dilations"][d],
                               begins[d], ends[d])
    return begins, ends


# ---------------- numpy ----------------


def _windows(node, x, fill):
    a = node.attrs
    begins, ends = _padding(node, x.shape[2:])
    padded = pad_spatial(x, begins + ends, fill)
    return tap_windows_nd(padded, a["kernel"], a["strides"], a["dilations"], node.shape[2:])


def _max_pool3d_reference(node, x):
    out = None
    for _, window in _windows(node, x, -np.inf):
        out = window.copy() if out is None else np.maximum(out, window)
    return out


def _avg_pool3d_reference(node, x):
    a = node.attrs
    total = None
    for _, window in _windows(node, x, 0.0):
        total = window.astype(x.dtype, copy=True) if total is None else total + window
    counts = [_tap_counts(node.shape[2 + d], x.shape[2 + d], a["kernel"][d], a["strides"][d], a["dilations"][d],
                          a["pads"][d], a["pads"][3 + d], a["count_include_pad"]) for d in range(3)]
    count = counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]
    return total / count.astype(x.dtype)


# ---------------- te ----------------


def _window_reduce(node, x, combiner, fill, name, tag):
    a = node.attrs
    begins, ends = _padding(node, x.shape[2:])
    padded = x
    if any(begins) or any(ends):
        padded = ops.pad(x, [0, 0] + begins, [0, 0] + ends, pad_value=fill, name=node.name + "_pad")

    def fcompute(n, c, *out):
        taps = [te.reduce_axis((0, k), name=f"rv{d}") for d, k in enumerate(a["kernel"])]
        index = tuple(o * s + r * dl for o, s, r, dl in zip(out, a["strides"], taps, a["dilations"]))
        return combiner(padded[(n, c) + index], axis=taps)

    return te.compute(tuple(node.shape), fcompute, name=name, tag=tag)


def _max_pool3d_te(node, x):
    return _window_reduce(node, x, te.max, te.min_value(x.dtype), node.name, "pool_max")


def _avg_pool3d_te(node, x):
    a = node.attrs
    total = _window_reduce(node, x, te.sum, 0.0, node.name + "_sum", "pool_sum")
    pads = a["pads"]
    if a["count_include_pad"]:
        bounds = [(-pads[d], x.shape[2 + d] + pads[3 + d]) for d in range(3)]
    else:
        bounds = [(0, x.shape[2 + d]) for d in range(3)]

    def favg(n, c, *out):
        count = None
        for d, o in enumerate(out):
            taps = _tap_count(o, a["strides"][d], pads[d], a["dilations"][d], a["kernel"][d], *bounds[d])
            count = taps if count is None else count * taps
        return total[(n, c) + out] / te.cast(count, x.dtype)

    return te.compute(tuple(node.shape), favg, name=node.name, tag="pool_avg")


# ---------------- ONNX and PyTorch ----------------


def _onnx_attrs(a):
    return dict(kernel_shape=list(a["kernel"]), strides=list(a["strides"]), pads=list(a["pads"]),
                ceil_mode=int(a["ceil_mode"]))


def _max_pool3d_onnx(w, node):
    return w.node("MaxPool", list(node.inputs), node.name, dilations=list(node.attrs["dilations"]),
                  **_onnx_attrs(node.attrs))


def _avg_pool3d_onnx(w, node):
    a = node.attrs
    if a["dilations"] != (1, 1, 1):
        raise GraphError(f"to_onnx: node '{node.name}' (avg_pool3d): dilations {a['dilations']} have no ONNX "
                         f"AveragePool equivalent in opset {w.opset}")
    return w.node("AveragePool", list(node.inputs), node.name, count_include_pad=int(a["count_include_pad"]),
                  **_onnx_attrs(a))


def _pool3d_torch(kind):
    def run(torch, node, x):
        F, a = torch.nn.functional, node.attrs
        begin, end = a["pads"][:3], a["pads"][3:]
        if begin != end:
            raise ValueError(f"TorchGraph: pool '{node.name}' has asymmetric padding {a['pads']}")
        if kind == "max":
            return F.max_pool3d(x, a["kernel"], a["strides"], begin, a["dilations"], ceil_mode=a["ceil_mode"])
        if a["dilations"] != (1, 1, 1):
            raise ValueError(f"TorchGraph: avg_pool3d '{node.name}' has dilations {a['dilations']} (torch's "
                             "avg_pool3d has none)")
        return F.avg_pool3d(x, a["kernel"], a["strides"], begin, ceil_mode=a["ceil_mode"],
                            count_include_pad=a["count_include_pad"])
    return run


DEFS.append(OpDef("max_pool3d", 1, _infer_pool3d, dict(_POOL3D_ATTRS), fusion="anchor", layout="nchw",
                  reference=_max_pool3d_reference, te=_max_pool3d_te, onnx=_max_pool3d_onnx,
                  torch=_pool3d_torch("max")))
DEFS.append(OpDef("avg_pool3d", 1, _infer_pool3d,
                  dict(_POOL3D_ATTRS, count_include_pad=(False, boolean("count_include_pad"))), float_only=True,
                  fusion="anchor", layout="nchw", reference=_avg_pool3d_reference, te=_avg_pool3d_te,
                  onnx=_avg_pool3d_onnx, torch=_pool3d_torch("avg")))
