"""The ATen operator table of from_torch: ATEN maps an ATen op name (the schema name without "aten::", so
conv2d.default and conv2d.padding share "conv2d") to a function called as ``convert(importer, *args,
**kwargs)`` with the FX node's own arguments; it returns the graph value computing the op's (first) output,
a list of them for an op returning a list (split, chunk, unbind), or a torch.Tensor when the result is a
constant (new_ones of a static shape). Both the ops torch.export emits by default (conv2d, linear, batch_norm,
layer_norm ...) and their core ATen decompositions (convolution, addmm, _native_batch_norm_legit_no_training,
native_layer_norm ...) are here. Any op whose tensor inputs are all constants (a weight's t(), an arange, a
mask of constants) is computed by torch at import, except NEVER_FOLDED ones and in-place ones.

ATEN holds the ATen ops that need translating. An ATen op that is a graph op with the same tensor inputs and
no other arguments (the `aten` of its OpDef names it: relu, exp, ...) needs no entry: ``converter`` maps it
through the graph's op registry.
"""
import math

import numpy as np

from ..graph import registry
from ._common import NotConvertible, reshape, slices_of, split_sizes
from .torch_ops_more import MORE_ATEN, conv3d, conv_transpose

__all__ = ["ATEN", "NEVER_FOLDED", "converter"]

# Ops never computed at import even on constants: their results are random or uninitialised.
NEVER_FOLDED = {"dropout", "native_dropout", "feature_dropout", "alpha_dropout", "bernoulli", "rand", "randn",
                "randint", "rand_like", "randn_like", "randint_like", "normal", "uniform", "multinomial",
                "randperm", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}


def _pair(v, n=2):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return tuple(int(x) for x in (v * n if len(v) == 1 else v))


def _rank(ctx, x):
    return len(ctx.shape(x))


def _axis(a, rank):
    return a + rank if a < 0 else a


