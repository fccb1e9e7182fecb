"""Elementwise graph ops: the broadcasting binary ops (add ... minimum), the unary ops (relu ... abs, sin cos
floor ceil round sign), gelu, hard_sigmoid, hard_swish, silu, mish, clip and cast (more activations with
parameters: activation.py). Each OpDef below is everything about its op: attrs,
inference, numpy reference, te, ONNX export, PyTorch evaluation. All are injective (fusion joins them to their
producer's group); in the channel-blocked layout they run on any blocked value ("elementwise") except those
whose value on the zero padding of a channel block is not finite ("elementwise-unpadded": exp, log, sqrt,
divide, power) and cast ("nchw")."""
import math

import numpy as np

from ... import ops
from ...core import te
from ..errors import OpError
from ..opdef import OpDef
from .common import REQUIRED, broadcast_shapes, choice, dtype_attr, float_or_none, real, same_dtypes

__all__ = ["DEFS"]

DEFS = []


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x).astype(x.dtype)
    except ImportError:  # math.erf element by element: slow but exact
        return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _elemwise(node, x, fexpr):
    return te.compute(x.shape, lambda *i: fexpr(x[i]), name=node.name, tag="elemwise")


def _same_shape(attrs, shapes, dtypes):
    return tuple(shapes[0]), dtypes[0]


# ---------------- binary: numpy broadcasting, equal dtypes ----------------


def _infer_broadcast(attrs, shapes, dtypes):
    return broadcast_shapes(shapes), same_dtypes(dtypes)


def _binary(name, numpy_fn, te_fn, onnx, torch_fn, float_only=False, layout="elementwise"):
    DEFS.append(OpDef(name, 2, _infer_broadcast, fusion="injective", layout=layout, float_only=float_only,
                      reference=lambda node, a, b: numpy_fn(a, b),
                      te=lambda node, a, b: te_fn(a, b, name=node.name),
                      onnx=onnx, torch=lambda torch, node, a, b: getattr(torch, torch_fn)(a, b)))


_binary("add", np.add, ops.add, "Add", "add")
_binary("subtract", np.subtract, ops.subtract, "Sub", "sub")
_binary("multiply", np.multiply, ops.multiply, "Mul", "mul")
_binary("divide", np.divide, ops.divide, "Div", "div", float_only=True, layout="elementwise-unpadded")  # 0 / 0
_binary("power", np.power, ops.power, "Pow", "pow", float_only=True, layout="elementwise-unpadded")  # 0 ** -1
_binary("maximum", np.maximum, ops.maximum, "Max", "maximum")
_binary("minimum", np.minimum, ops.minimum, "Min", "minimum")

# ---------------- unary ----------------


def _unary(name, numpy_fn, te_fn, onnx, torch_fn, float_only=True, layout="elementwise"):
    """te_fn(x, name=...) -> tensor; torch_fn and the ATen op are named alike."""
    def reference(node, x):
        with np.errstate(over="ignore"):  # sigmoid of a large negative number is 0
            return numpy_fn(x)
    DEFS.append(OpDef(name, 1, _same_shape, fusion="injective", layout=layout, float_only=float_only,
                      reference=reference,
                      te=lambda node, x: te_fn(x, name=node.name), onnx=onnx,
                      torch=lambda torch, node, x: getattr(torch, torch_fn)(x), aten=torch_fn))


_unary("relu", lambda x: np.maximum(x, x.dtype.type(0)), ops.relu, "Relu", "relu", float_only=False)
_unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), ops.sigmoid, "Sigmoid", "sigmoid")
_unary("tanh", np.tanh, ops.tanh, "Tanh", "tanh")
# log(0) is -inf. exp(0) = 1 and sqrt(0) = 0 are finite, but exp and sqrt stay off padded blocks too: a change
# of their facet changes the layouts (and so the tuning tasks) of the graphs that use them.
_unary("exp", np.exp, ops.exp, "Exp", "exp", layout="elementwise-unpadded")
_unary("log", np.log, ops.log, "Log", "log", layout="elementwise-unpadded")
_unary("sqrt", np.sqrt, ops.sqrt, "Sqrt", "sqrt", layout="elementwise-unpadded")
_unary("erf", _erf, lambda x, name: te.compute(x.shape, lambda *i: te.erf(x[i]), name=name, tag="elemwise"),
       "Erf", "erf")
