"""Property test of the search's sketches and initial population over the whole operator library: for
every case of op_cases.CASES (every operator of autosched.ops) and a few more that make the pack-operand and
constant-tensor rules fire, the sketch policy gives sketches without a rule failing, and states sampled from
every sketch have all split lengths filled (dividing the extents), build with the LLVM backend and compute
what the reference evaluator computes.

The tasks claim 16 cores, so that the rfactor rule (reductions with little parallelism) fires on more
cases. CI samples 5 states per sketch of each case in its first dtype and builds the first of them (a
build costs far more than sampling, which lowers every state already).

Long mode: AUTOSCHED_SKETCH_SAMPLES=N samples N distinct states per sketch (fewer where a sketch has fewer)
in every dtype of every case, and builds and checks every one of them: the first 5 per sketch at the
target's default optimisation level, the others at -opt-level=0 (LLVM's optimisations do not change what a
schedule computes, and such a build takes a fifth of the time). It prints the states checked per case and
reports every mismatch at the end of a case. Select cases or dtypes with -k, e.g.
    AUTOSCHED_SKETCH_SAMPLES=2000 pytest tests/python/test_search_sketch.py -k "matmul and float32" -s
"""
import json
import os

import numpy as np
import pytest

import autosched as ans
from autosched import ops, search, te

from op_cases import ALL, CASES, F32, I32
from schedule_helpers import assert_close, check, random_inputs

LONG_SAMPLES = os.environ.get("AUTOSCHED_SKETCH_SAMPLES")
SAMPLES_PER_SKETCH = int(LONG_SAMPLES) if LONG_SAMPLES else 5
BUILDS_PER_SKETCH = SAMPLES_PER_SKETCH if LONG_SAMPLES else 1
FULL_OPT_BUILDS = 5  # per sketch, in the long mode; the others are built at -opt-level=0


def _ph(shape, name, dtype):
    return te.placeholder(shape, name=name, dtype=dtype)


def _wide(dtype):
    """Columns that make a row of 512 bytes: the pack-operand rule packs such a B (or weight)."""
    return 512 // (2 if dtype == "float16" else 4)


def _matmul_packed(dtype):
    a, b = _ph((5, 7), "A", dtype), _ph((7, _wide(dtype)), "B", dtype)
    return [a, b, ops.matmul(a, b)]


def _conv_nhwc_packed(dtype):
    data, kernel = _ph((1, 5, 4, 3), "data", dtype), _ph((3, 3, 3, _wide(dtype)), "kernel", dtype)
    return [data, kernel, ops.conv2d_nhwc(data, kernel, stride=1, padding=1)]


def _batch_matmul_packed(dtype):
    x, y = _ph((2, 3, 5), "X", dtype), _ph((2, 5, _wide(dtype)), "Y", dtype)
    return [x, y, ops.batch_matmul(x, y, transpose_b=False)]


def _dense_packed(dtype):
    """A weight of _wide(dtype) rows of 19 elements, read across its rows: packed along them."""
    data, weight = _ph((5, 19), "data", dtype), _ph((_wide(dtype), 19), "weight", dtype)
    bias = _ph((_wide(dtype),), "bias", dtype)
    return [data, weight, bias, ops.dense(data, weight, bias)]


def _const_matrix(dtype):
    """O = X @ G with G a constant 4x4 matrix written as an expression (as a Winograd transform is)."""
    x = _ph((12, 4), "X", dtype)
    one, half = te.const(2, dtype), te.const(1, dtype)
    g = te.compute((4, 4), lambda a, b: te.select(a == b, one, half), name="G")
    r = te.reduce_axis((0, 4), name="r")
    return [x, te.compute((12, 4), lambda i, e: te.sum(x[i, r] * g[r, e], axis=r), name="O")]


# name -> (builder, dtypes, positive inputs, the step the rule under test leaves in some sketch)
RULE_CASES = {
    "matmul_packed": (_matmul_packed, ALL, False, "PK"),
    "conv2d_nhwc_packed": (_conv_nhwc_packed, (F32, I32), False, "PK"),
    "batch_matmul_packed": (_batch_matmul_packed, (F32,), False, "PK"),
    "dense_packed": (_dense_packed, (F32, I32), False, "PK"),
    "const_matrix": (_const_matrix, (F32, I32), False, "AN"),
}


