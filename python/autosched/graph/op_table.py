"""The op table of the graph IR: for every op, its inputs, its attrs (defaults, checks, normal form) and the
inference of its output shape and dtype.

Semantics follow ONNX / PyTorch; layout NCHW, weights OIHW. Attrs are stored normalised: tuples of ints,
floats, bools, negative axes made non-negative. Dims are ints, strs (named dynamic dims) or None (unknown):
inference keeps a str where the op passes the dim through (elementwise, broadcasting with the same name, the
batch dim of a convolution) and gives None where it cannot compute the dim; a value whose rank is unknown
has shape None, and so do the outputs computed from it.

The numpy reference of each op is `reference(op)` (graph/reference.py), its te builder `te_builder(op)`
(graph/te_ops.py): `te_builder(op)(node, *te_tensors) -> te.Tensor`.
"""
import numbers

import numpy as np

from .errors import OpError
from .reference import REFERENCES
from .te_ops import TE_BUILDERS

__all__ = ["OpError", "OPS", "infer", "reference", "te_builder", "FLOAT_ONLY"]


_REQUIRED = object()

# ---------------- attr converters (rank-independent) ----------------


def _int(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OpError(f"{what} must be an int, got {value!r}")
    return int(value)


def _ints(value, what, n=None, low=None):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and n is not None:
        value = (value,) * n
    try:
        items = tuple(value)
    except TypeError:
        raise OpError(f"{what} must be a tuple of ints, got {value!r}") from None
    out = tuple(_int(v, what) for v in items)
    if n is not None and len(out) != n:
        raise OpError(f"{what} must have {n} values, got {value!r}")
    if low is not None and any(v < low for v in out):
        raise OpError(f"{what} must be >= {low}, got {value!r}")
    return out


def _pair(what, low=1):
    return lambda v: _ints(v, what, 2, low)


def _pads(value):
    """int, (h, w) or (top, left, bottom, right) -> (top, left, bottom, right)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,) * 4
    items = _ints(value, "pads", None, 0)
    if len(items) == 2:
        items = (items[0], items[1], items[0], items[1])
    if len(items) != 4:
        raise OpError(f"pads must be (top, left, bottom, right), got {value!r}")
    return items


def _float_or_none(what):
    def convert(value):
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise OpError(f"{what} must be a float or None, got {value!r}")
        return float(value)
    return convert


def _positive_float(what):
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
            raise OpError(f"{what} must be a positive float, got {value!r}")
        return float(value)
    return convert


def _bool(what):
    def convert(value):
        if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
            raise OpError(f"{what} must be a bool, got {value!r}")
        return bool(value)
    return convert


def _choice(what, choices):
    def convert(value):
        if value not in choices:
            raise OpError(f"{what} must be one of {choices}, got {value!r}")
        return value
    return convert


def _dtype(value):
    try:
        return np.dtype(value).name
    except TypeError:
        raise OpError(f"dtype: not a dtype: {value!r}") from None


def _any_ints(what):
    return lambda v: None if v is None else _ints(v, what)


def _str(value):
    return str(value)


# ---------------- dims ----------------


def _known(d):
    return isinstance(d, int)


def _fmt(shape):
    return str(tuple(shape))


def _same_dim(a, b):
    """Could dims a and b be equal? (unknown or dynamic dims could)."""
    return not (_known(a) and _known(b)) or a == b


def _unify(a, b):
    """The dim two dims that must be equal have."""
    if _known(a):
        return a
    if _known(b):
        return b
    return a if a == b else None


def broadcast_shapes(shapes, op="broadcast"):
    """numpy broadcasting of shapes with dynamic dims."""
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    out = []
    for dims in zip(*padded):
        result = 1
        for d in dims:
            if d == 1:
                continue
            if result == 1:
                result = d
            elif _known(result) and _known(d):
                if result != d:
                    raise OpError(f"shapes {' and '.join(_fmt(s) for s in shapes)} cannot be broadcast together")
            elif _known(d):
                result = d  # the other is dynamic: it must be d (or 1)
            elif not _known(result) and result != d:
                result = None
        out.append(result)
    return tuple(out)


def _prod(dims):
    total = 1
    for d in dims:
        if not _known(d):
            return None
        total *= d
    return total


def _axis(axis, ndim, what="axis"):
    axis = _int(axis, what)
    if not -ndim <= axis < ndim:
        raise OpError(f"{what} {axis} is out of range for rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _check_rank(shape, rank, what, at_least=False):
    if (len(shape) < rank) if at_least else (len(shape) != rank):
        raise OpError(f"{what} must have rank {'>= ' if at_least else ''}{rank}, got shape {_fmt(shape)}")


def window_out(size, kernel, stride, dilation, lo, hi, ceil_mode, what):
    """Output extent of a sliding window (torch semantics); None when size or kernel is not known. Refuses a
    window that reads only padding."""
    if not (_known(size) and _known(kernel)):
        return None
    extent = (kernel - 1) * dilation + 1
    span = size + lo + hi - extent
    if span < 0:
        raise OpError(f"{what}: window of extent {extent} does not fit the padded input of size {size + lo + hi}")
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + lo:
        out -= 1  # the last window would start in the trailing padding
    return out


def _check_windows_see_input(size, out, kernel, stride, dilation, lo, what):
    for o in range(out):
        if not any(0 <= o * stride - lo + r * dilation < size for r in range(kernel)):
            raise OpError(f"{what}: output position {o} reads only padding (size {size}, kernel {kernel}, "
                          f"stride {stride}, dilation {dilation}, leading pad {lo})")


# ---------------- inference per op ----------------

FLOAT_ONLY = {"sigmoid", "tanh", "exp", "log", "sqrt", "erf", "gelu", "softmax", "layer_norm", "batch_norm",
              "avg_pool2d", "global_avg_pool2d", "reduce_mean", "power", "divide"}


def _same_dtypes(dtypes, what="inputs"):
    known = [d for d in dtypes if d is not None]
    if len(set(known)) > 1:
        raise OpError(f"{what} have different dtypes {tuple(dtypes)}; cast one of them")
    return known[0] if known else None


def _infer_conv2d(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    _check_rank(data, 4, "data (NCHW)")
    _check_rank(weight, 4, "weight (OIHW)")
    n, c, h, w = data
    o, cg, kh, kw = weight
    groups = attrs["groups"]
    if _known(o) and o % groups:
        raise OpError(f"groups={groups} does not divide the {o} output channels of weight {_fmt(weight)}")
    if _known(c) and c % groups:
        raise OpError(f"groups={groups} does not divide the {c} input channels of data {_fmt(data)}")
    if _known(c) and _known(cg) and c != cg * groups:
        raise OpError(f"channel mismatch: data {_fmt(data)} has {c} channels, weight {_fmt(weight)} expects "
                      f"{cg} per group x {groups} groups = {cg * groups}")
    if len(shapes) == 3:
        _check_rank(shapes[2], 1, "bias")
        if not _same_dim(shapes[2][0], o):
            raise OpError(f"bias {_fmt(shapes[2])} does not match the {o} output channels")
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oh = window_out(h, kh, sh, dh, top, bottom, False, "height")
    ow = window_out(w, kw, sw, dw, left, right, False, "width")
    return (n, o, oh, ow), _same_dtypes(dtypes)


def _infer_dense(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    _check_rank(data, 1, "data", at_least=True)
    _check_rank(weight, 2, "weight (N, K)")
    if not _same_dim(data[-1], weight[1]):
        raise OpError(f"data {_fmt(data)} has {data[-1]} features, weight {_fmt(weight)} expects {weight[1]}")
    if len(shapes) == 3:
        _check_rank(shapes[2], 1, "bias")
        if not _same_dim(shapes[2][0], weight[0]):
            raise OpError(f"bias {_fmt(shapes[2])} does not match the {weight[0]} units of weight")
    return tuple(data[:-1]) + (weight[0],), _same_dtypes(dtypes)


def _infer_matmul(attrs, shapes, dtypes):
    a, b = shapes
    _check_rank(a, 1, "a", at_least=True)
    _check_rank(b, 1, "b", at_least=True)
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if not _same_dim(a2[-1], b2[-2]):
        raise OpError(f"inner dimensions differ: a {_fmt(a)} and b {_fmt(b)}")
    batch = broadcast_shapes([a2[:-2], b2[:-2]]) if len(a2) > 2 or len(b2) > 2 else ()
    out = batch + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())
    return out, _same_dtypes(dtypes)


def _infer_broadcast(attrs, shapes, dtypes):
    return broadcast_shapes(shapes), _same_dtypes(dtypes)


def _infer_unary(attrs, shapes, dtypes):
    return tuple(shapes[0]), dtypes[0]


def _infer_clip(attrs, shapes, dtypes):
    lo, hi = attrs["min"], attrs["max"]
    if lo is not None and hi is not None and lo > hi:
        raise OpError(f"min {lo} is greater than max {hi}")
    return tuple(shapes[0]), dtypes[0]


def _infer_softmax(attrs, shapes, dtypes):
    _check_rank(shapes[0], 1, "x", at_least=True)
    attrs["axis"] = _axis(attrs["axis"], len(shapes[0]))
    return tuple(shapes[0]), dtypes[0]


def _infer_layer_norm(attrs, shapes, dtypes):
    x = shapes[0]
    _check_rank(x, 1, "x", at_least=True)
    attrs["axis"] = axis = _axis(attrs["axis"], len(x))
    norm = tuple(x[axis:])
    for what, s in (("gamma", shapes[1]), ("beta", shapes[2])):
        if len(s) != len(norm) or not all(_same_dim(a, b) for a, b in zip(s, norm)):
            raise OpError(f"{what} has shape {_fmt(s)}, expected {_fmt(norm)} (axes {axis}.. of x {_fmt(x)})")
    return tuple(x), _same_dtypes(dtypes)


def _infer_batch_norm(attrs, shapes, dtypes):
    x = shapes[0]
    _check_rank(x, 2, "x", at_least=True)
    for what, s in zip(("gamma", "beta", "mean", "var"), shapes[1:]):
        if len(s) != 1 or not _same_dim(s[0], x[1]):
            raise OpError(f"{what} has shape {_fmt(s)}, expected ({x[1]},) (the channels of x {_fmt(x)})")
    return tuple(x), _same_dtypes(dtypes)


def _infer_pool(attrs, shapes, dtypes):
    x = shapes[0]
    _check_rank(x, 4, "x (NCHW)")
    if attrs["strides"] is None:
        attrs["strides"] = attrs["kernel"]
    kernel, strides, dil, pads = attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["pads"]
    ceil = attrs["ceil_mode"]
    out = []
    for d, (lo, hi), what in ((0, (pads[0], pads[2]), "height"), (1, (pads[1], pads[3]), "width")):
        size = x[2 + d]
        o = window_out(size, kernel[d], strides[d], dil[d], lo, hi, ceil, what)
        if o is not None:
            _check_windows_see_input(size, o, kernel[d], strides[d], dil[d], lo, what)
        out.append(o)
    return (x[0], x[1], out[0], out[1]), dtypes[0]


def _infer_global_pool(attrs, shapes, dtypes):
    _check_rank(shapes[0], 4, "x (NCHW)")
    return (shapes[0][0], shapes[0][1], 1, 1), dtypes[0]


def _infer_reshape(attrs, shapes, dtypes):
    target = list(attrs["shape"])
    if target.count(-1) > 1:
        raise OpError(f"shape {tuple(target)} has more than one -1")
    if any(d == 0 for d in target):
        raise OpError(f"shape {tuple(target)} has a 0 (0 is an extent here, not 'copy the input dim')")
    if any(d < -1 for d in target):
        raise OpError(f"shape {tuple(target)} has a negative extent")
    total = _prod(shapes[0])
    known = _prod([d for d in target if d != -1])
    if total is not None:
        if -1 in target:
            if total % known:
                raise OpError(f"cannot reshape {_fmt(shapes[0])} to {tuple(target)}")
            target[target.index(-1)] = total // known
        if _prod(target) != total:
            raise OpError(f"cannot reshape {_fmt(shapes[0])} ({total} elements) to {tuple(attrs['shape'])}")
    elif -1 in target:
        target[target.index(-1)] = None
    return tuple(target), dtypes[0]


def _collapse(dims):
    """The product of dims; a single dynamic dim among 1s stays itself."""
    rest = [d for d in dims if d != 1]
    if len(rest) == 1:
        return rest[0]
    return _prod(dims)


def _infer_flatten(attrs, shapes, dtypes):
    x = shapes[0]
    axis = _int(attrs["axis"], "axis")
    if not -len(x) <= axis <= len(x):
        raise OpError(f"axis {axis} is out of range for rank {len(x)}")
    attrs["axis"] = axis = axis + len(x) if axis < 0 else axis
    return (_collapse(x[:axis]), _collapse(x[axis:])), dtypes[0]


def _infer_transpose(attrs, shapes, dtypes):
    x = shapes[0]
    perm = tuple(reversed(range(len(x)))) if attrs["perm"] is None else attrs["perm"]
    perm = tuple(_axis(p, len(x), "perm entry") for p in perm)
    if sorted(perm) != list(range(len(x))):
        raise OpError(f"perm {attrs['perm']} is not a permutation of {len(x)} dims")
    attrs["perm"] = perm
    return tuple(x[p] for p in perm), dtypes[0]


def _infer_concat(attrs, shapes, dtypes):
    first = shapes[0]
    axis = attrs["axis"] = _axis(attrs["axis"], len(first))
    out = list(first)
    for s in shapes[1:]:
        if len(s) != len(first):
            raise OpError(f"inputs have different ranks: {_fmt(first)} and {_fmt(s)}")
        for d in range(len(s)):
            if d == axis:
                continue
            if not _same_dim(out[d], s[d]):
                raise OpError(f"shapes {_fmt(first)} and {_fmt(s)} differ outside axis {axis}")
            out[d] = _unify(out[d], s[d])
    out[axis] = _sum_dims([s[axis] for s in shapes])
    return tuple(out), _same_dtypes(dtypes)


def _sum_dims(dims):
    return sum(dims) if all(_known(d) for d in dims) else None


def _infer_reduce(attrs, shapes, dtypes):
    x = shapes[0]
    axes = tuple(sorted({_axis(a, len(x), "axes entry") for a in attrs["axes"]}))
    if not axes:
        raise OpError("axes is empty")
    if len(axes) != len(attrs["axes"]):
        raise OpError(f"axes {attrs['axes']} repeats an axis")
    attrs["axes"] = axes
    if attrs["keepdims"]:
        return tuple(1 if d in axes else s for d, s in enumerate(x)), dtypes[0]
    return tuple(s for d, s in enumerate(x) if d not in axes), dtypes[0]


def _infer_cast(attrs, shapes, dtypes):
    return tuple(shapes[0]), attrs["dtype"]


# An end at or past this reads "to the end of the axis" whatever its extent (ONNX writes INT64_MAX).
_TO_THE_END = 2**31 - 1


def _slice_dim(dim, begin, end, step):
    """The extent of begin:end:step (ONNX Slice: negative begin / end count from the end, both clamp to the
    axis) of an axis of extent `dim`; a dynamic dim stays itself for 0:to-the-end:1, else None."""
    if not _known(dim):
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
    axes = tuple(_axis(a, len(x), "axes entry") for a in axes)
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


INDEX_DTYPES = ("int32", "int64")


def _infer_take(attrs, shapes, dtypes):
    data, indices = shapes
    _check_rank(data, 1, "data", at_least=True)
    attrs["axis"] = axis = _axis(attrs["axis"], len(data))
    if dtypes[1] is not None and dtypes[1] not in INDEX_DTYPES:
        raise OpError(f"indices must be int32 or int64, got {dtypes[1]}")
    return tuple(data[:axis]) + tuple(indices) + tuple(data[axis + 1:]), dtypes[0]


class OpDef:
    """An op of the table: input count, attrs (name -> (default or _REQUIRED, converter)), inference."""

    def __init__(self, name, inputs, attrs, infer_fn, out_dtype=None):
        self.name = name
        self.min_inputs, self.max_inputs = inputs if isinstance(inputs, tuple) else (inputs, inputs)
        self.attrs = attrs
        self.infer_fn = infer_fn
        self.out_dtype = out_dtype  # (attrs, input dtypes) -> dtype, when it is not the inputs' common dtype

    def __repr__(self):
        return f"OpDef({self.name!r})"


_POOL_ATTRS = {"kernel": (_REQUIRED, _pair("kernel")), "strides": (None, lambda v: None if v is None else
                                                                   _ints(v, "strides", 2, 1)),
               "pads": ((0, 0, 0, 0), _pads), "dilations": ((1, 1), _pair("dilations")),
               "ceil_mode": (False, _bool("ceil_mode"))}

OPS = {}


def _register(op_def):
    OPS[op_def.name] = op_def


_register(OpDef("conv2d", (2, 3), {"strides": ((1, 1), _pair("strides")), "pads": ((0, 0, 0, 0), _pads),
                                   "dilations": ((1, 1), _pair("dilations")),
                                   "groups": (1, lambda v: _ints([v], "groups", 1, 1)[0])}, _infer_conv2d))
_register(OpDef("dense", (2, 3), {}, _infer_dense))
_register(OpDef("matmul", 2, {}, _infer_matmul))
for _name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum"):
    _register(OpDef(_name, 2, {}, _infer_broadcast))
for _name in ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "erf", "negative", "abs"):
    _register(OpDef(_name, 1, {}, _infer_unary))
_register(OpDef("gelu", 1, {"approximate": ("none", _choice("approximate", ("none", "tanh")))}, _infer_unary))
_register(OpDef("clip", 1, {"min": (None, _float_or_none("min")), "max": (None, _float_or_none("max"))},
                _infer_clip))
_register(OpDef("softmax", 1, {"axis": (-1, lambda v: _int(v, "axis"))}, _infer_softmax))
_register(OpDef("layer_norm", 3, {"axis": (-1, lambda v: _int(v, "axis")),
                                  "epsilon": (1e-5, _positive_float("epsilon"))}, _infer_layer_norm))
_register(OpDef("batch_norm", 5, {"epsilon": (1e-5, _positive_float("epsilon"))}, _infer_batch_norm))
_register(OpDef("max_pool2d", 1, dict(_POOL_ATTRS), _infer_pool))
_register(OpDef("avg_pool2d", 1, dict(_POOL_ATTRS, count_include_pad=(False, _bool("count_include_pad"))),
                _infer_pool))
_register(OpDef("global_avg_pool2d", 1, {}, _infer_global_pool))
_register(OpDef("reshape", 1, {"shape": (_REQUIRED, lambda v: _ints(v, "shape"))}, _infer_reshape))
_register(OpDef("flatten", 1, {"axis": (1, lambda v: _int(v, "axis"))}, _infer_flatten))
_register(OpDef("transpose", 1, {"perm": (None, _any_ints("perm"))}, _infer_transpose))
_register(OpDef("concat", (1, None), {"axis": (_REQUIRED, lambda v: _int(v, "axis"))}, _infer_concat))
for _name in ("reduce_mean", "reduce_sum", "reduce_max"):
    _register(OpDef(_name, 1, {"axes": (_REQUIRED, lambda v: _ints(v, "axes", 1) if isinstance(v, numbers.Integral)
                                        else _ints(v, "axes")),
                               "keepdims": (True, _bool("keepdims"))}, _infer_reduce))
_register(OpDef("cast", 1, {"dtype": (_REQUIRED, _dtype)}, _infer_cast, out_dtype=lambda a, d: a["dtype"]))
_register(OpDef("strided_slice", 1, {"begin": (_REQUIRED, lambda v: _ints(v, "begin")),
                                     "end": (_REQUIRED, lambda v: _ints(v, "end")),
                                     "strides": (None, _any_ints("strides")), "axes": (None, _any_ints("axes"))},
                _infer_strided_slice))
_register(OpDef("take", 2, {"axis": (0, lambda v: _int(v, "axis"))}, _infer_take, out_dtype=lambda a, d: d[0]))
_register(OpDef("unsupported", (0, None), {"op_type": (_REQUIRED, _str), "reason": ("", _str)}, None))


def _normalize_attrs(op_def, attrs):
    unknown = sorted(set(attrs) - set(op_def.attrs))
    if unknown:
        known = ", ".join(op_def.attrs) or "none"
        raise OpError(f"unknown attr{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (known: {known})")
    out = {}
    for key, (default, convert) in op_def.attrs.items():
        if key not in attrs:
            if default is _REQUIRED:
                raise OpError(f"attr '{key}' is required")
            out[key] = default
        else:
            out[key] = convert(attrs[key])
    return out


def infer(op, attrs, shapes, dtypes):
    """(normalised attrs, output shape, output dtype) of `op` on inputs of these shapes and dtypes; OpError
    says what is wrong."""
    if not isinstance(op, str) or op not in OPS:
        raise OpError(f"unknown op {op!r} (known: {', '.join(sorted(OPS))})")
    op_def = OPS[op]
    n = len(shapes)
    if n < op_def.min_inputs or (op_def.max_inputs is not None and n > op_def.max_inputs):
        if op_def.max_inputs is None:
            expected = f"at least {op_def.min_inputs}"
        elif op_def.min_inputs == op_def.max_inputs:
            expected = str(op_def.min_inputs)
        else:
            expected = f"{op_def.min_inputs} to {op_def.max_inputs}"
        raise OpError(f"takes {expected} inputs, got {n}")
    attrs = _normalize_attrs(op_def, attrs)
    if op in FLOAT_ONLY:
        for dt in dtypes:
            if dt is not None and not dt.startswith("float"):
                raise OpError(f"needs floating-point inputs, got {dt}")
    if any(s is None for s in shapes):  # an input of unknown rank: only the dtype can be inferred
        dtype = op_def.out_dtype(attrs, dtypes) if op_def.out_dtype is not None else _same_dtypes(dtypes)
        return attrs, None, dtype
    shape, dtype = op_def.infer_fn(attrs, [tuple(s) for s in shapes], list(dtypes))
    return attrs, tuple(shape), dtype


# ---------------- the numpy references and te builders (registered by their modules) ----------------


def reference(op):
    """The numpy reference of `op`: f(node, *arrays) -> array."""
    if op not in REFERENCES:
        raise OpError(f"op '{op}' has no numpy reference")
    return REFERENCES[op]


def te_builder(op):
    """The te builder of `op`: f(node, *te_tensors) -> te.Tensor, built on autosched.ops."""
    if op not in TE_BUILDERS:
        raise OpError(f"op '{op}' has no te builder" + (" (it is not compilable)" if op == "unsupported" else ""))
    return TE_BUILDERS[op]
