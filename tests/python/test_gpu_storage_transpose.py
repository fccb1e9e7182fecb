"""Shared stages stored transposed (pragma storage_transpose): the last two dimensions swap places in the
__local buffer, so the register tile of A (a column of the shared tile: several rows at one reduction step)
is read with vector loads, as the register tile of B (a row) already is. Hand-written outer-product matmuls
print vload from both shared buffers and equal the reference on awkward shapes; the thread-bind rule samples
the transposition, and the shared-fetch mutation keeps such states correct (the GPU expert's use of it:
test_gpu_expert.py)."""
import json

import pytest

import autosched as ans
from autosched import ops, search, te

from schedule_helpers import check, cooperative_fetch, matmul

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")


def outer_product_matmul(n, m, k, item=4, threads=4, k_tile=4, pad=4, double_buffer=False):
    """Each work item of threads x threads computes item x item accumulators of C; per reduction tile of
    k_tile, A and B are fetched into shared memory (A transposed, rows padded to `pad` modulo 32; with
    `double_buffer`, the next tile staged in registers during the compute), and per reduction step both
    register tiles (item values of A's column and of B's row) are loaded with float4."""
    dag, _ = matmul(n, m, k)
    s = dag.get_init_state()
    a_shared, b_shared = s.cache_read("A", "shared", ["C"]), s.cache_read("B", "shared", ["C"])
    a_local, b_local = s.cache_read(a_shared, "local", ["C"]), s.cache_read(b_shared, "local", ["C"])
    i, j, kk = s["C"].iters
    bi, i_rest = s.split("C", i, [threads * item])
    ti, ii = s.split("C", i_rest, [item])
    bj, j_rest = s.split("C", j, [threads * item])
    tj, ij = s.split("C", j_rest, [item])
    ko, ki = s.split("C", kk, [k_tile])
    s.reorder("C", [bi, bj, ti, tj, ko, ki, ii, ij])
    for it, binding in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"), (tj, "threadIdx.x")):
        s.bind("C", it, binding)
    s.unroll("C", ii)
    s.unroll("C", ij)
    s.pragma(a_shared, s[a_shared].iters[0], "storage_transpose")
    # The register tiles first: a stage is computed inside its consumer before its producer is.
    for local, along_columns in ((a_local, True), (b_local, False)):
        s.compute_at(local, "C", ki)
        its = s[local].iters
        if along_columns:
            s.reorder(local, [its[1], its[0]])
        fused = s.fuse(local, s[local].iters)
        outer, lanes = s.split(local, fused, [4])
        s.unroll(local, outer)
        s.vectorize(local, lanes)
    for cache, row_axis in ((a_shared, 1), (b_shared, 0)):  # A's rows are stored along its k axis
        cooperative_fetch(s, cache, "C", ko, threads, lanes=1, pad_axis=row_axis, pad=pad,
                          double_buffer=double_buffer)
    return dag, s


def test_storage_transpose_is_a_pragma_of_shared_stages_only():
    dag, _ = matmul(8, 8, 8)
    s = dag.get_init_state()
    local = s.cache_read("A", "local", ["C"])
    with pytest.raises(ValueError, match="storage_transpose needs a stage of scope 'shared'"):
        s.pragma(local, s[local].iters[0], "storage_transpose")
    s = dag.get_init_state()
    shared = s.cache_read("A", "shared", ["C"])
    s.pragma(shared, s[shared].iters[0], "storage_transpose")
    assert "A.shared storage_transpose" in str(s)
    replayed = ans.State.from_json(dag, s.to_json())
    assert replayed.to_json() == s.to_json() and "storage_transpose" in str(replayed)


@needs_opencl
def test_transposed_shared_tile_is_read_with_vector_loads():
    """A (16 x 4 tile per group, stored as 4 rows of 16, 36 apart) and B both reach the register tiles as
    aligned float4 reads; the kernel equals the reference."""
    dag, s = outer_product_matmul(32, 32, 16)
    source = ans.build(dag, s, target="opencl").get_source("cl")
    # Rows 36 floats apart, tiles at multiples of 4: aligned float4 reads from both shared buffers.
    assert "(*(__local float4*)(A_shared + " in source and "(*(__local float4*)(B_shared + " in source, source
    assert "__local float A_shared[124]" in source, source  # 4 rows of 16, 36 apart (4 modulo 32 banks)
    check(dag, s, target="opencl")


@needs_opencl
@pytest.mark.parametrize("shape", [(13, 7, 11), (1, 9, 5), (17, 3, 1), (8, 20, 6), (16, 16, 16)])
@pytest.mark.parametrize("pad,double_buffer", [(0, False), (1, True), (4, True)])
def test_transposed_shared_tiles_equal_the_reference_on_awkward_shapes(shape, pad, double_buffer):
    """Primes, 1, tiles that 4 does not divide (partial register tiles and reduction tiles), double-buffered
    fetches staged in registers."""
    dag, s = outer_product_matmul(*shape, pad=pad, double_buffer=double_buffer)
    if double_buffer and shape[2] > 4:  # more than one reduction tile: the next one is fetched ahead
        assert "prefetch0_at = 0;" in ans.build(dag, s, target="opencl").get_source("cl")
    check(dag, s, target="opencl")


def _records(state):
    return json.loads(state.to_json())


def _transposed(state):
    return [state.stages[r[1]].name for r in _records(state) if r[0] == "PR" and r[3] == "storage_transpose"]


def _matmul_task(n, k, m, **hardware):
    a, b = te.placeholder((n, k), name="A"), te.placeholder((k, m), name="B")
    dag = ans.ComputeDAG([a, b, ops.matmul(a, b)])
    hw = ans.HardwareParams(target="opencl", **hardware) if hardware else None
    return dag, ans.SearchTask(compute_dag=dag, target="opencl", hardware_params=hw)


def _check_states(dag, states):
    for state in states:
        check(dag, state, target="opencl")


def _transposed_states(task, count, seed):
    states, _ = search.sample_init_population(task, count, seed=seed)
    return [s for s in states if _transposed(s)]


@needs_opencl
@pytest.mark.parametrize("shape", [(16, 8, 16), (12, 10, 9), (7, 13, 5)])
def test_thread_bind_samples_transposed_shared_stages_for_vector_register_tiles(shape):
    """Sampled states transpose only a shared stage whose register tile is a column that takes vectors; the
    tile is then read with vloadN from it; they, and their shared-fetch mutations, equal the reference."""
    dag, task = _matmul_task(*shape)
    transposed = _transposed_states(task, 48, seed=11)
    if shape == (16, 8, 16):
        assert transposed, "no sampled state stores a shared stage transposed"
    for state in transposed[:4]:
        source = ans.build(dag, state, target="opencl").get_source("cl")
        for name in _transposed(state):
            assert name.endswith(".shared")
            buffer = name.replace(".", "_")
            assert f"(0, {buffer} + " in source or f"*)({buffer} + " in source, source
    mutated = []
    for i, state in enumerate(transposed[:4]):
        new, _, _ = search.mutate(task, state, seed=i, rule="shared-fetch")
        if new is not None:
            mutated.append(new)
    _check_states(dag, transposed[:4] + mutated)