_unary("negative", np.negative, ops.negative, "Neg", "neg", float_only=False)
_unary("abs", np.abs, ops.abs, "Abs", "abs", float_only=False)


# ---------------- sin, cos, floor, ceil, round, sign: on te's arithmetic and floor ----------------


def _unary_expr(name, numpy_fn, fexpr, onnx, float_only=True, layout="elementwise"):
    """A unary op whose te is fexpr(v) per element; torch's function and the ATen op are named like the op."""
    DEFS.append(OpDef(name, 1, _same_shape, fusion="injective", layout=layout, float_only=float_only,
                      reference=lambda node, x: numpy_fn(x).astype(x.dtype, copy=False),
                      te=lambda node, x: _elemwise(node, x, fexpr), onnx=onnx,
                      torch=lambda torch, node, x: getattr(torch, name)(x), aten=name))


# pi / 2 in three parts, the first two with few mantissa bits, so that k * part is exact (Cody and Waite)
_HALF_PI_PARTS = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)
_SIN_TAYLOR = [(-1) ** n / math.factorial(2 * n + 1) for n in range(7)]  # r, r^3 ... r^13: |error| < 3e-14
_COS_TAYLOR = [(-1) ** n / math.factorial(2 * n) for n in range(8)]  # 1, r^2 ... r^14: |error| < 2e-15


def _poly(z, coefs, dtype):
    out = te.const(coefs[-1], dtype)
    for c in reversed(coefs[:-1]):
        out = out * z + te.const(c, dtype)
    return out


def _sin_cos(v, quarter_turns):
    """sin(v) (quarter_turns 0) or cos(v) = sin(v + pi / 2) (quarter_turns 1): v reduced by k quarter turns to
    r in [-pi/4, pi/4], then the series of sin or cos of r by the quarter k + quarter_turns (mod 4) it is in."""
    dt = v.dtype
    k = te.floor(v * te.const(2 / math.pi, dt) + te.const(0.5, dt))
    r = v
    for part in _HALF_PI_PARTS:
        r = r - k * te.const(part, dt)
    z = r * r
    sin_r, cos_r = r * _poly(z, _SIN_TAYLOR, dt), _poly(z, _COS_TAYLOR, dt)
    q = k + te.const(float(quarter_turns), dt)
    q = q - te.const(4.0, dt) * te.floor(q * te.const(0.25, dt))  # 0, 1, 2 or 3
    half = te.const(0.5, dt)
    return te.if_then_else(q < half, sin_r, te.if_then_else(q < half + 1, cos_r, te.if_then_else(
        q < half + 2, -sin_r, -cos_r)))


def _round_half_even(v):
    """Round to the nearest integer, halves to the even one (numpy, ONNX Round, torch.round)."""
    dt = v.dtype
    f = te.floor(v)
    d, half, one = v - f, te.const(0.5, dt), te.const(1.0, dt)
    odd = f - te.const(2.0, dt) * te.floor(f * half)  # 1 where f is odd, else 0
    return te.if_then_else(d > half, f + one, te.if_then_else(d < half, f, f + odd))


def _sign(v):
    zero, one = te.const(0, v.dtype), te.const(1, v.dtype)
    return te.if_then_else(v > zero, one, te.if_then_else(v < zero, zero - one, zero))


_unary_expr("sin", np.sin, lambda v: _sin_cos(v, 0), "Sin")
# cos(0) = 1 is finite: the op runs on padded channel blocks too
_unary_expr("cos", np.cos, lambda v: _sin_cos(v, 1), "Cos")
_unary_expr("floor", np.floor, te.floor, "Floor")
_unary_expr("ceil", np.ceil, te.ceil, "Ceil")
_unary_expr("round", np.round, _round_half_even, "Round")
_unary_expr("sign", np.sign, _sign, "Sign", float_only=False)

# ---------------- gelu: exact (erf) or the tanh approximation ----------------


def _gelu_reference(node, x):
    if node.attrs["approximate"] == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2.0).astype(x.dtype)))


def _gelu_te(node, x):
    if node.attrs["approximate"] == "none":
        return ops.gelu(x, name=node.name)
    half, one = te.const(0.5, x.dtype), te.const(1.0, x.dtype)
    coef, cube = te.const(math.sqrt(2.0 / math.pi), x.dtype), te.const(0.044715, x.dtype)
    return _elemwise(node, x, lambda v: half * v * (one + te.tanh(coef * (v + cube * v * v * v))))


