"""The GPU search rules (OpenCL targets): the sketches of a matmul, a conv2d (NCHW, padding 1), a batch
matmul, softmax, layer norm and an element-wise op carry the steps of the rules that made them (shared cache
reads, cross-thread reduction, cache write, tiling fused at level 3); every state sampled from them, on
awkward shapes (primes, extent 1, non-dividing), builds for OpenCL on the machine's device (PoCL in CI) and
equals the reference evaluator; on a Mali-like device (64 work items, 16 KiB shared memory, vthread 2) no
sampled or mutated state exceeds the limits."""
import json
import os
import re

import numpy as np
import pytest

import autosched as ans
from autosched import _core, ops, search, te

from schedule_helpers import assert_close, random_inputs

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")


def _ph(shape, name):
    return te.placeholder(shape, name=name)


def _matmul():
    a, b = _ph((7, 13), "A"), _ph((13, 5), "B")
    return [a, b, ops.matmul(a, b)]


def _conv2d():
    data, kernel = _ph((1, 3, 7, 5), "data"), _ph((4, 3, 3, 3), "kernel")
    return [data, kernel, ops.conv2d_nchw(data, kernel, stride=1, padding=1)]


def _batch_matmul():
    x, y = _ph((3, 5, 7), "X"), _ph((3, 1, 7), "Y")
    return [x, y, ops.batch_matmul(x, y)]


def _softmax():
    x = _ph((3, 37), "x")
    return [x, ops.softmax(x)]


def _layer_norm():
    x, gamma, beta = _ph((1, 29), "x"), _ph((29,), "gamma"), _ph((29,), "beta")
    return [x, gamma, beta, ops.layer_norm(x, gamma, beta)]


def _elementwise():
    x, y = _ph((7, 13, 5), "x"), _ph((7, 13, 5), "y")
    return [x, y, ops.relu(ops.add(x, y))]


def _winograd_pack():
    """A Winograd-style data pack: a 4x4 input tile per channel and position (read with a stride: not strictly
    inlineable), transformed by a constant matrix written as an expression; 5 positions, 3 channels."""
    d = _ph((3, 12), "D")
    tile = te.compute((3, 5, 4), lambda c, p, a: d[c, p * 2 + a] * te.const(2.0, "float32"), name="input_tile")
    one, half = te.const(1.0, "float32"), te.const(0.5, "float32")
    b = te.compute((4, 4), lambda a, e: te.select(a == e, one, half), name="B")
    r = te.reduce_axis((0, 4), name="r")
    return [d, te.compute((4, 3, 5), lambda e, c, p: te.sum(tile[c, p, r] * b[r, e], axis=r), name="data_pack")]


# name -> (builder, step records that must appear in some sketch, in every sketch)
CASES = {
    "matmul": (_matmul, {"CHW", "CHR", "FSP"}, {"CHR"}),
    "conv2d_nchw_pad1": (_conv2d, {"CHW", "CHR", "FSP", "CI"}, {"CHR"}),  # CI: the padding inlined into its fetch
    "batch_matmul": (_batch_matmul, {"CHR", "FSP"}, set()),
    "softmax": (_softmax, {"RF", "CHW"}, set()),
    "layer_norm": (_layer_norm, {"RF", "CHW"}, set()),
    "elementwise": (_elementwise, {"CI"}, set()),
    "winograd_pack": (_winograd_pack, {"CA", "CI"}, {"CA", "CI"}),
}


def _task(dag, hardware_params=None):
    return ans.SearchTask(compute_dag=dag, target="opencl", hardware_params=hardware_params)


def _records(state):
    return json.loads(state.to_json())


def _rules_applied(state):
    """What a sketch's steps say about the rules that made it (for the report in -s mode)."""
    kinds = [r[0] for r in _records(state)]
    rules = []
    if "CHR" in kinds:
        rules.append("add-cache-read")
    if "RF" in kinds:
        rules.append("cross-thread-reduction")
    if any(r[0] == "CHW" and r[2] == "local" for r in _records(state)):
        rules.append("add-cache-write")
    if "FSP" in kinds:
        rules.append("multi-level-tiling-with-fusion")
    if "CA" in kinds and "CHR" not in kinds and "RF" not in kinds:
        rules.append("special-compute-location")
    if "CI" in kinds:
        rules.append("always-inline")
    return rules or ["skip-stage"]


