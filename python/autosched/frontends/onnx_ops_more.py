"""More of the ONNX operator table (onnx_ops.py holds the rest and merges these into CONVERTERS): Pad, Resize,
activations with parameters (Softplus, Elu, Selu, LeakyRelu), LogSoftmax, ReduceMin / ReduceProd, ArgMax /
ArgMin, Einsum and ConvTranspose. Each converter is called as (importer, inputs, attrs), as in onnx_ops.py."""
import math

import numpy as np

from ._common import NotConvertible
from ._lowering import conv_transpose2d, drop_unit_height, einsum, unit_height

__all__ = ["MORE_CONVERTERS"]


def _opt(inputs, i):
    return inputs[i] if len(inputs) > i and inputs[i] else None


def _ints_input(ctx, inputs, i, what):
    name = _opt(inputs, i)
    return None if name is None else [int(v) for v in ctx.const_or_fail(name, what).reshape(-1)]


def _axes(axes, rank):
    return [a + rank if a < 0 else a for a in axes]


def _pad(ctx, inputs, attrs):
    """Pad (opset 13-19): pads, constant_value and axes (opset 18) are inputs and must be constants."""
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise NotConvertible(f"Pad mode '{mode}' (constant, reflect and edge are supported)")
    rank = len(ctx.shape(inputs[0]))
    pads = _ints_input(ctx, inputs, 1, "pads") if len(inputs) > 1 else list(attrs.get("pads", []))
    axes = _ints_input(ctx, inputs, 3, "axes")
    if axes is not None:  # pads for the named axes only
        full = [0] * (2 * rank)
        for k, a in enumerate(_axes(axes, rank)):
            full[a], full[rank + a] = pads[k], pads[len(axes) + k]
        pads = full
    value = 0.0
    if _opt(inputs, 2):
        value = float(ctx.const_or_fail(inputs[2], "constant_value").reshape(-1)[0])
    return ctx.emit("pad", [ctx.value(inputs[0])], pads=tuple(pads), mode=mode, value=value)


_RESIZE_COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")


def _resize(ctx, inputs, attrs):
    """Resize (opsets 11-19) by constant scales or sizes (on every axis, or on `axes`: opset 18)."""
    mode = attrs.get("mode", "nearest")
    coordinate = attrs.get("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear"):
        raise NotConvertible(f"Resize mode '{mode}' (nearest and linear are supported)")
    if coordinate not in _RESIZE_COORDINATES:
        raise NotConvertible(f"Resize coordinate_transformation_mode '{coordinate}' (supported: "
                             f"{', '.join(_RESIZE_COORDINATES)})")
    if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise NotConvertible(f"Resize keep_aspect_ratio_policy '{attrs['keep_aspect_ratio_policy']}'")
    shape = ctx.shape(inputs[0])
    if any(not isinstance(d, int) for d in shape):
        raise NotConvertible(f"Resize of an input with dynamic dims {shape}: bind them at import")
    rank = len(shape)
    axes = _axes(attrs.get("axes", list(range(rank))), rank)
    scales = None
    if _opt(inputs, 2) and ctx.const_or_fail(inputs[2], "scales").size:
        scales = [float(s) for s in ctx.const_or_fail(inputs[2], "scales").reshape(-1)]
    sizes = _ints_input(ctx, inputs, 3, "sizes") if _opt(inputs, 3) else None
    if (scales is None) == (sizes is None):
        raise NotConvertible("Resize needs exactly one of scales and sizes")
    full_scales, out = [1.0] * rank, list(shape)
    for k, a in enumerate(axes):
        if scales is not None:
            full_scales[a], out[a] = scales[k], int(math.floor(shape[a] * scales[k]))
        else:
            full_scales[a], out[a] = sizes[k] / shape[a], sizes[k]
    if attrs.get("antialias", 0) and mode == "linear" and any(o < i for o, i in zip(out, shape)):
        raise NotConvertible("Resize with antialias when shrinking")
    return ctx.emit("resize", [ctx.value(inputs[0])], shape=tuple(out), scales=tuple(full_scales), mode=mode,
                    coordinate=coordinate, nearest=attrs.get("nearest_mode", "round_prefer_floor"))