def _gelu_onnx(w, node):
    """Written with Erf or Tanh: Gelu only arrives in opset 20."""
    x, out, dtype = node.inputs[0], node.name, node.dtype
    half = w.scalar("half", 0.5, dtype)
    one = w.scalar("one", 1.0, dtype)
    if node.attrs["approximate"] == "tanh":
        cube = w.node("Mul", [x, w.node("Mul", [x, x], w.fresh(out + "_sq"))], w.fresh(out + "_cube"))
        inner = w.node("Add", [x, w.node("Mul", [cube, w.scalar("c", 0.044715, dtype)], w.fresh(out + "_t"))],
                       w.fresh(out + "_inner"))
        scaled = w.node("Mul", [inner, w.scalar("k", math.sqrt(2.0 / math.pi), dtype)], w.fresh(out + "_s"))
        core = w.node("Tanh", [scaled], w.fresh(out + "_tanh"))
    else:
        scaled = w.node("Mul", [x, w.scalar("inv_sqrt2", 1.0 / math.sqrt(2.0), dtype)], w.fresh(out + "_s"))
        core = w.node("Erf", [scaled], w.fresh(out + "_erf"))
    plus_one = w.node("Add", [core, one], w.fresh(out + "_p1"))
    return w.node("Mul", [w.node("Mul", [x, half], w.fresh(out + "_half")), plus_one], out)


DEFS.append(OpDef("gelu", 1, _same_shape, {"approximate": ("none", choice("approximate", ("none", "tanh")))},
                  fusion="injective", layout="elementwise", float_only=True, reference=_gelu_reference,
                  te=_gelu_te, onnx=_gelu_onnx,
                  torch=lambda torch, node, x: torch.nn.functional.gelu(x, approximate=node.attrs["approximate"])))

# ---------------- hard_sigmoid, hard_swish, silu, mish ----------------


def _hard_sigmoid_expr(v, alpha, beta):
    zero, one = te.const(0.0, v.dtype), te.const(1.0, v.dtype)
    return te.max(zero, te.min(one, te.const(alpha, v.dtype) * v + te.const(beta, v.dtype)))


def _hard_sigmoid_reference(node, x):
    alpha, beta = node.attrs["alpha"], node.attrs["beta"]
    return np.clip(x.dtype.type(alpha) * x + x.dtype.type(beta), 0, 1)


def _hard_sigmoid_onnx(w, node):
    return w.node("HardSigmoid", list(node.inputs), node.name, alpha=node.attrs["alpha"], beta=node.attrs["beta"])


def _hard_sigmoid_torch(torch, node, x):
    return torch.clamp(node.attrs["alpha"] * x + node.attrs["beta"], 0.0, 1.0)


# max(0, min(1, alpha * x + beta)): ONNX's defaults; PyTorch's hardsigmoid is alpha = 1/6 (relu6(x + 3) / 6).
DEFS.append(OpDef("hard_sigmoid", 1, _same_shape, {"alpha": (0.2, real("alpha")),
                                                   "beta": (0.5, real("beta"))},
                  fusion="injective", layout="elementwise", float_only=True, reference=_hard_sigmoid_reference,
                  te=lambda node, x: _elemwise(node, x, lambda v: _hard_sigmoid_expr(v, node.attrs["alpha"],
                                                                                     node.attrs["beta"])),
                  onnx=_hard_sigmoid_onnx, torch=_hard_sigmoid_torch))

# x * hard_sigmoid(x) with alpha = 1/6, beta = 1/2 (ONNX HardSwish, PyTorch hardswish)
DEFS.append(OpDef("hard_swish", 1, _same_shape, fusion="injective", layout="elementwise", float_only=True,
                  reference=lambda node, x: x * np.clip(x / x.dtype.type(6) + x.dtype.type(0.5), 0, 1),
                  te=lambda node, x: _elemwise(node, x, lambda v: v * _hard_sigmoid_expr(v, 1.0 / 6.0, 0.5)),
                  onnx="HardSwish", torch=lambda torch, node, x: torch.nn.functional.hardswish(x),
                  aten="hardswish"))


def _silu_reference(node, x):
    with np.errstate(over="ignore"):
        return x / (1 + np.exp(-x))


