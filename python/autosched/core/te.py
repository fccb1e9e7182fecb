"""The tensor-expression DSL: describe what to compute, element by element.

    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")

Expressions are immutable and typed; mixing dtypes is a TypeError naming both. A Python number next to an
expression takes the expression's dtype, except that a float next to an integer expression is refused (cast
first). Expressions have no truth value: combine conditions with &, |, ~, te.all, te.any.
"""
import builtins as _builtins
import inspect as _inspect
import numbers as _numbers
from typing import Any as _Any, Callable as _Callable

from .. import _core
from . import dtypes as _dtypes

Expr = _core.Expr
IterVar = _core.IterVar
Tensor = _core.Tensor

__all__ = [
    "Expr", "IterVar", "Tensor", "placeholder", "compute", "reduce_axis", "sum", "prod", "max", "min",
    "if_then_else", "select", "const", "cast", "var", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
    "power", "abs", "floor", "ceil", "round", "round_even", "floordiv", "floormod", "all", "any", "min_value",
    "max_value",
]


def _shape_tuple(shape, what):
    if isinstance(shape, _numbers.Integral):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{what}: shape must be an int or a tuple of ints, got {shape!r}") from None
    for d in dims:
        if not isinstance(d, _numbers.Integral) or isinstance(d, bool):
            raise TypeError(f"{what}: shape must hold ints, got {d!r} in {shape!r}")
    return tuple(int(d) for d in dims)


def _dtype_str(dtype):
    """Accepts 'float32', numpy dtypes and types such as np.float32 or ml_dtypes.bfloat16."""
    if isinstance(dtype, str):
        if dtype == "bfloat16":
            _dtypes.bfloat16()  # arrays of the tensor's dtype are ml_dtypes arrays: numpy learns the name
        return dtype
    try:
        return _dtypes.dtype_name(dtype)
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None


def _is_expr(x):
    return isinstance(x, (Expr, IterVar))


def _to_expr(x, dtype=None):
    return _core.convert(x, dtype)


def placeholder(shape, dtype="float32", name="placeholder"):
    """An input tensor of the given shape and dtype."""
    return _core.placeholder(list(_shape_tuple(shape, f"placeholder '{name}'")), _dtype_str(dtype), name)


