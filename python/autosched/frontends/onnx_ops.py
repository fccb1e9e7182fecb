"""The ONNX operator table: CONVERTERS maps an ONNX op type to a function (importer, inputs, attrs) that adds
the graph nodes computing its first output and returns that value (or a numpy array when the result is a
constant). ``inputs`` are ONNX value names ("" for an absent optional input); the importer's helpers turn them
into graph values (``value``), constants (``const``), shapes and dtypes. A converter raises NotConvertible
when it cannot map the node; the node then becomes "unsupported" with that reason.

CONVERTERS holds the ONNX ops that need translating. An ONNX op that is a graph op as it is (the `onnx` of
its OpDef names it: Add, Relu, ...) needs no entry: ``converter`` maps it through the graph's op registry.
"""
import numpy as np

from ..graph import registry
from ._common import NotConvertible, reshape, slices_of, split_sizes
from ._lowering import drop_unit_height, spatial_attrs, unit_height
from .onnx_ops_more import MORE_CONVERTERS
from .onnx_quant import QUANT_CONVERTERS, QUANT_MULTI_OUTPUT

__all__ = ["CONVERTERS", "MULTI_OUTPUT", "converter"]


def _opt(inputs, i):
    return inputs[i] if len(inputs) > i and inputs[i] else None


def _static(shape, what):
    if shape is None or any(not isinstance(d, int) for d in shape):
        raise NotConvertible(f"{what} needs static dims, the input has {shape}")
    return shape


def _as_2d_attrs(attrs):
    """The attrs of a 1-D window as those of a 2-D one over a unit height."""
    out = dict(attrs)
    for key in ("strides", "dilations", "kernel_shape"):
        if key in attrs:
            out[key] = [1] + list(attrs[key])
    if "pads" in attrs:
        begin, end = attrs["pads"]
        out["pads"] = [0, begin, 0, end]
    return out


def _unit_height(ctx, name, hint):
    """ONNX value ``name`` of shape (A, B, L) as a graph value (A, B, 1, L); a constant is reshaped in numpy."""
    const = ctx.const(name)
    if const is not None and const.dtype != object:
        return ctx.add_const(const[:, :, None, :], hint)
    a, b, length = ctx.shape(name)
    return reshape(ctx.g, ctx.value(name), [a, b, 1, length], ctx.fresh_name("reshape"))


def _conv(ctx, inputs, attrs):
    """Conv of 4-D NCHW input, or of 5-D NCDHW input (conv3d); a 1-D one (3-D input) runs as a 2-D one over a
    unit height."""
    one_d = ctx.shape(inputs[0]) is not None and len(ctx.shape(inputs[0])) == 3
    if one_d:
        x, weight = _unit_height(ctx, inputs[0], "x2d"), _unit_height(ctx, inputs[1], "weight2d")
        attrs = _as_2d_attrs(attrs)
    else:
        x, weight = ctx.value(inputs[0]), ctx.value(inputs[1])
    kernel = ctx.g.shape(weight)[2:]
    strides, dilations, pads = spatial_attrs(ctx.g.shape(x), kernel, attrs)
    args = [x, weight] + ([ctx.value(inputs[2])] if _opt(inputs, 2) else [])
    op = "conv3d" if len(ctx.g.shape(x)) == 5 else "conv2d"
    out = ctx.emit(op, args, strides=strides, pads=pads, dilations=dilations, groups=attrs.get("group", 1))
    if not one_d:
        return out
    shape = ctx.g.shape(out)
    return reshape(ctx.g, out, [shape[0], shape[1], shape[3]], ctx.fresh_name("reshape"))