def _silu_onnx(w, node):
    """x * Sigmoid(x): ONNX has no SiLU."""
    x = node.inputs[0]
    return w.node("Mul", [x, w.node("Sigmoid", [x], w.fresh(node.name + "_sigmoid"))], node.name)


DEFS.append(OpDef("silu", 1, _same_shape, fusion="injective", layout="elementwise", float_only=True,
                  reference=_silu_reference, te=lambda node, x: _elemwise(node, x, lambda v: v * te.sigmoid(v)),
                  onnx=_silu_onnx, torch=lambda torch, node, x: torch.nn.functional.silu(x), aten="silu"))


def _mish_reference(node, x):
    return x * np.tanh(np.logaddexp(x.dtype.type(0), x))  # softplus without overflow


def _mish_te(node, x):
    one = te.const(1.0, x.dtype)
    # softplus = log(1 + exp(x)); where exp overflows, tanh(inf) = 1 is still the limit
    return _elemwise(node, x, lambda v: v * te.tanh(te.log(one + te.exp(v))))


def _mish_onnx(w, node):
    """x * Tanh(Softplus(x)): Mish only arrives in opset 18."""
    x, out = node.inputs[0], node.name
    soft = w.node("Softplus", [x], w.fresh(out + "_softplus"))
    return w.node("Mul", [x, w.node("Tanh", [soft], w.fresh(out + "_tanh"))], out)


DEFS.append(OpDef("mish", 1, _same_shape, fusion="injective", layout="elementwise", float_only=True,
                  reference=_mish_reference, te=_mish_te, onnx=_mish_onnx,
                  torch=lambda torch, node, x: torch.nn.functional.mish(x), aten="mish"))

# ---------------- clip: either bound may be absent ----------------


def _infer_clip(attrs, shapes, dtypes):
    lo, hi = attrs["min"], attrs["max"]
    if lo is not None and hi is not None and lo > hi:
        raise OpError(f"min {lo} is greater than max {hi}")
    return tuple(shapes[0]), dtypes[0]


def _clip_reference(node, x):
    lo, hi = node.attrs["min"], node.attrs["max"]
    if lo is not None:
        x = np.maximum(x, x.dtype.type(lo))
    if hi is not None:
        x = np.minimum(x, x.dtype.type(hi))
    return x


def _clip_te(node, x):
    lo, hi = node.attrs["min"], node.attrs["max"]
    if lo is not None and hi is not None:
        return ops.clip(x, lo, hi, name=node.name)

    def bound(v):
        if lo is not None:
            v = te.max(v, te.const(lo, x.dtype))
        if hi is not None:
            v = te.min(v, te.const(hi, x.dtype))
        return v

    return _elemwise(node, x, bound)


def _clip_onnx(w, node):
    a, dtype = node.attrs, node.dtype
    lo = "" if a["min"] is None else w.scalar("min", a["min"], dtype)
    hi = "" if a["max"] is None else w.scalar("max", a["max"], dtype)
    return w.node("Clip", [node.inputs[0], lo, hi], node.name)


DEFS.append(OpDef("clip", 1, _infer_clip, {"min": (None, float_or_none("min")), "max": (None, float_or_none("max"))},
                  fusion="injective", layout="elementwise", reference=_clip_reference, te=_clip_te, onnx=_clip_onnx,
                  torch=lambda torch, node, x: torch.clamp(x, node.attrs["min"], node.attrs["max"])))

# ---------------- cast ----------------


def _cast_onnx(w, node):
    return w.node("Cast", list(node.inputs), node.name,
                  to=w.helper.np_dtype_to_tensor_dtype(np.dtype(node.attrs["dtype"])))


DEFS.append(OpDef("cast", 1, lambda attrs, shapes, dtypes: (tuple(shapes[0]), attrs["dtype"]),
                  {"dtype": (REQUIRED, dtype_attr)}, fusion="injective",
                  layout="nchw",  # a new dtype has another lane count than the block was chosen for
                  out_dtype=lambda attrs, dtypes: attrs["dtype"],
                  reference=lambda node, x: x.astype(node.attrs["dtype"]),
                  te=lambda node, x: ops.cast(x, node.attrs["dtype"], name=node.name), onnx=_cast_onnx,
                  torch=lambda torch, node, x: x.to(getattr(torch, node.attrs["dtype"]))))
