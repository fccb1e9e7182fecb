"""Integer matrix products laid out for dot-product instructions.

A CPU's int8 dot-product instruction (x86 VNNI's vpdpbusd) adds to each 32-bit accumulator lane the sum of 4
products of an unsigned and a signed byte. It reads those 4 bytes of each operand together, so the operand whose
elements vary along the vector lanes (the weights, for a matmul vectorized over its output columns) is packed
with the 4 reduction elements of a lane adjacent: `pack_dot_weight` turns a [K, N] weight into [ceil(K/4), N, 4],
zero-padded. `matmul_dot_packed` computes over that layout with the reduction split as (k_outer, k_inner of 4);
a schedule that puts k_inner right outside the vectorized column loop gets the instruction from the code
generator where the target has it (codegen/llvm/dot_product.h), and the same sums in ordinary vector code
elsewhere.
"""
import numpy as np

from ..core import te
from ._utils import check_tensor

__all__ = ["DOT_GROUP", "pack_dot_weight", "matmul_dot_packed"]

# Bytes of each operand one 32-bit lane of the instruction reads.
DOT_GROUP = 4


def pack_dot_weight(weight, group=DOT_GROUP):
    """A [K, N] integer array as [ceil(K / group), N, group], the K tail zero-padded."""
    weight = np.asarray(weight)
    if weight.ndim != 2:
        raise ValueError(f"pack_dot_weight: expected a [K, N] weight, got shape {weight.shape}")
    k, n = weight.shape
    k_outer = -(-k // group)
    padded = np.zeros((k_outer * group, n), weight.dtype)
    padded[:k] = weight
    return np.ascontiguousarray(padded.reshape(k_outer, group, n).transpose(0, 2, 1))


def matmul_dot_packed(a, packed, k=None, name="T_matmul_dot"):
    """int32 [M, N] = a [M, K] (uint8 or int8) times the weight packed by `pack_dot_weight` ([ceil(K/4), N, 4],
    the other of uint8 / int8). ``k`` is K (default: all of the packed rows, ceil(K/4) * 4); rows of ``a`` past
    K read as 0."""
    op = "matmul_dot_packed"
    check_tensor(a, op, "a")
    check_tensor(packed, op, "packed")
    if len(a.shape) != 2 or len(packed.shape) != 3 or packed.shape[2] != DOT_GROUP:
        raise ValueError(f"{op}: expected a [M, K] and packed [ceil(K/{DOT_GROUP}), N, {DOT_GROUP}], got "
                         f"{a.shape} and {packed.shape}")
    if {a.dtype, packed.dtype} != {"uint8", "int8"}:
        raise TypeError(f"{op}: one operand must be uint8 and the other int8, got {a.dtype} and {packed.dtype}")
    m, k_a = a.shape
    k_outer, n, group = packed.shape
    k = k_a if k is None else k
    if k != k_a or -(-k // group) != k_outer:
        raise ValueError(f"{op}: a has K = {k_a}, the packed weight holds {k_outer * group} (ceil(K/{group}) "
                         f"rows of {group}); they must agree")
    ko = te.reduce_axis((0, k_outer), name="ko")
    ki = te.reduce_axis((0, group), name="ki")

    def fcompute(i, j):
        kk = ko * group + ki
        lhs = a[i, kk] if k % group == 0 else te.if_then_else(kk < k, a[i, kk], te.const(0, a.dtype))
        return te.sum(te.cast(lhs, "int32") * te.cast(packed[ko, j, ki], "int32"), axis=[ko, ki])

    return te.compute((m, n), fcompute, name=name, tag="matmul_dot")