def test_gpu_policy_lists_the_gpu_rules_in_order():
    policy = search.SketchPolicy(_task(ans.ComputeDAG(_matmul())))
    assert policy.sketch_rule_names == [
        "add-cache-read", "special-compute-location", "inline-into-shared-fetch", "always-inline",
        "simplify-compute-with-const-tensor", "cross-thread-reduction", "split-reduction",
        "add-cache-write", "multi-level-tiling-with-fusion", "multi-level-tiling", "skip-stage"]
    assert policy.init_rule_names == ["fill-tile-size", "thread-bind", "unroll", "vectorize"]
    assert policy.mutation_rule_names == ["tile-size", "auto-unroll", "shared-fetch"]
    assert policy.mutation_probabilities == pytest.approx([0.8, 0.1, 0.1])


@pytest.mark.parametrize("case", list(CASES))
def test_gpu_sketches_carry_the_steps_of_their_rules(case):
    builder, some, every = CASES[case]
    policy = search.SketchPolicy(_task(ans.ComputeDAG(builder())))
    sketches = policy.generate_sketches()
    assert sketches and policy.rule_failures == []
    kinds = [{r[0] for r in _records(s)} for s in sketches]
    assert some <= set().union(*kinds), (case, kinds)
    assert all(every <= k for k in kinds), (case, kinds)
    print(f"\n{case}: {len(sketches)} sketches: " + "; ".join(", ".join(_rules_applied(s)) for s in sketches))
    if case in ("softmax", "layer_norm"):  # the cross-thread stage lives in shared memory, bound per group
        shared = [r for s in sketches for r in _records(s) if r[0] == "CHW" and r[2] == "shared"]
        assert shared, case


@needs_opencl
@pytest.mark.parametrize("shape", [(1, 5, 9, 7, 6, 3, 1), (2, 3, 5, 5, 4, 3, 2), (1, 7, 11, 13, 5, 5, 2)])
def test_gpu_conv_padding_is_computed_by_the_shared_fetch(shape):
    """Half the sketches inline the padding stage into the shared fetch of the input: their states build one
    kernel, with no padded copy of the input in global memory; the others keep the padding's own kernel.
    Both equal the reference (awkward shapes, paddings 1 and 2)."""
    n, c, h, w, k, r, pad = shape
    data, kernel = _ph((n, c, h, w), "data"), _ph((k, c, r, r), "kernel")
    dag = ans.ComputeDAG([data, kernel, ops.conv2d_nchw(data, kernel, stride=1, padding=pad)])
    task = _task(dag)
    states, drops = search.sample_init_population(task, 24, seed=2)
    assert states, drops
    by_kernels = {}
    for state in states:
        source = ans.build(dag, state, target="opencl").get_source("cl")
        by_kernels.setdefault(source.count("__kernel"), []).append(state)
        if source.count("__kernel") == 1:
            assert "PaddedInput" not in source.split("{")[0], source
    assert sorted(by_kernels) == [1, 2], {k: len(v) for k, v in by_kernels.items()}
    _check_states(dag, task, by_kernels[1][:3] + by_kernels[2][:2])


def _check_states(dag, task, states):
    rng = np.random.default_rng(0)
    arrays = random_inputs(dag, rng)
    is_input = [t.op_kind == "placeholder" for t in dag.tensors]
    expected = ans.evaluate(dag, [x for x, inp in zip(arrays, is_input) if inp])
    for state in states:
        got = [x.copy() for x in arrays]
        mod = ans.build(dag, state, target="opencl")
        mod(*got)
        for out, want in zip([x for x, inp in zip(got, is_input) if not inp], expected):
            assert_close(out, want, out.dtype, message=dag.print_python_steps(state))


@needs_opencl
@pytest.mark.parametrize("case", list(CASES))
def test_sampled_gpu_states_match_the_reference_on_opencl(case):
    dag = ans.ComputeDAG(CASES[case][0]())
    task = _task(dag)
    sketches = search.generate_sketches(task)
    # 8 states per sketch (the multi-sketch reductions: 3, each build compiles several kernels on PoCL).
    per_sketch = int(os.environ.get("AUTOSCHED_GPU_SKETCH_SAMPLES", 8 if len(sketches) == 1 else 3))
    for k, sketch in enumerate(sketches):
        states, drops = search.sample_init_population(task, per_sketch, seed=k, sketches=[sketch])
        assert states, f"sketch {k} of {case}: nothing sampled, drops {drops}"
        assert set(drops) <= {"duplicate", "device_limits"}, (case, k, drops)
        bindings = {it.annotation for s in states for st in s.stages for it in st.iters}
        assert "threadIdx.x" in bindings or "blockIdx.x" in bindings, case
        _check_states(dag, task, states)


