"""Element-wise operators: binary operators with numpy broadcasting, unary math, cast.

Binary operators take two tensors, or a tensor and a Python number (which takes the tensor's dtype). Their
output is tagged "broadcast"; unary operators are tagged "elemwise". Both are injective, so schedules may
inline them into their consumers.
"""
import math

from ..core import te
from ._utils import check_float, check_tensor, const, is_float, is_tensor


def broadcast_shape(shape_a, shape_b, op="broadcast"):
    """The numpy broadcast of two shapes; ValueError naming both when they do not broadcast."""
    shape_a, shape_b = tuple(shape_a), tuple(shape_b)
    ndim = max(len(shape_a), len(shape_b))
    padded_a = (1,) * (ndim - len(shape_a)) + shape_a
    padded_b = (1,) * (ndim - len(shape_b)) + shape_b
    out = []
    for da, db in zip(padded_a, padded_b):
        if da != db and da != 1 and db != 1:
            raise ValueError(f"{op}: shapes {shape_a} and {shape_b} cannot be broadcast together")
        out.append(max(da, db))
    return tuple(out)


def broadcast_load(tensor, out_shape, indices):
    """Load `tensor` at output `indices`, numpy-broadcast to `out_shape` (size-1 dimensions read 0)."""
    offset = len(out_shape) - tensor.ndim
    idx = []
    for d, extent in enumerate(tensor.shape):
        idx.append(0 if extent == 1 and out_shape[offset + d] != 1 else indices[offset + d])
    return tensor[tuple(idx)]


def _check_scalar(op, scalar, tensor):
    if isinstance(scalar, bool) or not isinstance(scalar, (int, float)):
        raise TypeError(f"{op}: operand must be a te.Tensor or a Python number, got {type(scalar).__name__}")
    if isinstance(scalar, float) and not is_float(tensor.dtype):
        raise TypeError(f"{op}: float scalar {scalar} with tensor '{tensor.name}' of dtype {tensor.dtype}; "
                        f"cast the tensor to a float dtype first")


def _binary(op, a, b, combine, name):
    if not is_tensor(a) and not is_tensor(b):
        raise TypeError(f"{op}: at least one operand must be a te.Tensor")
    if is_tensor(a) and is_tensor(b):
        if a.dtype != b.dtype:
            raise TypeError(f"{op}: dtypes differ: '{a.name}' is {a.dtype}, '{b.name}' is {b.dtype}; "
                            f"cast one of them")
        shape = broadcast_shape(a.shape, b.shape, op)
        return te.compute(
            shape, lambda *i: combine(broadcast_load(a, shape, i), broadcast_load(b, shape, i)),
            name=name, tag="broadcast")
    if is_tensor(a):
        _check_scalar(op, b, a)
        scalar = const(b, a.dtype)
        return te.compute(a.shape, lambda *i: combine(a[i], scalar), name=name, tag="broadcast")
    _check_scalar(op, a, b)
    scalar = const(a, b.dtype)
    return te.compute(b.shape, lambda *i: combine(scalar, b[i]), name=name, tag="broadcast")


def add(a, b, name="T_add"):
    return _binary("add", a, b, lambda x, y: x + y, name)


def subtract(a, b, name="T_subtract"):
    return _binary("subtract", a, b, lambda x, y: x - y, name)


def multiply(a, b, name="T_multiply"):
    return _binary("multiply", a, b, lambda x, y: x * y, name)


def divide(a, b, name="T_divide"):
    """True division for floats; for integers it truncates toward zero (C semantics)."""
    return _binary("divide", a, b, lambda x, y: x / y, name)


def maximum(a, b, name="T_maximum"):
    return _binary("maximum", a, b, te.max, name)


def minimum(a, b, name="T_minimum"):
    return _binary("minimum", a, b, te.min, name)


def power(a, b, name="T_power"):
    for x in (a, b):
        if is_tensor(x):
            check_float(x, "power")
    return _binary("power", a, b, te.power, name)


def _unary(op, x, fexpr, name, float_only=False):
    check_tensor(x, op)
    if float_only:
        check_float(x, op)
    return te.compute(x.shape, lambda *i: fexpr(x[i]), name=name, tag="elemwise")


def negative(x, name="T_negative"):
    return _unary("negative", x, lambda v: -v, name)


def relu(x, name="T_relu"):
    check_tensor(x, "relu")
    zero = const(0, x.dtype)
    return _unary("relu", x, lambda v: te.max(v, zero), name)


def clip(x, a_min, a_max, name="T_clip"):
    """Clamp every element to [a_min, a_max]."""
    check_tensor(x, "clip")
    if a_min > a_max:
        raise ValueError(f"clip: a_min {a_min} is greater than a_max {a_max}")
    for bound in (a_min, a_max):
        _check_scalar("clip", bound, x)
    lo, hi = const(a_min, x.dtype), const(a_max, x.dtype)
    return _unary("clip", x, lambda v: te.min(te.max(v, lo), hi), name)


def exp(x, name="T_exp"):
    return _unary("exp", x, te.exp, name, float_only=True)


def log(x, name="T_log"):
    return _unary("log", x, te.log, name, float_only=True)


def sqrt(x, name="T_sqrt"):
    return _unary("sqrt", x, te.sqrt, name, float_only=True)


def sigmoid(x, name="T_sigmoid"):
    return _unary("sigmoid", x, te.sigmoid, name, float_only=True)


def tanh(x, name="T_tanh"):
    return _unary("tanh", x, te.tanh, name, float_only=True)


def abs(x, name="T_abs"):  # noqa: A001 (mirrors numpy's name)
    return _unary("abs", x, te.abs, name)


def gelu(x, name="T_gelu"):
    """GELU in its exact form: 0.5 * x * (1 + erf(x / sqrt(2)))."""
    check_tensor(x, "gelu")
    check_float(x, "gelu")
    half, one = const(0.5, x.dtype), const(1.0, x.dtype)
    inv_sqrt2 = const(1.0 / math.sqrt(2.0), x.dtype)
    return _unary("gelu", x, lambda v: half * v * (one + te.erf(v * inv_sqrt2)), name)


def cast(x, dtype, name="T_cast"):
    check_tensor(x, "cast")
    return _unary("cast", x, lambda v: te.cast(v, dtype), name)
