"""The numpy reference of every op of the table, and of a whole graph (Graph.evaluate).

Each reference is f(node, *arrays) -> array of node.dtype, computed in the inputs' dtype (float32 stays float32:
this is a reference for tests, not a bit-exact model of a compiled kernel). It shares nothing with the te
builders, so the two check each other.
"""
import math

import numpy as np

from .errors import GraphError

__all__ = ["REFERENCES", "evaluate_graph"]

REFERENCES = {}


def _ref(*ops):
    def register(fn):
        for op in ops:
            REFERENCES[op] = fn
        return fn
    return register


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x).astype(x.dtype)
    except ImportError:  # math.erf element by element: slow but exact
        return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _windows(x, kernel, strides, dilations, out_hw):
    """For every kernel tap (r, s): the (N, C, OH, OW) view of x (already padded) that the tap reads."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    for r in range(kh):
        for s in range(kw):
            y0, x0 = r * dh, s * dw
            yield r, s, x[:, :, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw]


def _pad_hw(x, pads, value=0.0):
    top, left, bottom, right = pads
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


@_ref("conv2d")
def conv2d(node, data, weight, bias=None):
    a = node.attrs
    groups = a["groups"]
    n, c = data.shape[:2]
    o, cg, kh, kw = weight.shape
    oh, ow = node.shape[2], node.shape[3]
    padded = _pad_hw(data, a["pads"])
    out = np.zeros((n, groups, o // groups, oh, ow), data.dtype)
    w = weight.reshape(groups, o // groups, cg, kh, kw)
    for r, s, window in _windows(padded, (kh, kw), a["strides"], a["dilations"], (oh, ow)):
        win = window.reshape(n, groups, cg, oh, ow)
        if groups == 1:
            out[:, 0] += np.tensordot(w[0, :, :, r, s], win[:, 0], axes=([1], [1])).transpose(1, 0, 2, 3)
        elif cg == 1 and o == groups:  # depthwise
            out[:, :, 0] += win[:, :, 0] * w[None, :, 0, 0, r, s, None, None]
        else:
            out += np.einsum("ngchw,goc->ngohw", win, w[:, :, :, r, s])
    out = out.reshape(n, o, oh, ow)
    if bias is not None:
        out += bias.reshape(1, o, 1, 1)
    return out


@_ref("dense")
def dense(node, data, weight, bias=None):
    out = np.matmul(data, weight.T)
    return out + bias if bias is not None else out


@_ref("matmul")
def matmul(node, a, b):
    return np.matmul(a, b)


_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
           "power": np.power, "maximum": np.maximum, "minimum": np.minimum}
_UNARY = {"sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh, "exp": np.exp, "log": np.log,
          "sqrt": np.sqrt, "erf": _erf, "negative": np.negative, "abs": np.abs,
          "relu": lambda x: np.maximum(x, x.dtype.type(0))}


@_ref(*_BINARY)
def binary(node, a, b):
    return _BINARY[node.op](a, b)


@_ref(*_UNARY)
def unary(node, x):
    with np.errstate(over="ignore"):  # sigmoid of a large negative number is 0
        return _UNARY[node.op](x)


@_ref("gelu")
def gelu(node, x):
    if node.attrs["approximate"] == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2.0).astype(x.dtype)))


@_ref("clip")
def clip(node, x):
    lo, hi = node.attrs["min"], node.attrs["max"]
    if lo is not None:
        x = np.maximum(x, x.dtype.type(lo))
    if hi is not None:
        x = np.minimum(x, x.dtype.type(hi))
    return x


@_ref("softmax")
def softmax(node, x):
    axis = node.attrs["axis"]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@_ref("layer_norm")
def layer_norm(node, x, gamma, beta):
    axes = tuple(range(node.attrs["axis"], x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + x.dtype.type(node.attrs["epsilon"])) * gamma + beta


@_ref("batch_norm")
def batch_norm(node, x, gamma, beta, mean, var):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma / np.sqrt(var + x.dtype.type(node.attrs["epsilon"]))
    return (x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)


def _pool_extra(size, out, kernel, stride, dilation, lo, hi):
    """Extra trailing padding the last (ceil-mode) window needs."""
    needed = (out - 1) * stride + (kernel - 1) * dilation + 1
    return max(0, needed - (size + lo + hi))


def _pool_setup(node, x, value):
    a = node.attrs
    oh, ow = node.shape[2], node.shape[3]
    top, left, bottom, right = a["pads"]
    extra_h = _pool_extra(x.shape[2], oh, a["kernel"][0], a["strides"][0], a["dilations"][0], top, bottom)
    extra_w = _pool_extra(x.shape[3], ow, a["kernel"][1], a["strides"][1], a["dilations"][1], left, right)
    padded = _pad_hw(x, (top, left, bottom + extra_h, right + extra_w), value)
    return padded, _windows(padded, a["kernel"], a["strides"], a["dilations"], (oh, ow))


@_ref("max_pool2d")
def max_pool2d(node, x):
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


@_ref("avg_pool2d")
def avg_pool2d(node, x):
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


@_ref("global_avg_pool2d")
def global_avg_pool2d(node, x):
    return x.mean(axis=(2, 3), keepdims=True)


@_ref("reshape", "flatten")
def reshape(node, x):
    return x.reshape(node.shape)


@_ref("transpose")
def transpose(node, x):
    return x.transpose(node.attrs["perm"])


@_ref("concat")
def concat(node, *xs):
    return np.concatenate(xs, axis=node.attrs["axis"])


@_ref("reduce_mean", "reduce_sum", "reduce_max")
def reduce(node, x):
    fn = {"reduce_mean": np.mean, "reduce_sum": np.sum, "reduce_max": np.max}[node.op]
    return fn(x, axis=node.attrs["axes"], keepdims=node.attrs["keepdims"])


@_ref("cast")
def cast(node, x):
    return x.astype(node.attrs["dtype"])


@_ref("strided_slice")
def strided_slice(node, x):
    a = node.attrs
    index = [slice(None)] * x.ndim
    for b, e, s, axis in zip(a["begin"], a["end"], a["strides"], a["axes"]):
        index[axis] = slice(b, e, s)  # Python slicing clamps as ONNX Slice does for positive steps
    return x[tuple(index)]


@_ref("take")
def take(node, data, indices):
    extent = data.shape[node.attrs["axis"]]
    idx = indices.astype(np.int64)
    idx = np.clip(np.where(idx < 0, idx + extent, idx), 0, extent - 1)  # out of range: clamped
    return np.take(data, idx, axis=node.attrs["axis"])


def _bind_inputs(graph, arrays, named):
    if len(arrays) > len(graph.inputs):
        raise GraphError(f"evaluate: graph '{graph.name}' has {len(graph.inputs)} inputs, got {len(arrays)} arrays")
    values = dict(zip(graph.inputs, arrays))
    for key, array in named.items():
        if key not in graph.inputs:
            raise GraphError(f"evaluate: graph '{graph.name}' has no input '{key}' (inputs: {graph.inputs})")
        if key in values:
            raise GraphError(f"evaluate: input '{key}' is given twice")
        values[key] = array
    missing = [v for v in graph.inputs if v not in values]
    if missing:
        raise GraphError(f"evaluate: missing input{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    for key in graph.inputs:
        array = values[key]
        if not isinstance(array, np.ndarray):
            raise TypeError(f"evaluate: input '{key}' must be a numpy.ndarray, got {type(array).__name__}")
        shape, dtype = graph.shape(key), graph.dtype(key)
        if array.shape != shape:
            raise GraphError(f"evaluate: input '{key}' must have shape {shape}, got {array.shape}")
        if array.dtype != np.dtype(dtype):
            raise TypeError(f"evaluate: input '{key}' must have dtype {dtype}, got {array.dtype} (convert it with "
                            f".astype('{dtype}'))")
    return values


def evaluate_graph(graph, arrays, named):
    """The outputs of `graph` on the given inputs (a list of arrays, in the order of graph.outputs)."""
    problems = graph.problems()
    if problems:
        listed = "; ".join(f"{name} ({op}): {why}" for name, op, why in problems)
        raise GraphError(f"evaluate: graph '{graph.name}' cannot be evaluated: {listed}")
    if not graph.outputs:
        raise GraphError(f"evaluate: graph '{graph.name}' has no outputs (call set_outputs)")
    values = _bind_inputs(graph, arrays, named)
    values.update(graph.constants)
    remaining = {}  # value -> consumers still to run, so intermediates are freed early
    for node in graph.nodes:
        for v in node.inputs:
            remaining[v] = remaining.get(v, 0) + 1
    keep = set(graph.outputs) | set(graph.constants) | set(graph.inputs)
    for node in graph.nodes:
        out = REFERENCES[node.op](node, *[values[v] for v in node.inputs])
        out = np.asarray(out)
        if out.dtype != np.dtype(node.dtype):
            out = out.astype(node.dtype)
        if out.shape != node.shape:
            raise AssertionError(f"reference of node '{node.name}' ({node.op}) gave shape {out.shape}, "
                                 f"expected {node.shape}")
        values[node.name] = out
        for v in node.inputs:
            remaining[v] -= 1
            if remaining[v] == 0 and v not in keep:
                del values[v]
    return [values[v] for v in graph.outputs]
