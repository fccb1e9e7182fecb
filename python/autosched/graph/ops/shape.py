"""Graph ops that move data without arithmetic: reshape, flatten, transpose, concat, strided_slice (ONNX
Slice with positive steps), take (ONNX Gather, out-of-range indices clamped), expand (numpy broadcasting to
a target shape) and gather_elements (ONNX GatherElements, indices read as take reads them). All are injective: fusion
joins them to their producer's group. Each OpDef below is everything about its op. In the channel-blocked
layout only concat runs blocked (along channels, through its layout converter); the others run in NCHW."""
import numpy as np

from ... import ops
from ...core import te
from ...ops.elemwise import broadcast_load
from ..errors import OpError
from ..opdef import OpDef
from .common import (REQUIRED, any_ints, broadcast_shapes, check_rank, fmt, int_attr, ints, is_known, norm_axis,
                     prod, same_dim, same_dtypes, unify)

__all__ = ["DEFS", "INDEX_DTYPES"]

DEFS = []

# ---------------- reshape, flatten ----------------


def _infer_reshape(attrs, shapes, dtypes):
    target = list(attrs["shape"])
    if target.count(-1) > 1:
        raise OpError(f"shape {tuple(target)} has more than one -1")
    if any(d == 0 for d in target):
        raise OpError(f"shape {tuple(target)} has a 0 (0 is an extent here, not 'copy the input dim')")
    if any(d < -1 for d in target):
        raise OpError(f"shape {tuple(target)} has a negative extent")
    total = prod(shapes[0])
    given = prod([d for d in target if d != -1])
    if total is not None:
        if -1 in target:
            if total % given:
                raise OpError(f"cannot reshape {fmt(shapes[0])} to {tuple(target)}")
            target[target.index(-1)] = total // given
        if prod(target) != total:
            raise OpError(f"cannot reshape {fmt(shapes[0])} ({total} elements) to {tuple(attrs['shape'])}")
    elif -1 in target:
        target[target.index(-1)] = None
    return tuple(target), dtypes[0]


def _reshape_te(node, x):
    return ops.reshape(x, tuple(node.shape), name=node.name)


def _reshape_onnx(w, node):
    shape = w.const(node.name + "_shape", np.asarray(node.attrs["shape"], np.int64))
    return w.node("Reshape", [node.inputs[0], shape], node.name)


DEFS.append(OpDef("reshape", 1, _infer_reshape, {"shape": (REQUIRED, lambda v: ints(v, "shape"))},
                  fusion="injective", layout="nchw", reference=lambda node, x: x.reshape(node.shape),
                  te=_reshape_te, onnx=_reshape_onnx,
                  torch=lambda torch, node, x: torch.reshape(x, node.shape)))


def _collapse(dims):
    """The product of dims; a single dynamic dim among 1s stays itself."""
    rest = [d for d in dims if d != 1]
    if len(rest) == 1:
        return rest[0]
    return prod(dims)


def _infer_flatten(attrs, shapes, dtypes):
    x = shapes[0]
    axis = int_attr(attrs["axis"], "axis")
    if not -len(x) <= axis <= len(x):
        raise OpError(f"axis {axis} is out of range for rank {len(x)}")
    attrs["axis"] = axis = axis + len(x) if axis < 0 else axis
    return (_collapse(x[:axis]), _collapse(x[axis:])), dtypes[0]


DEFS.append(OpDef("flatten", 1, _infer_flatten, {"axis": (1, lambda v: int_attr(v, "axis"))},
                  fusion="injective", layout="nchw", reference=lambda node, x: x.reshape(node.shape), te=_reshape_te,
                  onnx=lambda w, node: w.node("Flatten", list(node.inputs), node.name, axis=node.attrs["axis"]),
                  torch=lambda torch, node, x: torch.reshape(x, node.shape)))

# ---------------- transpose ----------------


