"""The te builder of every op of the table: f(node, *te_tensors) -> te.Tensor, built on autosched.ops.

The tensors come in the order of node.inputs and have its (int) shapes; the returned tensor has node.shape and
node.dtype and is named after the node (names do not enter workload keys, so equal layers still share a key).
Ops that autosched.ops does not cover as the table means them (a dense over (..., K), a broadcasting matmul,
clip with one bound, erf, the tanh GELU, batch_norm, ceil-mode pooling) are written here with te.
"""
import math

from .. import ops, te

__all__ = ["TE_BUILDERS"]

TE_BUILDERS = {}


def _builder(*names):
    def register(fn):
        for op in names:
            TE_BUILDERS[op] = fn
        return fn
    return register


def _const(value, dtype):
    return te.const(value, dtype)


def _bcast_index(shape, out_shape, index):
    """The index into dims `shape` (right-aligned to `out_shape`, size-1 dims broadcast) of output `index`."""
    offset = len(out_shape) - len(shape)
    return tuple(0 if shape[d] == 1 and out_shape[offset + d] != 1 else index[offset + d] for d in range(len(shape)))


@_builder("conv2d")
def conv2d(node, data, weight, bias=None):
    a = node.attrs
    groups = a["groups"]
    channels, out_channels = data.shape[1], weight.shape[0]
    name = node.name if bias is None else node.name + "_conv"
    if groups > 1 and groups == channels == out_channels:  # weight (C, 1, kh, kw) is the depthwise kernel
        out = ops.depthwise_conv2d_nchw(data, weight, a["strides"], a["pads"], a["dilations"], name=name)
    else:
        out = ops.conv2d_nchw(data, weight, a["strides"], a["pads"], a["dilations"], groups, name=name)
    return out if bias is None else ops.bias_add(out, bias, axis=1, name=node.name)


@_builder("dense")
def dense(node, data, weight, bias=None):
    if data.ndim == 2:
        if bias is None:
            return ops.dense(data, weight, name=node.name)
        return ops.add(ops.dense(data, weight, name=node.name + "_matmul"), bias, name=node.name)
    k = data.shape[-1]
    name = node.name if bias is None else node.name + "_matmul"

    def fcompute(*i):
        r = te.reduce_axis((0, k), name="k")
        return te.sum(data[i[:-1] + (r,)] * weight[i[-1], r], axis=r)

    out = te.compute(tuple(node.shape), fcompute, name=name, tag="dense")
    return out if bias is None else ops.add(out, bias, name=node.name)


@_builder("matmul")
def matmul(node, a, b):
    if a.ndim == 2 and b.ndim == 2:
        return ops.matmul(a, b, name=node.name)
    if a.ndim == 3 and b.ndim == 3 and (a.shape[0] == b.shape[0] or 1 in (a.shape[0], b.shape[0])):
        return ops.batch_matmul(a, b, transpose_b=False, name=node.name)
    out_shape = tuple(node.shape)
    k = a.shape[-1]
    rows, cols = a.ndim > 1, b.ndim > 1
    batch_shape = out_shape[:len(out_shape) - rows - cols]

    def fcompute(*i):
        r = te.reduce_axis((0, k), name="k")
        batch = i[:len(batch_shape)]
        lhs = a[_bcast_index(a.shape[:-2], batch_shape, batch) + (i[len(batch)], r)] if rows else a[r]
        rhs = b[_bcast_index(b.shape[:-2], batch_shape, batch) + (r, i[-1])] if cols else b[r]
        return te.sum(lhs * rhs, axis=r)

    return te.compute(out_shape, fcompute, name=node.name, tag="batch_matmul")


_BINARY = {"add": ops.add, "subtract": ops.subtract, "multiply": ops.multiply, "divide": ops.divide,
           "power": ops.power, "maximum": ops.maximum, "minimum": ops.minimum}
_UNARY = {"relu": ops.relu, "sigmoid": ops.sigmoid, "tanh": ops.tanh, "exp": ops.exp, "log": ops.log,
          "sqrt": ops.sqrt, "negative": ops.negative, "abs": ops.abs}


@_builder(*_BINARY)
def binary(node, a, b):
    return _BINARY[node.op](a, b, name=node.name)


@_builder(*_UNARY)
def unary(node, x):
    return _UNARY[node.op](x, name=node.name)


