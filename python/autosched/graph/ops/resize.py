"""resize: ONNX Resize (opsets 11-19) and Upsample, torch's upsample_nearest2d / upsample_bilinear2d /
interpolate. The output has the shape `shape`; along each axis an output index maps to a coordinate of the
input by `coordinate` (ONNX's coordinate_transformation_mode, with `scales` the factors it divides by: the
given ones, or output / input extents where sizes were given):
    half_pixel          (i + 0.5) / scale - 0.5
    pytorch_half_pixel  the same, 0 where the output extent is 1
    align_corners       i * (in - 1) / (out - 1), 0 where the output extent is 1
    asymmetric          i / scale
    tf_half_pixel_for_nn  (i + 0.5) / scale
Mode "nearest" rounds the coordinate by `nearest` (ONNX's nearest_mode) and clamps it into the input; "linear"
clamps it into [0, in - 1] and interpolates between its two neighbours, along every axis that is resized
(bilinear on the last two axes of NCHW). Coordinates are computed in float64. Injective; it runs in NCHW."""
import math

import numpy as np

from ...core import te
from ...core.dtypes import is_float
from ..errors import GraphError, OpError
from ..opdef import OpDef
from .common import REQUIRED, choice, fmt, ints, is_known

__all__ = ["DEFS", "COORDINATE_MODES", "NEAREST_MODES"]

DEFS = []

COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _scales_attr(value):
    try:
        items = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise OpError(f"scales must be a tuple of floats, got {value!r}") from None
    if any(not (s > 0 and math.isfinite(s)) for s in items):
        raise OpError(f"scales must be positive, got {value!r}")
    return items


def _infer_resize(attrs, shapes, dtypes):
    x, shape = shapes[0], attrs["shape"]
    if len(shape) != len(x):
        raise OpError(f"shape {shape} must have the rank of the input {fmt(x)}")
    if attrs["scales"] is None:
        attrs["scales"] = tuple(o / i if is_known(i) else 1.0 for o, i in zip(shape, x))
    if len(attrs["scales"]) != len(x):
        raise OpError(f"scales {attrs['scales']} must have one entry per axis of the input {fmt(x)}")
    if attrs["mode"] == "linear" and dtypes[0] is not None and not is_float(dtypes[0]):
        raise OpError(f"linear resize needs a floating-point input, got {dtypes[0]}")
    for d, (i, o) in enumerate(zip(x, shape)):
        if not is_known(i) and o != 1:
            raise OpError(f"axis {d}: the input's extent {i} is dynamic; bind it before resizing")
    return tuple(shape), dtypes[0]


def _is_identity(coordinate, size, out, scale):
    return size == out and (scale == 1.0 or coordinate == "align_corners") and coordinate != "tf_half_pixel_for_nn"


def _coordinate(coordinate, i, size, out, scale):
    """The input coordinate of output index ``i`` (a Python number or a float64 te expression)."""
    if coordinate in ("align_corners", "pytorch_half_pixel") and out == 1:
        return 0.0 * i
    if coordinate == "align_corners":
        return i * ((size - 1) / (out - 1))
    if coordinate == "asymmetric":
        return i / scale
    if coordinate == "tf_half_pixel_for_nn":
        return (i + 0.5) / scale
    return (i + 0.5) / scale - 0.5


def _nearest_index(nearest, c, floor, ceil):
    if nearest == "round_prefer_floor":
        return ceil(c - 0.5)
    if nearest == "round_prefer_ceil":
        return floor(c + 0.5)
    return floor(c) if nearest == "floor" else ceil(c)


def _axis_plans(node, in_shape):
    """Per axis: None where the axis is not resized, else (size, out, scale)."""
    a = node.attrs
    return [None if _is_identity(a["coordinate"], size, out, scale) else (size, out, scale)
            for size, out, scale in zip(in_shape, node.shape, a["scales"])]


# ---------------- numpy ----------------


def _nearest_table(node, size, out, scale):
    c = _coordinate(node.attrs["coordinate"], np.arange(out, dtype=np.float64), size, out, scale)
    return np.clip(_nearest_index(node.attrs["nearest"], c, np.floor, np.ceil), 0, size - 1).astype(np.int64)


def _linear_table(node, size, out, scale):
    """(lower index, upper index, weight of the upper one) per output index."""
    c = _coordinate(node.attrs["coordinate"], np.arange(out, dtype=np.float64), size, out, scale)
    c = np.clip(c, 0, size - 1)
    lower = np.floor(c).astype(np.int64)
    return lower, np.minimum(lower + 1, size - 1), c - lower