def _infer_transpose(attrs, shapes, dtypes):
    x = shapes[0]
    perm = tuple(reversed(range(len(x)))) if attrs["perm"] is None else attrs["perm"]
    perm = tuple(norm_axis(p, len(x), "perm entry") for p in perm)
    if sorted(perm) != list(range(len(x))):
        raise OpError(f"perm {attrs['perm']} is not a permutation of {len(x)} dims")
    attrs["perm"] = perm
    return tuple(x[p] for p in perm), dtypes[0]


DEFS.append(OpDef("transpose", 1, _infer_transpose, {"perm": (None, any_ints("perm"))},
                  fusion="injective", layout="nchw", reference=lambda node, x: x.transpose(node.attrs["perm"]),
                  te=lambda node, x: ops.transpose(x, node.attrs["perm"], name=node.name),
                  onnx=lambda w, node: w.node("Transpose", list(node.inputs), node.name,
                                              perm=list(node.attrs["perm"])),
                  torch=lambda torch, node, x: x.permute(*node.attrs["perm"])))

# ---------------- concat ----------------


def _sum_dims(dims):
    return sum(dims) if all(is_known(d) for d in dims) else None


def _infer_concat(attrs, shapes, dtypes):
    first = shapes[0]
    axis = attrs["axis"] = norm_axis(attrs["axis"], len(first))
    out = list(first)
    for s in shapes[1:]:
        if len(s) != len(first):
            raise OpError(f"inputs have different ranks: {fmt(first)} and {fmt(s)}")
        for d in range(len(s)):
            if d == axis:
                continue
            if not same_dim(out[d], s[d]):
                raise OpError(f"shapes {fmt(first)} and {fmt(s)} differ outside axis {axis}")
            out[d] = unify(out[d], s[d])
    out[axis] = _sum_dims([s[axis] for s in shapes])
    return tuple(out), same_dtypes(dtypes)


def _concat_to_blocked(rewriter, node):
    """concat's layout converter (graph/layout.py): a concat along the channels of NCHW values, one of them
    blocked, is blocked where only its last input has padded channels (padding inside the result would shift
    the channels after it)."""
    if node.attrs["axis"] != 1 or len(node.shape) != 4:
        return False
    if all(rewriter.layout_of(v) is None for v in node.inputs):
        return False
    layout = rewriter.layout_for(node.shape[1])
    counts = [rewriter.graph.shape(v)[1] for v in node.inputs]
    if any(c % layout.block for c in counts[:-1]):
        return False
    ins = [rewriter.get(v, rewriter.layout_for(c, layout.block)) for v, c in zip(node.inputs, counts)]
    rewriter.emit(node, "concat", ins, node.attrs, layout)
    return True


DEFS.append(OpDef("concat", (1, None), _infer_concat, {"axis": (REQUIRED, lambda v: int_attr(v, "axis"))},
                  fusion="injective", layout=_concat_to_blocked,
                  reference=lambda node, *xs: np.concatenate(xs, axis=node.attrs["axis"]),
                  te=lambda node, *xs: ops.concatenate(xs, node.attrs["axis"], name=node.name),
                  onnx=lambda w, node: w.node("Concat", list(node.inputs), node.name, axis=node.attrs["axis"]),
                  torch=lambda torch, node, *xs: torch.cat(xs, node.attrs["axis"])))

# ---------------- strided_slice: ONNX Slice with steps > 0 ----------------

# An end at or past this reads "to the end of the axis" whatever its extent (ONNX writes INT64_MAX).
_TO_THE_END = 2**31 - 1


def _slice_dim(dim, begin, end, step):
    """The extent of begin:end:step (ONNX Slice: negative begin / end count from the end, both clamp to the
    axis) of an axis of extent `dim`; a dynamic dim stays itself for 0:to-the-end:1, else None."""
    if not is_known(dim):
        return dim if (begin, step) == (0, 1) and end >= _TO_THE_END else None
    length = len(range(*slice(begin, end, step).indices(dim)))
    if length == 0:
        raise OpError(f"slice {begin}:{end}:{step} of an axis of extent {dim} is empty")
    return length


