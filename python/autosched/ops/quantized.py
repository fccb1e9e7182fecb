"""Integer matrix products laid out for dot-product instructions.

A CPU's int8 dot-product instruction (x86 VNNI's vpdpbusd) adds to each 32-bit accumulator lane the sum of 4
products of an unsigned and a signed byte. It reads those 4 bytes of each operand together, so the operand whose
elements vary along the vector lanes (the weights, for a matmul vectorized over its output columns) is packed
with the 4 reduction elements of a lane adjacent, in panels of `n_block` columns that the reduction walks
contiguously: `pack_dot_weight` turns a [K, N] weight into [ceil(N/n_block), ceil(K/4), n_block, 4],
zero-padded. `matmul_dot_packed` computes over that layout with the reduction split as (k_outer, k_inner of 4),
into [M, ceil(N/n_block), n_block] (the [M, N] result's memory when n_block divides N). A schedule that puts
k_inner right outside the vectorized column loop gets the instruction from the code generator where the target
has it (codegen/llvm/dot_product.h), its widening form (vpmaddwd) on AVX2, and the same sums in ordinary vector
code elsewhere.
"""
import numpy as np

from ..core import te
from ._utils import check_tensor
from .nchwc import _padded
from .nn import _ConvGeometry, _window

__all__ = ["DOT_GROUP", "dot_group", "pack_dot_weight", "matmul_dot_packed", "pack_dot_conv_weight",
           "unpack_dot_conv_weight", "conv2d_nchwc_dot"]

# Bytes of each operand one 32-bit lane of the instruction reads.
DOT_GROUP = 4


