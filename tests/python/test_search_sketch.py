"""Property test of the search's sketches and initial population over the whole operator library: for
every case of op_cases.CASES the sketch policy gives sketches without a rule failing, and states sampled
from every sketch have all split lengths filled (dividing the extents), build with the LLVM backend and
compute what the reference evaluator computes.

The tasks claim 16 cores, so that the rfactor rule (reductions with little parallelism) fires on more
cases. CI samples 5 states per sketch of each case in its first dtype and builds the first of them (a
build costs far more than sampling, which lowers every state already); AUTOSCHED_SKETCH_SAMPLES=N samples
and builds N per sketch in every dtype of every case (a long run: N=1000 takes hours).
"""
import json
import os

import numpy as np
import pytest

import autosched as ans
from autosched import search

from op_cases import CASES
from schedule_helpers import assert_close, check, random_inputs

LONG_SAMPLES = os.environ.get("AUTOSCHED_SKETCH_SAMPLES")
SAMPLES_PER_SKETCH = int(LONG_SAMPLES) if LONG_SAMPLES else 5
BUILDS_PER_SKETCH = SAMPLES_PER_SKETCH if LONG_SAMPLES else 1


def _task(dag):
    hardware = ans.HardwareParams(target="llvm", num_cores=16)
    return ans.SearchTask(compute_dag=dag, target="llvm", hardware_params=hardware)


def _split_records(state):
    return [r for r in json.loads(state.to_json()) if r[0] == "SP"]


def _params():
    for case, (_, dtypes, _, _) in CASES.items():
        for dtype in dtypes if LONG_SAMPLES else dtypes[:1]:
            yield pytest.param(case, dtype, id=f"{case}-{dtype}")


@pytest.mark.parametrize("case, dtype", list(_params()))
def test_sampled_states_of_every_sketch_match_reference(case, dtype):
    builder, _, positive, _ = CASES[case]
    dag = ans.ComputeDAG(builder(dtype))
    task = _task(dag)
    policy = search.SketchPolicy(task)
    sketches = policy.generate_sketches()
    assert sketches, case
    assert policy.rule_failures == []
    rng = np.random.default_rng(0)
    inputs = random_inputs(dag, rng, positive)
    is_input = [t.op_kind == "placeholder" for t in dag.tensors]
    expected = ans.evaluate(dag, [x for x, inp in zip(inputs, is_input) if inp])
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
            arrays = [x.copy() for x in inputs]
            ans.build(task, state)(*arrays)
            outputs = [x for x, inp in zip(arrays, is_input) if not inp]
            for got, want in zip(outputs, expected):
                assert_close(got, want, got.dtype, message=f"{case}:\n{dag.print_python_steps(state)}")


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


def test_rules_are_listed_in_order():
    policy = search.SketchPolicy(_task(_matmul_dag()))
    assert policy.sketch_rule_names == [
        "always-inline", "simplify-compute-with-const-tensor", "add-rfactor", "pack-operand", "add-cache-write",
        "multi-level-tiling-with-fusion", "multi-level-tiling", "skip-stage"]
    assert policy.init_rule_names == ["fill-tile-size", "parallel", "unroll", "vectorize"]


def test_bad_requests_raise_clear_errors():
    dag = _matmul_dag()
    with pytest.raises(ValueError, match="llvm"):
        search.generate_sketches(ans.SearchTask(compute_dag=dag, target="opencl"))
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