MALI_LIKE = dict(max_threads_per_block=64, max_shared_memory_per_block=16 * 1024, max_vthread_extent=2)


def _within_limits(dag, state):
    """(work items per group, shared bytes, largest vthread extent) of a state, from its loops after bound
    inference (a shared stage holds the product of its loop extents, twice when double-buffered; float32
    here)."""
    bounded = dag.infer_bound(state)
    vthread = max([it.extent for st in bounded.stages for it in st.iters if it.annotation == "vthread"],
                  default=1)
    threads = max(int(np.prod([it.extent for it in st.iters if it.annotation == "threadIdx.x"] or [1]))
                  for st in bounded.stages)
    doubled = set(_double_buffered(state))  # two copies each
    shared = sum(4 * int(np.prod([it.extent for it in st.iters])) * (2 if st.name in doubled else 1)
                 for st in bounded.stages if st.scope == "shared")
    return threads, shared, vthread


@pytest.mark.parametrize("case", ["matmul", "conv2d_nchw_pad1", "softmax"])
def test_mali_like_limits_hold_for_sampled_and_mutated_states(case):
    dag = ans.ComputeDAG(CASES[case][0]())
    hw = ans.HardwareParams(target="opencl -device=mali", **MALI_LIKE)
    task = _task(dag, hw)
    states, drops = search.sample_init_population(task, 12, seed=2)
    assert states, drops
    mutated = []
    for n, state in enumerate(states):
        new, failure, _ = search.mutate(task, state, seed=n)
        if new is not None:
            mutated.append(new)
        else:
            assert failure, failure
    for state in states + mutated:
        threads, shared, vthread = _within_limits(dag, state)
        assert threads <= 64 and shared <= 16 * 1024 and vthread <= 2, (threads, shared, vthread, state)


def test_states_beyond_the_device_are_dropped_with_a_reason():
    a, b = _ph((256, 256), "A"), _ph((256, 256), "B")
    dag = ans.ComputeDAG([a, b, ops.matmul(a, b)])
    hw = ans.HardwareParams(target="opencl", max_threads_per_block=4, max_shared_memory_per_block=64 * 1024,
                            max_vthread_extent=1, max_local_memory_per_block=1 << 20)
    states, drops = search.sample_init_population(_task(dag, hw), 8, seed=0)
    assert drops.get("device_limits", 0) > 0, drops
    for state in states:
        threads, _, vthread = _within_limits(dag, state)
        assert threads <= 4 and vthread <= 1


def test_gpu_search_round_proposes_new_states():
    dag = ans.ComputeDAG(_matmul())
    policy = search.SketchPolicy(_task(dag), search.SearchParams(evolutionary_search_population=64,
                                                                 evolutionary_search_num_iters=2))
    batch = policy.continue_search_one_round(8)
    assert 0 < len(batch) <= 8
    assert policy.last_round["mutated"] > 0, policy.last_round
    assert len({s.to_json() for s in batch}) == len(batch)


def test_cost_model_features_see_the_gpu_bindings_and_shared_memory():
    from autosched.search.cost_model import extract_features, feature_names
    a, b = _ph((64, 48), "A"), _ph((48, 32), "B")
    dag = ans.ComputeDAG([a, b, ops.matmul(a, b)])
    task = _task(dag)
    states, _ = search.sample_init_population(task, 4, seed=0)
    names = feature_names()
    for rows, error in extract_features(task, states):
        assert error == "" and rows.shape[0] >= 1
        row = dict(zip(names, rows.max(axis=0)))
        assert row["is_gpu"] > 0 and row["blockIdx_x_len"] > 0 and row["shared_bytes_per_block"] > 0, row


