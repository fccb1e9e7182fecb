"""pad: ONNX Pad and torch's pad / constant_pad_nd / reflection_pad / replication_pad. Any axes; a negative
pad crops (the input is cropped first, then padded). Modes: "constant" (the value), "reflect" (mirrored about
the edge element, which is not repeated: a pad must be smaller than the cropped extent) and "edge" (the edge
element repeated). Injective (fusion joins it to its producer's group); it runs in NCHW."""
import numpy as np

from ...core import te
from ..errors import OpError
from ..opdef import OpDef
from .common import REQUIRED, choice, fmt, ints, is_known, real

__all__ = ["DEFS", "PAD_MODES", "crop_and_pad"]

DEFS = []

PAD_MODES = ("constant", "reflect", "edge")


def crop_and_pad(pads, rank):
    """(crop_begin, crop_end, pad_begin, pad_end) per axis of ONNX-ordered pads (all begins, then all ends)."""
    begin, end = pads[:rank], pads[rank:]
    return [(max(-b, 0), max(-e, 0), max(b, 0), max(e, 0)) for b, e in zip(begin, end)]


def _infer_pad(attrs, shapes, dtypes):
    x = shapes[0]
    rank = len(x)
    if len(attrs["pads"]) != 2 * rank:
        raise OpError(f"pads {attrs['pads']} must have 2 * rank = {2 * rank} entries (all begins, then all "
                      f"ends) for the input of shape {fmt(x)}")
    out = []
    for d, (cut_lo, cut_hi, lo, hi) in enumerate(crop_and_pad(attrs["pads"], rank)):
        if not is_known(x[d]):
            out.append(x[d] if not (cut_lo or cut_hi or lo or hi) else None)
            continue
        kept = x[d] - cut_lo - cut_hi
        if kept < 1:
            raise OpError(f"axis {d}: pads crop all {x[d]} elements of the input of shape {fmt(x)}")
        if attrs["mode"] == "reflect" and max(lo, hi) >= kept:
            raise OpError(f"axis {d}: reflect pads ({lo}, {hi}) must be smaller than the extent {kept} they "
                          "mirror")
        out.append(kept + lo + hi)
    return tuple(out), dtypes[0]


def _source_index(mode, i, kept, cut_lo, lo):
    """The input index that output index ``i`` reads on one axis (clamped into the input)."""
    if not (cut_lo or lo) and mode == "constant":
        return i
    pos = i - lo  # on the cropped axis
    if mode == "reflect":
        pos = te.if_then_else(pos < 0, -pos, pos)
        pos = te.if_then_else(pos > kept - 1, 2 * (kept - 1) - pos, pos)
    else:  # edge, and constant (whose reads outside are replaced by the value: clamped, never out of bounds)
        pos = te.min(te.max(pos, 0), kept - 1)
    return pos + cut_lo if cut_lo else pos


def _pad_te(node, x):
    mode, rank = node.attrs["mode"], len(x.shape)
    plan = crop_and_pad(node.attrs["pads"], rank)
    fill = te.const(node.attrs["value"], x.dtype)

    def fcompute(*i):
        idx, inside = [], []
        for d, (cut_lo, cut_hi, lo, hi) in enumerate(plan):
            kept = x.shape[d] - cut_lo - cut_hi
            idx.append(_source_index(mode, i[d], kept, cut_lo, lo))
            if mode == "constant" and lo:
                inside.append(i[d] >= lo)
            if mode == "constant" and hi:
                inside.append(i[d] < lo + kept)
        value = x[tuple(idx)]
        return te.if_then_else(te.all(*inside), value, fill) if inside else value

    return te.compute(tuple(node.shape), fcompute, name=node.name, tag="injective,pad")


def _cropped(x, plan):
    return x[tuple(slice(cut_lo, x.shape[d] - cut_hi) for d, (cut_lo, cut_hi, _, _) in enumerate(plan))]


def _pad_reference(node, x):
    plan = crop_and_pad(node.attrs["pads"], x.ndim)
    widths = [(lo, hi) for _, _, lo, hi in plan]
    mode = node.attrs["mode"]
    if mode == "constant":
        return np.pad(_cropped(x, plan), widths, constant_values=x.dtype.type(node.attrs["value"]))
    return np.pad(_cropped(x, plan), widths, mode=mode)


def _pad_onnx(w, node):
    pads = w.const(node.name + "_pads", np.asarray(node.attrs["pads"], np.int64))
    inputs = [node.inputs[0], pads]
    if node.attrs["mode"] == "constant":
        inputs.append(w.scalar("value", node.attrs["value"], node.dtype))
    return w.node("Pad", inputs, node.name, mode=node.attrs["mode"])


def _pad_torch(torch, node, x):
    """Cropped by slicing, then padded along each axis by an index table (reflect, edge) or torch's pad."""
    plan = crop_and_pad(node.attrs["pads"], x.dim())
    x = _cropped(x, plan)
    mode = node.attrs["mode"]
    if mode == "constant":
        widths = [w for _, _, lo, hi in reversed(plan) for w in (lo, hi)]
        return torch.nn.functional.pad(x, widths, value=node.attrs["value"])
    for d, (_, _, lo, hi) in enumerate(plan):
        if lo or hi:
            index = np.pad(np.arange(x.shape[d]), (lo, hi), mode=mode)
            x = torch.index_select(x, d, torch.as_tensor(index, dtype=torch.long))
    return x


DEFS.append(OpDef("pad", 1, _infer_pad, {"pads": (REQUIRED, lambda v: ints(v, "pads")),
                                         "mode": ("constant", choice("mode", PAD_MODES)),
                                         "value": (0.0, real("value"))},
                  fusion="injective", layout="nchw", reference=_pad_reference, te=_pad_te, onnx=_pad_onnx,
                  torch=_pad_torch))
