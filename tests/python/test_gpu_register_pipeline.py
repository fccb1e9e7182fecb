"""Register tiles double-buffered across a shared tile's reduction steps: while a work item computes step k
from one copy of its register tiles, it loads the values of step k + 1 from shared memory into the other
copy. The loop carrying them is printed unrolled by two, so that each copy is indexed by a constant and
stays in registers, and needs no barrier (the tiles are private). Hand-written schedules, states the GPU
rules sample and mutate, and their golden OpenCL C equal the reference on awkward shapes."""
import json
import re

import pytest

import autosched as ans
from autosched import ops, search, te

from schedule_helpers import check, cooperative_fetch, matmul
from test_golden import check_golden
from test_search_gpu import states_where

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")


def pipelined_matmul(n, m, k, item=4, threads=4, k_tile=4, vthreads=1, pipeline=("A", "B")):
    """Groups of threads x threads work items, each computing item x item accumulators (vthreads runs of
    them along the columns, a group tile apart); A and B fetched into shared memory per reduction tile of
    k_tile (double-buffered), their register tiles loaded per reduction step with float vectors and, for
    the operands named in `pipeline`, double-buffered across the k_tile steps."""
    dag, _ = matmul(n, m, k)
    s = dag.get_init_state()
    a_shared, b_shared = s.cache_read("A", "shared", ["C"]), s.cache_read("B", "shared", ["C"])
    a_local, b_local = s.cache_read(a_shared, "local", ["C"]), s.cache_read(b_shared, "local", ["C"])
    i, j, kk = s["C"].iters
    bi, i_rest = s.split("C", i, [threads * item])
    ti, ii = s.split("C", i_rest, [item])
    bj, j_rest = s.split("C", j, [vthreads * threads * item])
    vj, tj, ij = s.split("C", j_rest, [threads, item])
    ko, ki = s.split("C", kk, [k_tile])
    s.reorder("C", [bi, bj, vj, ti, tj, ko, ki, ii, ij])
    for it, binding in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (vj, "vthread")):
        s.bind("C", it, binding)
    s.bind("C", s.fuse("C", [ti, tj]), "threadIdx.x")
    s.unroll("C", ii)
    s.unroll("C", ij)
    for local, name in ((a_local, "A"), (b_local, "B")):
        s.compute_at(local, "C", ki)
        if name == "B":  # a row of B's tile: float4 loads where the row takes them
            fused = s.fuse(local, s[local].iters)
            _, vector = s.split(local, fused, [4 if item % 4 == 0 else 1])
            s.vectorize(local, vector)
        if name in pipeline:
            s.pragma(local, s[local].iters[0], "double_buffer")
    for cache in (a_shared, b_shared):
        cooperative_fetch(s, cache, "C", ko, threads * threads, lanes=1, double_buffer=True)
    return dag, s


def _private_sizes(source):
    return {name: int(size) for name, size in re.findall(r"float (\w+_local)\[(\d+)\];", source)}


def _ki_loop(source):
    """The reduction-step loop (ki, k_1 after printing): its match and its text up to its closing brace."""
    match = re.search(r"for \(int (k_1\w*) = 0; \1 < \d+; \+\+\1\) \{", source)
    assert match, source
    depth, end = 0, match.end() - 1
    for end in range(match.end() - 1, len(source)):
        depth += {"{": 1, "}": -1}.get(source[end], 0)
        if depth == 0:
            break
    return match, source[match.start():end + 1]


@needs_opencl
def test_pipelined_register_tiles_match_golden():
    """Both register tiles hold two copies; step 0's values are loaded before the loop, step k + 1's at the
    start of step k (guarded by k + 1 < 4) into copy (k + 1) % 2; the loop is unrolled by two and has no
    barrier (the shared tiles' one barrier per reduction tile stays outside it)."""
    dag, s = pipelined_matmul(64, 64, 32)
    source = ans.build(dag, s, target="opencl").get_source("cl")
    assert _private_sizes(source) == {"A_shared_local": 8, "B_shared_local": 8}, source
    match, loop = _ki_loop(source)
    assert source[:match.start()].rstrip().endswith("#pragma unroll 2"), source
    assert "barrier(" not in loop and "C[" in loop, loop
    assert loop.count("(k_1 + 1) < 4") == 1, loop
    assert loop.index("(k_1 + 1) < 4") < loop.index("C["), loop  # the next step's loads come first
    check_golden("gpu_matmul_register_pipeline", source, suffix=".cl")
    check(dag, s, target="opencl")