@needs_opencl
def test_opencl_baselines_leave_the_loops_to_the_default_gpu_schedule():
    """The CPU baselines (parallel outer loop, vectorized inner loop) would run in one work item on a GPU;
    an OpenCL task's baselines are the plain nest and the one with reductions interchanged, and both build
    for the device and match the reference."""
    dag = ans.ComputeDAG(_matmul())
    cpu = search.baseline_states(ans.SearchTask(compute_dag=dag, target="llvm"))
    assert any(r[0] == "AN" for s in cpu for r in _records(s))
    gpu = search.baseline_states(_task(dag))
    assert [[r[0] for r in _records(s)] for s in gpu] == [[], ["RE"]]
    _check_states(dag, _task(dag), gpu)


def test_special_compute_location_places_the_tile_before_the_unrolled_constant_loops():
    """The input tile is computed at the data pack's last loop before its unrolled loops (not inlined, not
    copied to shared memory), and the constant matrix is inlined so that its reads fold to constants."""
    dag = ans.ComputeDAG(_winograd_pack())
    policy = search.SketchPolicy(_task(dag))
    for sketch in policy.generate_sketches():
        steps = dag.print_python_steps(sketch)
        assert 's.compute_inline("B")' in steps and "cache_read" not in steps, steps
        stage = sketch["data_pack"]
        attach = [r for r in _records(sketch) if r[0] == "CA"]
        assert len(attach) == 1 and attach[0][1] == 1, steps  # input_tile, at data_pack
        first_unrolled = min(i for i, it in enumerate(stage.iters) if it.annotation == "unroll")
        assert attach[0][3] == first_unrolled - 1, steps


# ---- shared stages: vectorised cooperative fetching and row padding ----

def _fetch_params(state):
    """(fetch widths, row-padding offsets) of a state's shared stages, from its records."""
    recs = _records(state)
    vectorized = {(r[1], r[2]) for r in recs if r[0] == "AN" and r[3] == "vectorize"}
    shared = {i for i, st in enumerate(state.stages) if st.scope == "shared"}
    widths = [r[4][0] for r in recs if r[0] == "SP" and r[1] in shared and len(r[4]) == 1
              and (r[1], 2) in vectorized]
    offsets = [r[4] for r in recs if r[0] == "SA" and r[1] in shared]
    return widths, offsets


def _matmul_task(n, k, m):
    """An n x k by k x m matmul: its DAG and its task on the OpenCL target."""
    a, b = _ph((n, k), "A"), _ph((k, m), "B")
    dag = ans.ComputeDAG([a, b, ops.matmul(a, b)])
    return dag, _task(dag)


@pytest.mark.parametrize("shape", [(8, 16, 12), (7, 13, 5), (2, 24, 4)])
def test_shared_fetches_sample_vector_widths_and_row_padding(shape):
    """Every shared stage of a sampled matmul state gets a fetch width among 1, 2, 4 dividing the row it
    copies, and some a row padding of 1 or 4 modulo 32 banks; both replay from the records."""
    dag, task = _matmul_task(*shape)
    states, _ = search.sample_init_population(task, 16, seed=3)
    assert states
    seen_widths, seen_offsets = set(), set()
    cached = [s for s in states if any(r[0] == "CHR" for r in _records(s))]  # not the cross-thread sketch
    assert cached
    for state in cached:
        widths, offsets = _fetch_params(state)
        assert len(widths) == 2, _records(state)  # A.shared and B.shared
        bounded = dag.infer_bound(state)
        for st in bounded.stages:
            if st.scope == "shared":
                assert st.iters[-1].annotation == "vectorize" and st.iters[-2].annotation == "threadIdx.x"
        seen_widths.update(widths)
        seen_offsets.update(offsets)
        replayed = ans.State.from_json(dag, state.to_json())
        assert replayed.to_json() == state.to_json()
    assert seen_widths <= {1, 2, 4} and seen_offsets <= {1, 4}
    _, k, m = shape
    if k % 2 == 0 and m % 2 == 0:
        assert seen_widths - {1}, seen_widths
    assert seen_offsets, "no row padding sampled"


def _fetch_state(dag, task, want_width, want_offset, seed=0):
    """A sampled state whose shared fetches have width `want_width` (mutated until one has) and some row
    padding `want_offset`, and no shared stage stored transposed (whose fetch stores lane by lane)."""
    for state in search.sample_init_population(task, 32, seed=seed)[0]:
        for n in range(40):
            widths, offsets = _fetch_params(state)
            transposed = any(r[0] == "PR" and r[3] == "storage_transpose" for r in _records(state))
            if want_width in widths and want_offset in offsets and not transposed:
                return state
            new, _, _ = search.mutate(task, state, seed=n, rule="shared-fetch")
            state = new if new is not None else state
    raise AssertionError("no state with the wanted fetch parameters")


