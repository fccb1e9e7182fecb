"""Reductions: reduce_mean, reduce_sum, reduce_max over the axes given (keepdims by default). Fusion starts a
group at a reduction (and takes the diamonds of a softmax or layer norm written as separate ops into it)."""
import numbers

import numpy as np

from ... import ops
from ..errors import OpError
from ..opdef import OpDef
from .common import REQUIRED, boolean, ints, norm_axis

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
                      onnx=onnx, torch=lambda torch, node, x: getattr(torch, torch_fn)(
                          x, node.attrs["axes"], keepdim=node.attrs["keepdims"])))


def _axes_attr_onnx(op_type):
    """Opset 17's ReduceMean and ReduceMax take axes as an attribute."""
    return lambda w, node: w.node(op_type, list(node.inputs), node.name, axes=list(node.attrs["axes"]),
                                  keepdims=int(node.attrs["keepdims"]))


def _reduce_sum_onnx(w, node):
    """ReduceSum takes axes as an input from opset 13."""
    axes = w.const(node.name + "_axes", np.asarray(node.attrs["axes"], np.int64))
    return w.node("ReduceSum", [node.inputs[0], axes], node.name, keepdims=int(node.attrs["keepdims"]))


_reduce("reduce_mean", np.mean, ops.mean, "mean", _axes_attr_onnx("ReduceMean"), float_only=True)
_reduce("reduce_sum", np.sum, ops.sum, "sum", _reduce_sum_onnx)
_reduce("reduce_max", np.max, ops.max, "amax", _axes_attr_onnx("ReduceMax"))
