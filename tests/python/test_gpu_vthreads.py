"""Virtual threads run interleaved, as the work items of a group do: a vthread split of a GPU tile makes each
work item's accumulators several runs, a group tile's part apart, updated in one innermost body. The shared
tile covers every virtual thread and is fetched once; a register tile that every virtual thread reads alike
is loaded once; the rest get one copy per virtual thread. Hand-written interleaved matmuls, sampled states
with virtual threads and the GPU expert's interleaved matmul equal the reference on awkward shapes."""
import json
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


# The expert's first kernel (rows in runs) keeps 800 bytes of private arrays per work item; a device allowing
# 500 gets the library kernel's placement (both innermost, in two interleaved virtual threads).
LIBRARY_PLACEMENT = dict(max_local_memory_per_block=500)


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


@needs_opencl
def test_gpu_expert_interleaves_each_work_items_tile_in_two_virtual_threads():
    """The expert's 256 x 64 x 256 matmul: each work item's 8 x 8 accumulators are 2 x 2 virtual threads of
    4 x 4, so its float4 reads of B's register tile lie 64 columns apart."""
    dag, task = _matmul_task(256, 64, 256, **LIBRARY_PLACEMENT)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert "both innermost, in two interleaved virtual threads" in note, note
    assert _vthreads(dag, state) == 4
    source = ans.build(dag, state, target="opencl").get_source("cl")
    assert re.search(r"\(\*\(__local float4\*\)\(B_shared \+ \(+\(\w+ % 2\) \* 64\)", source), source
    check(dag, state, target="opencl")


@needs_opencl
def test_gpu_expert_places_rows_in_runs_and_pipelines_as_read_lane_by_lane():
    """The expert's first kernel on a 256 x 64 x 256 matmul: each work item's 8 x 8 accumulators are rows in 2
    virtual threads of 4 and columns in 2 virtual threads of 2 runs of 2 (64 columns apart); the reduction tile
    of 8 is stepped 2 x 4, A's register tile of a step (4 x 8 values) read lane by lane from its transposed
    shared copy one step ahead (two private copies per virtual thread), A fetched lane by lane and B 2 lanes at
    a time, unroll depths 64 and 16, groups swizzled by 2."""
    dag, task = _matmul_task(256, 64, 256)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert "rows in two interleaved virtual threads of 4" in note, note
    assert _vthreads(dag, state) == 4
    records = json.loads(state.to_json())
    splits = [r[4] for r in records if r[0] == "SP" and r[1] == 2 and len(r[4]) > 1]
    assert splits == [[2, 16, 1, 4], [2, 16, 2, 2], [2, 4]], splits
    pragmas = sorted(r[3] for r in records if r[0] == "PR")
    assert pragmas == sorted(["block_swizzle$2", "storage_transpose", "double_buffer", "double_buffer",
                              "double_buffer", "auto_unroll_max_step$64", "auto_unroll_max_step$16"]), pragmas
    source = ans.build(dag, state, target="opencl").get_source("cl")
    assert "float A_shared_local[128];" in source, source  # 2 x 2 x 32: this step's tile and the next one's
    assert re.search(r"A_shared_local\[[^\]]*\] = A_shared\[", source), source  # one lane at a time
    assert re.search(r"A_shared\[[^\]]*\] = A\[", source), source  # fetched one lane at a time
    assert "vload2(0, B + " in source and "__local float4" not in source, source
    check(dag, state, target="opencl")
    # Only where its 128 x 128 x 8 tiles divide the extents: a 96 x 40 x 136 matmul gets another placement.
    _, other = _matmul_task(96, 40, 136)
    state, reason, note = search.expert_schedule_info(other)
    assert state is not None and "runs" not in note, (reason, note)