@needs_opencl
@pytest.mark.parametrize("shape", [(8, 16, 12), (4, 12, 20), (5, 8, 4)])
def test_vectorized_padded_fetches_print_vector_accesses_and_match_the_reference(shape):
    """A fetch of width 4 prints vload4/vstore4 (a row of 4k elements; the region's rows start at multiples
    of 4), the padded shared buffer has its rows `offset` modulo 32, and the kernel equals the reference."""
    dag, task = _matmul_task(*shape)
    for offset in (1, 4):
        state = _fetch_state(dag, task, 4, offset)
        source = ans.build(dag, state, target="opencl").get_source()
        # Stored with vstore4, or as one aligned float4 where the row stride keeps the fetch aligned.
        assert "vload4(0, " in source and ("vstore4(vload4(" in source or ")) = vload4(0, " in source), source
        _check_states(dag, task, [state])


@needs_opencl
@pytest.mark.parametrize("shape", [(7, 13, 5), (3, 11, 17), (1, 1, 1)])
def test_shared_fetch_mutations_stay_equal_to_the_reference_on_awkward_shapes(shape):
    """Prime and unit shapes: the shared-fetch mutation changes a fetch width or a row padding (rows that
    take no vector keep width 1), and every mutated state still matches the reference."""
    dag, task = _matmul_task(*shape)
    states, _ = search.sample_init_population(task, 3, seed=5)
    mutated = []
    for i, state in enumerate(states):
        new, failure, message = search.mutate(task, state, seed=i, rule="shared-fetch")
        if new is not None:
            assert new.to_json() != state.to_json()
            mutated.append(new)
    _check_states(dag, task, states + mutated)


def test_register_tiles_copy_the_shared_stages_at_the_innermost_reduce_loop():
    """The matmul sketch reads each shared stage through a "local" register tile computed at the
    consumer's last reduce loop (inside the shared stage's outer reduce tile)."""
    dag = ans.ComputeDAG(_matmul())
    for sketch in search.generate_sketches(_task(dag)):
        recs = _records(sketch)
        if not any(r[0] == "CHR" for r in recs):
            continue
        names = [st.name for st in sketch.stages]
        for tensor in ("A", "B"):
            local = sketch[f"{tensor}.shared.local"]
            assert local.scope == "local" and sketch[f"{tensor}.shared"].scope == "shared", names
        consumer = sketch["T_matmul.local"] if "T_matmul.local" in names else sketch["T_matmul"]
        kinds = [it.kind for it in consumer.iters]
        last_reduce = max(i for i, k in enumerate(kinds) if k == "reduce")
        steps = dag.print_python_steps(sketch)
        assert f'"A.shared.local", "{consumer.name}", {last_reduce})' in steps, steps


@needs_opencl
@pytest.mark.parametrize("shape", [(8, 16, 12), (6, 10, 14), (5, 3, 8)])
def test_register_tiles_load_vectors_from_shared_memory_and_match_the_reference(shape):
    """Sampled states whose register tile of B takes whole vectors read it with vloadN from the shared
    buffer; the others inline it again (no local copy of A's columns); all equal the reference."""
    dag, task = _matmul_task(*shape)
    states, _ = search.sample_init_population(task, 24, seed=7)
    vector_tiles = []
    for state in states:
        source = ans.build(dag, state, target="opencl").get_source()
        # vloadN, or one aligned vector access where the index is a multiple of the lanes.
        assert "A_shared_local" not in source or "vload" in source or "*)(A_shared + " in source, source
        if "B_shared_local" in source:
            assert "(0, B_shared + " in source or "*)(B_shared + " in source, source
            vector_tiles.append(state)
    assert vector_tiles, "no sampled state loads a register tile with vectors"
    _check_states(dag, task, vector_tiles[:4] + states[:2])


# ---- double-buffered shared stages ----

def _double_buffered(state):
    """Names of the stages a state double-buffers (pragma double_buffer in its records)."""
    return sorted(state.stages[r[1]].name for r in _records(state) if r[0] == "PR" and r[3] == "double_buffer")