@needs_opencl
@pytest.mark.parametrize("shape,item,k_tile,vthreads,pipeline", [
    ((64, 64, 32), 4, 4, 2, ("A", "B")),
    ((67, 61, 29), 4, 4, 1, ("B",)),
    ((67, 61, 29), 2, 3, 2, ("A",)),
    ((5, 7, 3), 4, 4, 1, ("A", "B")),
    ((1, 9, 1), 2, 2, 3, ("A", "B")),
    ((13, 1, 7), 4, 5, 1, ("B",)),
])
def test_pipelined_register_tiles_equal_the_reference_on_awkward_shapes(shape, item, k_tile, vthreads, pipeline):
    """Primes, 1, reductions the tile does not divide (a partial last step loaded ahead), virtual threads
    (a copy of B's tile per virtual thread, each with its two copies), one operand pipelined or both."""
    dag, s = pipelined_matmul(*shape, item=item, k_tile=k_tile, vthreads=vthreads, pipeline=pipeline)
    source = ans.build(dag, s, target="opencl").get_source("cl")
    assert "#pragma unroll 2" in source, source
    check(dag, s, target="opencl")


@pytest.mark.needs_llvm
def test_a_double_buffered_local_stage_equals_the_reference_on_cpus():
    """On a CPU the pragma changes nothing but the copy indexing: a local copy of a row tile of B, computed
    at the reduction loop and double-buffered, still gives the reference's result."""
    dag, _ = matmul(13, 11, 7)
    s = dag.get_init_state()
    b_local = s.cache_read("B", "local", ["C"])
    i, j, kk = s["C"].iters
    s.reorder("C", [i, kk, j])
    s.compute_at(b_local, "C", kk)
    s.pragma(b_local, s[b_local].iters[0], "double_buffer")
    check(dag, s)


def test_double_buffer_names_the_scopes_it_takes():
    dag, _ = matmul(8, 8, 8)
    s = dag.get_init_state()
    with pytest.raises(ValueError, match="scope 'shared' or 'local'"):
        s.pragma("C", s["C"].iters[0], "double_buffer")
    local = s.cache_read("B", "local", ["C"])
    s.pragma(local, s[local].iters[0], "double_buffer")
    with pytest.raises(ValueError, match="computed at a loop of its consumer"):
        ans.build(dag, s)


# ---- in the search: sampled, mutated, replayed ----

def _matmul_task(n, k, m):
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    dag = ans.ComputeDAG([a, b, ops.matmul(a, b)])
    return dag, ans.SearchTask(compute_dag=dag, target="opencl")


def _pipelined(state):
    """Names of the register tiles (local stages) a state double-buffers."""
    records = json.loads(state.to_json())
    return sorted(state.stages[r[1]].name for r in records
                  if r[0] == "PR" and r[3] == "double_buffer" and state.stages[r[1]].name.endswith(".local"))


@pytest.mark.parametrize("shape", [(64, 64, 64), (6, 20, 10)])
def test_register_pipelining_is_sampled_switched_by_mutation_and_replayed(shape):
    """Thread-bind pipelines some register tiles and not others; the shared-fetch mutation switches them on
    (moving a tile out to a reduce loop of its shared tile where needed) and off; the records replay."""
    dag, task = _matmul_task(*shape)
    states, _ = search.sample_init_population(task, 24, seed=5)
    flags = [_pipelined(s) for s in states]
    assert any(flags) and not all(flags), flags
    switched_on = switched_off = False
    for state in states:
        replayed = ans.State.from_json(dag, state.to_json())
        assert replayed.to_json() == state.to_json()
        for n in range(16):
            new, _, _ = search.mutate(task, state, seed=n, rule="shared-fetch")
            if new is None:
                continue
            before, after = set(_pipelined(state)), set(_pipelined(new))
            switched_on |= after > before
            switched_off |= after < before
            assert ans.State.from_json(dag, new.to_json()).to_json() == new.to_json()
    assert switched_on and switched_off


@needs_opencl
@pytest.mark.parametrize("shape", [(7, 12, 5), (3, 16, 17), (1, 8, 1), (6, 20, 10), (24, 40, 36)])
def test_sampled_pipelined_states_equal_the_reference_on_awkward_shapes(shape):
    """Primes and 1 around a reduction the tiles can split (a prime one leaves no reduce loop inside a shared
    tile to pipeline across)."""
    dag, task = _matmul_task(*shape)
    states = states_where(task, _pipelined, 4, seed=23, samples=32, tries=10)
    assert states, "no state pipelines a register tile"
    for state in states:
        source = ans.build(dag, state, target="opencl").get_source()
        assert "% 2)" in source, dag.print_python_steps(state)
        check(dag, state, target="opencl")
