"""Injective operators: every output element is one input element (or a constant), no arithmetic on
values. Outputs are tagged "injective" (pad: "injective,pad"), so schedules may inline them.

Reads that could fall outside an input (pad, concatenate) are guarded with te.if_then_else, which evaluates
only the chosen branch: no out-of-bounds load ever happens.
"""
from ..core import te
from ._utils import check_tensor, const, elem_count, is_integer, normalize_axis


def _row_major_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return list(reversed(strides))


def reshape(x, newshape, name="T_reshape"):
    """numpy reshape (row-major); one entry of `newshape` may be -1."""
    check_tensor(x, "reshape")
    newshape = [newshape] if isinstance(newshape, int) else list(newshape)
    total = elem_count(x.shape)
    if newshape.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 allowed in {tuple(newshape)}")
    if any(s == 0 or s < -1 for s in newshape):
        raise ValueError(f"reshape: invalid extent in {tuple(newshape)}")
    if -1 in newshape:
        known = elem_count([s for s in newshape if s != -1])
        if total % known:
            raise ValueError(f"reshape: cannot reshape {x.shape} to {tuple(newshape)}")
        newshape[newshape.index(-1)] = total // known
    if elem_count(newshape) != total:
        raise ValueError(f"reshape: cannot reshape {x.shape} ({total} elements) to {tuple(newshape)}")
    out_strides = _row_major_strides(newshape)
    in_strides = _row_major_strides(x.shape)

    def fcompute(*i):
        flat = None
        for v, stride in zip(i, out_strides):
            term = v * stride if stride != 1 else v
            flat = term if flat is None else flat + term
        idx = []
        for d, (extent, stride) in enumerate(zip(x.shape, in_strides)):
            part = flat // stride if stride != 1 else flat
            idx.append(part % extent if d > 0 else part)
        return x[tuple(idx)]

    return te.compute(tuple(newshape), fcompute, name=name, tag="injective")


def transpose(x, axes=None, name="T_transpose"):
    """Permute dimensions: output dimension d is input dimension axes[d] (default: reversed)."""
    check_tensor(x, "transpose")
    axes = list(reversed(range(x.ndim))) if axes is None else [normalize_axis(a, x.ndim, "transpose")
                                                               for a in axes]
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {tuple(axes)} are not a permutation of {x.ndim} dimensions")
    shape = tuple(x.shape[a] for a in axes)

    def fcompute(*i):
        idx = [None] * x.ndim
        for d, a in enumerate(axes):
            idx[a] = i[d]
        return x[tuple(idx)]

    return te.compute(shape, fcompute, name=name, tag="injective")


