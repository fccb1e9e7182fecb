"""Foreign ops that both importers write as several graph ops: the transposed convolution (ONNX ConvTranspose,
torch's conv_transpose / convolution(transposed=True)), einsum (ONNX Einsum, torch.einsum) and windows over
one spatial axis run as 2-D ones over a unit height; and the window of an ONNX convolution or pool (strides,
dilations, pads with auto_pad resolved: float and quantized convolutions alike). ``ctx`` is the importer (its
``g``, ``emit``, ``fresh_name``, ``add_const``)."""
import math

import numpy as np

from ._common import NotConvertible, reshape

__all__ = ["conv_transpose2d", "einsum", "unit_height", "drop_unit_height", "spatial_attrs"]


def _reshape(ctx, x, target):
    if tuple(ctx.g.shape(x)) == tuple(target):
        return x
    return reshape(ctx.g, x, list(target), ctx.fresh_name("reshape"))


def unit_height(ctx, x):
    """Value ``x`` of shape (A, B, L) as (A, B, 1, L)."""
    a, b, length = ctx.g.shape(x)
    return _reshape(ctx, x, [a, b, 1, length])


def drop_unit_height(ctx, x):
    """Value ``x`` of shape (A, B, 1, L) as (A, B, L)."""
    a, b, _, length = ctx.g.shape(x)
    return _reshape(ctx, x, [a, b, length])


def spatial_attrs(shape, kernel, attrs):
    """strides, dilations and pads (the begins of the spatial axes, then their ends) of a 2-D or 3-D conv or
    pool on an input of ``shape``, auto_pad resolved."""
    if shape is None or len(shape) not in (4, 5):
        raise NotConvertible(f"only 2-D and 3-D windows (4-D NCHW or 5-D NCDHW input) are supported, the input "
                             f"has shape {shape}")
    spatial = len(shape) - 2
    strides = tuple(attrs.get("strides", (1,) * spatial))
    dilations = tuple(attrs.get("dilations", (1,) * spatial))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", "VALID"):
        pads = tuple(attrs.get("pads", (0,) * 2 * spatial)) if auto_pad == "NOTSET" else (0,) * 2 * spatial
        return strides, dilations, pads
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise NotConvertible(f"auto_pad '{auto_pad}'")
    if any(not isinstance(d, int) for d in shape):
        raise NotConvertible(f"auto_pad {auto_pad} needs static dims, the input has {shape}")
    size = shape[2:]
    begin, end = [], []
    for n, k, s, d in zip(size, kernel, strides, dilations):
        total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return strides, dilations, tuple(begin + end)