def _infer_strided_slice(attrs, shapes, dtypes):
    x = shapes[0]
    begin, end = attrs["begin"], attrs["end"]
    strides = (1,) * len(begin) if attrs["strides"] is None else attrs["strides"]
    axes = tuple(range(len(begin))) if attrs["axes"] is None else attrs["axes"]
    if not len(begin) == len(end) == len(strides) == len(axes):
        raise OpError(f"begin {begin}, end {end}, strides {strides} and axes {axes} must have one entry per "
                      f"sliced axis")
    axes = tuple(norm_axis(a, len(x), "axes entry") for a in axes)
    if len(set(axes)) != len(axes):
        raise OpError(f"axes {attrs['axes']} repeats an axis")
    for s in strides:
        if s <= 0:
            raise OpError(f"step {s}: only positive steps are supported" if s else "a step is 0")
    attrs["strides"], attrs["axes"] = strides, axes
    out = list(x)
    for b, e, s, a in zip(begin, end, strides, axes):
        try:
            out[a] = _slice_dim(x[a], b, e, s)
        except OpError as err:
            raise OpError(f"axis {a}: {err}") from None
    return tuple(out), dtypes[0]


def _slices(node, ndim):
    """The Python index of the slice (Python slicing clamps as ONNX Slice does for positive steps)."""
    index = [slice(None)] * ndim
    for b, e, s, axis in zip(node.attrs["begin"], node.attrs["end"], node.attrs["strides"], node.attrs["axes"]):
        index[axis] = slice(b, e, s)
    return tuple(index)


def _strided_slice_te(node, x):
    a = node.attrs
    return ops.strided_slice(x, a["begin"], a["end"], a["strides"], a["axes"], name=node.name)


def _strided_slice_onnx(w, node):
    a, out = node.attrs, node.name
    params = [w.const(f"{out}_{k}", np.asarray(a[key], np.int64))
              for k, key in (("starts", "begin"), ("ends", "end"), ("axes", "axes"), ("steps", "strides"))]
    return w.node("Slice", [node.inputs[0]] + params, out)


DEFS.append(OpDef("strided_slice", 1, _infer_strided_slice,
                  {"begin": (REQUIRED, lambda v: ints(v, "begin")), "end": (REQUIRED, lambda v: ints(v, "end")),
                   "strides": (None, any_ints("strides")), "axes": (None, any_ints("axes"))},
                  fusion="injective", layout="nchw", reference=lambda node, x: x[_slices(node, x.ndim)],
                  te=_strided_slice_te,
                  onnx=_strided_slice_onnx, torch=lambda torch, node, x: x[_slices(node, x.ndim)]))

# ---------------- take: ONNX Gather; a negative index counts from the end, one still out of range is clamped ----

INDEX_DTYPES = ("int32", "int64")


def _infer_take(attrs, shapes, dtypes):
    data, indices = shapes
    check_rank(data, 1, "data", at_least=True)
    attrs["axis"] = axis = norm_axis(attrs["axis"], len(data))
    if dtypes[1] is not None and dtypes[1] not in INDEX_DTYPES:
        raise OpError(f"indices must be int32 or int64, got {dtypes[1]}")
    return tuple(data[:axis]) + tuple(indices) + tuple(data[axis + 1:]), dtypes[0]


def _take_reference(node, data, indices):
    extent = data.shape[node.attrs["axis"]]
    idx = indices.astype(np.int64)
    idx = np.clip(np.where(idx < 0, idx + extent, idx), 0, extent - 1)  # out of range: clamped
    return np.take(data, idx, axis=node.attrs["axis"])


def _take_te(node, data, indices):
    # negative indices count from the end, indices still out of range are clamped (as the reference does)
    return ops.take(data, indices, node.attrs["axis"], mode="clip", from_end=True, name=node.name)


def _take_torch(torch, node, x, indices):
    axis, extent = node.attrs["axis"], x.shape[node.attrs["axis"]]
    indices = indices.long()
    flat = torch.where(indices < 0, indices + extent, indices).clamp(0, extent - 1).reshape(-1)
    return torch.index_select(x, axis, flat).reshape(node.shape)


