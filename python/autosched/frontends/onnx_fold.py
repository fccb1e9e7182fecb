"""Constant folding for the ONNX importer: numpy versions of the operators that compute shapes (Shape, Gather,
Unsqueeze, Slice, Concat, ConstantOfShape, arithmetic, comparisons ...), of cheap ones applied to weights
(Transpose, Reshape, Cast) and of ScatterND (an attention mask written into zeros piece by piece). A node whose inputs are all constant is folded here when its type is in FOLD; its
outputs stay numpy arrays and never enter the graph. Any other node on constants is folded by the importer
through its converter and the graph's numpy reference (onnx.py, _fold_by_reference).

Dynamic dims travel through folding as numpy object arrays holding ints and str (Shape of a value whose first
dim is "batch" is array(["batch", 3, 224, 224], dtype=object)); gathering, slicing and concatenating keep
them, arithmetic on them fails (FoldError) and the importer reports the node.
"""
import numpy as np

__all__ = ["FOLD", "FoldError", "fold"]


class FoldError(Exception):
    pass


def _np_dtype(onnx_type):
    from onnx import helper
    return helper.tensor_dtype_to_np_dtype(onnx_type)


def _is_symbolic(a):
    return isinstance(a, np.ndarray) and a.dtype == object


def _no_dynamic(*arrays):
    if any(_is_symbolic(a) and any(isinstance(v, str) for v in a.reshape(-1)) for a in arrays):
        raise FoldError("arithmetic on a dynamic dim")


def _ints(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axes(a, rank):
    return [v + rank if v < 0 else v for v in _ints(a)]


def _opt(inputs, i):
    return inputs[i] if len(inputs) > i and inputs[i] is not None else None


def _shape(inputs, attrs):
    shape = inputs[0]  # the importer passes the input's shape (a tuple), not the tensor
    rank = len(shape)
    start, end = attrs.get("start", 0), attrs.get("end", rank)
    return np.array(list(shape)[slice(start, end)], dtype=object if any(isinstance(d, str) for d in shape)
                    else np.int64)


def _size(inputs, attrs):
    if any(isinstance(d, str) for d in inputs[0]):
        raise FoldError("the size depends on a dynamic dim")
    return np.array(int(np.prod(inputs[0])), np.int64)


def _unsqueeze(inputs, attrs):
    x = inputs[0]
    axes = _opt(inputs, 1)
    axes = attrs.get("axes") if axes is None else axes
    out_rank = x.ndim + len(_ints(axes))
    shape = list(x.shape)
    for a in sorted(_axes(axes, out_rank)):
        shape.insert(a, 1)
    return x.reshape(shape)


def _squeeze(inputs, attrs):
    x = inputs[0]
    axes = _opt(inputs, 1)
    axes = attrs.get("axes") if axes is None else axes
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(_axes(axes, x.ndim)))


def _slice(inputs, attrs):
    x, starts, ends = inputs[0], _ints(inputs[1]), _ints(inputs[2])
    axes = _opt(inputs, 3)
    axes = list(range(len(starts))) if axes is None else _axes(axes, x.ndim)
    steps = _opt(inputs, 4)
    steps = [1] * len(starts) if steps is None else _ints(steps)
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise FoldError("Slice with a step of 0")
        # ONNX's rules, which Python slicing does not follow everywhere (a start below -dim with a negative
        # step is the first element in ONNX, nothing in Python): negative indices count from the end, then
        # start and end clamp to [0, dim] (step > 0) or start to [0, dim - 1] and end to [-1, dim - 1].
        dim = x.shape[a]
        s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        index[a] = slice(s, None if e < 0 else e, st)
    return x[tuple(index)]


def _reshape(inputs, attrs):
    x, shape = inputs[0], _ints(inputs[1])
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _cast(inputs, attrs):
    x = inputs[0]
    if _is_symbolic(x):
        if np.dtype(_np_dtype(attrs["to"])).kind in "iu":
            return x
        raise FoldError("cast of a dynamic dim to a non-integer type")
    return x.astype(_np_dtype(attrs["to"]))


def _constant_of_shape(inputs, attrs):
    value = attrs.get("value")
    value = np.zeros(1, np.float32) if value is None else value
    return np.full(_ints(inputs[0]), value.reshape(-1)[0], dtype=value.dtype)


def _div(inputs, attrs):
    a, b = inputs
    _no_dynamic(a, b)
    if np.asarray(a).dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
        # ONNX integer division truncates; exact in integers (a / b in float64 rounds beyond 2**53)
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)))
    return a / b


def _mod(inputs, attrs):
    """fmod=1: the sign of the dividend (C's fmod, for floats and ints); fmod=0: the sign of the divisor."""
    a, b = inputs
    _no_dynamic(a, b)
    return (np.fmod if attrs.get("fmod", 0) else np.mod)(a, b)


def _pow(inputs, attrs):
    """The output has the base's type (Pow(T, T1) -> T); numpy would promote int ** float, float32 ** int64."""
    base, exponent = inputs
    _no_dynamic(base, exponent)
    return np.power(base, exponent).astype(np.asarray(base).dtype)


def _dropout(inputs, attrs):
    """Inference: the input itself and an all-true mask. training_mode=True with a ratio above 0 drops
    values at random: not folded."""
    x, ratio, training = inputs[0], _opt(inputs, 1), _opt(inputs, 2)
    if training is not None and bool(np.asarray(training).reshape(-1)[0]) and (
            ratio is None or float(np.asarray(ratio).reshape(-1)[0]) > 0):
        raise FoldError("Dropout with training_mode=True drops values at random")
    return [x, np.ones(np.shape(x), dtype=bool)]