@pytest.mark.parametrize("shape", [(8, 16, 12), (7, 13, 5)])
def test_double_buffering_is_sampled_switched_by_mutation_and_replayed(shape):
    """Thread-bind double-buffers some shared stages computed at a reduce loop of extent > 1, not others;
    the shared-fetch mutation switches it on and off; the records replay it."""
    dag, task = _matmul_task(*shape)
    states, _ = search.sample_init_population(task, 16, seed=11)
    flags = [_double_buffered(s) for s in states]
    assert any(flags) and not all(flags), flags
    switched_on = switched_off = False
    for state in states:
        replayed = ans.State.from_json(dag, state.to_json())
        assert replayed.to_json() == state.to_json() and _double_buffered(replayed) == _double_buffered(state)
        for n in range(12):
            new, _, _ = search.mutate(task, state, seed=n, rule="shared-fetch")
            if new is None:
                continue
            before, after = set(_double_buffered(state)), set(_double_buffered(new))
            switched_on |= after > before
            switched_off |= after < before
            assert before == after or len(before ^ after) == 1, (before, after)
    assert switched_on and switched_off


def states_where(task, wanted, count, seed, samples=12, tries=8):
    """Up to `count` states for which `wanted(state)` holds: of `samples` sampled states, each one mutated by
    shared-fetch (up to `tries` times) until it does."""
    found = []
    for state in search.sample_init_population(task, samples, seed=seed)[0]:
        for n in range(tries):
            if wanted(state):
                found.append(state)
                break
            new, _, _ = search.mutate(task, state, seed=n, rule="shared-fetch")
            state = new if new is not None else state
        if len(found) == count:
            break
    return found


def _double_buffered_states(dag, task, count, seed):
    """Up to `count` sampled or shared-fetch-mutated states that double-buffer a shared stage."""
    return states_where(task, _double_buffered, count, seed)


@needs_opencl
@pytest.mark.parametrize("shape", [(7, 13, 5), (3, 11, 17), (1, 29, 1), (6, 10, 14)])
def test_double_buffered_states_match_the_reference_on_awkward_shapes(shape):
    """Sampled and mutated double-buffered states (two copies indexed by the reduce loop modulo 2) equal the
    reference on prime, unit and non-dividing shapes."""
    dag, task = _matmul_task(*shape)
    states = _double_buffered_states(dag, task, 4, seed=13)
    assert states, "no double-buffered state"
    for state in states:
        assert "% 2)" in ans.build(dag, state, target="opencl").get_source(), dag.print_python_steps(state)
    _check_states(dag, task, states)


def _local_bytes(dag, state):
    """Bytes of __local memory the kernels of a state declare (float32 here)."""
    source = ans.build(dag, state, target="opencl").get_source()
    return sum(4 * int(n) for n in re.findall(r"__local float \w+\[(\d+)\]", source))


def test_double_buffering_counts_twice_against_the_shared_memory_limit():
    """Under a small shared-memory limit, every sampled or mutated state (double-buffered ones among them)
    declares no more __local memory than the limit: the check counts both copies."""
    dag, task = _matmul_task(64, 64, 64)
    limit = 2048
    limited = _task(dag, ans.HardwareParams(target="opencl", max_shared_memory_per_block=limit))
    states, drops = search.sample_init_population(limited, 24, seed=19)
    assert drops.get("device_limits", 0) > 0, drops
    mutated = [m for n, st in enumerate(states) for m in [search.mutate(limited, st, seed=n, rule="shared-fetch")[0]]
               if m is not None]
    doubled = [st for st in states + mutated if _double_buffered(st)]
    assert doubled, "no double-buffered state within the limit"
    for state in states + mutated:
        assert _local_bytes(dag, state) <= limit, dag.print_python_steps(state)


# ---- thread-block swizzle ----

def _swizzle(state):
    """The block_swizzle widths of a state's records (empty: none)."""
    return [int(r[3].split("$")[1]) for r in _records(state) if r[0] == "PR" and r[3].startswith("block_swizzle$")]


