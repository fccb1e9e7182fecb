"""Register blocks in the search, on every kind of compute-heavy operator of the library (matmul, dense,
batch matmul, conv2d NCHW and NHWC, depthwise NCHW and NHWC) and awkward shapes (primes, extents of 1, sizes
no block divides):
- the expert schedule computes what the reference evaluator computes; on a 1024^3 matmul its register block
  fills the host's register file, is vectorized along the contiguous axis and unrolled, B is packed and the
  accumulators are a stage at the register tile; tuning measures it with the baselines (its record is in the
  log); tasks it cannot handle get none, with the reason, never an error;
- states sampled from the register-block family (register_block_share 1) and from plain divisors (0), and
  their tile-size mutations, compute what the reference computes;
- vectorization is never lost: in every sampled state (and tile-size mutation) every compute-heavy stage,
  the `.local` stage of a cache write included, vectorizes the innermost tile of its contiguous output axis.
tests/cpp/test_search_expert.cc counts how much of the sampled population the family takes."""
import json
import re

import numpy as np
import pytest

import autosched as ans
from autosched import ops, search, te
from autosched.measure import LocalRunner

from schedule_helpers import check, is_root

HOST = ans.Target("llvm")
RNG = np.random.default_rng(5)


def _ph(shape, name):
    return te.placeholder(shape, name=name)


def _matmul(n, m, k):
    a, b = _ph((n, k), "A"), _ph((k, m), "B")
    return [a, b, ops.matmul(a, b)]


def _dense(n, m, k):
    data, weight, bias = _ph((n, k), "data"), _ph((m, k), "weight"), _ph((m,), "bias")
    return [data, weight, bias, ops.relu(ops.dense(data, weight, bias))]


def _batch_matmul(b, n, m, k, transpose_b=True):
    x = _ph((b, n, k), "x")
    y = _ph((b, m, k) if transpose_b else (b, k, m), "y")
    return [x, y, ops.batch_matmul(x, y, transpose_b=transpose_b)]