def _case(name):
    if name in RULE_CASES:
        builder, dtypes, positive, _ = RULE_CASES[name]
        return builder, dtypes, positive
    builder, dtypes, positive, _ = CASES[name]
    return builder, dtypes, positive


def _task(dag):
    hardware = ans.HardwareParams(target="llvm", num_cores=16)
    return ans.SearchTask(compute_dag=dag, target="llvm", hardware_params=hardware)


def _split_records(state):
    return [r for r in json.loads(state.to_json()) if r[0] == "SP"]


def _params():
    for case in list(CASES) + list(RULE_CASES):
        dtypes = _case(case)[1]
        for dtype in dtypes if LONG_SAMPLES else dtypes[:1]:
            yield pytest.param(case, dtype, id=f"{case}-{dtype}")


def _mismatch(dag, state, inputs, is_input, expected, opt_level):
    """None when the state, built at opt_level (None: the target's default), computes `expected`; else a
    description of the difference."""
    arrays = [x.copy() for x in inputs]
    target = None if opt_level is None else f"llvm -opt-level={opt_level}"
    ans.build(dag, state, target)(*arrays)
    outputs = [x for x, inp in zip(arrays, is_input) if not inp]
    for got, want in zip(outputs, expected):
        try:
            assert_close(got, want, got.dtype)
        except AssertionError as err:
            return str(err).strip().splitlines()[-1]
    return None


@pytest.mark.parametrize("case, dtype", list(_params()))
def test_sampled_states_of_every_sketch_match_reference(case, dtype):
    builder, _, positive = _case(case)
    dag = ans.ComputeDAG(builder(dtype))
    task = _task(dag)
    policy = search.SketchPolicy(task)
    sketches = policy.generate_sketches()
    assert sketches, case
    assert policy.rule_failures == []
    if case in RULE_CASES:
        step = RULE_CASES[case][3]
        assert any(r[0] == step for s in sketches for r in json.loads(s.to_json())), (case, step)
    rng = np.random.default_rng(0)
    inputs = random_inputs(dag, rng, positive)
    is_input = [t.op_kind == "placeholder" for t in dag.tensors]
    expected = ans.evaluate(dag, [x for x, inp in zip(inputs, is_input) if inp])
    checked, failures = 0, []
    for k, sketch in enumerate(sketches):
        states, drops = search.sample_init_population(task, SAMPLES_PER_SKETCH, seed=k, sketches=[sketch])
        assert states, f"sketch {k} of {case}: nothing sampled, drops {drops}"
        assert set(drops) <= {"duplicate"}, f"sketch {k} of {case}: {drops}"
        for n, state in enumerate(states):
            for record in _split_records(state):
                _, _, _, extent, lengths, _ = record
                assert None not in lengths and extent % int(np.prod(lengths)) == 0, record
            if n >= BUILDS_PER_SKETCH:
                continue
            opt_level = None if n < FULL_OPT_BUILDS else 0
            problem = _mismatch(dag, state, inputs, is_input, expected, opt_level)
            checked += 1
            if problem is not None:
                failures.append(f"sketch {k}, state {n} (opt level {opt_level or 'default'}): {problem}\n"
                                f"{dag.print_python_steps(state)}")
                if not LONG_SAMPLES:
                    break
    if LONG_SAMPLES:
        print(f"\n{case}-{dtype}: {len(sketches)} sketches, {checked} states checked, {len(failures)} wrong")
    assert not failures, f"{case}-{dtype}: {len(failures)} wrong states; the first:\n" + "\n".join(failures[:3])


