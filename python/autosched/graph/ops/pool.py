"""Pooling graph ops: max_pool2d, avg_pool2d (NCHW, torch semantics: with ceil_mode the last window may run
past the padding but must start inside the input or the leading padding; the average divides by the window's
taps inside the padded input (count_include_pad) or inside the input) and global_avg_pool2d. Each OpDef below
is everything about its op, its layout converter included (the pool's blocked form, *_nchwc, where its input
is blocked)."""
import numpy as np

from ... import ops
from ...core import te
from ..errors import GraphError
from ..opdef import OpDef
from .common import (REQUIRED, boolean, check_rank, check_windows_see_input, ints, pad_hw, pads_attr, pair,
                     tap_windows, window_out)

__all__ = ["DEFS"]

DEFS = []


def _infer_pool(attrs, shapes, dtypes):
    x = shapes[0]
    check_rank(x, 4, "x (NCHW)")
    if attrs["strides"] is None:
        attrs["strides"] = attrs["kernel"]
    kernel, strides, dil, pads = attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["pads"]
    ceil = attrs["ceil_mode"]
    out = []
    for d, (lo, hi), what in ((0, (pads[0], pads[2]), "height"), (1, (pads[1], pads[3]), "width")):
        size = x[2 + d]
        o = window_out(size, kernel[d], strides[d], dil[d], lo, hi, ceil, what)
        if o is not None:
            check_windows_see_input(size, o, kernel[d], strides[d], dil[d], lo, what)
        out.append(o)
    return (x[0], x[1], out[0], out[1]), dtypes[0]


_POOL_ATTRS = {"kernel": (REQUIRED, pair("kernel")),
               "strides": (None, lambda v: None if v is None else ints(v, "strides", 2, 1)),
               "pads": ((0, 0, 0, 0), pads_attr), "dilations": ((1, 1), pair("dilations")),
               "ceil_mode": (False, boolean("ceil_mode"))}

# ---------------- numpy ----------------


def _ceil_extra(size, out, kernel, stride, dilation, lo, hi):
    """Extra trailing padding the last (ceil-mode) window needs."""
    needed = (out - 1) * stride + (kernel - 1) * dilation + 1
    return max(0, needed - (size + lo + hi))


def _pool_setup(node, x, value):
    a = node.attrs
    oh, ow = node.shape[2], node.shape[3]
    top, left, bottom, right = a["pads"]
    extra_h = _ceil_extra(x.shape[2], oh, a["kernel"][0], a["strides"][0], a["dilations"][0], top, bottom)
    extra_w = _ceil_extra(x.shape[3], ow, a["kernel"][1], a["strides"][1], a["dilations"][1], left, right)
    padded = pad_hw(x, (top, left, bottom + extra_h, right + extra_w), value)
    return padded, tap_windows(padded, a["kernel"], a["strides"], a["dilations"], (oh, ow))


def _max_pool2d_reference(node, x):
    _, windows = _pool_setup(node, x, -np.inf)
    out = None
    for _, _, window in windows:
        out = window.copy() if out is None else np.maximum(out, window)
    return out


def _tap_counts(out, size, kernel, stride, dilation, lo, hi, include_pad):
    """Per output position: the taps of its window inside the input (or inside the padded input)."""
    start = np.arange(out) * stride - lo
    taps = start[:, None] + np.arange(kernel)[None, :] * dilation
    low, high = (-lo, size + hi) if include_pad else (0, size)
    return ((taps >= low) & (taps < high)).sum(axis=1)


def _avg_pool2d_reference(node, x):
    a = node.attrs
    _, windows = _pool_setup(node, x, 0.0)
    total = None
    for _, _, window in windows:
        total = window.astype(x.dtype, copy=True) if total is None else total + window
    oh, ow = node.shape[2], node.shape[3]
    top, left, bottom, right = a["pads"]
    include = a["count_include_pad"]
    ch = _tap_counts(oh, x.shape[2], a["kernel"][0], a["strides"][0], a["dilations"][0], top, bottom, include)
    cw = _tap_counts(ow, x.shape[3], a["kernel"][1], a["strides"][1], a["dilations"][1], left, right, include)
    return total / (ch[:, None] * cw[None, :]).astype(x.dtype)


# ---------------- te: autosched.ops where it computes the node, else written here ----------------


def _ops_pool_fits(node, x):
    """Whether autosched.ops' pooling computes this node: no ceil-mode extra padding, pads within the window."""
    a = node.attrs
    extents = [(k - 1) * d + 1 for k, d in zip(a["kernel"], a["dilations"])]
    top, left, bottom, right = a["pads"]
    return not any(_pool_extra(node, x)) and max(top, bottom) < extents[0] and max(left, right) < extents[1]


def _pool_extra(node, x):
    """Trailing padding (height, width) that ceil mode adds beyond the pads."""
    a = node.attrs
    extra = []
    for d, (lo, hi) in enumerate(((a["pads"][0], a["pads"][2]), (a["pads"][1], a["pads"][3]))):
        needed = (node.shape[2 + d] - 1) * a["strides"][d] + (a["kernel"][d] - 1) * a["dilations"][d] + 1
        extra.append(max(0, needed - (x.shape[2 + d] + lo + hi)))
    return extra


def _pool_window_sum(node, x, combiner, fill, name, tag):
    a = node.attrs
    top, left, bottom, right = a["pads"]
    extra_h, extra_w = _pool_extra(node, x)
    padded = ops.pad(x, (0, 0, top, left), (0, 0, bottom + extra_h, right + extra_w), pad_value=fill,
                     name=node.name + "_pad")
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["strides"], a["dilations"]

    def fcompute(n, c, i, j):
        rh = te.reduce_axis((0, kh), name="rv0")
        rw = te.reduce_axis((0, kw), name="rv1")
        return combiner(padded[n, c, i * sh + rh * dh, j * sw + rw * dw], axis=[rh, rw])

    return te.compute(tuple(node.shape), fcompute, name=name, tag=tag)