def pack_dot_weight(weight, n_block=16, group=DOT_GROUP):
    """A [K, N] integer array as [ceil(N / n_block), ceil(K / group), n_block, group], zero-padded."""
    weight = np.asarray(weight)
    if weight.ndim != 2:
        raise ValueError(f"pack_dot_weight: expected a [K, N] weight, got shape {weight.shape}")
    k, n = weight.shape
    k_outer, n_outer = -(-k // group), -(-n // n_block)
    padded = np.zeros((k_outer * group, n_outer * n_block), weight.dtype)
    padded[:k, :n] = weight
    return np.ascontiguousarray(padded.reshape(k_outer, group, n_outer, n_block).transpose(2, 0, 3, 1))


def dot_group(dtype):
    """Elements of `dtype` that one 32-bit lane of a dot-product instruction reads: 4 bytes (VNNI's vpdpbusd),
    2 bfloat16 (AVX512-BF16's vdpbf16ps)."""
    return 2 if dtype == "bfloat16" else DOT_GROUP


def _dot_types(op, x, w):
    """(group, output dtype) of a dot-product op's operands: uint8 x int8 either way round (groups of 4, int32)
    or bfloat16 x bfloat16 (pairs, float32); a TypeError naming both dtypes otherwise."""
    if {x.dtype, w.dtype} not in ({"uint8", "int8"}, {"bfloat16"}):
        raise TypeError(f"{op}: one operand must be uint8 and the other int8, or both bfloat16; got {x.dtype} and "
                        f"{w.dtype}")
    return dot_group(x.dtype), "float32" if x.dtype == "bfloat16" else "int32"


def matmul_dot_packed(a, packed, name="T_matmul_dot"):
    """[M, ceil(N/n_block), n_block] = a [M, K] times the weight packed by `pack_dot_weight` ([ceil(N/n_block),
    ceil(K/g), n_block, g]): uint8 x int8 (either way round, g = 4) into int32, or bfloat16 x bfloat16 (g = 2)
    into float32. Columns of ``a`` past K (the last group's padding) read as 0; padded output columns hold 0."""
    op = "matmul_dot_packed"
    check_tensor(a, op, "a")
    check_tensor(packed, op, "packed")
    group, out_dtype = _dot_types(op, a, packed)
    if len(a.shape) != 2 or len(packed.shape) != 4 or packed.shape[3] != group:
        raise ValueError(f"{op}: expected a [M, K] and packed [ceil(N/n_block), ceil(K/{group}), n_block, "
                         f"{group}], got {a.shape} and {packed.shape}")
    m, k = a.shape
    n_outer, k_outer, n_block, _ = packed.shape
    if -(-k // group) != k_outer:
        raise ValueError(f"{op}: a has K = {k}, the packed weight holds {k_outer * group} (ceil(K/{group}) "
                         f"rows of {group}); they must agree")
    ko = te.reduce_axis((0, k_outer), name="ko")
    ki = te.reduce_axis((0, group), name="ki")

    def fcompute(i, jo, ji):
        kk = ko * group + ki
        lhs = a[i, kk] if k % group == 0 else te.if_then_else(kk < k, a[i, kk], te.const(0, a.dtype))
        return te.sum(te.cast(lhs, out_dtype) * te.cast(packed[jo, ko, ji, ki], out_dtype), axis=[ko, ki])

    return te.compute((m, n_outer, n_block), fcompute, name=name, tag="matmul_dot")


def pack_dot_conv_weight(weight, in_block, out_block, group=DOT_GROUP):
    """An OIHW weight as (O/y, I/x, KH, KW, x/g, y, g) for `conv2d_nchwc_dot` (x = in_block, y = out_block, g =
    group: 4 for int8, 2 for bfloat16; channels zero-padded up to whole blocks; x a multiple of g)."""
    weight = np.asarray(weight)
    if weight.ndim != 4:
        raise ValueError(f"pack_dot_conv_weight: expected an OIHW weight, got shape {weight.shape}")
    if in_block % group:
        raise ValueError(f"pack_dot_conv_weight: the input block ({in_block}) must be a multiple of {group}")
    o, i, kh, kw = weight.shape
    ob, ib = -(-o // out_block), -(-i // in_block)
    padded = np.zeros((ob * out_block, ib * in_block, kh, kw), weight.dtype)
    padded[:o, :i] = weight
    blocked = padded.reshape(ob, out_block, ib, in_block // group, group, kh, kw)
    return np.ascontiguousarray(blocked.transpose(0, 2, 5, 6, 3, 1, 4))


def unpack_dot_conv_weight(packed, out_channels, in_channels):
    """The OIHW weight (out_channels, in_channels, KH, KW) that `pack_dot_conv_weight` packed, padding dropped."""
    ob, ib, kh, kw, groups, y, group = packed.shape
    blocked = np.asarray(packed).transpose(0, 5, 1, 4, 6, 2, 3).reshape(ob * y, ib * groups * group, kh, kw)
    return np.ascontiguousarray(blocked[:out_channels, :in_channels])


def conv2d_nchwc_dot(data, kernel, stride, padding, dilation=1, name="conv2d_NCHWc_dot", pad_value=0):
    """int32 (N, O/y, OH, OW, y) = data (N, C/x, H, W, x) (uint8 or int8, x a multiple of 4) convolved with the
    kernel packed by `pack_dot_conv_weight` ((O/y, C/x, KH, KW, x/4, y, 4), the other of uint8 / int8); or, both
    bfloat16, float32 over groups of 2 ((O/y, C/x, KH, KW, x/2, y, 2), `group=2` when packing). Each output
    lane's reduction over a group of consecutive input channels is the dot-product instruction's group. The
    border reads `pad_value` (a constant or a scalar expression: a quantized input's zero point)."""
    op = "conv2d_nchwc_dot"
    check_tensor(data, op, "data")
    check_tensor(kernel, op, "kernel")
    group, out_dtype = _dot_types(op, data, kernel)
    if len(data.shape) != 5 or len(kernel.shape) != 7 or kernel.shape[6] != group:
        raise ValueError(f"{op}: expected data (N, C/x, H, W, x) and kernel (O/y, C/x, KH, KW, x/{group}, y, "
                         f"{group}), got {data.shape} and {kernel.shape}")
    n, in_cb, in_h, in_w, in_x = data.shape
    out_cb, k_cb, k_h, k_w, k_groups, out_y, group = kernel.shape
    if (k_cb, k_groups * group) != (in_cb, in_x):
        raise ValueError(f"{op}: channel mismatch: data {data.shape} has {in_cb} blocks of {in_x} channels, the "
                         f"kernel {kernel.shape} expects {k_cb} blocks of {k_groups * group}")
    geo = _ConvGeometry(op, (in_h, in_w), (k_h, k_w), stride, padding, dilation)
    padded = _padded(data, geo, value=pad_value)
    (s_h, s_w), (d_h, d_w) = geo.stride, geo.dilation

    def fcompute(nn, ob, yy, xx, oy):
        rc = te.reduce_axis((0, k_cb), name="rc")
        ry = te.reduce_axis((0, k_h), name="ry")
        rx = te.reduce_axis((0, k_w), name="rx")
        rg = te.reduce_axis((0, k_groups), name="rg")
        ri = te.reduce_axis((0, group), name="ri")
        pixel = padded[nn, rc, _window(yy, s_h, ry, d_h), _window(xx, s_w, rx, d_w), rg * group + ri]
        weight = kernel[ob, rc, ry, rx, rg, oy, ri]
        return te.sum(te.cast(pixel, out_dtype) * te.cast(weight, out_dtype), axis=[rc, ry, rx, rg, ri])

    return te.compute((n, out_cb, geo.out_h, geo.out_w, out_y), fcompute, name=name, tag="conv2d_nchwc_dot")
