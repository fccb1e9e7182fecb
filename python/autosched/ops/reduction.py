"""Reductions over axes (sum, prod, max, min, mean, variance) and softmax / log_softmax.

A reduction over `axis` (None: all axes, an int, or a list) keeps the reduced dimensions as size 1 when
`keepdims` is true and drops them otherwise (a full reduction then has shape ()). Outputs are tagged
"comm_reduce"; the element-wise stages that finish mean / variance / softmax are tagged "elemwise".

FLOP counts (ComputeDAG: one per arithmetic op or intrinsic call, a reduction step counts its body plus
one for the combiner; a subexpression used twice counts twice), for an input of n elements reduced in groups
of r (n / r outputs):
  sum / prod / max / min: n            mean: n + n/r            variance: 5n + 2n/r
  softmax over rows of an (M, K) tensor: 5*M*K = max (1) + exp(x - max) (2) + sum (1) + divide (1)
  log_softmax: 7*M*K = max (1) + sum of exp(x - max) (3) + x - max - log(sum) (3)
"""
from ..core import te
from ._utils import accumulation_dtype, check_float, check_tensor, const, normalize_axes, normalize_axis

_COMBINERS = {"sum": te.sum, "prod": te.prod, "max": te.max, "min": te.min}


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _input_index(out_index, reduce_vars, ndim, axes, keepdims):
    """Index into the input for an output index plus one reduce variable per reduced axis."""
    idx, out_pos, red_pos = [], 0, 0
    for d in range(ndim):
        if d in axes:
            idx.append(reduce_vars[red_pos])
            red_pos += 1
            if keepdims:
                out_pos += 1
        else:
            idx.append(out_index[out_pos])
            out_pos += 1
    return tuple(idx)


def _reduce(kind, x, axis, keepdims, name, body=None):
    """Reduce `body(input_index)` (default: x itself) with combiner `kind` over `axis`."""
    check_tensor(x, kind)
    axes = normalize_axes(axis, x.ndim, kind)
    if not axes:
        raise ValueError(f"{kind}: no axis to reduce over (tensor '{x.name}' of shape {x.shape})")
    if body is None:
        body = lambda idx: x[idx]  # noqa: E731
    shape = _reduced_shape(x.shape, axes, keepdims)
    combiner = _COMBINERS[kind]

    def fcompute(*out_index):
        rvars = [te.reduce_axis((0, x.shape[d]), name=f"k{d}") for d in axes]
        idx = _input_index(out_index, rvars, x.ndim, axes, keepdims)
        return combiner(body(idx), axis=rvars)

    return te.compute(shape, fcompute, name=name or f"{x.name}_{kind}", tag="comm_reduce")


def sum(x, axis=None, keepdims=False, name=None):  # noqa: A001 (mirrors numpy's name)
    return _reduce("sum", x, axis, keepdims, name)


def prod(x, axis=None, keepdims=False, name=None):
    return _reduce("prod", x, axis, keepdims, name)


def max(x, axis=None, keepdims=False, name=None):  # noqa: A001
    return _reduce("max", x, axis, keepdims, name)


def min(x, axis=None, keepdims=False, name=None):  # noqa: A001
    return _reduce("min", x, axis, keepdims, name)


def _group_size(x, axes):
    n = 1
    for d in axes:
        n *= x.shape[d]
    return n


def mean(x, axis=None, keepdims=False, name=None):
    """Arithmetic mean over axes (float tensors): a sum stage, then a division by the group size (16-bit floats:
    the sum in float32, the mean rounded once)."""
    check_tensor(x, "mean")
    check_float(x, "mean")
    axes = normalize_axes(axis, x.ndim, "mean")
    name = name or f"{x.name}_mean"
    acc = accumulation_dtype(x.dtype)
    total = _reduce("sum", x, axes, keepdims, f"{name}_sum", body=lambda idx: te.cast(x[idx], acc))
    inv_count = const(1.0 / _group_size(x, axes), acc)
    return te.compute(total.shape, lambda *i: te.cast(total[i] * inv_count, x.dtype), name=name, tag="elemwise")


def variance(x, axis=None, keepdims=False, unbiased=False, name=None):
    """Variance over axes: mean of squared deviations (divided by r - 1 when `unbiased`)."""
    check_tensor(x, "variance")
    check_float(x, "variance")
    axes = normalize_axes(axis, x.ndim, "variance")
    count = _group_size(x, axes) - (1 if unbiased else 0)
    if count < 1:
        raise ValueError(f"variance: unbiased variance needs at least 2 elements per group, got {count + 1}")
    name = name or f"{x.name}_variance"
    avg = mean(x, axes, keepdims=True, name=f"{name}_mean")
    total = squared_deviation_sum(x, avg, axes, keepdims, f"{name}_sum")
    inv_count = const(1.0 / count, x.dtype)
    return te.compute(total.shape, lambda *i: total[i] * inv_count, name=name, tag="elemwise")


def squared_deviation_sum(x, avg, axes, keepdims, name):
    """sum((x - avg)^2) over `axes`, where `avg` has x's rank with the reduced axes of size 1."""

    def squared_dev(idx):
        mean_idx = tuple(0 if d in axes else idx[d] for d in range(x.ndim))
        dev = x[idx] - avg[mean_idx]
        return dev * dev

    return _reduce("sum", x, axes, keepdims, name, body=squared_dev)


def _softmax_stages(x, axis, op):
    check_tensor(x, op)
    check_float(x, op)
    axis = normalize_axis(axis, x.ndim, op)
    max_elem = _reduce("max", x, [axis], True, f"T_{op}_maxelem")

    def row(idx):  # index of the max / sum element of the row holding idx
        return tuple(0 if d == axis else v for d, v in enumerate(idx))

    return axis, max_elem, row


def softmax(x, axis=-1, name="T_softmax_norm"):
    """exp(x - max) / sum(exp(x - max)) along `axis` (stable form); four stages (16-bit floats: the
    exponentials and their sum in float32, the result rounded once)."""
    axis, max_elem, row = _softmax_stages(x, axis, "softmax")
    acc = accumulation_dtype(x.dtype)
    exps = te.compute(x.shape, lambda *i: te.exp(te.cast(x[i] - max_elem[row(i)], acc)), name="T_softmax_exp",
                      tag="elemwise")
    exp_sum = _reduce("sum", exps, [axis], True, "T_softmax_expsum")
    return te.compute(x.shape, lambda *i: te.cast(exps[i] / exp_sum[row(i)], x.dtype), name=name,
                      tag="softmax_output", attrs={"axis": str(axis)})


def log_softmax(x, axis=-1, name="T_log_softmax"):
    """x - max - log(sum(exp(x - max))) along `axis`; three stages."""
    axis, max_elem, row = _softmax_stages(x, axis, "log_softmax")
    acc = accumulation_dtype(x.dtype)
    exp_sum = _reduce("sum", x, [axis], True, "T_log_softmax_expsum",
                      body=lambda idx: te.exp(te.cast(x[idx] - max_elem[row(idx)], acc)))
    return te.compute(x.shape, lambda *i: te.cast(te.cast(x[i] - max_elem[row(i)], acc) - te.log(exp_sum[row(i)]),
                                                  x.dtype),
                      name=name, tag="log_softmax_output", attrs={"axis": str(axis)})