def conv_transpose2d(ctx, x, weight, bias, strides, pads, dilations, output_padding, groups):
    """The transposed convolution of value ``x`` (N, C, H, W) by the constant ``weight`` (C, O / groups, kh, kw)
    as a convolution: zeros between the input's elements (stride - 1 of them, written as a pad of unit axes),
    the input padded by dilation * (kernel - 1) - pad on each side (output_padding more at the end; a negative
    amount crops), and the kernel flipped with its channel axes swapped, per group. ``pads`` are (top, left,
    bottom, right); ``bias`` is a graph value or None."""
    n, c, h, w = ctx.g.shape(x)
    if any(not isinstance(d, int) for d in (c, h, w)):
        raise NotConvertible(f"a transposed convolution of an input with dynamic dims {ctx.g.shape(x)}")
    kh, kw = weight.shape[2:]
    (sh, sw), (dh, dw), (oph, opw) = strides, dilations, output_padding
    if sh > 1 or sw > 1:
        spread = _reshape(ctx, x, [n, c, h, 1, w, 1])
        spread = ctx.emit("pad", [spread], pads=(0,) * 6 + (0, 0, 0, sh - 1, 0, sw - 1))
        x = _reshape(ctx, spread, [n, c, h * sh, w * sw])  # (s - 1) zeros too many at the end of each axis
    top, left, bottom, right = pads
    amounts = [dh * (kh - 1) - top, dw * (kw - 1) - left,
               dh * (kh - 1) - bottom + oph - (sh - 1), dw * (kw - 1) - right + opw - (sw - 1)]
    if any(a < 0 for a in amounts):
        crop = [min(a, 0) for a in amounts]
        x = ctx.emit("pad", [x], pads=(0, 0, crop[0], crop[1], 0, 0, crop[2], crop[3]))
    out_per_group = weight.shape[1]
    flipped = (weight.reshape(groups, c // groups, out_per_group, kh, kw).transpose(0, 2, 1, 3, 4)
               .reshape(groups * out_per_group, c // groups, kh, kw)[:, :, ::-1, ::-1])
    args = [x, ctx.add_const(np.ascontiguousarray(flipped), "weight_flipped")] + ([bias] if bias is not None else [])
    return ctx.emit("conv2d", args, strides=(1, 1), pads=tuple(max(a, 0) for a in amounts), dilations=(dh, dw),
                    groups=groups)


# ---------------- einsum ----------------


def _parse(equation, ranks):
    """(the operands' letter strings, the output's) with "..." spelled out as upper-case letters."""
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise NotConvertible(f"einsum '{equation}' names {len(terms)} operands, {len(ranks)} are given")
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in equation]
    widest = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    ellipsis = "".join(free[:widest])
    terms = [t.replace("...", ellipsis[widest - (r - len(t.replace("...", ""))):]) for t, r in zip(terms, ranks)]
    if not arrow:  # implicit output: the ellipsis, then the letters used once, in alphabetical order
        counts = {ch: "".join(terms).count(ch) for ch in "".join(terms) if ch.islower()}
        out = ellipsis + "".join(sorted(ch for ch, k in counts.items() if k == 1))
    out = out.replace("...", ellipsis)
    for t, r in zip(terms, ranks):
        if len(t) != r:
            raise NotConvertible(f"einsum '{equation}': term '{t}' does not match an operand of rank {r}")
        if len(set(t)) != len(t):
            raise NotConvertible(f"einsum '{equation}': a letter repeated within a term (a diagonal)")
    return terms, out


def _sum_out(ctx, x, term, keep):
    """x with the axes of its letters outside ``keep`` summed away; (value, its letters)."""
    axes = tuple(i for i, ch in enumerate(term) if ch not in keep)
    if not axes:
        return x, term
    if len(axes) == len(term):
        x = _reshape(ctx, x, [1])
        return x, ""
    return ctx.emit("reduce_sum", [x], axes=axes, keepdims=False), "".join(ch for ch in term if ch in keep)


def _arrange(ctx, x, term, order):
    """x transposed so that its letters come in ``order``."""
    perm = tuple(term.index(ch) for ch in order)
    return x if perm == tuple(range(len(perm))) else ctx.emit("transpose", [x], perm=perm)


def einsum(ctx, equation, values):
    """einsum of one or two graph values as reduce_sum, transpose, reshape and matmul: letters in both operands
    and the output are batch axes, letters in both and not in the output are contracted, the others stay
    with their operand (or are summed first where the output lacks them)."""
    shapes = [ctx.g.shape(v) for v in values]
    if len(values) not in (1, 2):
        raise NotConvertible(f"einsum of {len(values)} operands (one or two are supported)")
    if any(not isinstance(d, int) for s in shapes for d in s):
        raise NotConvertible(f"einsum of operands with dynamic dims {shapes}")
    terms, out = _parse(equation, [len(s) for s in shapes])
    if len(values) == 1:
        x, term = _sum_out(ctx, values[0], terms[0], out)
        return _arrange(ctx, x, term, out)
    (a, ta), (b, tb) = [_sum_out(ctx, v, t, out + other) for v, t, other in
                        ((values[0], terms[0], terms[1]), (values[1], terms[1], terms[0]))]
    dims = {}
    for v, t in ((a, ta), (b, tb)):
        for ch, d in zip(t, ctx.g.shape(v)):
            if dims.get(ch, d) != d and 1 not in (d, dims[ch]):
                raise NotConvertible(f"einsum '{equation}': axis '{ch}' has extents {dims[ch]} and {d}")
            dims[ch] = d if dims.get(ch, 1) == 1 else dims[ch]
    batch = [ch for ch in out if ch in ta and ch in tb]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    left = [ch for ch in out if ch in ta and ch not in tb]
    right = [ch for ch in out if ch in tb and ch not in ta]
    if any(ctx.g.shape(a)[ta.index(ch)] != ctx.g.shape(b)[tb.index(ch)] for ch in contract):
        raise NotConvertible(f"einsum '{equation}': a contracted axis is broadcast")

    nb = len(batch)
    a = _arrange(ctx, a, ta, batch + left + contract)
    sa = ctx.g.shape(a)
    a = _reshape(ctx, a, list(sa[:nb]) + [int(np.prod(sa[nb:nb + len(left)])), int(np.prod(sa[nb + len(left):]))])
    b = _arrange(ctx, b, tb, batch + contract + right)
    sb = ctx.g.shape(b)
    b = _reshape(ctx, b, list(sb[:nb]) + [int(np.prod(sb[nb:nb + len(contract)])),
                                          int(np.prod(sb[nb + len(contract):]))])
    product = ctx.emit("matmul", [a, b])
    result = _reshape(ctx, product, [dims[ch] for ch in batch + left + right])
    return _arrange(ctx, result, "".join(batch + left + right), out)