def _pool(kind):
    """MaxPool / AveragePool (kind "max" / "avg") of 4-D NCHW input, or of 5-D NCDHW input (the 3-D pools); a
    1-D one (3-D input) runs as a 2-D one over a unit height."""
    def convert(ctx, inputs, attrs):
        x = ctx.value(inputs[0])
        one_d = ctx.shape(inputs[0]) is not None and len(ctx.shape(inputs[0])) == 3
        if one_d:
            x, attrs = unit_height(ctx, x), _as_2d_attrs(attrs)
        kernel = tuple(attrs["kernel_shape"])
        strides, dilations, pads = spatial_attrs(ctx.g.shape(x), kernel, attrs)
        extra = {}
        if kind == "avg":
            extra["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
        op = f"{kind}_pool{len(ctx.g.shape(x)) - 2}d"
        out = ctx.emit(op, [x], kernel=kernel, strides=strides, pads=pads, dilations=dilations,
                       ceil_mode=bool(attrs.get("ceil_mode", 0)), **extra)
        return drop_unit_height(ctx, out) if one_d else out
    return convert


def _global_pool(op):
    """GlobalAveragePool / GlobalMaxPool of 4-D NCHW input, or of 5-D NCDHW input (a reduction over D, H, W)."""
    def convert(ctx, inputs, attrs):
        shape = ctx.shape(inputs[0])
        if shape is None or len(shape) not in (4, 5):
            raise NotConvertible(f"only 4-D NCHW or 5-D NCDHW input is supported, the input has shape {shape}")
        if op == "global_avg_pool2d" and len(shape) == 4:
            return ctx.emit(op, [ctx.value(inputs[0])])
        reduce = "reduce_mean" if op == "global_avg_pool2d" else "reduce_max"
        return ctx.emit(reduce, [ctx.value(inputs[0])], axes=tuple(range(2, len(shape))), keepdims=True)
    return convert


def _gemm_bias(c, n):
    """Gemm's constant C as a per-column bias of length n, or None when C varies along the rows.

    C broadcasts to (M, N) by its shape (ONNX unidirectional broadcasting), never by its size: (), (1,),
    (N,), (1, 1) and (1, N) add the same value to every row; (M, 1) and (M, N) do not, even where M == N."""
    if c.ndim > 2 or c.dtype == object:
        return None
    rows, cols = ((1, 1) + c.shape)[-2:]
    if rows != 1 or cols not in (1, n):
        return None
    return np.broadcast_to(c.reshape(-1), (n,))


def _scalar(ctx, value, like, hint):
    """A 0-d constant of the dtype of ONNX value ``like`` (alpha and beta follow the tensors they scale)."""
    return ctx.add_const(np.asarray(value, ctx.dtype(like)), hint)


def _gemm(ctx, inputs, attrs):
    """Y = alpha * A' @ B' + beta * C, C broadcast to (M, N) by its shape."""
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    a = ctx.value(inputs[0])
    if attrs.get("transA", 0):
        a = ctx.emit("transpose", [a], perm=(1, 0))
    b, c = ctx.const(inputs[1]), _opt(inputs, 2)
    if b is not None and b.ndim == 2 and b.dtype != object:
        # torch's Linear exports as Gemm(transB=1): its weight and bias are used as they are
        plain = attrs.get("transB", 0) and alpha == 1.0
        weight = b if attrs.get("transB", 0) else b.T
        weight = ctx.value(inputs[1]) if plain else ctx.add_const(weight * np.asarray(alpha, b.dtype), "weight")
        n = b.shape[0] if attrs.get("transB", 0) else b.shape[1]
        bias = _gemm_bias(ctx.const(c), n) if c and ctx.const(c) is not None else None
        if bias is not None and ctx.shape(c) == (n,) and beta == 1.0:
            return ctx.emit("dense", [a, weight, ctx.value(c)])
        if bias is not None:
            return ctx.emit("dense", [a, weight, ctx.add_const(bias * np.asarray(beta, bias.dtype), "bias")])
        out = ctx.emit("dense", [a, weight])
    else:
        b = ctx.value(inputs[1])
        if attrs.get("transB", 0):
            b = ctx.emit("transpose", [b], perm=(1, 0))
        out = ctx.emit("matmul", [a, b])
        if alpha != 1.0:
            out = ctx.emit("multiply", [out, _scalar(ctx, alpha, inputs[0], "alpha")])
    if not c:
        return out
    # A C that varies along the rows, or one computed at run time: the add broadcasts it by its shape.
    c_val = ctx.value(c)
    if beta != 1.0:
        c_val = ctx.emit("multiply", [c_val, _scalar(ctx, beta, c, "beta")])
    return ctx.emit("add", [out, c_val])


def _matmul(ctx, inputs, attrs):
    b = ctx.const(inputs[1])
    a_shape = ctx.shape(inputs[0])
    if b is not None and b.ndim == 2 and b.dtype != object and a_shape is not None and len(a_shape) >= 2:
        # x @ W with a constant W is a dense layer (torch's Linear on a 3-D input exports as MatMul + Add).
        return ctx.emit("dense", [ctx.value(inputs[0]), ctx.add_const(b.T, "weight")])
    return ctx.emit("matmul", [ctx.value(inputs[0]), ctx.value(inputs[1])])


def _variadic(op):
    def convert(ctx, inputs, attrs):
        out = ctx.value(inputs[0])  # a single input is copied
        for x in inputs[1:]:
            out = ctx.emit(op, [out, ctx.value(x)])
        return out
    return convert


def _gelu(ctx, inputs, attrs):
    return ctx.emit("gelu", [ctx.value(inputs[0])], approximate=attrs.get("approximate", "none"))


def _clip(ctx, inputs, attrs):
    bounds = []
    for i, what in ((1, "min"), (2, "max")):
        name = _opt(inputs, i)
        bounds.append(None if name is None else float(ctx.const_or_fail(name, f"the {what} bound").reshape(-1)[0]))
    return ctx.emit("clip", [ctx.value(inputs[0])], min=bounds[0], max=bounds[1])


def _softmax(ctx, inputs, attrs):
    return ctx.emit("softmax", [ctx.value(inputs[0])], axis=attrs.get("axis", -1))


def _layer_norm(ctx, inputs, attrs):
    x, scale = ctx.value(inputs[0]), ctx.value(inputs[1])
    if _opt(inputs, 2):
        bias = ctx.value(inputs[2])
    else:
        shape = ctx.shape(inputs[1])
        bias = ctx.add_const(np.zeros(_static(shape, "LayerNormalization without B"), ctx.dtype(inputs[1])), "B")
    return ctx.emit("layer_norm", [x, scale, bias], axis=attrs.get("axis", -1), epsilon=attrs.get("epsilon", 1e-5))


def _batch_norm(ctx, inputs, attrs):
    if attrs.get("training_mode", 0):
        raise NotConvertible("training_mode=1 (only inference is supported)")
    return ctx.emit("batch_norm", [ctx.value(i) for i in inputs[:5]], epsilon=attrs.get("epsilon", 1e-5))


def _dims_of(array):
    return [d if isinstance(d, str) else int(d) for d in array.reshape(-1)]


def _reshape(ctx, inputs, attrs):
    target = ctx.const(inputs[1])
    if target is None:
        raise NotConvertible(f"the target shape ({inputs[1]}) is computed at run time; only a constant target "
                             f"(or shape arithmetic that folds to one) is supported")
    target = _dims_of(target)
    if not attrs.get("allowzero", 0):  # 0 copies the input's dim
        shape = ctx.shape(inputs[0])
        target = [shape[i] if d == 0 else d for i, d in enumerate(target)]
    return reshape(ctx.g, ctx.value(inputs[0]), target, ctx.fresh_name("reshape"))


def _axes_of(ctx, inputs, attrs, rank):
    name = _opt(inputs, 1)
    axes = attrs.get("axes") if name is None else ctx.const_or_fail(name, "axes").reshape(-1).tolist()
    return None if axes is None else [int(a) + rank if a < 0 else int(a) for a in axes]


def _squeeze(ctx, inputs, attrs):
    shape = ctx.shape(inputs[0])
    axes = _axes_of(ctx, inputs, attrs, len(shape))
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    if any(shape[a] != 1 for a in axes):
        raise NotConvertible(f"squeeze of axes {axes} of shape {shape}: each must be 1")
    target = [d for i, d in enumerate(shape) if i not in axes]
    return reshape(ctx.g, ctx.value(inputs[0]), target, ctx.fresh_name("reshape"))


def _unsqueeze(ctx, inputs, attrs):
    shape = list(ctx.shape(inputs[0]))
    name = _opt(inputs, 1)
    axes = attrs.get("axes", []) if name is None else ctx.const_or_fail(name, "axes").reshape(-1).tolist()
    rank = len(shape) + len(axes)
    for a in sorted(int(a) + rank if a < 0 else int(a) for a in axes):
        shape.insert(a, 1)
    return reshape(ctx.g, ctx.value(inputs[0]), shape, ctx.fresh_name("reshape"))


def _flatten(ctx, inputs, attrs):
    return ctx.emit("flatten", [ctx.value(inputs[0])], axis=attrs.get("axis", 1))


def _transpose(ctx, inputs, attrs):
    perm = attrs.get("perm")
    extra = {} if perm is None else {"perm": tuple(perm)}
    return ctx.emit("transpose", [ctx.value(inputs[0])], **extra)


def _concat(ctx, inputs, attrs):
    return ctx.emit("concat", [ctx.value(i) for i in inputs], axis=attrs["axis"])


def _reduce(op):
    def convert(ctx, inputs, attrs):
        rank = len(ctx.shape(inputs[0]))
        axes = _axes_of(ctx, inputs, attrs, rank)
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return ctx.value(inputs[0])
            axes = list(range(rank))
        return ctx.emit(op, [ctx.value(inputs[0])], axes=tuple(axes), keepdims=bool(attrs.get("keepdims", 1)))
    return convert


def _cast(ctx, inputs, attrs):
    dtype = ctx._np_type(attrs["to"])
    x = ctx.value(inputs[0])
    if dtype == ctx.dtype(inputs[0]):
        return x
    return ctx.emit("cast", [x], dtype=dtype)


def _identity(ctx, inputs, attrs):
    return ctx.value(inputs[0])


def _expand(ctx, inputs, attrs):
    """Expand to a constant target (shape arithmetic folds to one when the input shapes are bound)."""
    target = tuple(_dims_of(ctx.const_or_fail(inputs[1], "the target shape")))
    shape = ctx.shape(inputs[0])
    if len(target) <= len(shape) and all(t == 1 or t == s for t, s in zip(target[::-1], shape[::-1])):
        return ctx.value(inputs[0])  # broadcasting to its own shape: nothing to do
    return ctx.emit("expand", [ctx.value(inputs[0])], shape=target)


def _split(ctx, inputs, attrs):
    """Split along an axis by the `split` input (or attribute, before opset 13), into num_outputs pieces
    (opset 18: the last one smaller) or into equal pieces, one per output."""
    shape = ctx.shape(inputs[0])
    axis = attrs.get("axis", 0)
    axis = axis + len(shape) if axis < 0 else axis
    name = _opt(inputs, 1)
    sizes = attrs.get("split") if name is None else [int(v) for v in ctx.const_or_fail(name, "split").reshape(-1)]
    parts = attrs.get("num_outputs", ctx.output_count)
    if sizes is None and "num_outputs" not in attrs and isinstance(shape[axis], int) and shape[axis] % parts:
        raise NotConvertible(f"Split of an axis of extent {shape[axis]} into {parts} equal pieces")
    pieces = split_sizes(shape[axis], sizes, parts, "Split")
    if len(pieces) != ctx.output_count:
        raise NotConvertible(f"Split into {len(pieces)} pieces for {ctx.output_count} outputs")
    return slices_of(ctx, ctx.value(inputs[0]), axis, pieces)


def _gather_elements(ctx, inputs, attrs):
    return ctx.emit("gather_elements", [ctx.value(inputs[0]), ctx.value(inputs[1])], axis=attrs.get("axis", 0))


def _cumsum(ctx, inputs, attrs):
    axis = int(ctx.const_or_fail(inputs[1], "axis").reshape(-1)[0])
    return ctx.emit("cumsum", [ctx.value(inputs[0])], axis=axis, exclusive=bool(attrs.get("exclusive", 0)),
                    reverse=bool(attrs.get("reverse", 0)))


def _hard_sigmoid(ctx, inputs, attrs):
    return ctx.emit("hard_sigmoid", [ctx.value(inputs[0])], alpha=attrs.get("alpha", 0.2),
                    beta=attrs.get("beta", 0.5))


def _isinf(ctx, inputs, attrs):
    x = ctx.value(inputs[0])
    found = ctx.emit("isinf", [x])
    negative, positive = attrs.get("detect_negative", 1), attrs.get("detect_positive", 1)
    if negative and positive:
        return found
    if not (negative or positive):
        return ctx.emit("logical_and", [found, ctx.add_const(np.zeros((), bool), "false")])
    zero = ctx.add_const(np.zeros((), ctx.dtype(inputs[0])), "zero")
    sign = ctx.emit("greater" if positive else "less", [x, zero])
    return ctx.emit("logical_and", [found, sign])


def _instance_norm(ctx, inputs, attrs):
    channels = ctx.shape(inputs[0])[1]
    if not isinstance(channels, int):
        raise NotConvertible(f"InstanceNormalization over a dynamic channel dim {channels}")
    return ctx.emit("group_norm", [ctx.value(i) for i in inputs[:3]], num_groups=channels,
                    epsilon=attrs.get("epsilon", 1e-5))


def _group_norm(ctx, inputs, attrs):
    """GroupNormalization: scale and bias per channel (opset 21) or per group (opset 18, repeated here)."""
    groups, channels = attrs["num_groups"], ctx.shape(inputs[0])[1]
    params = []
    for name, what in ((inputs[1], "scale"), (inputs[2], "bias")):
        if ctx.shape(name) == (groups,) and groups != channels:
            const = ctx.const_or_fail(name, f"a per-group {what}")
            params.append(ctx.add_const(np.repeat(const, _static((channels,), what)[0] // groups), what))
        else:
            params.append(ctx.value(name))
    return ctx.emit("group_norm", [ctx.value(inputs[0])] + params, num_groups=groups,
                    epsilon=attrs.get("epsilon", 1e-5))


def _slice(ctx, inputs, attrs):
    """Slice (opset 13+): starts, ends, axes and steps must be constants; steps must be positive."""
    params = []
    for i, what in ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")):
        name = _opt(inputs, i)
        params.append(None if name is None else [int(v) for v in ctx.const_or_fail(name, what).reshape(-1)])
    starts, ends, axes, steps = params
    if steps is not None and any(s <= 0 for s in steps):
        raise NotConvertible(f"Slice with steps {tuple(steps)}: only positive steps are supported (a negative "
                             f"step reverses the axis)")
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    return ctx.emit("strided_slice", [ctx.value(inputs[0])], begin=tuple(starts), end=tuple(ends),
                    strides=tuple(steps), axes=tuple(axes))


def _gather(ctx, inputs, attrs):
    """Gather of a computed tensor or of a weight by computed indices (all-constant Gathers are folded)."""
    return ctx.emit("take", [ctx.value(inputs[0]), ctx.value(inputs[1])], axis=attrs.get("axis", 0))


def _reciprocal(ctx, inputs, attrs):
    one = ctx.add_const(np.ones((), ctx.dtype(inputs[0])), "one")
    return ctx.emit("divide", [one, ctx.value(inputs[0])])


CONVERTERS = {
    "Conv": _conv, "Gemm": _gemm, "MatMul": _matmul,
    "Max": _variadic("maximum"), "Min": _variadic("minimum"), "Sum": _variadic("add"),
    "Reciprocal": _reciprocal, "Gelu": _gelu, "Clip": _clip, "Softmax": _softmax,
    "LayerNormalization": _layer_norm, "BatchNormalization": _batch_norm,
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_pool("global_avg_pool2d"), "GlobalMaxPool": _global_pool("global_max_pool2d"),
    "Reshape": _reshape, "Flatten": _flatten, "Transpose": _transpose, "Concat": _concat,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Expand": _expand, "Slice": _slice, "Gather": _gather,
    "ReduceMean": _reduce("reduce_mean"), "ReduceSum": _reduce("reduce_sum"), "ReduceMax": _reduce("reduce_max"),
    "Cast": _cast, "Identity": _identity, "Dropout": _identity,
    "Split": _split, "GatherElements": _gather_elements, "CumSum": _cumsum, "HardSigmoid": _hard_sigmoid,
    "IsInf": _isinf, "InstanceNormalization": _instance_norm, "GroupNormalization": _group_norm,
}

# ONNX ops with several outputs whose converters return one value per output (None for an empty one)
MULTI_OUTPUT = {"Split"} | QUANT_MULTI_OUTPUT


def _as_is(op):
    """The converter of an ONNX op that is graph op ``op``: the same inputs, no attributes."""
    def convert(ctx, inputs, attrs):
        if attrs:
            raise NotConvertible(f"attribute(s) {', '.join(sorted(attrs))}: graph op '{op}' takes none")
        return ctx.emit(op, [ctx.value(i) for i in inputs])
    return convert


CONVERTERS.update(MORE_CONVERTERS)
CONVERTERS.update(QUANT_CONVERTERS)  # quantized models: onnx_quant.py
CONVERTERS["Mish"] = _as_is("mish")  # exported as Softplus, Tanh and Mul (Mish arrives in opset 18)


def converter(op_type):
    """The converter of ONNX op ``op_type``: its entry of CONVERTERS, else the graph op it is (registry.by_onnx),
    else None."""
    convert = CONVERTERS.get(op_type)
    if convert is None:
        op_def = registry.by_onnx(op_type)
        convert = None if op_def is None else _as_is(op_def.name)
    return convert