def _elemwise(node, x, fexpr):
    return te.compute(x.shape, lambda *i: fexpr(x[i]), name=node.name, tag="elemwise")


@_builder("erf")
def erf(node, x):
    return _elemwise(node, x, te.erf)


@_builder("gelu")
def gelu(node, x):
    if node.attrs["approximate"] == "none":
        return ops.gelu(x, name=node.name)
    half, one = _const(0.5, x.dtype), _const(1.0, x.dtype)
    coef, cube = _const(math.sqrt(2.0 / math.pi), x.dtype), _const(0.044715, x.dtype)
    return _elemwise(node, x, lambda v: half * v * (one + te.tanh(coef * (v + cube * v * v * v))))


@_builder("clip")
def clip(node, x):
    lo, hi = node.attrs["min"], node.attrs["max"]
    if lo is not None and hi is not None:
        return ops.clip(x, lo, hi, name=node.name)

    def bound(v):
        if lo is not None:
            v = te.max(v, _const(lo, x.dtype))
        if hi is not None:
            v = te.min(v, _const(hi, x.dtype))
        return v

    return _elemwise(node, x, bound)


@_builder("softmax")
def softmax(node, x):
    return ops.softmax(x, node.attrs["axis"], name=node.name)


@_builder("layer_norm")
def layer_norm(node, x, gamma, beta):
    axes = list(range(node.attrs["axis"], x.ndim))
    return ops.layer_norm(x, gamma, beta, axis=axes, epsilon=node.attrs["epsilon"], name=node.name)


@_builder("batch_norm")
def batch_norm(node, x, gamma, beta, mean, var):
    eps = _const(node.attrs["epsilon"], x.dtype)
    scale = te.compute(gamma.shape, lambda c: gamma[c] * te.rsqrt(var[c] + eps), name=node.name + "_scale",
                       tag="elemwise")
    return te.compute(x.shape, lambda *i: (x[i] - mean[i[1]]) * scale[i[1]] + beta[i[1]], name=node.name,
                      tag="broadcast")


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


@_builder("max_pool2d")
def max_pool2d(node, x):
    a = node.attrs
    if _ops_pool_fits(node, x):
        return ops.max_pool2d(x, a["kernel"], a["strides"], a["pads"], a["dilations"], name=node.name)
    return _pool_window_sum(node, x, te.max, te.min_value(x.dtype), node.name, "pool_max")


def _tap_count(out_var, stride, lo, dilation, kernel, low, high):
    """The taps r in [0, kernel) with low <= out * stride - lo + r * dilation < high, as an int32 expression."""
    start = out_var * stride - lo
    zero = _const(0, "int32")
    first = te.max(-te.floordiv(start - low, dilation), zero)  # ceil((low - start) / dilation), >= 0
    last = te.min(te.floordiv(high - 1 - start, dilation), _const(kernel - 1, "int32"))
    return last - first + 1


@_builder("avg_pool2d")
def avg_pool2d(node, x):
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


@_builder("global_avg_pool2d")
def global_avg_pool2d(node, x):
    return ops.global_avg_pool2d(x, name=node.name)


@_builder("reshape", "flatten")
def reshape(node, x):
    return ops.reshape(x, tuple(node.shape), name=node.name)


@_builder("transpose")
def transpose(node, x):
    return ops.transpose(x, node.attrs["perm"], name=node.name)


@_builder("concat")
def concat(node, *xs):
    return ops.concatenate(xs, node.attrs["axis"], name=node.name)


@_builder("reduce_mean", "reduce_sum", "reduce_max")
def reduce(node, x):
    fn = {"reduce_mean": ops.mean, "reduce_sum": ops.sum, "reduce_max": ops.max}[node.op]
    return fn(x, list(node.attrs["axes"]), keepdims=node.attrs["keepdims"], name=node.name)


@_builder("cast")
def cast(node, x):
    return ops.cast(x, node.attrs["dtype"], name=node.name)


@_builder("strided_slice")
def strided_slice(node, x):
    a = node.attrs
    return ops.strided_slice(x, a["begin"], a["end"], a["strides"], a["axes"], name=node.name)


@_builder("take")
def take(node, data, indices):
    # negative indices count from the end, indices still out of range are clamped (as the reference does)
    return ops.take(data, indices, node.attrs["axis"], mode="clip", from_end=True, name=node.name)