def _conv_nhwc(n, h, w, ci, co, k, stride):
    data, kernel = _ph((n, h, w, ci), "data"), _ph((k, k, ci, co), "kernel")
    return [data, kernel, ops.conv2d_nhwc(data, kernel, stride=stride, padding=k // 2)]


def _conv_nchw(n, ci, h, w, co, k, stride):
    data, kernel = _ph((n, ci, h, w), "data"), _ph((co, ci, k, k), "kernel")
    return [data, kernel, ops.conv2d_nchw(data, kernel, stride=stride, padding=k // 2)]


def _conv_nchwc(n, cb, h, w, ob, k, stride, lanes=8):
    data, kernel = _ph((n, cb, h, w, lanes), "data"), _ph((ob, cb, k, k, lanes, lanes), "kernel")
    return [data, kernel, ops.conv2d_nchwc(data, kernel, stride=stride, padding=k // 2)]


def _depthwise_nhwc(n, h, w, c, k, stride):
    data, kernel = _ph((n, h, w, c), "data"), _ph((k, k, c, 1), "kernel")
    return [data, kernel, ops.depthwise_conv2d_nhwc(data, kernel, stride=stride, padding=k // 2)]


def _depthwise_nchw(n, c, h, w, k, stride):
    data, kernel = _ph((n, c, h, w), "data"), _ph((c, 1, k, k), "kernel")
    return [data, kernel, ops.depthwise_conv2d_nchw(data, kernel, stride=stride, padding=k // 2)]


# Primes above and below the vector width, extents of 1, sizes that no register block divides, wide B rows
# (packed), transposed weights (packed across rows), strides.
AWKWARD = {
    "matmul-primes": lambda: _matmul(13, 67, 31),
    "matmul-wide": lambda: _matmul(24, 96, 40),
    "matmul-ones": lambda: _matmul(1, 1, 7),
    "matmul-row-of-1": lambda: _matmul(1, 70, 9),
    "matmul-prime-rows": lambda: _matmul(67, 5, 3),
    "matmul-prime-columns": lambda: _matmul(6, 71, 4),
    "matmul-rows-no-block-divides": lambda: _matmul(128, 32, 9),
    "dense-primes": lambda: _dense(7, 97, 33),
    "batch_matmul-transposed": lambda: _batch_matmul(2, 13, 67, 19),
    "batch_matmul": lambda: _batch_matmul(3, 5, 36, 11, transpose_b=False),
    "conv2d_nhwc": lambda: _conv_nhwc(1, 9, 11, 5, 67, 3, 1),
    "conv2d_nhwc-stride2": lambda: _conv_nhwc(2, 7, 7, 3, 20, 3, 2),
    "conv2d_nchw": lambda: _conv_nchw(1, 5, 9, 13, 33, 3, 2),
    "conv2d_nchw-1x1": lambda: _conv_nchw(1, 7, 5, 5, 17, 1, 1),
    "conv2d_nchwc-3-blocks": lambda: _conv_nchwc(1, 2, 7, 11, 3, 3, 1),
    "conv2d_nchwc-1x1-prime": lambda: _conv_nchwc(1, 3, 13, 13, 6, 1, 1, lanes=4),
    "depthwise_nhwc": lambda: _depthwise_nhwc(1, 9, 7, 37, 3, 1),
    "depthwise_nchw": lambda: _depthwise_nchw(1, 11, 9, 10, 3, 2),
}


@pytest.mark.needs_llvm
@pytest.mark.parametrize("case", list(AWKWARD))
def test_expert_schedule_matches_reference_on_awkward_shapes(case):
    dag = ans.ComputeDAG(AWKWARD[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, f"{case}: {reason}"
    assert reason == "" and "register block" in note
    check(dag, state)
    # The seed is a state like any other: it replays from its record.
    again = ans.State.from_json(dag, state.to_json())
    assert again.to_json() == state.to_json()


def _tiled_stage(state):
    (name,) = [s.name for s in state.stages if s.name.endswith(".local")]
    return name


@pytest.mark.needs_llvm
def test_matmul_1024_seed_fills_the_host_register_file():
    dag = ans.ComputeDAG(_matmul(1024, 1024, 1024))
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    hw = task.hardware_params
    lanes = hw.vector_unit_bytes // 4
    state = search.expert_schedule(task)
    records = json.loads(state.to_json())
    packs = [r for r in records if r[0] == "PK"]
    assert len(packs) == 1 and packs[0][4] % lanes == 0  # B in panels of whole vectors
    local = _tiled_stage(state)
    bounded = dag.infer_bound(state)
    iters = bounded[local].iters
    vec, rows = iters[-1], iters[-2]
    assert vec.annotation == "vectorize" and vec.extent % lanes == 0 and vec.name.startswith("j")
    assert rows.annotation == "unroll" and rows.name.startswith("i")
    vectors = vec.extent // lanes
    accumulators = rows.extent * vectors
    assert accumulators + vectors + 1 <= hw.num_vector_registers
    assert accumulators >= hw.num_vector_registers // 2  # a block that fills the register file
    # The accumulator stage is the register block: every spatial loop outside its reduction runs once.
    reduce_at = min(i for i, it in enumerate(iters) if it.kind == "reduce")
    assert all(it.extent == 1 for it in iters[:reduce_at] + iters[reduce_at:-2] if it.kind == "spatial")
    assert any(it.annotation == "parallel" for it in bounded["T_matmul"].iters)


def test_register_block_follows_the_hardware_params():
    """The same 96^3 matmul with AVX2's facts (8 lanes, 16 registers) and AVX-512's (16 lanes, 32)."""
    dag = ans.ComputeDAG(_matmul(96, 96, 96))
    blocks = {}
    for name, width, registers in (("avx2", 32, 16), ("avx512", 64, 32)):
        hw = ans.HardwareParams(target="llvm", vector_unit_bytes=width, num_vector_registers=registers,
                                fma_units=2)
        task = ans.SearchTask(compute_dag=dag, target="llvm", hardware_params=hw)
        state = search.expert_schedule(task)
        iters = dag.infer_bound(state)[_tiled_stage(state)].iters
        blocks[name] = (iters[-2].extent, iters[-1].extent)
        lanes = width // 4
        vectors = -(-iters[-1].extent // lanes)
        assert iters[-2].extent * vectors + vectors + 1 <= registers
    assert blocks["avx2"] == (6, 16)  # 6 rows x 2 vectors of 8: 12 of 16 registers accumulate
    assert blocks["avx512"][0] * (blocks["avx512"][1] // 16) >= 12


def _nchwc_task():
    dag = ans.ComputeDAG(_conv_nchwc(1, 2, 12, 12, 4, 3, 1))
    hw = ans.HardwareParams(target="llvm", vector_unit_bytes=32, num_vector_registers=16, fma_units=2)
    return dag, ans.SearchTask(compute_dag=dag, target="llvm", hardware_params=hw)


def _nchwc_block(dag, state):
    """(columns, rows) of the register block of the conv's tiled stage: the innermost output-channel-block
    loop when annotated (else 1) and the unrolled row loop's extent (0 without one); checks that the output
    channels within a block (8 lanes: one register) are vectorized and the block fits the 16 registers."""
    (iters,) = [st.iters for st in dag.infer_bound(state).stages if any(it.kind == "reduce" for it in st.iters)]
    block = [it for it in iters if it.kind == "spatial" and it.extent > 1 and it.annotation != "none"]
    cols = [it for it in block if it.name.startswith("ob.")]
    rows = [it for it in block if it.annotation == "unroll" and it not in cols]
    vec = iters[-1]
    assert vec.annotation == "vectorize" and 2 <= vec.extent <= 8, str(state)
    if not cols:
        return 1, rows[0].extent if rows else 0
    assert cols[0].annotation == "unroll" and rows, str(state)  # every accumulator a register
    assert (rows[0].extent + 1) * cols[0].extent + 1 <= 16, str(state)
    return cols[0].extent, rows[0].extent


@pytest.mark.needs_llvm
def test_nchwc_conv_blocks_span_several_output_channel_blocks():
    """An NCHWc conv's input scalar serves the filter vectors of several output-channel blocks: the family has
    blocks of 2-4 such columns, each fitting the registers with its rows and vectors; sampled states unroll the
    columns beside the rows (so the accumulators stay registers) and compute what the reference computes. The
    expert keeps a block of one column."""
    dag, task = _nchwc_task()
    states, _ = search.sample_init_population(task, 32, seed=5, params=search.SearchParams(register_block_share=1.0))
    blocks = {_nchwc_block(dag, state) for state in states}
    assert {c for c, _ in blocks} >= {1, 2, 4}, blocks
    for state in states[:4]:
        check(dag, state)
    assert _nchwc_block(dag, search.expert_schedule(task))[0] == 1


@pytest.mark.needs_llvm
def test_register_block_mutation_jumps_between_blocks_of_the_family():
    """From states of one column, the register-block mutation reaches blocks of several columns whole (rows and
    columns unrolled, within the registers), computing what the reference computes; a matmul, whose family has
    no columns, offers it nothing."""
    dag, task = _nchwc_task()
    states, _ = search.sample_init_population(task, 24, seed=9, params=search.SearchParams(register_block_share=1.0))
    one_column = [s for s in states if _nchwc_block(dag, s)[0] == 1]
    assert one_column
    reached = []
    for k, state in enumerate(one_column[:4]):
        for seed in range(6):
            mutated, failure, message = search.mutate(task, state, seed=100 * k + seed, rule="register-block")
            if mutated is None:
                assert failure.startswith("register-block: "), (failure, message)
                continue
            block = _nchwc_block(dag, mutated)
            if block[0] > 1:
                reached.append((block, mutated))
    assert {c for (c, _), _ in reached} >= {2, 4}, [b for b, _ in reached]
    for _, mutated in reached[:3]:
        check(dag, mutated)
    matmul = ans.SearchTask(compute_dag=ans.ComputeDAG(_matmul(48, 64, 32)), target=HOST)
    state = search.expert_schedule(matmul)
    assert search.mutate(matmul, state, seed=0, rule="register-block")[1] == "register-block: nothing"


def _blocked_norm_relu(blocks, h, w, lanes):
    """DenseNet's pre-activation between dense layers: an NCHW[x]c tensor read as NCHW, a batch norm's scale and
    shift per channel, ReLU, and back to NCHW[x]c: element-wise stages between two layout transforms."""
    c = blocks * lanes
    x, mean, scale = _ph((1, blocks, h, w, lanes), "x"), _ph((c,), "mean"), _ph((c,), "scale")
    nchw = te.compute((1, c, h, w), lambda n, ch, i, j: x[n, ch // lanes, i, j, ch % lanes], name="nchw")
    norm = te.compute((1, c, h, w), lambda n, ch, i, j: (nchw[n, ch, i, j] - mean[ch]) * scale[ch], name="norm")
    relu = te.compute((1, c, h, w), lambda n, ch, i, j: te.max(norm[n, ch, i, j], 0.0), name="relu")
    out = te.compute((1, blocks, h, w, lanes), lambda n, b, i, j, l: relu[n, b * lanes + l, i, j], name="out")
    return ans.ComputeDAG([x, mean, scale, out])


@pytest.mark.parametrize("blocks,h,w,lanes", [(3, 5, 7, 8), (1, 1, 1, 4), (13, 2, 3, 16)])
def test_element_wise_stages_between_layout_transforms_are_inlined_by_the_expert(blocks, h, w, lanes):
    """A task with nothing to tile still gets an expert where its sketch inlines stages: the parallel,
    vectorized nest of the sketch, one stage writing the output, instead of the default nest's every stage in
    full (the two transposes, the norm and the ReLU each wrote the whole tensor)."""
    dag = _blocked_norm_relu(blocks, h, w, lanes)
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None and "no stage asks for multi-level tiling" in note, reason
    assert {name for name, _ in search.default_schedules(task)[:1]} == {search.EXPERT}
    loops = str(state)
    assert all(f"{name} = " not in loops for name in ("nchw", "norm", "relu")), loops  # inlined
    assert "parallel" in loops and "out = " in loops
    check(dag, state)


def test_no_seed_where_nothing_is_tiled_with_the_reason():
    x = _ph((8, 16), "x")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([x, ops.relu(x)]), target=HOST)
    state, reason, _ = search.expert_schedule_info(task)
    assert state is None and "multi-level tiling" in reason
    # On a GPU an element-wise task gets the expert too: its sketch, one work item per output, one kernel.
    gpu = ans.SearchTask(compute_dag=ans.ComputeDAG([x, ops.relu(x)]), target="opencl -device=nvidia")
    state, reason, note = search.expert_schedule_info(gpu)
    assert state is not None and "no stage to tile" in note, reason


@pytest.mark.needs_llvm
def test_tuning_measures_the_seed_with_the_baselines(tmp_path):
    log = str(tmp_path / "mm.json")
    dag = ans.ComputeDAG(_matmul(48, 64, 32))
    task = ans.SearchTask(compute_dag=dag, target=HOST, desc="mm")
    expert = search.expert_schedule(task)
    assert expert is not None
    baselines = search.baseline_states(task)
    opts = ans.TuningOptions(num_measure_trials=len(baselines) + 1, verbose=0,
                             runner=LocalRunner(timeout=10, min_repeat_ms=5),
                             measure_callbacks=[ans.RecordToFile(log)])
    result = task.tune(opts)
    assert result.trials == len(baselines) + 1 and result.rounds == 0  # nothing but the start states
    assert result.expert_cost is not None and result.best_cost <= result.expert_cost
    logged = [inp.state.to_json() for inp, res in ans.records.load_records(log)]
    assert expert.to_json() in logged
    # The baseline's cost (the speed-up's reference) is the default's, what an untuned build runs: on a CPU
    # the expert schedule itself.
    default = search.default_schedules(task)[0][0]
    assert default == search.EXPERT
    assert result.default_name == default and result.baseline_cost == result.baseline_costs[default]


@pytest.mark.needs_llvm
@pytest.mark.parametrize("share", [1.0, 0.0])
@pytest.mark.parametrize("case", list(AWKWARD))
def test_sampled_and_mutated_states_match_reference_on_awkward_shapes(case, share):
    dag = ans.ComputeDAG(AWKWARD[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    params = search.SearchParams(register_block_share=share)
    states, drops = search.sample_init_population(task, 3, seed=7, params=params)
    assert states and set(drops) <= {"duplicate"}, drops
    for k, state in enumerate(states[:2]):
        check(dag, state)
        mutated, failure, message = search.mutate(task, state, seed=k, params=params, rule="tile-size")
        if mutated is not None:
            check(dag, mutated)
        else:
            assert failure == "tile-size: nothing", (failure, message)


# Compute-heavy tasks and the output axis contiguous in memory (the one to vectorize).
VECTOR_AXIS = {
    "matmul": (lambda: _matmul(40, 67, 24), "j"),
    "dense": (lambda: _dense(20, 48, 33), "j"),
    "batch_matmul": (lambda: _batch_matmul(2, 12, 40, 19), "j"),
    "conv2d_nhwc": (lambda: _conv_nhwc(1, 14, 14, 16, 32, 3, 1), "ff"),
    "conv2d_nhwc-prime": (lambda: _conv_nhwc(1, 8, 8, 8, 67, 3, 1), "ff"),
    "conv2d_nchw": (lambda: _conv_nchw(1, 8, 14, 14, 24, 3, 1), "xx"),
    "conv2d_nchwc": (lambda: _conv_nchwc(1, 2, 14, 14, 4, 3, 1), "oy"),
    "depthwise_nhwc": (lambda: _depthwise_nhwc(1, 14, 14, 48, 3, 1), "c"),
    "depthwise_nchw": (lambda: _depthwise_nchw(1, 16, 14, 28, 3, 1), "j"),
}


def _vector_tiles(dag, state, axis):
    """(stage name, innermost iterator of `axis`) of every stage with a reduction tiled along `axis`."""
    out = []
    for stage in dag.infer_bound(state).stages:
        iters = stage.iters
        if not any(it.kind == "reduce" for it in iters):
            continue
        parts = [it for it in iters if it.name.startswith(axis + ".")]
        if parts:
            out.append((stage.name, parts[-1]))
    return out


@pytest.mark.parametrize("share", [None, 0.0])
@pytest.mark.parametrize("case", list(VECTOR_AXIS))
def test_compute_heavy_stages_always_vectorize_their_contiguous_axis(case, share):
    builder, axis = VECTOR_AXIS[case]
    dag = ans.ComputeDAG(builder())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    params = search.SearchParams() if share is None else search.SearchParams(register_block_share=share)
    states, _ = search.sample_init_population(task, 24, seed=3, params=params)
    assert len(states) >= 16
    mutated = [search.mutate(task, s, seed=k, params=params, rule="tile-size")[0] for k, s in enumerate(states)]
    seen_local = False
    for state in states + [m for m in mutated if m is not None]:
        tiles = _vector_tiles(dag, state, axis)
        assert tiles, state
        for name, it in tiles:
            seen_local = seen_local or name.endswith(".local")
            assert it.extent >= 2 and it.annotation == "vectorize", (name, it, str(state))
    assert seen_local  # the cache-write sketches were sampled too


@pytest.mark.needs_llvm
@pytest.mark.parametrize("n", [1500, 60, 100])
def test_the_experts_vector_block_is_whole_vectors_where_no_divisor_is(n):
    """A row of 1500 (a 1500-token attention score) has divisors 15 and 30, which are no whole number of 8- or
    16-lane vectors: the expert takes whole vectors with a guarded last block instead (a block of 15 ran 20x
    slower), and the guarded kernel computes the product."""
    dag = ans.ComputeDAG(_matmul(5, n, 24))
    task = ans.SearchTask(compute_dag=dag, target=HOST, desc="mm")
    state, _, how = search.expert_schedule_info(task)
    match = re.search(r"register block (\d+) x (\d+) \(\w+ x \w+, \d+ vectors? of (\d+) lanes\)", how)
    assert match, how
    vec_length, lanes = int(match.group(2)), int(match.group(3))
    assert vec_length % lanes == 0, how
    a, b = RNG.standard_normal((5, 24)).astype("float32"), RNG.standard_normal((24, n)).astype("float32")
    c = np.zeros((5, n), "float32")
    ans.build(task, state)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.needs_llvm
def test_the_expert_pads_a_strided_convolutions_input_once():
    # With stride 2 the sketches also attach the padded input inside the output's tiles, where every tile
    # of output channels would pad it again (ResNet-50's stride-2 3x3 convolutions ran 1.15-1.5x slower so):
    # the expert takes the sketch that pads it once, at the root, and computes what the reference does.
    dag = ans.ComputeDAG(_conv_nchwc(1, 3, 15, 15, 6, 3, 2))
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    state, reason, _ = search.expert_schedule_info(task)
    assert state is not None, reason
    assert is_root(state, "PaddedInput"), str(state)
    check(dag, state)