DEFS.append(OpDef("take", 2, _infer_take, {"axis": (0, lambda v: int_attr(v, "axis"))},
                  out_dtype=lambda attrs, dtypes: dtypes[0], fusion="injective", layout="nchw",
                  reference=_take_reference, te=_take_te,
                  onnx=lambda w, node: w.node("Gather", list(node.inputs), node.name, axis=node.attrs["axis"]),
                  torch=_take_torch))

# ---------------- expand: numpy broadcasting of the input to a target shape (ONNX Expand) ----------------


def _infer_expand(attrs, shapes, dtypes):
    # ONNX Expand: the output is the broadcast of the input's shape and the target (a 1 in the target keeps the
    # input's dim; a target of lower rank is aligned to the right)
    return broadcast_shapes([shapes[0], attrs["shape"]]), dtypes[0]


def _expand_te(node, x):
    shape = tuple(node.shape)
    return te.compute(shape, lambda *i: broadcast_load(x, shape, i), name=node.name, tag="broadcast")


def _expand_onnx(w, node):
    shape = w.const(node.name + "_shape", np.asarray(node.attrs["shape"], np.int64))
    return w.node("Expand", [node.inputs[0], shape], node.name)


DEFS.append(OpDef("expand", 1, _infer_expand, {"shape": (REQUIRED, lambda v: ints(v, "shape", low=1))},
                  fusion="injective", layout="nchw",
                  reference=lambda node, x: np.broadcast_to(x, node.shape).copy(), te=_expand_te,
                  onnx=_expand_onnx, torch=lambda torch, node, x: torch.broadcast_to(x, node.shape).contiguous()))

# ---------------- gather_elements: ONNX GatherElements / torch.gather; indices as take reads them ----------------


def _infer_gather_elements(attrs, shapes, dtypes):
    data, indices = shapes
    check_rank(data, 1, "data", at_least=True)
    if len(indices) != len(data):
        raise OpError(f"indices {fmt(indices)} must have the rank of data {fmt(data)}")
    attrs["axis"] = axis = norm_axis(attrs["axis"], len(data))
    if dtypes[1] is not None and dtypes[1] not in INDEX_DTYPES:
        raise OpError(f"indices must be int32 or int64, got {dtypes[1]}")
    for d, (i, s) in enumerate(zip(indices, data)):
        if d != axis and is_known(i) and is_known(s) and i > s:
            raise OpError(f"indices {fmt(indices)} are larger than data {fmt(data)} on axis {d}")
    return tuple(indices), dtypes[0]


def _gather_elements_reference(node, data, indices):
    axis = node.attrs["axis"]
    extent = data.shape[axis]
    idx = indices.astype(np.int64)
    idx = np.clip(np.where(idx < 0, idx + extent, idx), 0, extent - 1)
    window = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    return np.take_along_axis(data[window], idx, axis=axis)


def _gather_elements_te(node, data, indices):
    axis, extent, wide = node.attrs["axis"], data.shape[node.attrs["axis"]], indices.dtype

    def fcompute(*i):
        pos = indices[i]
        pos = te.if_then_else(pos < te.const(0, wide), pos + te.const(extent, wide), pos)
        pos = te.min(te.max(pos, te.const(0, wide)), te.const(extent - 1, wide))
        if wide != "int32":
            pos = te.cast(pos, "int32")
        return data[i[:axis] + (pos,) + i[axis + 1:]]

    return te.compute(tuple(node.shape), fcompute, name=node.name, tag="injective")


def _gather_elements_torch(torch, node, x, indices):
    axis, extent = node.attrs["axis"], x.shape[node.attrs["axis"]]
    indices = indices.long()
    return torch.gather(x, axis, torch.where(indices < 0, indices + extent, indices).clamp(0, extent - 1))


DEFS.append(OpDef("gather_elements", 2, _infer_gather_elements, {"axis": (0, lambda v: int_attr(v, "axis"))},
                  out_dtype=lambda attrs, dtypes: dtypes[0], fusion="injective", layout="nchw",
                  reference=_gather_elements_reference, te=_gather_elements_te,
                  onnx=lambda w, node: w.node("GatherElements", list(node.inputs), node.name,
                                              axis=node.attrs["axis"]),
                  torch=_gather_elements_torch))
