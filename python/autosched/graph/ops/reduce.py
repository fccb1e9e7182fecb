"""Reductions: reduce_mean, reduce_sum, reduce_max, reduce_min, reduce_prod over the axes given (keepdims by
default), argmax / argmin (the first or last index of the extreme along an axis, int64), log_softmax, and
cumsum (the running sum along an axis). Fusion starts a
group at a reduction (and takes the diamonds of a softmax or layer norm written as separate ops into it)."""
import numbers

import numpy as np

from ... import ops
from ...core import te
from ..errors import OpError
from ..opdef import OpDef
from .common import REQUIRED, boolean, check_rank, int_attr, ints, norm_axis

__all__ = ["DEFS"]

DEFS = []


def _infer_reduce(attrs, shapes, dtypes):
    x = shapes[0]
    axes = tuple(sorted({norm_axis(a, len(x), "axes entry") for a in attrs["axes"]}))
    if not axes:
        raise OpError("axes is empty")
    if len(axes) != len(attrs["axes"]):
        raise OpError(f"axes {attrs['axes']} repeats an axis")
    attrs["axes"] = axes
    if attrs["keepdims"]:
        return tuple(1 if d in axes else s for d, s in enumerate(x)), dtypes[0]
    return tuple(s for d, s in enumerate(x) if d not in axes), dtypes[0]


def _axes(value):
    return ints(value, "axes", 1) if isinstance(value, numbers.Integral) else ints(value, "axes")


def _reduce(name, numpy_fn, te_fn, torch_fn, onnx, float_only=False):
    DEFS.append(OpDef(name, 1, _infer_reduce, {"axes": (REQUIRED, _axes), "keepdims": (True, boolean("keepdims"))},
                      float_only=float_only, fusion="reduce", layout="nchw",
                      reference=lambda node, x: numpy_fn(x, axis=node.attrs["axes"], keepdims=node.attrs["keepdims"]),
                      te=lambda node, x: te_fn(x, list(node.attrs["axes"]), keepdims=node.attrs["keepdims"],
                                               name=node.name),
                      onnx=onnx, torch=torch_fn if callable(torch_fn) else lambda torch, node, x: getattr(
                          torch, torch_fn)(x, node.attrs["axes"], keepdim=node.attrs["keepdims"])))


def _axes_attr_onnx(op_type):
    """Opset 17's ReduceMean and ReduceMax take axes as an attribute."""
    return lambda w, node: w.node(op_type, list(node.inputs), node.name, axes=list(node.attrs["axes"]),
                                  keepdims=int(node.attrs["keepdims"]))


def _reduce_sum_onnx(w, node):
    """ReduceSum takes axes as an input from opset 13."""
    axes = w.const(node.name + "_axes", np.asarray(node.attrs["axes"], np.int64))
    return w.node("ReduceSum", [node.inputs[0], axes], node.name, keepdims=int(node.attrs["keepdims"]))


def _prod_torch(torch, node, x):
    """torch.prod takes one dim at a time."""
    for axis in sorted(node.attrs["axes"], reverse=True):
        x = torch.prod(x, axis, keepdim=node.attrs["keepdims"])
    return x


_reduce("reduce_mean", np.mean, ops.mean, "mean", _axes_attr_onnx("ReduceMean"), float_only=True)
_reduce("reduce_sum", np.sum, ops.sum, "sum", _reduce_sum_onnx)
_reduce("reduce_max", np.max, ops.max, "amax", _axes_attr_onnx("ReduceMax"))
_reduce("reduce_min", np.min, ops.min, "amin", _axes_attr_onnx("ReduceMin"))
_reduce("reduce_prod", np.prod, ops.prod, _prod_torch, _axes_attr_onnx("ReduceProd"))

# ---------------- argmax, argmin: the index of the extreme along an axis ----------------


def _infer_arg(attrs, shapes, dtypes):
    x = shapes[0]
    check_rank(x, 1, "x", at_least=True)
    attrs["axis"] = axis = norm_axis(attrs["axis"], len(x))
    if attrs["keepdims"]:
        return tuple(1 if d == axis else s for d, s in enumerate(x)), "int64"
    return tuple(s for d, s in enumerate(x) if d != axis), "int64"


def _arg_reference(pick):
    def reference(node, x):
        axis, last = node.attrs["axis"], node.attrs["select_last_index"]
        if last:  # the first extreme of the reversed axis
            out = x.shape[axis] - 1 - pick(np.flip(x, axis), axis=axis)
        else:
            out = pick(x, axis=axis)
        out = out.astype(np.int64)
        return np.expand_dims(out, axis) if node.attrs["keepdims"] else out
    return reference


def _arg_te(extreme):
    """Two stages: the extreme along the axis, then the smallest (largest) index holding it."""
    def build(node, x):
        axis, keepdims, last = node.attrs["axis"], node.attrs["keepdims"], node.attrs["select_last_index"]
        best = extreme(x, [axis], keepdims=True, name=node.name + "_extreme")
        extent = x.shape[axis]

        def fcompute(*i):
            row = list(i) if keepdims else list(i[:axis]) + [0] + list(i[axis:])
            k = te.reduce_axis((0, extent), name="k")
            at = row[:axis] + [k] + row[axis + 1:]
            row[axis] = 0
            hit = x[tuple(at)] == best[tuple(row)]
            index = te.cast(k, "int64")
            if last:
                return te.max(te.if_then_else(hit, index, te.const(-1, "int64")), axis=k)
            return te.min(te.if_then_else(hit, index, te.const(extent, "int64")), axis=k)

        return te.compute(tuple(node.shape), fcompute, name=node.name, tag="comm_reduce")
    return build


