"""Virtual threads run interleaved, as the work items of a group do: a vthread split of a GPU tile makes each
work item's accumulators several runs, a group tile's part apart, updated in one innermost body. The shared
tile covers every virtual thread and is fetched once; a register tile that every virtual thread reads alike
is loaded once; the rest get one copy per virtual thread. Hand-written interleaved matmuls, sampled states
with virtual threads equal the reference on awkward shapes (the GPU expert's: test_gpu_expert.py)."""
import re

import pytest

import autosched as ans
from autosched import ops, search, te

from schedule_helpers import check, cooperative_fetch, matmul

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")


def interleaved_matmul(n, m, k, item=4, threads=4, v_rows=1, v_cols=2, k_tile=4, double_buffer=False):
    """Work items of threads x threads each compute item x item accumulators per virtual thread; v_rows x
    v_cols virtual threads per work item, so a work item's columns are v_cols runs of `item`, threads x item
    apart. A and B tiles are fetched into shared memory per reduction tile, register tiles per step."""
    dag, _ = matmul(n, m, k)
    s = dag.get_init_state()
    a_shared, b_shared = s.cache_read("A", "shared", ["C"]), s.cache_read("B", "shared", ["C"])
    a_local, b_local = s.cache_read(a_shared, "local", ["C"]), s.cache_read(b_shared, "local", ["C"])
    i, j, kk = s["C"].iters
    bi, i_rest = s.split("C", i, [v_rows * threads * item])
    vi, ti, ii = s.split("C", i_rest, [threads, item])
    bj, j_rest = s.split("C", j, [v_cols * threads * item])
    vj, tj, ij = s.split("C", j_rest, [threads, item])
    ko, ki = s.split("C", kk, [k_tile])
    s.reorder("C", [bi, bj, vi, vj, ti, tj, ko, ki, ii, ij])
    for it, binding in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (vi, "vthread"), (vj, "vthread")):
        s.bind("C", it, binding)
    s.bind("C", s.fuse("C", [ti, tj]), "threadIdx.x")
    s.unroll("C", ii)
    s.unroll("C", ij)
    for local in (a_local, b_local):
        s.compute_at(local, "C", ki)
    for cache in (a_shared, b_shared):
        cooperative_fetch(s, cache, "C", ko, threads * threads, lanes=1, pad_axis=0, pad=4,
                          double_buffer=double_buffer)
    return dag, s


def _private_sizes(source):
    return {name: int(size) for name, size in re.findall(r"float (\w+_local)\[(\d+)\];", source)}


@needs_opencl
def test_vthreads_share_the_shared_fetch_and_interleave_in_the_innermost_body():
    """Two virtual threads along the columns: A's register tile (the same rows for both) is loaded once, B's
    and the accumulators have a copy per virtual thread, the shared tiles are fetched once per reduction
    tile, and the innermost loop runs over the virtual threads."""
    dag, s = interleaved_matmul(64, 64, 32)
    source = ans.build(dag, s, target="opencl").get_source("cl")
    assert _private_sizes(source) == {"A_shared_local": 4, "B_shared_local": 8}, source
    assert len(re.findall(r"\bA_shared\[[^\]]*\] = A\[", source)) == 1, source
    update = re.search(r"for \(int (\w+) = 0; \1 < 2; \+\+\1\) \{\n\s*C\[[^\n]*\+= |"
                       r"for \(int (\w+) = 0; \2 < 2; \+\+\2\) \{\n\s*C\[[^\n]*\] = \(C\[", source)
    assert update, source
    check(dag, s, target="opencl")


@needs_opencl
@pytest.mark.parametrize("shape,v_rows,v_cols,double_buffer", [
    ((64, 64, 32), 2, 2, True),
    ((67, 61, 29), 2, 2, False),
    ((67, 61, 29), 1, 3, True),
    ((5, 7, 3), 2, 2, False),
    ((1, 9, 1), 3, 1, True),
    ((13, 1, 7), 1, 2, False),
])
def test_interleaved_matmuls_equal_the_reference_on_awkward_shapes(shape, v_rows, v_cols, double_buffer):
    dag, s = interleaved_matmul(*shape, v_rows=v_rows, v_cols=v_cols, double_buffer=double_buffer)
    check(dag, s, target="opencl")


def _matmul_task(n, k, m, **hardware):
    a, b = te.placeholder((n, k), name="A"), te.placeholder((k, m), name="B")
    dag = ans.ComputeDAG([a, b, ops.matmul(a, b)])
    hw = ans.HardwareParams(target="opencl", **hardware) if hardware else None
    return dag, ans.SearchTask(compute_dag=dag, target="opencl", hardware_params=hw)


def _vthreads(dag, state):
    extents = [it.extent for st in dag.infer_bound(state).stages for it in st.iters if it.annotation == "vthread"]
    return max(extents, default=1)


@needs_opencl
@pytest.mark.parametrize("shape", [(32, 16, 32), (12, 10, 9), (7, 13, 5)])
def test_sampled_states_with_vthreads_equal_the_reference(shape):
    dag, task = _matmul_task(*shape)
    states, _ = search.sample_init_population(task, 48, seed=3)
    with_vthreads = [s for s in states if _vthreads(dag, s) > 1]
    if shape == (32, 16, 32):
        assert with_vthreads, "no sampled state has a virtual thread"
    for state in with_vthreads[:4]:
        check(dag, state, target="opencl")