def _range(inputs, attrs):
    start, limit, delta = (np.asarray(v).reshape(()) for v in inputs)
    return np.arange(start, limit, delta, dtype=np.result_type(start, limit, delta))


def _binary(fn):
    def run(inputs, attrs):
        _no_dynamic(*inputs)
        return fn(inputs[0], inputs[1])
    return run


def _variadic(fn):
    def run(inputs, attrs):
        _no_dynamic(*inputs)
        out = inputs[0]
        for x in inputs[1:]:
            out = fn(out, x)
        return out
    return run


def _reduce(fn):
    def run(inputs, attrs):
        x = inputs[0]
        _no_dynamic(x)
        axes = _opt(inputs, 1)
        axes = attrs.get("axes") if axes is None else axes
        keep = bool(attrs.get("keepdims", 1))
        if axes is None or len(_ints(axes)) == 0:
            if attrs.get("noop_with_empty_axes", 0):
                return x  # no axes and noop_with_empty_axes=1: the input itself
            axis = None
        else:
            axis = tuple(_axes(axes, x.ndim))
        # the input's type (np.sum and np.prod would widen int32 to int64)
        return np.asarray(fn(x, axis=axis, keepdims=keep)).astype(x.dtype)
    return run


def _gather(inputs, attrs):
    return np.take(inputs[0], np.asarray(inputs[1]).astype(np.int64), axis=attrs.get("axis", 0))


def _concat(inputs, attrs):
    return np.concatenate([np.asarray(x) for x in inputs], axis=attrs["axis"])


def _flatten(inputs, attrs):
    x = inputs[0]
    axis = attrs.get("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def _expand(inputs, attrs):
    x, shape = inputs[0], _ints(inputs[1])
    return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(shape))).copy()


def _where(inputs, attrs):
    return np.where(inputs[0], inputs[1], inputs[2])


def _trilu(inputs, attrs):
    k = _opt(inputs, 1)
    k = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
    return (np.triu if attrs.get("upper", 1) else np.tril)(inputs[0], k)


def _scatter_nd(inputs, attrs):
    """ScatterND: updates written (or combined by `reduction`) at the index tuples of the last indices axis."""
    data, indices, updates = inputs
    out = np.array(data, copy=True)
    combine = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    reduction = attrs.get("reduction", "none")
    if reduction not in combine:
        raise FoldError(f"ScatterND reduction '{reduction}'")
    depth = indices.shape[-1]
    flat_updates = updates.reshape((-1,) + data.shape[depth:])
    for where, update in zip(indices.reshape(-1, depth), flat_updates):
        at = tuple(int(i) for i in where)
        out[at] = update if combine[reduction] is None else combine[reduction](out[at], update)
    return out


def _transpose(inputs, attrs):
    perm = attrs.get("perm")
    return np.transpose(inputs[0], None if perm is None else tuple(perm))


FOLD = {
    "Shape": _shape, "Size": _size,
    "Identity": lambda i, a: i[0], "Dropout": _dropout,
    "Gather": _gather, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Slice": _slice, "Concat": _concat,
    "Reshape": _reshape, "Flatten": _flatten, "Transpose": _transpose, "Expand": _expand,
    "Cast": _cast, "ConstantOfShape": _constant_of_shape, "Range": _range, "Where": _where, "Trilu": _trilu,
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply), "Div": _div,
    "Pow": _pow, "Mod": _mod,
    "Max": _variadic(np.maximum), "Min": _variadic(np.minimum),
    "Equal": _binary(np.equal), "Less": _binary(np.less), "Greater": _binary(np.greater),
    "LessOrEqual": _binary(np.less_equal), "GreaterOrEqual": _binary(np.greater_equal),
    "Xor": _binary(np.logical_xor), "IsNaN": lambda i, a: np.isnan(i[0]),
    "And": _binary(np.logical_and), "Or": _binary(np.logical_or), "Not": lambda i, a: np.logical_not(i[0]),
    "Neg": lambda i, a: -i[0], "Abs": lambda i, a: np.abs(i[0]), "Sqrt": lambda i, a: np.sqrt(i[0]),
    "Floor": lambda i, a: np.floor(i[0]), "Ceil": lambda i, a: np.ceil(i[0]),
    "ReduceProd": _reduce(np.prod), "ReduceSum": _reduce(np.sum), "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min), "ScatterND": _scatter_nd,
}


def fold(op_type, inputs, attrs, symbolic_input):
    """Outputs (a list of arrays) of node ``op_type`` on constant ``inputs`` (None for an absent optional
    input); FoldError when the node cannot be computed here."""
    fn = FOLD.get(op_type)
    if fn is None:
        raise FoldError(f"no constant folding for {op_type}")
    try:
        with np.errstate(all="ignore"):
            out = fn(inputs, attrs)
    except FoldError:
        raise
    except Exception as e:  # numpy refuses the operation (a str dim in arithmetic, bad shapes)
        why = "arithmetic on a dynamic dim" if symbolic_input else str(e)
        raise FoldError(why) from e
    return [_normalized(o) for o in out] if isinstance(out, list) else [_normalized(out)]


def _normalized(out):
    """Keeps dynamic dims in object arrays, and arrays without one in int64 (numpy would turn a lone
    "batch" into a string array, and ints gathered from an object array stay objects)."""
    if isinstance(out, np.ndarray) and out.dtype == object or isinstance(out, str):
        out = np.asarray(out, dtype=object)
        if not any(isinstance(v, str) for v in out.reshape(-1)):
            return out.astype(np.int64)
        return out
    return np.asarray(out)