def _arg_onnx(op_type):
    return lambda w, node: w.node(op_type, list(node.inputs), node.name, axis=node.attrs["axis"],
                                  keepdims=int(node.attrs["keepdims"]),
                                  select_last_index=int(node.attrs["select_last_index"]))


def _arg_torch(fn):
    def run(torch, node, x):
        axis = node.attrs["axis"]
        if node.attrs["select_last_index"]:
            out = x.shape[axis] - 1 - getattr(torch, fn)(x.flip(axis), axis, keepdim=node.attrs["keepdims"])
        else:
            out = getattr(torch, fn)(x, axis, keepdim=node.attrs["keepdims"])
        return out.to(torch.int64)
    return run


for _name, _pick, _extreme, _onnx in (("argmax", np.argmax, ops.max, "ArgMax"),
                                      ("argmin", np.argmin, ops.min, "ArgMin")):
    DEFS.append(OpDef(_name, 1, _infer_arg, {"axis": (0, lambda v: int_attr(v, "axis")),
                                             "keepdims": (True, boolean("keepdims")),
                                             "select_last_index": (False, boolean("select_last_index"))},
                      out_dtype=lambda attrs, dtypes: "int64", fusion="anchor", layout="nchw",
                      reference=_arg_reference(_pick), te=_arg_te(_extreme), onnx=_arg_onnx(_onnx),
                      torch=_arg_torch(_name)))

# ---------------- log_softmax: x - max - log(sum(exp(x - max))) along an axis ----------------


def _infer_log_softmax(attrs, shapes, dtypes):
    check_rank(shapes[0], 1, "x", at_least=True)
    attrs["axis"] = norm_axis(attrs["axis"], len(shapes[0]))
    return tuple(shapes[0]), dtypes[0]


def _log_softmax_reference(node, x):
    axis = node.attrs["axis"]
    shifted = x - x.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


DEFS.append(OpDef("log_softmax", 1, _infer_log_softmax, {"axis": (-1, lambda v: int_attr(v, "axis"))},
                  float_only=True, fusion="anchor", layout="nchw", reference=_log_softmax_reference,
                  te=lambda node, x: ops.log_softmax(x, node.attrs["axis"], name=node.name),
                  onnx=lambda w, node: w.node("LogSoftmax", list(node.inputs), node.name, axis=node.attrs["axis"]),
                  torch=lambda torch, node, x: torch.log_softmax(x, node.attrs["axis"])))

# ---------------- cumsum: running sums along an axis (ONNX CumSum: exclusive, reverse) ----------------


def _infer_cumsum(attrs, shapes, dtypes):
    check_rank(shapes[0], 1, "x", at_least=True)
    attrs["axis"] = norm_axis(attrs["axis"], len(shapes[0]))
    return tuple(shapes[0]), dtypes[0]


def _cumsum_reference(node, x):
    axis, exclusive, reverse = node.attrs["axis"], node.attrs["exclusive"], node.attrs["reverse"]
    y = np.flip(x, axis) if reverse else x
    out = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - y
    return np.flip(out, axis) if reverse else out


def _cumsum_te(node, x):
    """Element i sums the elements k <= i (k < i exclusive; k >= i, k > i reversed) of its row: a reduction over
    the whole axis with a condition, so the running sum is one te.sum."""
    axis, exclusive, reverse = node.attrs["axis"], node.attrs["exclusive"], node.attrs["reverse"]

    def fcompute(*i):
        k = te.reduce_axis((0, x.shape[axis]), name="k")
        if reverse:
            keep = k > i[axis] if exclusive else k >= i[axis]
        else:
            keep = k < i[axis] if exclusive else k <= i[axis]
        return te.sum(x[i[:axis] + (k,) + i[axis + 1:]], axis=k, where=keep)

    return te.compute(x.shape, fcompute, name=node.name, tag="comm_reduce")


def _cumsum_onnx(w, node):
    axis = w.const(node.name + "_axis", np.asarray(node.attrs["axis"], np.int64))
    return w.node("CumSum", [node.inputs[0], axis], node.name, exclusive=int(node.attrs["exclusive"]),
                  reverse=int(node.attrs["reverse"]))


def _cumsum_torch(torch, node, x):
    axis, exclusive, reverse = node.attrs["axis"], node.attrs["exclusive"], node.attrs["reverse"]
    y = x.flip(axis) if reverse else x
    out = torch.cumsum(y, axis, dtype=x.dtype)
    if exclusive:
        out = out - y
    return out.flip(axis) if reverse else out


DEFS.append(OpDef("cumsum", 1, _infer_cumsum, {"axis": (REQUIRED, lambda v: int_attr(v, "axis")),
                                               "exclusive": (False, boolean("exclusive")),
                                               "reverse": (False, boolean("reverse"))},
                  fusion="reduce", layout="nchw", reference=_cumsum_reference, te=_cumsum_te, onnx=_cumsum_onnx,
                  torch=_cumsum_torch))
