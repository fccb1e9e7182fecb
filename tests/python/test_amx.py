"""AMX tile multiplies (codegen/llvm/amx_tile.h): a dot-product block whose rows (at most 16) and a run of at
least 16 groups of K sit inside its group loop becomes tile loads, tdpbusd (uint8 x int8; tdpbsud the other way
round) or tdpbf16ps (bfloat16), and a tile store, in code built for a CPU with AMX. Code for Sapphire Rapids is
compiled here and read (-no-host-check); where this host has AMX (and the OS lets the process use its tiles), the
results are checked against numpy too, on awkward shapes (K not a multiple of 64, rows not a multiple of 16)."""
import re

import numpy as np
import pytest

import autosched as ans
from autosched import search
from autosched.ops.quantized import pack_dot_weight

pytestmark = pytest.mark.needs_llvm

AMX = "llvm -mcpu=sapphirerapids -no-host-check"
NO_AMX = "llvm -mcpu=sapphirerapids -mattr=-amx-tile -no-host-check"
HOST_HAS_AMX = {"amx-tile", "amx-int8", "amx-bf16"} <= set(ans.Target("llvm").features)


def _count(module, instruction):
    return len(re.findall(rf"\b{instruction}\b", module.get_source("asm")))


def _built(func, args, target):
    task = ans.SearchTask(func=func, args=args, target=target)
    return ans.build(task.compute_dag, search.expert_schedule(task), target)


@pytest.mark.parametrize("m,n,k", [(64, 64, 128), (10, 40, 192), (16, 16, 64)])
def test_the_int8_matmul_becomes_tile_multiplies_where_the_cpu_has_amx(m, n, k):
    module = _built("matmul_u8s8_packed", (m, n, k), AMX)
    assert _count(module, "tdpbusd") >= 1 and _count(module, "tileloadd") >= 2  # A and B
    assert _count(module, "tileloadd") + _count(module, "tilezero") >= 3  # and C, loaded or zeroed
    assert _count(module, "tilestored") >= 1 and _count(module, "ldtilecfg") >= 1
    assert _count(module, "vpdpbusd") == 0  # every block is a tile block
    module = _built("matmul_u8s8_packed", (m, n, k), NO_AMX)
    assert _count(module, "tdpbusd") == 0 and _count(module, "vpdpbusd") >= 1


@pytest.mark.parametrize("func,k,k_per_chunk", [("matmul_u8s8_packed", 256, 64), ("matmul_u8s8_packed", 1024, 64),
                                               ("matmul_bf16_packed", 1024, 32)])
def test_the_expert_blocks_two_by_two_tiles_of_c_over_the_whole_reduction(func, k, k_per_chunk):
    """32 rows x 2 panels: four independent tiles of C, each tile of A and of B used twice per chunk of K (64
    bytes). The accumulators stay in tile registers over the whole of K: zeroed once (tilezero, not the
    vector stores of the accumulators' initialisation and a load) and stored once."""
    module = _built(func, (256, 256, k), AMX)
    chunks = k // k_per_chunk
    multiply = "tdpbusd" if "u8s8" in func else "tdpbf16ps"
    assert _count(module, "tilestored") == 4 and _count(module, multiply) == 4 * chunks
    assert _count(module, "tilezero") == 4 and _count(module, "tileloadd") == 4 * chunks  # two of A, two of B
    assert "zeroinitializer" not in module.get_source("ll")  # the accumulators' own zeroing is not emitted


def test_the_bfloat16_matmul_becomes_tdpbf16ps():
    assert _count(_built("matmul_bf16_packed", (64, 64, 128), AMX), "tdpbf16ps") >= 1
    assert _count(_built("matmul_bf16_packed", (64, 64, 128), NO_AMX), "tdpbf16ps") == 0


@pytest.mark.parametrize("m,n,k", [(32, 32, 32), (20, 40, 100)], ids=["short_k", "partial_chunk"])
def test_blocks_without_whole_tiles_of_k_are_left_to_the_dot_product_instruction(m, n, k):
    """Fewer than 16 groups (64 bytes) of K, or a last chunk of fewer (K = 100: 25 groups): vpdpbusd instead,
    as one shape per kind of tile keeps the tile registers enough."""
    module = _built("matmul_u8s8_packed", (m, n, k), AMX)
    assert _count(module, "tdpbusd") == 0 and _count(module, "vpdpbusd") >= 1


def _int8(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (k, n)).astype(np.int8)
    return a, w, a.astype(np.int64) @ w.astype(np.int64)


@pytest.mark.skipif(not HOST_HAS_AMX, reason="this host has no AMX it may use: the other tests read the code")
@pytest.mark.parametrize("m,n,k", [(64, 64, 128), (20, 40, 100), (33, 17, 260), (1, 16, 64), (48, 96, 320),
                                   (256, 64, 1024)])
def test_tile_multiplies_compute_the_exact_product(m, n, k):
    module = _built("matmul_u8s8_packed", (m, n, k), "llvm")
    a, w, want = _int8(m, n, k, seed=m + n + k)
    out = np.zeros((m, -(-n // 16), 16), np.int32)
    module(a, pack_dot_weight(w, 16), out)
    np.testing.assert_array_equal(out.reshape(m, -1)[:, :n], want)


@pytest.mark.skipif(not HOST_HAS_AMX, reason="this host has no AMX it may use: the other tests read the code")
def test_bfloat16_tile_multiplies_match_the_product():
    import ml_dtypes
    rng = np.random.default_rng(5)
    m, n, k = 48, 32, 160
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    module = _built("matmul_bf16_packed", (m, n, k), "llvm")
    assert _count(module, "tdpbf16ps") >= 1
    out = np.zeros((m, n // 16, 16), np.float32)
    module(a, pack_dot_weight(w, 16, group=2), out)
    want = a.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(out.reshape(m, n), want, rtol=1e-5, atol=1e-4)


def test_a_signed_broadcast_operand_takes_tdpbsud():
    from autosched import te
    from autosched.ops.quantized import matmul_dot_packed
    a = te.placeholder((32, 128), "int8", "a")
    packed = te.placeholder((2, 32, 16, 4), "uint8", "packed")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([a, packed, matmul_dot_packed(a, packed)]), target=AMX)
    module = ans.build(task.compute_dag, search.expert_schedule(task), AMX)
    assert _count(module, "tdpbsud") >= 1 and _count(module, "tdpbusd") == 0
