"""Activations with parameters: softplus (beta), elu (alpha and scale: ONNX Elu, and Selu with its constants),
leaky_relu (alpha) and prelu (a slope tensor, broadcast as numpy broadcasts). All are element-wise and
injective; each is finite on zeros, so in the channel-blocked layout they run on any blocked value."""
import numpy as np

from ...core import te
from ...ops.elemwise import broadcast_load
from ..opdef import OpDef
from .common import broadcast_shapes, positive_float, real, same_dtypes

__all__ = ["DEFS", "SELU_ALPHA", "SELU_SCALE"]

DEFS = []

# torch.selu's constants (ONNX Selu's defaults, to float32 precision)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _same_shape(attrs, shapes, dtypes):
    return tuple(shapes[0]), dtypes[0]


def _elemwise(node, x, fexpr):
    return te.compute(x.shape, lambda *i: fexpr(x[i]), name=node.name, tag="elemwise")


# ---------------- softplus: log(1 + exp(beta * x)) / beta ----------------


def _softplus_reference(node, x):
    beta = x.dtype.type(node.attrs["beta"])
    return (np.logaddexp(x.dtype.type(0), beta * x) / beta).astype(x.dtype)


def _softplus_te(node, x):
    """max(b, 0) + log(1 + exp(-|b|)) for b = beta * x: no overflow for large |b|."""
    beta, zero, one = te.const(node.attrs["beta"], x.dtype), te.const(0.0, x.dtype), te.const(1.0, x.dtype)

    def expr(v):
        b = beta * v
        return (te.max(b, zero) + te.log(one + te.exp(zero - te.abs(b)))) / beta

    return _elemwise(node, x, expr)


def _softplus_onnx(w, node):
    beta = node.attrs["beta"]
    if beta == 1.0:
        return w.node("Softplus", list(node.inputs), node.name)
    scaled = w.node("Mul", [node.inputs[0], w.scalar("beta", beta, node.dtype)], w.fresh(node.name + "_scaled"))
    soft = w.node("Softplus", [scaled], w.fresh(node.name + "_softplus"))
    return w.node("Div", [soft, w.scalar("beta", beta, node.dtype)], node.name)


DEFS.append(OpDef("softplus", 1, _same_shape, {"beta": (1.0, positive_float("beta"))}, fusion="injective",
                  layout="elementwise", float_only=True, reference=_softplus_reference, te=_softplus_te,
                  onnx=_softplus_onnx,
                  torch=lambda torch, node, x: torch.nn.functional.softplus(x, beta=node.attrs["beta"],
                                                                            threshold=1e30)))

# ---------------- elu: scale * (x > 0 ? x : alpha * (exp(x) - 1)); selu is elu with its constants ----------------


def _elu_reference(node, x):
    alpha, scale = x.dtype.type(node.attrs["alpha"]), x.dtype.type(node.attrs["scale"])
    with np.errstate(over="ignore"):
        return (scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))).astype(x.dtype)


def _elu_te(node, x):
    alpha, scale = te.const(node.attrs["alpha"], x.dtype), te.const(node.attrs["scale"], x.dtype)
    zero, one = te.const(0.0, x.dtype), te.const(1.0, x.dtype)
    return _elemwise(node, x, lambda v: scale * te.if_then_else(v > zero, v, alpha * (te.exp(te.min(v, zero))
                                                                                      - one)))


def _elu_onnx(w, node):
    a = node.attrs
    if a["scale"] == 1.0:
        return w.node("Elu", list(node.inputs), node.name, alpha=a["alpha"])
    return w.node("Selu", list(node.inputs), node.name, alpha=a["alpha"], gamma=a["scale"])


DEFS.append(OpDef("elu", 1, _same_shape, {"alpha": (1.0, real("alpha")), "scale": (1.0, real("scale"))},
                  fusion="injective", layout="elementwise", float_only=True, reference=_elu_reference,
                  te=_elu_te, onnx=_elu_onnx,
                  torch=lambda torch, node, x: node.attrs["scale"] * torch.nn.functional.elu(
                      x, alpha=node.attrs["alpha"])))

# ---------------- leaky_relu: x > 0 ? x : alpha * x ----------------


def _leaky_relu_reference(node, x):
    return np.where(x > 0, x, x.dtype.type(node.attrs["alpha"]) * x).astype(x.dtype)


def _leaky_relu_te(node, x):
    alpha, zero = te.const(node.attrs["alpha"], x.dtype), te.const(0.0, x.dtype)
    return _elemwise(node, x, lambda v: te.if_then_else(v > zero, v, alpha * v))


DEFS.append(OpDef("leaky_relu", 1, _same_shape, {"alpha": (0.01, real("alpha"))}, fusion="injective",
                  layout="elementwise", float_only=True, reference=_leaky_relu_reference, te=_leaky_relu_te,
                  onnx=lambda w, node: w.node("LeakyRelu", list(node.inputs), node.name, alpha=node.attrs["alpha"]),
                  torch=lambda torch, node, x: torch.nn.functional.leaky_relu(x, node.attrs["alpha"])))

# ---------------- prelu: x < 0 ? slope * x : x, slope broadcast against x ----------------


def _prelu_te(node, x, slope):
    shape, zero = tuple(node.shape), te.const(0.0, x.dtype)

    def fcompute(*i):
        v = broadcast_load(x, shape, i)
        return te.if_then_else(v < zero, broadcast_load(slope, shape, i) * v, v)

    return te.compute(shape, fcompute, name=node.name, tag="elemwise")


DEFS.append(OpDef("prelu", 2, lambda attrs, shapes, dtypes: (broadcast_shapes(shapes), same_dtypes(dtypes)),
                  fusion="injective", layout="elementwise", float_only=True,
                  reference=lambda node, x, slope: np.where(x < 0, slope * x, x).astype(x.dtype),
                  te=_prelu_te, onnx="PRelu",
                  torch=lambda torch, node, x, slope: torch.where(x < 0, slope * x, x)))