def _attr_op(op, **defaults):
    """An ONNX op that is graph op ``op`` with attributes of other names (graph attr name -> (ONNX name,
    default))."""
    def convert(ctx, inputs, attrs):
        given = {key: attrs.get(onnx_name, default) for key, (onnx_name, default) in defaults.items()}
        return ctx.emit(op, [ctx.value(inputs[0])], **given)
    return convert


def _reduce(op):
    def convert(ctx, inputs, attrs):
        rank = len(ctx.shape(inputs[0]))
        axes = _ints_input(ctx, inputs, 1, "axes") if _opt(inputs, 1) else attrs.get("axes")
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return ctx.value(inputs[0])
            axes = list(range(rank))
        return ctx.emit(op, [ctx.value(inputs[0])], axes=tuple(_axes(axes, rank)),
                        keepdims=bool(attrs.get("keepdims", 1)))
    return convert


def _arg(op):
    def convert(ctx, inputs, attrs):
        return ctx.emit(op, [ctx.value(inputs[0])], axis=attrs.get("axis", 0), keepdims=bool(attrs.get("keepdims", 1)),
                        select_last_index=bool(attrs.get("select_last_index", 0)))
    return convert


def _einsum(ctx, inputs, attrs):
    return einsum(ctx, attrs["equation"], [ctx.value(i) for i in inputs])


def _conv_transpose(ctx, inputs, attrs):
    """ConvTranspose, 2-D (4-D input) or 1-D (3-D input, run over a unit height); the weight must be constant."""
    weight = ctx.const_or_fail(inputs[1], "the weight")
    x = ctx.value(inputs[0])
    one_d = len(ctx.shape(inputs[0])) == 3
    if one_d:
        x, weight = unit_height(ctx, x), weight[:, :, None, :]
    spatial = len(ctx.g.shape(x)) - 2
    if spatial != 2:
        raise NotConvertible(f"ConvTranspose of a {spatial}-D input (1-D and 2-D are supported)")

    def pair(key, default):
        v = list(attrs.get(key, [default] * (2 - one_d)))
        return tuple([default] + v if one_d else v)

    strides, dilations, output_padding = pair("strides", 1), pair("dilations", 1), pair("output_padding", 0)
    kernel = weight.shape[2:]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if "output_shape" in attrs or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        size = ctx.g.shape(x)[2:]
        wanted = list(attrs["output_shape"])[-(2 - one_d):] if "output_shape" in attrs else \
            [n * s for n, s in zip(size[one_d:], strides[one_d:])]
        wanted = [1] + wanted if one_d else wanted
        begin, end = [], []
        for n, k, s, d, op, o in zip(size, kernel, strides, dilations, output_padding, wanted):
            total = s * (n - 1) + op + (k - 1) * d + 1 - o
            small, large = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else large)
            end.append(large if auto_pad == "SAME_UPPER" else small)
        pads = tuple(begin + end)
    elif auto_pad == "VALID":
        pads = (0, 0, 0, 0)
    else:
        given = list(attrs.get("pads", [0] * 2 * (2 - one_d)))
        pads = (0, given[0], 0, given[1]) if one_d else tuple(given)
    bias = ctx.value(inputs[2]) if _opt(inputs, 2) else None
    out = conv_transpose2d(ctx, x, weight, bias, strides, pads, dilations, output_padding, attrs.get("group", 1))
    return drop_unit_height(ctx, out) if one_d else out


MORE_CONVERTERS = {
    "Pad": _pad, "Resize": _resize,
    "Softplus": _attr_op("softplus"), "Elu": _attr_op("elu", alpha=("alpha", 1.0)),
    "Selu": _attr_op("elu", alpha=("alpha", 1.67326319217681884765625), scale=("gamma", 1.05070102214813232421875)),
    "LeakyRelu": _attr_op("leaky_relu", alpha=("alpha", 0.01)),
    "LogSoftmax": _attr_op("log_softmax", axis=("axis", -1)),
    "ReduceMin": _reduce("reduce_min"), "ReduceProd": _reduce("reduce_prod"),
    "ArgMax": _arg("argmax"), "ArgMin": _arg("argmin"),
    "Einsum": _einsum, "ConvTranspose": _conv_transpose,
}