def concatenate(tensors, axis=0, name="T_concat"):
    """Join tensors along `axis`; all other dimensions and the dtypes must match."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("concatenate: needs at least one tensor")
    for t in tensors:
        check_tensor(t, "concatenate")
    first = tensors[0]
    axis = normalize_axis(axis, first.ndim, "concatenate")
    for t in tensors[1:]:
        if t.dtype != first.dtype:
            raise TypeError(f"concatenate: dtypes differ: '{first.name}' is {first.dtype}, "
                            f"'{t.name}' is {t.dtype}")
        same = t.ndim == first.ndim and all(
            a == b for d, (a, b) in enumerate(zip(t.shape, first.shape)) if d != axis)
        if not same:
            raise ValueError(f"concatenate: shapes {first.shape} and {t.shape} differ outside axis {axis}")
    offsets = [0]
    for t in tensors:
        offsets.append(offsets[-1] + t.shape[axis])
    shape = tuple(offsets[-1] if d == axis else s for d, s in enumerate(first.shape))

    def fcompute(*i):
        def load(k):
            idx = list(i)
            idx[axis] = i[axis] - offsets[k] if offsets[k] else i[axis]
            return tensors[k][tuple(idx)]

        # Innermost first: the last tensor, then guard each earlier one by its end offset.
        result = load(len(tensors) - 1)
        for k in range(len(tensors) - 2, -1, -1):
            result = te.if_then_else(i[axis] < offsets[k + 1], load(k), result)
        return result

    return te.compute(shape, fcompute, name=name, tag="injective")


def pad(x, pad_before, pad_after=None, pad_value=0, name="PadInput"):
    """Pad every dimension d with pad_before[d] leading and pad_after[d] trailing `pad_value` elements."""
    check_tensor(x, "pad")
    pad_before = list(pad_before)
    pad_after = list(pad_before if pad_after is None else pad_after)
    if len(pad_before) != x.ndim or len(pad_after) != x.ndim:
        raise ValueError(f"pad: needs {x.ndim} pad widths for tensor '{x.name}' of shape {x.shape}, got "
                         f"{len(pad_before)} before and {len(pad_after)} after")
    if any(p < 0 for p in pad_before + pad_after):
        raise ValueError(f"pad: pad widths must be non-negative, got {pad_before} and {pad_after}")
    shape = tuple(s + lo + hi for s, lo, hi in zip(x.shape, pad_before, pad_after))
    # A Python number takes the tensor's dtype; an expression (e.g. te.min_value) is used as given.
    fill = const(pad_value, x.dtype) if isinstance(pad_value, (int, float)) else pad_value

    def fcompute(*i):
        conds, idx = [], []
        for d in range(x.ndim):
            lo, hi = pad_before[d], pad_after[d]
            if lo:
                conds.append(i[d] >= lo)
            if hi:
                conds.append(i[d] < lo + x.shape[d])
            idx.append(i[d] - lo if lo else i[d])
        value = x[tuple(idx)]
        if not conds:
            return value
        return te.if_then_else(te.all(*conds), value, fill)

    return te.compute(shape, fcompute, name=name, tag="injective,pad")


def take(a, indices, axis=None, mode="clip", from_end=False, name="T_take"):
    """Gather along `axis` (None: of the flattened tensor). Out-of-range indices are clamped ("clip") or
    wrapped ("wrap"), so no read is ever out of bounds. With from_end=True a negative index first counts from
    the end (index + extent, as numpy and ONNX Gather read it); "clip" then clamps what is still out of range.
    The index arithmetic is done in the indices' dtype (int64 stays int64), so a large index is clamped, never
    truncated."""
    check_tensor(a, "take")
    check_tensor(indices, "take", "indices")
    if not is_integer(indices.dtype):
        raise TypeError(f"take: indices '{indices.name}' must have an integer dtype, got {indices.dtype}")
    if mode not in ("clip", "wrap"):
        raise ValueError(f"take: mode must be 'clip' or 'wrap', got {mode!r}")
    if axis is None:
        a = reshape(a, (elem_count(a.shape),), name=f"{a.name}_flat")
        axis = 0
    axis = normalize_axis(axis, a.ndim, "take")
    extent = a.shape[axis]
    shape = a.shape[:axis] + indices.shape + a.shape[axis + 1:]
    wide = indices.dtype if indices.dtype in ("int32", "int64") else "int32"

    def fcompute(*i):
        pos = indices[tuple(i[axis:axis + indices.ndim])]
        if pos.dtype != wide:
            pos = te.cast(pos, wide)
        if from_end:
            pos = te.if_then_else(pos < const(0, wide), pos + const(extent, wide), pos)
        if mode == "clip":
            pos = te.min(te.max(pos, const(0, wide)), const(extent - 1, wide))
        else:
            pos = te.floormod(pos, const(extent, wide))
        if wide != "int32":
            pos = te.cast(pos, "int32")
        idx = i[:axis] + (pos,) + i[axis + indices.ndim:]
        return a[idx]

    return te.compute(shape, fcompute, name=name, tag="injective")


def strided_slice(a, begin, end, strides=None, axes=None, name="T_strided_slice"):
    """Python slicing a[begin:end:stride] per axis (negative values and strides as in Python); `axes`
    names the axes that begin/end/strides refer to (default: the leading ones)."""
    check_tensor(a, "strided_slice")
    begin, end = list(begin), list(end)
    strides = [1] * len(begin) if strides is None else list(strides)
    axes = list(range(len(begin))) if axes is None else [normalize_axis(x, a.ndim, "strided_slice")
                                                         for x in axes]
    if not len(begin) == len(end) == len(strides) == len(axes) or len(axes) > a.ndim:
        raise ValueError(f"strided_slice: begin {begin}, end {end}, strides {strides} and axes {axes} must "
                         f"have one entry per sliced axis of tensor '{a.name}' of shape {a.shape}")
    starts, steps = [0] * a.ndim, [1] * a.ndim
    shape = list(a.shape)
    for b, e, s, d in zip(begin, end, strides, axes):
        if s == 0:
            raise ValueError("strided_slice: stride must not be zero")
        start, stop, step = slice(b, e, s).indices(a.shape[d])
        length = len(range(start, stop, step))
        if length == 0:
            raise ValueError(f"strided_slice: slice {b}:{e}:{s} of axis {d} (extent {a.shape[d]}) is empty")
        starts[d], steps[d], shape[d] = start, step, length

    def fcompute(*i):
        idx = []
        for d in range(a.ndim):
            v = i[d] * steps[d] if steps[d] != 1 else i[d]
            idx.append(v + starts[d] if starts[d] else v)
        return a[tuple(idx)]

    return te.compute(tuple(shape), fcompute, name=name, tag="injective")


def expand_dims(x, axis, name="T_expand_dims"):
    """Insert a size-1 dimension at `axis` (in the output's numbering)."""
    check_tensor(x, "expand_dims")
    axis = normalize_axis(axis, x.ndim + 1, "expand_dims")
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    return te.compute(shape, lambda *i: x[i[:axis] + i[axis + 1:]], name=name, tag="injective")