def _matmul_dag(n=64, m=48, k=32):
    a = ans.te.placeholder((n, k), name="A")
    b = ans.te.placeholder((k, m), name="B")
    r = ans.te.reduce_axis((0, k), name="k")
    c = ans.te.compute((n, m), lambda i, j: ans.te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return ans.ComputeDAG([a, b, c])


def test_matmul_sketches_leave_lengths_unknown():
    sketches = search.generate_sketches(_task(_matmul_dag()))
    assert len(sketches) == 3
    for sketch in sketches:
        assert any(None in record[4] for record in _split_records(sketch))
        with pytest.raises(ValueError):
            ans.build(_matmul_dag(), sketch)  # an unknown length cannot be lowered


def test_population_is_reproducible():
    task = _task(_matmul_dag())
    first, _ = search.sample_init_population(task, 8, seed=3)
    again, _ = search.sample_init_population(task, 8, seed=3)
    other, _ = search.sample_init_population(task, 8, seed=4)
    assert [s.to_json() for s in first] == [s.to_json() for s in again]
    assert [s.to_json() for s in first] != [s.to_json() for s in other]
    assert len({s.to_json() for s in first}) == len(first) == 8


def test_search_params_bound_tiles_and_vectors():
    dag = _matmul_dag()
    params = search.SearchParams(max_innermost_split_factor=2, max_vectorize_size=4)
    states, _ = search.sample_init_population(_task(dag), 10, seed=1, params=params)
    assert states
    for state in states:
        for record in _split_records(state):
            assert record[4][-1] <= 2, record
        bounded = dag.infer_bound(state)
        for stage in bounded.stages:
            for it in stage.iters:
                if it.annotation == "vectorize":
                    assert it.extent <= 4, (stage.name, it)
    with pytest.raises(TypeError, match="no_such_knob"):
        search.SearchParams(no_such_knob=1)


def test_reads_of_a_constant_tensor_are_unrolled_and_correct():
    x = ans.te.placeholder((12, 4), name="X")
    one, half = ans.te.const(2.0, "float32"), ans.te.const(0.5, "float32")
    g = ans.te.compute((4, 4), lambda a, b: ans.te.select(a == b, one, half), name="G")  # no input
    r = ans.te.reduce_axis((0, 4), name="r")
    o = ans.te.compute((12, 4), lambda i, e: ans.te.sum(x[i, r] * g[r, e], axis=r), name="O")
    dag = ans.ComputeDAG([x, o])
    task = _task(dag)
    (sketch,) = search.generate_sketches(task)
    assert [it.annotation for it in sketch["O"].iters][-2:] == ["unroll", "unroll"]  # e and r
    assert sketch["G"].compute_at == "inlined"
    states, _ = search.sample_init_population(task, 4, seed=1)
    for state in states:
        check(dag, state)


def _gather_then_relu(shape=(5, 7, 3)):
    """A gather that puts X's elements in other places (a floormod/floordiv index, as a Winograd output is put
    back from its tiles), read element-wise by a bias-add + relu, and by a reduction elsewhere."""
    a, b, c = shape
    x = ans.te.placeholder((c, b, a), name="X")
    bias = ans.te.placeholder((b,), name="bias")
    g = ans.te.compute((a * c, b), lambda i, j: x[ans.te.floormod(i, c), j, ans.te.floordiv(i, c)], name="G")
    y = ans.te.compute((a * c, b), lambda i, j: ans.te.max(g[i, j] + bias[j], ans.te.const(0.0, "float32")),
                       name="Y")
    return x, bias, g, y


def test_a_gather_read_element_wise_is_inlined_and_correct():
    for shape in [(5, 7, 3), (1, 13, 2), (4, 1, 1)]:
        x, bias, g, y = _gather_then_relu(shape)
        dag = ans.ComputeDAG([x, bias, y])
        task = _task(dag)
        sketches = search.generate_sketches(task)
        assert sketches and all(s["G"].compute_at == "inlined" for s in sketches), shape
        states, _ = search.sample_init_population(task, 4, seed=2)
        for state in states:
            check(dag, state)


def test_a_gather_not_read_element_wise_keeps_its_stage():
    x, bias, g, y = _gather_then_relu()
    r = ans.te.reduce_axis((0, 7), name="r")
    rows = ans.te.compute((15,), lambda i: ans.te.sum(g[i, r], axis=r), name="rows")  # reads G across j
    both = ans.ComputeDAG([x, bias, y, rows])
    assert all(s["G"].compute_at != "inlined" for s in search.generate_sketches(_task(both)))
    as_output = ans.ComputeDAG([x, bias, g, y])  # G is an output: it must be stored
    assert all(s["G"].compute_at != "inlined" for s in search.generate_sketches(_task(as_output)))
    check(both, search.sample_init_population(_task(both), 1, seed=0)[0][0])


def _row_fused_sketches(outputs):
    """The sketches whose every stage before the output is computed inside the output's loops (the row-fusion
    rule's)."""
    dag = ans.ComputeDAG(outputs)
    inputs = {t.name for t in outputs[:-1]}
    fused = []
    for s in search.generate_sketches(_task(dag)):
        before = [st for st in s.stages[:-1] if st.name not in inputs]
        if all(st.compute_at in ("at", "inlined") for st in before) and any(st.name.endswith(".rf") for st in before):
            fused.append(s)
    return dag, fused


def test_row_reductions_are_computed_per_row_of_their_output():
    """softmax, log_softmax and layer_norm along the innermost axis get one sketch computing every stage per
    row of the output (the reductions factored, the lanes vectorized), whose sampled states match the
    reference; a reduction along another axis, or over two axes, does not."""
    for shape in [(5, 13), (1, 7), (24, 128)]:
        x = te.placeholder(shape, name="x")
        gamma, beta = te.placeholder(shape[-1:], name="gamma"), te.placeholder(shape[-1:], name="beta")
        for outputs in ([x, ops.softmax(x)], [x, ops.log_softmax(x)],
                        [x, gamma, beta, ops.layer_norm(x, gamma, beta)]):
            dag, fused = _row_fused_sketches(outputs)
            assert len(fused) == 1, (shape, outputs[-1].name)
            assert fused[0][outputs[-1].name].iters[-1].annotation == "vectorize"
            states, _ = search.sample_init_population(_task(dag), 4, seed=1, sketches=fused)
            assert states
            for state in states:
                check(dag, state)
    x3 = te.placeholder((7, 3, 5), name="x")
    assert _row_fused_sketches([x3, ops.softmax(x3, axis=0)])[1] == []
    g2, b2 = te.placeholder((3, 5), name="gamma"), te.placeholder((3, 5), name="beta")
    assert _row_fused_sketches([x3, g2, b2, ops.layer_norm(x3, g2, b2, axis=[1, 2])])[1] == []


def test_rules_are_listed_in_order():
    policy = search.SketchPolicy(_task(_matmul_dag()))
    assert policy.sketch_rule_names == [
        "always-inline", "winograd-row-fusion", "row-fusion", "simplify-compute-with-const-tensor", "inline-window-padding",
        "add-rfactor",
        "pack-operand", "pack-conv-layout", "add-cache-write", "multi-level-tiling-with-fusion", "multi-level-tiling",
        "padding-at-tile", "window-vectorize", "skip-stage"]
    assert policy.init_rule_names == ["fill-tile-size", "parallel", "unroll", "vectorize"]


def test_bad_requests_raise_clear_errors():
    dag = _matmul_dag()
    with pytest.raises(ValueError, match="at least 1"):
        search.sample_init_population(_task(dag), 0)
    with pytest.raises(ValueError, match="no sketch"):
        search.sample_init_population(_task(dag), 4, sketches=[])


def test_sampled_packed_matmul_states_match_reference():
    """B rows of 128 floats (512 bytes): the pack-operand rule adds packed sketches; their sampled states
    parallelize and vectorize the pack stage and compute what the reference evaluator and numpy compute."""
    dag = _matmul_dag(n=24, m=128, k=40)  # 8 blocks x 40 rows: enough to parallelize without the lanes
    task = _task(dag)
    sketches = search.generate_sketches(task)
    packed = [s for s in sketches if any(r[0] == "PK" for r in json.loads(s.to_json()))]
    assert len(packed) == len(sketches) // 2 == 3
    rng = np.random.default_rng(0)
    a = rng.standard_normal((24, 40)).astype("float32")
    b = rng.standard_normal((40, 128)).astype("float32")
    for k, sketch in enumerate(packed):
        states, drops = search.sample_init_population(task, 3, seed=k, sketches=[sketch])
        assert states and set(drops) <= {"duplicate"}, drops
        for state in states:
            annotations = {it.annotation for it in state["B.pack"].iters}
            assert {"parallel", "vectorize"} <= annotations, state
            c = np.zeros((24, 128), "float32")
            ans.build(dag, state)(a, b, c)
            np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
            check(dag, state)