def _axis_names(fcompute, ndim, name):
    """Index names from the lambda's parameters (i, j, ...), else i0, i1, ..."""
    try:
        params = list(_inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return [f"i{d}" for d in range(ndim)]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_varargs = _builtins.any(p.kind == p.VAR_POSITIONAL for p in params)
    if not takes_varargs and len(positional) != ndim:
        raise ValueError(f"compute '{name}': the function takes {len(positional)} index argument(s) but the shape has "
                         f"{ndim} dimension(s)")
    names = [p.name for p in positional[:ndim]]
    return names + [f"i{d}" for d in range(len(names), ndim)]


def compute(shape, fcompute, name="compute", tag="", attrs=None):
    """A tensor whose element at (i, j, ...) is fcompute(i, j, ...).

    fcompute gets one int32 index variable per dimension and returns an expression (or a Python number). A
    reduction (te.sum, te.max, ...) may only appear at the top of the result.
    """
    dims = _shape_tuple(shape, f"compute '{name}'")
    if not callable(fcompute):
        raise TypeError(f"compute '{name}': fcompute must be callable, got {type(fcompute).__name__}")
    axis = [IterVar(n, 0, extent, "spatial") for n, extent in zip(_axis_names(fcompute, len(dims), name), dims)]
    body = fcompute(*[iv.var for iv in axis])
    if isinstance(body, (list, tuple)):
        raise TypeError(f"compute '{name}': the function must return one expression, got a {type(body).__name__}")
    if isinstance(body, Tensor):
        raise TypeError(f"compute '{name}': the function returned tensor '{body.name}'; index it, e.g. "
                        f"{body.name}[i, ...]")
    attrs = {str(k): str(v) for k, v in (attrs or {}).items()}
    return _core.compute(name, axis, _to_expr(body), tag, attrs)


def reduce_axis(dom, name="k"):
    """A reduction axis over [lo, hi); use it in expressions like an index variable.

    The compute made with it runs the axis over [0, hi - lo) and reads k + lo where the body reads k, so its
    reduce_axis and loop state start at 0 (the values are those of [lo, hi))."""
    try:
        lo, hi = dom
    except (TypeError, ValueError):
        raise TypeError(f"reduce_axis '{name}': dom must be a pair (lo, hi), got {dom!r}") from None
    if not _builtins.all(isinstance(v, _numbers.Integral) for v in (lo, hi)):
        raise TypeError(f"reduce_axis '{name}': bounds must be ints, got {dom!r}")
    return _core.reduce_axis(int(lo), int(hi) - int(lo), name)


def _reduce(combiner, expr, axis, where, acc_dtype):
    if axis is None:
        raise TypeError(f"te.{combiner} needs axis= (a reduce axis or a list of them)")
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    for ax in axes:
        if not isinstance(ax, IterVar):
            raise TypeError(f"te.{combiner}: axis must be made with te.reduce_axis, got {ax!r}")
    for i, ax in enumerate(axes):  # an axis given twice would reduce over it twice
        if _builtins.any(ax.var.same_as(other.var) for other in axes[:i]):
            raise ValueError(f"te.{combiner}: reduce axis '{ax.var.name}' is given more than once in axis=")
    acc = None if acc_dtype is None else _dtype_str(acc_dtype)
    return _core.reduce(combiner, _to_expr(expr), axes, where, acc)


# Reductions accumulate in float32 for float16 values (the result is rounded to float16 once, as PyTorch and
# cuBLAS do) and in the values' own type otherwise; acc_dtype= asks for another accumulation type: float16
# itself (faster, less accurate) or a wider float.

def sum(expr, axis=None, where=None, acc_dtype=None):  # noqa: A001  (mirrors the DSL users know)
    """Sum of expr over the reduce axes (only where `where` holds), accumulated in acc_dtype."""
    return _reduce("sum", expr, axis, where, acc_dtype)


def prod(expr, axis=None, where=None, acc_dtype=None):
    """Product of expr over the reduce axes, accumulated in acc_dtype."""
    return _reduce("prod", expr, axis, where, acc_dtype)


def _min_max(combiner, a, b, axis, where, acc_dtype):
    if b is not None:
        if axis is not None or where is not None or acc_dtype is not None:
            raise TypeError(f"te.{combiner}(a, b) is element-wise and takes no axis=, where= or acc_dtype=")
        return _core.binary(combiner, a, b)
    return _reduce(combiner, a, axis, where, acc_dtype)


def max(a, b=None, axis=None, where=None, acc_dtype=None):  # noqa: A001
    """te.max(a, b): element-wise maximum; te.max(expr, axis=k): maximum over reduce axes."""
    return _min_max("max", a, b, axis, where, acc_dtype)


def min(a, b=None, axis=None, where=None, acc_dtype=None):  # noqa: A001
    """te.min(a, b): element-wise minimum; te.min(expr, axis=k): minimum over reduce axes."""
    return _min_max("min", a, b, axis, where, acc_dtype)


def if_then_else(cond, t, f):
    """t where cond holds, else f; only the chosen branch is evaluated (guards out-of-bounds loads)."""
    return _core.call("if_then_else", [cond, t, f])


def select(cond, t, f):
    """t where cond holds, else f; both may be evaluated."""
    return _core.select(cond, t, f)


def const(value, dtype=None):
    """A constant; without dtype: bool -> bool, int -> int32, float -> float32."""
    if dtype is None:
        return _core.convert(value, None)
    return _core.const(value, _dtype_str(dtype))


def cast(x, dtype):
    """x converted to dtype (float -> int truncates toward zero)."""
    return _core.cast(x, _dtype_str(dtype))


def var(name, dtype="int32"):
    """A free scalar variable (for index arithmetic outside a compute body)."""
    return _core.var(name, _dtype_str(dtype))


def _unary(name: str) -> _Callable[[_Any], _Any]:
    def intrinsic(x: _Any) -> _Any:
        return _core.call(name, [x])
    intrinsic.__name__ = name
    intrinsic.__doc__ = f"The intrinsic {name} (float arguments)."
    return intrinsic


exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001  (half away from zero)
round_even = _unary("round_even")  # half to even (numpy.round, ONNX's quantization)


def abs(x):  # noqa: A001
    """Absolute value (floats and integers)."""
    return _core.call("fabs", [x])


def power(a, b):
    """a ** b (floats)."""
    return _core.call("pow", [a, b])


def floordiv(a, b):
    """Division rounding toward negative infinity."""
    return _core.binary("floordiv", a, b)


def floormod(a, b):
    """a - floordiv(a, b) * b: the sign follows the divisor."""
    return _core.binary("floormod", a, b)


def _fold(op, conds, empty):
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        return const(empty)
    result = _to_expr(conds[0])
    for c in conds[1:]:
        result = _core.binary(op, result, c)
    return result


def all(*conds):  # noqa: A001
    """Logical and of bool expressions (te.all(a, b, c) or te.all([a, b, c]))."""
    return _fold("and", conds, True)


def any(*conds):  # noqa: A001
    """Logical or of bool expressions."""
    return _fold("or", conds, False)


def min_value(dtype):
    """The lowest value of dtype (-inf for floats): the identity of max."""
    return _core.identity("max", _dtype_str(dtype))


def max_value(dtype):
    """The highest value of dtype (+inf for floats): the identity of min."""
    return _core.identity("min", _dtype_str(dtype))