def _max_pool2d_te(node, x):
    a = node.attrs
    if _ops_pool_fits(node, x):
        return ops.max_pool2d(x, a["kernel"], a["strides"], a["pads"], a["dilations"], name=node.name)
    return _pool_window_sum(node, x, te.max, te.min_value(x.dtype), node.name, "pool_max")


def _tap_count(out_var, stride, lo, dilation, kernel, low, high):
    """The taps r in [0, kernel) with low <= out * stride - lo + r * dilation < high, as an int32 expression."""
    start = out_var * stride - lo
    zero = te.const(0, "int32")
    first = te.max(-te.floordiv(start - low, dilation), zero)  # ceil((low - start) / dilation), >= 0
    last = te.min(te.floordiv(high - 1 - start, dilation), te.const(kernel - 1, "int32"))
    return last - first + 1


def _avg_pool2d_te(node, x):
    a = node.attrs
    include = a["count_include_pad"]
    if _ops_pool_fits(node, x):
        return ops.avg_pool2d(x, a["kernel"], a["strides"], a["pads"], a["dilations"], count_include_pad=include,
                              name=node.name)
    total = _pool_window_sum(node, x, te.sum, 0.0, node.name + "_sum", "pool_sum")
    top, left, bottom, right = a["pads"]
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["strides"], a["dilations"]
    h, w = x.shape[2], x.shape[3]
    rows = (-top, h + bottom) if include else (0, h)
    cols = (-left, w + right) if include else (0, w)

    def favg(n, c, i, j):
        count = _tap_count(i, sh, top, dh, kh, *rows) * _tap_count(j, sw, left, dw, kw, *cols)
        return total[n, c, i, j] / te.cast(count, x.dtype)

    return te.compute(tuple(node.shape), favg, name=node.name, tag="pool_avg")


# ---------------- ONNX and PyTorch ----------------


def _onnx_attrs(a):
    return dict(kernel_shape=list(a["kernel"]), strides=list(a["strides"]), pads=list(a["pads"]),
                ceil_mode=int(a["ceil_mode"]))


def _max_pool2d_onnx(w, node):
    return w.node("MaxPool", list(node.inputs), node.name, dilations=list(node.attrs["dilations"]),
                  **_onnx_attrs(node.attrs))


def _avg_pool2d_onnx(w, node):
    a = node.attrs
    if a["dilations"] != (1, 1):
        raise GraphError(f"to_onnx: node '{node.name}' (avg_pool2d): dilations {a['dilations']} have no ONNX "
                         f"AveragePool equivalent in opset {w.opset}")
    return w.node("AveragePool", list(node.inputs), node.name, count_include_pad=int(a["count_include_pad"]),
                  **_onnx_attrs(a))


def _pool_torch(kind):
    def run(torch, node, x):
        F, a = torch.nn.functional, node.attrs
        top, left, bottom, right = a["pads"]
        if (top, left) != (bottom, right):
            raise ValueError(f"TorchGraph: pool '{node.name}' has asymmetric padding {a['pads']}")
        if kind == "max":
            return F.max_pool2d(x, a["kernel"], a["strides"], (top, left), a["dilations"], ceil_mode=a["ceil_mode"])
        return F.avg_pool2d(x, a["kernel"], a["strides"], (top, left), ceil_mode=a["ceil_mode"],
                            count_include_pad=a["count_include_pad"])
    return run


def _pool_to_blocked(blocked_op):
    """The layout converter of a pool: `blocked_op` (its *_nchwc form) where its input is blocked, as it is."""
    def to_blocked(rewriter, node):
        layout = rewriter.layout_of(node.inputs[0])
        if layout is None:
            return False
        rewriter.emit(node, blocked_op, [rewriter.get(node.inputs[0], layout)], node.attrs, layout)
        return True
    return to_blocked


DEFS.append(OpDef("max_pool2d", 1, _infer_pool, dict(_POOL_ATTRS), fusion="anchor",
                  layout=_pool_to_blocked("max_pool2d_nchwc"),
                  reference=_max_pool2d_reference, te=_max_pool2d_te, onnx=_max_pool2d_onnx,
                  torch=_pool_torch("max")))
DEFS.append(OpDef("avg_pool2d", 1, _infer_pool,
                  dict(_POOL_ATTRS, count_include_pad=(False, boolean("count_include_pad"))), float_only=True,
                  fusion="anchor", layout=_pool_to_blocked("avg_pool2d_nchwc"), reference=_avg_pool2d_reference,
                  te=_avg_pool2d_te, onnx=_avg_pool2d_onnx,
                  torch=_pool_torch("avg")))

# ---------------- global_avg_pool2d: (N, C, H, W) -> (N, C, 1, 1) ----------------


def _infer_global_pool(attrs, shapes, dtypes):
    check_rank(shapes[0], 4, "x (NCHW)")
    return (shapes[0][0], shapes[0][1], 1, 1), dtypes[0]


DEFS.append(OpDef("global_avg_pool2d", 1, _infer_global_pool, float_only=True, fusion="anchor",
                  layout=_pool_to_blocked("global_avg_pool2d_nchwc"),
                  reference=lambda node, x: x.mean(axis=(2, 3), keepdims=True),
                  te=lambda node, x: ops.global_avg_pool2d(x, name=node.name), onnx="GlobalAveragePool",
                  torch=lambda torch, node, x: torch.mean(x, (2, 3), keepdim=True)))