def _conv2d(ctx, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if _rank(ctx, x) != 4:
        raise NotConvertible(f"only 2-D convolution (4-D input) is supported, the input has shape {ctx.shape(x)}")
    dilation = _pair(dilation)
    if isinstance(padding, str):  # conv2d.padding: "valid" or "same" (stride 1)
        if padding == "valid":
            pads = (0, 0, 0, 0)
        else:
            kernel = ctx.shape(weight)[2:]
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            pads = (total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2)
    else:
        pads = _pair(padding) * 2
    args = [ctx.value(x), ctx.value(weight)] + ([ctx.value(bias)] if bias is not None else [])
    return ctx.emit("conv2d", args, strides=_pair(stride), pads=pads, dilations=dilation, groups=int(groups))


def _convolution(ctx, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        return conv_transpose(ctx, x, weight, bias, stride, padding, dilation, output_padding, groups)
    if _rank(ctx, x) == 3:
        return _conv1d(ctx, x, weight, bias, stride, padding, dilation, groups)
    if _rank(ctx, x) == 5:
        return conv3d(ctx, x, weight, bias, stride, padding, dilation, groups)
    return _conv2d(ctx, x, weight, bias, stride, padding, dilation, groups)


def _dense(ctx, x, weight_t, bias=None):
    """x @ weight_t (+ bias): a dense layer when weight_t is constant, else matmul (+ add)."""
    w = ctx.const(weight_t)
    if w is not None and w.ndim == 2 and _rank(ctx, x) >= 2:
        args = [ctx.value(x), ctx.add_const(w.T, "weight")] + ([ctx.value(bias)] if bias is not None else [])
        return ctx.emit("dense", args)
    out = ctx.emit("matmul", [ctx.value(x), ctx.value(weight_t)])
    return out if bias is None else ctx.emit("add", [out, ctx.operand(bias, ctx.g.dtype(out))])


def _linear(ctx, x, weight, bias=None):
    args = [ctx.value(x), ctx.value(weight)] + ([ctx.value(bias)] if bias is not None else [])
    return ctx.emit("dense", args)


def _addmm(ctx, bias, a, b, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        out = ctx.emit("matmul", [ctx.value(a), ctx.value(b)])
        out = ctx.emit("multiply", [out, ctx.operand(float(alpha), ctx.g.dtype(out))]) if alpha != 1 else out
        c = ctx.value(bias)
        c = ctx.emit("multiply", [c, ctx.operand(float(beta), ctx.g.dtype(c))]) if beta != 1 else c
        return ctx.emit("add", [out, c])
    if len(ctx.shape(bias)) == 1:
        return _dense(ctx, a, b, bias)
    return ctx.emit("add", [_dense(ctx, a, b), ctx.value(bias)])


def _matmul(ctx, a, b):
    return _dense(ctx, a, b)


def _binary(op):
    def convert(ctx, a, b, alpha=1, rounding_mode=None):
        if rounding_mode is not None:
            raise NotConvertible(f"rounding_mode='{rounding_mode}'")
        dtype = ctx.out_dtype()  # both operands are brought to the promoted dtype
        av, bv = ctx.operand(a, dtype), ctx.operand(b, dtype)
        if alpha != 1:
            bv = ctx.emit("multiply", [bv, ctx.operand(alpha, ctx.g.dtype(bv))])
        return ctx.emit(op, [av, bv])
    return convert


def _rsub(ctx, a, b, alpha=1):
    """b - alpha * a (what ``2 - x`` exports as)."""
    dtype = ctx.out_dtype()
    av, bv = ctx.operand(a, dtype), ctx.operand(b, dtype)
    if alpha != 1:
        av = ctx.emit("multiply", [av, ctx.operand(alpha, ctx.g.dtype(av))])
    return ctx.emit("subtract", [bv, av])


def _rsqrt(ctx, x):
    root = ctx.emit("sqrt", [ctx.value(x)])
    return ctx.emit("divide", [ctx.operand(1.0, ctx.g.dtype(root)), root])


def _gelu(ctx, x, approximate="none"):
    return ctx.emit("gelu", [ctx.value(x)], approximate=approximate)


def _clip(ctx, x, lo=None, hi=None):
    return ctx.emit("clip", [ctx.value(x)], min=None if lo is None else float(lo), max=None if hi is None else
                    float(hi))


def _hardtanh(ctx, x, lo=-1.0, hi=1.0):
    return _clip(ctx, x, lo, hi)


def _softmax(ctx, x, dim, *unused):
    return ctx.emit("softmax", [ctx.value(x)], axis=int(dim))


def _layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5, *unused):
    shape, xv = tuple(int(d) for d in normalized_shape), ctx.value(x)
    dtype = ctx.g.dtype(xv)
    gamma = ctx.value(weight) if weight is not None else ctx.add_const(np.ones(shape, dtype), "gamma")
    beta = ctx.value(bias) if bias is not None else ctx.add_const(np.zeros(shape, dtype), "beta")
    return ctx.emit("layer_norm", [xv, gamma, beta], axis=_rank(ctx, x) - len(shape), epsilon=float(eps))


def _bn_args(ctx, x, weight, bias, mean, var):
    xv = ctx.value(x)
    channels = ctx.shape(mean)
    dtype = ctx.g.dtype(xv)
    gamma = ctx.value(weight) if weight is not None else ctx.add_const(np.ones(channels, dtype), "gamma")
    beta = ctx.value(bias) if bias is not None else ctx.add_const(np.zeros(channels, dtype), "beta")
    return [xv, gamma, beta, ctx.value(mean), ctx.value(var)]


def _batch_norm(ctx, x, weight, bias, mean, var, training, momentum, eps, *unused):
    if training or mean is None:
        raise NotConvertible("batch_norm in training mode (only inference is supported)")
    return ctx.emit("batch_norm", _bn_args(ctx, x, weight, bias, mean, var), epsilon=float(eps))


def _bn_no_training(ctx, x, weight, bias, mean, var, momentum, eps):
    return ctx.emit("batch_norm", _bn_args(ctx, x, weight, bias, mean, var), epsilon=float(eps))


def _max_pool2d(ctx, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    kernel = _pair(kernel)
    return ctx.emit("max_pool2d", [ctx.value(x)], kernel=kernel, strides=_pair(stride) if stride else kernel,
                    pads=_pair(padding) * 2, dilations=_pair(dilation), ceil_mode=bool(ceil_mode))


def _avg_pool2d(ctx, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    if divisor_override is not None:
        raise NotConvertible("divisor_override")
    kernel = _pair(kernel)
    return ctx.emit("avg_pool2d", [ctx.value(x)], kernel=kernel, strides=_pair(stride) if stride else kernel,
                    pads=_pair(padding) * 2, ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad))


def _adaptive_avg_pool2d(ctx, x, output_size):
    out = _pair(output_size)
    shape = ctx.shape(x)
    if out == (1, 1):
        return ctx.emit("global_avg_pool2d", [ctx.value(x)])
    size = shape[-2:]
    if all(isinstance(s, int) and s % o == 0 for s, o in zip(size, out)):
        kernel = tuple(s // o for s, o in zip(size, out))
        return ctx.emit("avg_pool2d", [ctx.value(x)], kernel=kernel, strides=kernel)
    raise NotConvertible(f"adaptive pooling of {shape} to {out} (windows of different sizes)")


def _reduce(op):
    def convert(ctx, x, dims=None, keepdim=False, dtype=None):
        rank = _rank(ctx, x)
        dims = list(range(rank)) if dims is None or dims == [] else [_axis(int(d), rank) for d in _pair(dims, 1)]
        if dtype is not None:
            raise NotConvertible("a reduction with dtype=")
        return ctx.emit(op, [ctx.value(x)], axes=tuple(dims), keepdims=bool(keepdim))
    return convert


def _view(ctx, x, size):
    return reshape(ctx.g, ctx.value(x), ctx.dims(size), ctx.fresh_name("reshape"))


def _flatten(ctx, x, start=0, end=-1):
    shape = ctx.shape(x)
    rank = len(shape)
    start, end = _axis(start, rank), _axis(end, rank)
    if start == 1 and end == rank - 1:
        return ctx.emit("flatten", [ctx.value(x)], axis=1)
    middle = shape[start:end + 1]
    merged = int(np.prod(middle)) if all(isinstance(d, int) for d in middle) else -1
    return reshape(ctx.g, ctx.value(x), list(shape[:start]) + [merged] + list(shape[end + 1:]),
                   ctx.fresh_name("reshape"))


def _permute(ctx, x, dims):
    rank = _rank(ctx, x)
    return ctx.emit("transpose", [ctx.value(x)], perm=tuple(_axis(int(d), rank) for d in dims))


def _transpose(ctx, x, d0, d1):
    rank = _rank(ctx, x)
    perm = list(range(rank))
    d0, d1 = _axis(d0, rank), _axis(d1, rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.emit("transpose", [ctx.value(x)], perm=tuple(perm))


def _t(ctx, x):
    return ctx.value(x) if _rank(ctx, x) < 2 else ctx.emit("transpose", [ctx.value(x)], perm=(1, 0))


def _cat(ctx, tensors, dim=0):
    # torch.cat skips empty 1-D tensors (a key cache before its first update); no graph value is empty
    kept = [t for t in tensors if ctx.const(t) is None or ctx.const(t).size]
    return ctx.emit("concat", [ctx.value(t) for t in kept], axis=int(dim))


def _unsqueeze(ctx, x, dim):
    shape = list(ctx.shape(x))
    shape.insert(_axis(int(dim), len(shape) + 1), 1)
    return reshape(ctx.g, ctx.value(x), shape, ctx.fresh_name("reshape"))


def _squeeze(ctx, x, dims=None):
    shape = ctx.shape(x)
    dims = [i for i, d in enumerate(shape) if d == 1] if dims is None else \
        [_axis(int(d), len(shape)) for d in _pair(dims, 1)]
    return reshape(ctx.g, ctx.value(x), [d for i, d in enumerate(shape) if i not in dims or d != 1],
                   ctx.fresh_name("reshape"))


_TO_THE_END = 2**63 - 1


def _static_int(ctx, v, what):
    """An int argument (a SymInt of a dynamic dim cannot be a slice bound)."""
    v = ctx.env[v] if isinstance(v, ctx.torch.fx.Node) else v
    if not isinstance(v, int):
        raise NotConvertible(f"{what} {v} is a dynamic dim; bind it when exporting")
    return v


def _slice(ctx, x, dim=0, start=None, end=None, step=1):
    rank, xv = _rank(ctx, x), ctx.value(x)
    dim = _axis(int(dim), rank)
    start = 0 if start is None else _static_int(ctx, start, "start")
    end = _TO_THE_END if end is None else _static_int(ctx, end, "end")
    step = _static_int(ctx, step, "step")
    extent = ctx.shape(x)[dim]
    if start == 0 and step == 1 and (end >= _TO_THE_END or (isinstance(extent, int) and end >= extent)):
        return xv  # the whole axis (torch.export writes x[:, 0] as such a slice, then a select)
    return ctx.emit("strided_slice", [xv], begin=(start,), end=(end,), strides=(step,), axes=(dim,))


def _select(ctx, x, dim, index):
    """x.select(dim, index): the one-element slice, then the axis dropped."""
    shape = list(ctx.shape(x))
    dim, index = _axis(int(dim), len(shape)), _static_int(ctx, index, "index")
    end = index + 1 if index != -1 else _TO_THE_END
    one = ctx.emit("strided_slice", [ctx.value(x)], begin=(index,), end=(end,), strides=(1,), axes=(dim,))
    return reshape(ctx.g, one, shape[:dim] + shape[dim + 1:], ctx.fresh_name("reshape"))


def _index_select(ctx, x, dim, index):
    return ctx.emit("take", [ctx.value(x), ctx.value(index)], axis=int(dim))


def _embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return ctx.emit("take", [ctx.value(weight), ctx.value(indices)], axis=0)


def _expand(ctx, x, size, implicit=False):
    """expand / broadcast_to: a -1 keeps the input's dim."""
    shape, size = ctx.shape(x), ctx.dims(size)
    offset = len(size) - len(shape)
    target = [shape[d - offset] if s == -1 else s for d, s in enumerate(size)]
    if tuple(target) == tuple(shape):
        return ctx.value(x)
    return ctx.emit("expand", [ctx.value(x)], shape=_static_dims(ctx, target, "expand"))


def _identity(ctx, x, *unused, **kw):
    return ctx.value(x)


def _dropout(ctx, x, p=0.5, train=False):
    if train:
        raise NotConvertible("dropout in training mode")
    return ctx.value(x)


def _to_copy(ctx, x, *args, dtype=None, **kw):
    dtype = dtype or next((a for a in args if isinstance(a, ctx.torch.dtype)), None)
    xv = ctx.value(x)
    if dtype is None or ctx.dtype_name(dtype) == ctx.g.dtype(xv):
        return xv
    return ctx.emit("cast", [xv], dtype=ctx.dtype_name(dtype))


def _sdpa(ctx, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v as its graph ops; a bool mask (or is_causal's lower triangle) keeps
    the scores where it is true and puts -inf elsewhere, a float mask is added."""
    if dropout_p or enable_gqa:
        raise NotConvertible("scaled_dot_product_attention with dropout or enable_gqa")
    rank = _rank(ctx, k)
    perm = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    kt = ctx.emit("transpose", [ctx.value(k)], perm=perm)
    scores = ctx.emit("matmul", [ctx.value(q), kt])
    dtype = ctx.g.dtype(scores)
    head = ctx.shape(q)[-1]
    scale = 1.0 / math.sqrt(head) if scale is None else float(scale)
    scores = ctx.emit("multiply", [scores, ctx.operand(scale, dtype)])
    if is_causal:
        rows, cols = _static_dims(ctx, ctx.g.shape(scores)[-2:], "is_causal")
        causal = ctx.add_const(np.tril(np.ones((rows, cols), bool)), "causal")
        scores = ctx.emit("where", [causal, scores, ctx.operand(-math.inf, dtype)])
    if attn_mask is not None:
        if ctx.g.dtype(ctx.value(attn_mask)) == "bool":
            scores = ctx.emit("where", [ctx.value(attn_mask), scores, ctx.operand(-math.inf, dtype)])
        else:
            scores = ctx.emit("add", [scores, ctx.operand(attn_mask, dtype)])
    return ctx.emit("matmul", [ctx.emit("softmax", [scores], axis=-1), ctx.value(v)])


# ---------------- comparisons, logic, where ----------------


def _example(ctx, arg):
    """A stand-in for ``arg`` in torch's type promotion: a tensor of its dtype and rank, or the number."""
    val = arg.meta.get("val") if isinstance(arg, ctx.torch.fx.Node) else arg
    if isinstance(val, ctx.torch.Tensor):
        return ctx.torch.empty((1,) * val.dim(), dtype=val.dtype)
    return val


def _promoted(ctx, *args):
    return ctx.dtype_name(ctx.torch.result_type(*[_example(ctx, a) for a in args[:2]]))


def _compare(op):
    def convert(ctx, a, b):
        dtype = _promoted(ctx, a, b)  # an int tensor against 0.5 compares as float
        return ctx.emit(op, [ctx.operand(a, dtype), ctx.operand(b, dtype)])
    return convert


def _as_bool(ctx, arg):
    """``arg`` as a bool value: torch's logical ops read non-zero as true."""
    return ctx.operand(arg, "bool")


def _logical(op):
    def convert(ctx, *args):
        return ctx.emit(op, [_as_bool(ctx, a) for a in args])
    return convert


def _bitwise(op):
    """bitwise and / or / xor / not of bool tensors are the logical ops (``mask_a & mask_b``)."""
    def convert(ctx, *args):
        if any(ctx.g.dtype(ctx.value(a)) != "bool" for a in args if isinstance(a, ctx.torch.fx.Node)):
            raise NotConvertible("bitwise operations on integers (only bool tensors are supported)")
        return ctx.emit(op, [_as_bool(ctx, a) for a in args])
    return convert


def _where(ctx, cond, x=None, y=None):
    if x is None:
        raise NotConvertible("where(cond) with one argument (the indices of the true elements)")
    dtype = ctx.out_dtype()
    return ctx.emit("where", [_as_bool(ctx, cond), ctx.operand(x, dtype), ctx.operand(y, dtype)])


def _masked_fill(ctx, x, mask, value):
    xv = ctx.value(x)
    return ctx.emit("where", [_as_bool(ctx, mask), ctx.operand(value, ctx.g.dtype(xv)), xv])


# ---------------- constants of a shape: new_ones, zeros_like ... ----------------


def _static_dims(ctx, dims, what):
    if any(not isinstance(d, int) for d in dims):
        raise NotConvertible(f"{what} of the dynamic shape {tuple(dims)}: bind its dims when exporting")
    return tuple(dims)


def _filled(ctx, shape, value):
    """A constant tensor (folded further by later ops) of the current node's dtype."""
    dtype = getattr(ctx.torch, ctx.out_dtype())
    return ctx.torch.full(_static_dims(ctx, shape, "a constant"), value, dtype=dtype)


def _new_filled(value):
    def convert(ctx, x, size, *args, **kwargs):
        return _filled(ctx, ctx.dims(size), value)
    return convert


def _like_filled(value):
    def convert(ctx, x, *args, **kwargs):
        return _filled(ctx, ctx.shape(x), value)
    return convert


def _new_full(ctx, x, size, fill_value, *args, **kwargs):
    return _filled(ctx, ctx.dims(size), fill_value)


def _full_like(ctx, x, fill_value, *args, **kwargs):
    return _filled(ctx, ctx.shape(x), fill_value)


def _arange(ctx, *args, **kwargs):
    raise NotConvertible("arange with a bound computed at run time or a dynamic dim (a constant arange is "
                         "computed at import)")


# ---------------- indexing, pieces ----------------


def _index(ctx, x, indices):
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) != 1:
        raise NotConvertible(f"indexing with {len(given)} index tensors (only one is supported)")
    axis, index = given[0]
    if ctx.g.dtype(ctx.value(index)) == "bool":
        raise NotConvertible("indexing with a bool mask (its result has a data-dependent shape)")
    return ctx.emit("take", [ctx.value(x), ctx.value(index)], axis=axis)


def _gather(ctx, x, dim, index, sparse_grad=False):
    return ctx.emit("gather_elements", [ctx.value(x), ctx.value(index)], axis=int(dim))


def _pieces(ctx, x, dim, sizes=None, parts=None, what="split"):
    shape = ctx.shape(x)
    dim = _axis(int(dim), len(shape))
    sizes = split_sizes(shape[dim], sizes, parts, what)
    return slices_of(ctx, ctx.value(x), dim, sizes)


def _split(ctx, x, split_size, dim=0):
    if isinstance(split_size, (list, tuple)):
        return _pieces(ctx, x, dim, [int(s) for s in split_size])
    extent = ctx.shape(x)[_axis(int(dim), _rank(ctx, x))]
    if not isinstance(extent, int):
        raise NotConvertible(f"split of a dynamic dim {extent}: bind it when exporting")
    step = int(split_size)
    return _pieces(ctx, x, dim, [min(step, extent - k) for k in range(0, extent, step)])


def _chunk(ctx, x, chunks, dim=0):
    return _pieces(ctx, x, dim, parts=int(chunks), what="chunk")


def _unbind(ctx, x, dim=0):
    shape = list(ctx.shape(x))
    dim = _axis(int(dim), len(shape))
    rows = _pieces(ctx, x, dim, parts=_static_int(ctx, shape[dim], "unbind of"), what="unbind")
    return [reshape(ctx.g, r, shape[:dim] + shape[dim + 1:], ctx.fresh_name("reshape")) for r in rows]


def _unflatten(ctx, x, dim, sizes):
    shape = list(ctx.shape(x))
    dim = _axis(int(dim), len(shape))
    return reshape(ctx.g, ctx.value(x), shape[:dim] + ctx.dims(sizes) + shape[dim + 1:], ctx.fresh_name("reshape"))


# ---------------- conv1d, group_norm, cumsum, activations ----------------


def _unit_height(ctx, arg, hint):
    """A 3-D tensor (A, B, L) as (A, B, 1, L); a constant one is reshaped in numpy."""
    const = ctx.const(arg)
    if const is not None:
        return ctx.add_const(const[:, :, None, :], hint)
    a, b, length = ctx.shape(arg)
    return reshape(ctx.g, ctx.value(arg), [a, b, 1, length], ctx.fresh_name("reshape"))


def _conv1d(ctx, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 1-D convolution as a 2-D one over a unit height."""
    (stride,), (dilation,) = _pair(stride, 1), _pair(dilation, 1)
    if isinstance(padding, str):
        total = 0 if padding == "valid" else dilation * (ctx.shape(weight)[2] - 1)
        begin, end = total // 2, total - total // 2
    else:
        (begin,) = _pair(padding, 1)
        end = begin
    args = [_unit_height(ctx, x, "x2d"), _unit_height(ctx, weight, "weight2d")]
    args += [ctx.value(bias)] if bias is not None else []
    out = ctx.emit("conv2d", args, strides=(1, stride), pads=(0, begin, 0, end), dilations=(1, dilation),
                   groups=int(groups))
    n, c, _, length = ctx.g.shape(out)
    return reshape(ctx.g, out, [n, c, length], ctx.fresh_name("reshape"))


def _group_norm(ctx, x, num_groups, weight=None, bias=None, eps=1e-5, *unused):
    xv = ctx.value(x)
    channels, dtype = ctx.shape(x)[1], ctx.g.dtype(xv)
    gamma = ctx.value(weight) if weight is not None else ctx.add_const(np.ones(channels, dtype), "gamma")
    beta = ctx.value(bias) if bias is not None else ctx.add_const(np.zeros(channels, dtype), "beta")
    return ctx.emit("group_norm", [xv, gamma, beta], num_groups=int(num_groups), epsilon=float(eps))


def _instance_norm(ctx, x, weight, bias, mean, var, use_input_stats, momentum, eps, *unused):
    """Statistics of each sample and channel (group_norm with a group per channel), or the running ones."""
    if not use_input_stats:
        return _batch_norm(ctx, x, weight, bias, mean, var, False, momentum, eps)
    return _group_norm(ctx, x, _static_int(ctx, ctx.shape(x)[1], "instance_norm over channels"), weight, bias, eps)


def _native_group_norm(ctx, x, weight, bias, n, c, hw, groups, eps):
    return _group_norm(ctx, x, groups, weight, bias, eps)


def _cumsum(ctx, x, dim, dtype=None):
    return ctx.emit("cumsum", [ctx.operand(x, ctx.out_dtype())], axis=int(dim))  # int32 sums in int64


def _hardsigmoid(ctx, x):
    return ctx.emit("hard_sigmoid", [ctx.value(x)], alpha=1.0 / 6.0, beta=0.5)


ATEN = {
    "conv2d": _conv2d, "convolution": _convolution, "linear": _linear, "addmm": _addmm,
    "mm": _matmul, "bmm": _matmul, "matmul": _matmul,
    "add": _binary("add"), "sub": _binary("subtract"), "rsub": _rsub, "mul": _binary("multiply"),
    "div": _binary("divide"),
    "pow": _binary("power"), "maximum": _binary("maximum"), "minimum": _binary("minimum"),
    "rsqrt": _rsqrt, "gelu": _gelu, "hardtanh": _hardtanh, "clamp": _clip,
    "relu6": lambda ctx, x, *a: _clip(ctx, x, 0.0, 6.0),
    "softmax": _softmax, "_softmax": _softmax, "layer_norm": _layer_norm,
    "native_layer_norm": lambda ctx, x, shape, w, b, eps: _layer_norm(ctx, x, shape, w, b, eps),
    "batch_norm": _batch_norm, "_native_batch_norm_legit_no_training": _bn_no_training,
    "max_pool2d": _max_pool2d, "max_pool2d_with_indices": _max_pool2d, "avg_pool2d": _avg_pool2d,
    "adaptive_avg_pool2d": _adaptive_avg_pool2d, "mean": _reduce("reduce_mean"), "sum": _reduce("reduce_sum"),
    "amax": _reduce("reduce_max"),
    "view": _view, "reshape": _view, "_unsafe_view": _view, "flatten": _flatten, "permute": _permute,
    "transpose": _transpose, "t": _t, "cat": _cat, "concat": _cat, "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    "expand": _expand, "clone": _identity, "contiguous": _identity, "alias": _identity, "detach": _identity,
    "lift_fresh_copy": _identity, "dropout": _dropout, "feature_dropout": _dropout, "_to_copy": _to_copy,
    "to": _to_copy, "scaled_dot_product_attention": _sdpa, "slice": _slice, "select": _select,
    "index_select": _index_select, "embedding": _embedding, "broadcast_to": _expand,
    "eq": _compare("equal"), "ne": _compare("not_equal"), "gt": _compare("greater"),
    "ge": _compare("greater_equal"), "lt": _compare("less"), "le": _compare("less_equal"),
    "logical_and": _logical("logical_and"), "logical_or": _logical("logical_or"),
    "logical_xor": _logical("logical_xor"), "logical_not": _logical("logical_not"),
    "bitwise_and": _bitwise("logical_and"), "bitwise_or": _bitwise("logical_or"),
    "bitwise_xor": _bitwise("logical_xor"), "bitwise_not": _bitwise("logical_not"),
    "__and__": _bitwise("logical_and"), "__or__": _bitwise("logical_or"), "__xor__": _bitwise("logical_xor"),
    "where": _where, "masked_fill": _masked_fill,
    "new_ones": _new_filled(1), "new_zeros": _new_filled(0), "new_full": _new_full,
    "ones_like": _like_filled(1), "zeros_like": _like_filled(0), "full_like": _full_like, "arange": _arange,
    "index": _index, "gather": _gather, "split": _split, "split_with_sizes": _split, "chunk": _chunk,
    "unbind": _unbind, "unflatten": _unflatten, "conv1d": _conv1d, "group_norm": _group_norm,
    "native_group_norm": _native_group_norm, "instance_norm": _instance_norm, "cumsum": _cumsum,
    "hardsigmoid": _hardsigmoid, **MORE_ATEN,
}


def _as_is(op):
    """The converter of an ATen op that is graph op ``op``: tensor arguments only."""
    def convert(ctx, *args, **kwargs):
        if kwargs:
            raise NotConvertible(f"argument(s) {', '.join(sorted(kwargs))}: graph op '{op}' takes none")
        return ctx.emit(op, [ctx.value(a) for a in args])
    return convert


def converter(name):
    """The converter of ATen op ``name``: its entry of ATEN, else the graph op it is (registry.by_aten), else
    None."""
    convert = ATEN.get(name)
    if convert is None:
        op_def = registry.by_aten(name)
        convert = None if op_def is None else _as_is(op_def.name)
    return convert