def test_block_swizzle_is_sampled_changed_by_mutation_and_replayed():
    """Thread-bind swizzles the blockIdx loop of tiled stages by a width among 2, 4, 8 (or not at all); the
    shared-fetch mutation changes the width (1 removes it); the records replay it."""
    dag, task = _matmul_task(30, 8, 44)
    states, _ = search.sample_init_population(task, 16, seed=23)
    widths = {w for s in states for w in _swizzle(s)}
    assert widths and widths <= {2, 4, 8} and any(not _swizzle(s) for s in states), widths
    changed = set()
    for state in states:
        assert ans.State.from_json(dag, state.to_json()).to_json() == state.to_json()
        for n in range(12):
            new, _, _ = search.mutate(task, state, seed=n, rule="shared-fetch")
            if new is not None and _swizzle(new) != _swizzle(state):
                assert len(_swizzle(new)) <= 1
                changed.add((tuple(_swizzle(state)), tuple(_swizzle(new))))
    assert any(after == () for _, after in changed) and any(before == () for before, _ in changed), changed


def test_block_swizzle_needs_a_fused_loop():
    dag, _ = _matmul_task(8, 8, 8)
    s = dag.get_init_state()
    with pytest.raises(ValueError, match="block_swizzle needs a loop fused from two or more"):
        s.pragma("T_matmul", s["T_matmul"].iters[0], "block_swizzle$2")


@needs_opencl
@pytest.mark.parametrize("rows,cols,width", [(5, 3, 2), (7, 1, 4), (1, 6, 8), (9, 4, 4), (3, 5, 1)])
def test_swizzled_groups_cover_every_tile_once(rows, cols, width):
    """A matmul of rows x cols tiles of 4 x 2 (plus a ragged edge) with its blockIdx loop swizzled in bands
    of `width` rows (not dividing the rows, or more than them) equals the reference: every tile is computed
    exactly once."""
    dag, _ = _matmul_task(rows * 4 - 1, 7, cols * 2)
    s = dag.get_init_state()
    i, j, k = s["T_matmul"].iters
    io, ii = s.split("T_matmul", i, [4])
    jo, ji = s.split("T_matmul", j, [2])
    s.reorder("T_matmul", [io, jo, ii, ji, k])
    block = s.fuse("T_matmul", [io, jo])
    thread = s.fuse("T_matmul", [ii, ji])
    s.bind("T_matmul", block, "blockIdx.x")
    s.bind("T_matmul", thread, "threadIdx.x")
    s.pragma("T_matmul", block, f"block_swizzle${width}")
    assert f'"block_swizzle${width}"' in dag.print_python_steps(s)
    _check_states(dag, None, [s])


def test_cost_model_features_count_both_copies_of_a_double_buffered_stage():
    """shared_bytes_per_block (log2(1 + bytes) of the allocated shapes) grows when a shared stage is
    double-buffered, by at most the single-buffered total."""
    from autosched.search.cost_model import extract_features, feature_names
    dag, task = _matmul_task(32, 24, 16)
    state = _double_buffered_states(dag, task, 1, seed=29)[0]
    single = ans.State.from_json(dag, json.dumps([r for r in _records(state)
                                                  if not (r[0] == "PR" and r[3] == "double_buffer")]))
    column = feature_names().index("shared_bytes_per_block")
    (rows, error), (rows_single, error_single) = extract_features(task, [state, single])
    assert error == "" and error_single == ""
    doubled, once = 2.0 ** rows[:, column].max() - 1, 2.0 ** rows_single[:, column].max() - 1
    assert once < doubled - 1 and doubled <= 2 * once + 1, (doubled, once)


def test_double_buffer_needs_a_shared_stage_at_a_serial_loop():
    dag, _ = _matmul_task(8, 8, 8)
    s = dag.get_init_state()
    with pytest.raises(ValueError, match="double_buffer needs a stage of scope 'shared'"):
        s.pragma("T_matmul", s["T_matmul"].iters[0], "double_buffer")
    shared = s.cache_read("A", "shared", ["T_matmul"])
    i, _, _ = s["T_matmul"].iters
    s.bind("T_matmul", i, "blockIdx.x")
    s.compute_at(shared, "T_matmul", i)
    s.pragma(shared, s[shared].iters[0], "double_buffer")
    with pytest.raises(ValueError, match="needs it computed at a serial loop, but loop 'i' of 'T_matmul'"):
        ans.build(dag, s, target="opencl")


def _private_bytes(state):
    """Bytes of the private float32 arrays of a state's lowered loop nest (its "local" allocations)."""
    shapes = re.findall(r"allocate \S+: float32\[([^\]]*)\] local", _core.lowered_text(state))
    return sum(4 * int(np.prod([int(x) for x in shape.split(",")])) for shape in shapes)


