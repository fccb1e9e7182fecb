"""Comparisons and logic: equal, not_equal, greater, greater_equal, less, less_equal (numpy broadcasting, a bool
output), logical_and / or / xor / not (bool inputs), isnan and isinf (float input), and where (the select of
numpy.where, all three inputs broadcast).

A truth value is the IR's `bool` dtype everywhere (numpy's bool_, one byte per element; ONNX's BOOL, PyTorch's
torch.bool): a comparison gives one, the logical ops and where's condition take one, and `cast` converts to
and from it (cast(x, "bool") is x != 0). All are injective; the layout pass runs them in NCHW (a bool value has
another element size than the channel block was chosen for)."""
import numpy as np

from ...core import te
from ...ops.elemwise import broadcast_load
from ..errors import OpError
from ..opdef import OpDef
from .common import broadcast_shapes, same_dtypes

__all__ = ["DEFS"]

DEFS = []


def _broadcast_te(node, tensors, combine):
    """The node's output, element (i...) = combine of each input loaded at (i...) broadcast."""
    shape = tuple(node.shape)
    return te.compute(shape, lambda *i: combine(*[broadcast_load(t, shape, i) for t in tensors]), name=node.name,
                      tag="broadcast")


def _check_bool(dtypes, what="inputs"):
    for dt in dtypes:
        if dt is not None and dt != "bool":
            raise OpError(f"{what} must be bool, got {dt}; compare them (greater, not_equal, ...) or cast them "
                          f"to bool first")


def _bool_out(attrs, dtypes):
    return "bool"


# ---------------- comparisons: inputs of one dtype, a bool output ----------------


def _infer_compare(attrs, shapes, dtypes):
    same_dtypes(dtypes)
    return broadcast_shapes(shapes), "bool"


def _not_equal_onnx(w, node):
    """ONNX has no NotEqual: Not(Equal)."""
    return w.node("Not", [w.node("Equal", list(node.inputs), w.fresh(node.name + "_eq"))], node.name)


def _compare(name, numpy_fn, te_fn, onnx, torch_fn):
    DEFS.append(OpDef(name, 2, _infer_compare, fusion="injective", layout="nchw", out_dtype=_bool_out,
                      reference=lambda node, a, b: numpy_fn(a, b),
                      te=lambda node, a, b: _broadcast_te(node, (a, b), te_fn),
                      onnx=onnx, torch=lambda torch, node, a, b: getattr(torch, torch_fn)(a, b)))


_compare("equal", np.equal, lambda a, b: a == b, "Equal", "eq")
_compare("not_equal", np.not_equal, lambda a, b: a != b, _not_equal_onnx, "ne")
_compare("greater", np.greater, lambda a, b: a > b, "Greater", "gt")
_compare("greater_equal", np.greater_equal, lambda a, b: a >= b, "GreaterOrEqual", "ge")
_compare("less", np.less, lambda a, b: a < b, "Less", "lt")
_compare("less_equal", np.less_equal, lambda a, b: a <= b, "LessOrEqual", "le")

# ---------------- logic on bool values ----------------


def _infer_logic(attrs, shapes, dtypes):
    _check_bool(dtypes)
    return broadcast_shapes(shapes), "bool"


def _logic(name, numpy_fn, te_fn, onnx, torch_fn):
    DEFS.append(OpDef(name, 2, _infer_logic, fusion="injective", layout="nchw", out_dtype=_bool_out,
                      reference=lambda node, a, b: numpy_fn(a, b),
                      te=lambda node, a, b: _broadcast_te(node, (a, b), te_fn),
                      onnx=onnx, torch=lambda torch, node, a, b: getattr(torch, torch_fn)(a, b)))


_logic("logical_and", np.logical_and, lambda a, b: a & b, "And", "logical_and")
_logic("logical_or", np.logical_or, lambda a, b: a | b, "Or", "logical_or")
_logic("logical_xor", np.logical_xor, lambda a, b: a != b, "Xor", "logical_xor")


def _infer_not(attrs, shapes, dtypes):
    _check_bool(dtypes, "the input")
    return tuple(shapes[0]), "bool"


DEFS.append(OpDef("logical_not", 1, _infer_not, fusion="injective", layout="nchw", out_dtype=_bool_out,
                  reference=lambda node, x: np.logical_not(x),
                  te=lambda node, x: _broadcast_te(node, (x,), lambda v: ~v), onnx="Not",
                  torch=lambda torch, node, x: torch.logical_not(x)))

# ---------------- isnan, isinf ----------------


def _infer_float_test(attrs, shapes, dtypes):
    return tuple(shapes[0]), "bool"


def _isinf_te(node, x):
    inf = te.max_value(x.dtype)  # +inf for floats
    return _broadcast_te(node, (x,), lambda v: te.abs(v) == inf)


# x != x holds for NaN only (an unordered compare; a target with fast_math assumes there is no NaN)
DEFS.append(OpDef("isnan", 1, _infer_float_test, fusion="injective", layout="nchw", float_only=True,
                  out_dtype=_bool_out, reference=lambda node, x: np.isnan(x),
                  te=lambda node, x: _broadcast_te(node, (x,), lambda v: v != v), onnx="IsNaN",
                  torch=lambda torch, node, x: torch.isnan(x), aten="isnan"))
DEFS.append(OpDef("isinf", 1, _infer_float_test, fusion="injective", layout="nchw", float_only=True,
                  out_dtype=_bool_out, reference=lambda node, x: np.isinf(x), te=_isinf_te, onnx="IsInf",
                  torch=lambda torch, node, x: torch.isinf(x), aten="isinf"))

# ---------------- where(cond, x, y): x where cond holds, else y ----------------


def _infer_where(attrs, shapes, dtypes):
    _check_bool(dtypes[:1], "the condition")
    return broadcast_shapes(shapes), same_dtypes(dtypes[1:], "x and y")


DEFS.append(OpDef("where", 3, _infer_where, fusion="injective", layout="nchw",
                  out_dtype=lambda attrs, dtypes: same_dtypes(dtypes[1:], "x and y"),
                  reference=lambda node, c, x, y: np.where(c, x, y),
                  te=lambda node, c, x, y: _broadcast_te(node, (c, x, y), te.select), onnx="Where",
                  torch=lambda torch, node, c, x, y: torch.where(c, x, y)))