def _resize_reference(node, x):
    for d, plan in enumerate(_axis_plans(node, x.shape)):
        if plan is None:
            continue
        if node.attrs["mode"] == "nearest":
            x = np.take(x, _nearest_table(node, *plan), axis=d)
            continue
        lower, upper, weight = _linear_table(node, *plan)
        shape = [1] * x.ndim
        shape[d] = len(weight)
        weight = weight.reshape(shape)
        lo, hi = np.take(x, lower, axis=d), np.take(x, upper, axis=d)
        x = (lo * (1 - weight) + hi * weight).astype(x.dtype)
    return x


# ---------------- te ----------------


def _te_coordinate(node, i, size, out, scale):
    c = _coordinate(node.attrs["coordinate"], te.cast(i, "float64"), size, out, scale)
    return te.cast(c, "float64") if isinstance(c, float) else c


def _resize_te(node, x):
    plans = _axis_plans(node, x.shape)
    nearest = node.attrs["mode"] == "nearest"

    def fcompute(*i):
        if nearest:
            idx = list(i)
            for d, plan in enumerate(plans):
                if plan is not None:
                    c = _te_coordinate(node, i[d], *plan)
                    pos = te.cast(_nearest_index(node.attrs["nearest"], c, te.floor, te.ceil), "int32")
                    idx[d] = te.min(te.max(pos, 0), plan[0] - 1)
            return x[tuple(idx)]
        corners = [(list(i), te.const(1.0, "float64"))]
        for d, plan in enumerate(plans):
            if plan is None:
                continue
            size = plan[0]
            c = te.min(te.max(_te_coordinate(node, i[d], *plan), te.const(0.0, "float64")),
                       te.const(float(size - 1), "float64"))
            lower_f = te.floor(c)
            weight = c - lower_f
            lower = te.cast(lower_f, "int32")
            upper = te.min(lower + 1, size - 1)
            corners = [(idx[:d] + [pos] + idx[d + 1:], w * part)
                       for idx, w in corners for pos, part in ((lower, 1.0 - weight), (upper, weight))]
        total = None
        for idx, w in corners:
            term = x[tuple(idx)] * te.cast(w, x.dtype)
            total = term if total is None else total + term
        return total

    return te.compute(tuple(node.shape), fcompute, name=node.name, tag="injective")


# ---------------- ONNX, torch ----------------


def _resize_onnx(w, node):
    """Resize with the sizes where the scales are output / input extents, else with the scales where they give
    the output's shape (ONNX computes floor(in * scale)); other scales have no ONNX form."""
    a = node.attrs
    in_shape = w.graph.shape(node.inputs[0])
    if all(math.isclose(s, o / i, rel_tol=1e-12) for i, o, s in zip(in_shape, node.shape, a["scales"])):
        inputs = [node.inputs[0], "", "", w.const(node.name + "_sizes", np.asarray(node.shape, np.int64))]
    elif all(o == math.floor(i * s) for i, o, s in zip(in_shape, node.shape, a["scales"])):
        inputs = [node.inputs[0], "", w.const(node.name + "_scales", np.asarray(a["scales"], np.float32))]
    else:
        raise GraphError(f"to_onnx: resize '{node.name}' has scales {a['scales']} that give neither its shape "
                         f"{tuple(node.shape)} from {tuple(in_shape)} (ONNX computes floor(in * scale)) nor are "
                         "output / input extents: ONNX Resize cannot express it")
    return w.node("Resize", inputs, node.name, mode=a["mode"], coordinate_transformation_mode=a["coordinate"],
                  nearest_mode=a["nearest"])


def _resize_torch(torch, node, x):
    """Evaluated through the reference's index tables with torch's indexing (torch's interpolate covers only some
    of the modes)."""
    for d, plan in enumerate(_axis_plans(node, tuple(x.shape))):
        if plan is None:
            continue
        if node.attrs["mode"] == "nearest":
            x = torch.index_select(x, d, torch.as_tensor(_nearest_table(node, *plan)))
            continue
        lower, upper, weight = _linear_table(node, *plan)
        shape = [1] * x.dim()
        shape[d] = len(weight)
        weight = torch.as_tensor(weight.reshape(shape), dtype=x.dtype)
        lo = torch.index_select(x, d, torch.as_tensor(lower))
        hi = torch.index_select(x, d, torch.as_tensor(upper))
        x = lo * (1 - weight) + hi * weight
    return x


DEFS.append(OpDef("resize", 1, _infer_resize,
                  {"shape": (REQUIRED, lambda v: ints(v, "shape", low=1)),
                   "scales": (None, lambda v: None if v is None else _scales_attr(v)),
                   "mode": ("nearest", choice("mode", ("nearest", "linear"))),
                   "coordinate": ("half_pixel", choice("coordinate", COORDINATE_MODES)),
                   "nearest": ("round_prefer_floor", choice("nearest", NEAREST_MODES))},
                  fusion="injective", layout="nchw", reference=_resize_reference, te=_resize_te,
                  onnx=_resize_onnx, torch=_resize_torch))