def test_gpu_defaults_keep_private_arrays_small():
    # Candidates with tens of KiB of private arrays per work item ran 1000x slower than the best on an H200,
    # or failed to launch; the GPU defaults refuse them in the search, before they are measured.
    hw = ans.HardwareParams(target="opencl -device=nvidia")
    assert hw.max_local_memory_per_block == 4096
    data, kernel = _ph((1, 64, 56, 56), "data"), _ph((64, 64, 3, 3), "kernel")
    dag = ans.ComputeDAG([data, kernel, ops.conv2d_nchw(data, kernel, stride=1, padding=1)])
    task = ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia", hardware_params=hw)
    states, drops = search.sample_init_population(task, 64, seed=0)
    assert states, drops
    assert drops.get("device_limits", 0) > 0, drops
    sizes = [_private_bytes(s) for s in states]
    assert max(sizes) <= 4096, sizes


def _conv_dag(channels, in_channels, height, width, window=3, stride=1, relu=False):
    data = _ph((1, in_channels, height * stride, width * stride), "data")
    kernel = _ph((channels, in_channels, window, window), "kernel")
    out = ops.conv2d_nchw(data, kernel, stride=stride, padding=window // 2)
    return ans.ComputeDAG([data, kernel, ops.relu(out) if relu else out])


# ---- work-group limits: sampled, mutated, learned ----

WIDE = dict(max_shared_memory_per_block=1 << 20, max_vthread_extent=64, max_local_memory_per_block=1 << 20)


@pytest.mark.parametrize("case", ["matmul64", "conv2d"])
def test_sampling_and_tile_mutations_draw_work_groups_within_max_threads_per_block(case):
    """With every other limit out of reach, no sampled state is dropped for its work groups (thread-bind moves
    factors of the tiles' threadIdx level to blockIdx until they fit), and no tile-size mutation proposes more
    work items than the limit."""
    dag = _matmul_task(64, 64, 64)[0] if case == "matmul64" else _conv_dag(32, 16, 14, 14)
    task = _task(dag, ans.HardwareParams(target="opencl", max_threads_per_block=32, **WIDE))
    states, drops = search.sample_init_population(task, 16, seed=3)
    assert states and drops.get("device_limits", 0) == 0, drops
    for n, state in enumerate(states):
        assert _within_limits(dag, state)[0] <= 32, dag.print_python_steps(state)
        for k in range(6):
            new, failure, message = search.mutate(task, state, seed=10 * n + k, rule="tile-size")
            assert "work items per group" not in (message or ""), (failure, message)
            if new is not None:
                assert _within_limits(dag, new)[0] <= 32


def _refused_by_the_kernel(limit):
    return _core.MeasureResult.from_json(json.dumps({"costs": [], "error": "compile", "error_msg": "refused",
                                                     "all_cost": 0, "timestamp": 0, "kernel_max_threads": limit}))


def test_a_learned_work_group_limit_holds_for_every_later_proposal():
    """A refusal teaches the policy its kernel's maximum: every state proposed from the next round on fits it,
    those of the generation the search carries over from the round before included."""
    dag = _conv_dag(16, 8, 8, 8)
    task = _task(dag, ans.HardwareParams(target="opencl", max_threads_per_block=1024, **WIDE))
    params = search.SearchParams(evolutionary_search_population=48, evolutionary_search_num_iters=2,
                                 evolutionary_search_carry_over=True, carry_over_fresh_share=0.25)
    policy = search.SketchPolicy(task, params, seed=1)
    first = policy.continue_search_one_round(16)
    assert max(_within_limits(dag, s)[0] for s in first) > 32
    ok = _core.MeasureResult.from_json(json.dumps({"costs": [1e-3], "error": "none", "error_msg": "",
                                                   "all_cost": 0, "timestamp": 0}))
    policy.record_measured(first, [_refused_by_the_kernel(32)] + [ok] * (len(first) - 1))
    for _ in range(3):
        batch = policy.continue_search_one_round(16)
        assert batch
        assert all(_within_limits(dag, s)[0] <= 32 for s in batch), [_within_limits(dag, s) for s in batch]
        policy.record_measured(batch, [ok] * len(batch))
