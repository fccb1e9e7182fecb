"""Tuning: mutations keep states valid, a search round proposes distinct unmeasured states, tuning a matmul
finds a schedule of its own (not the default) that stays correct, tiny tasks and `prod` tune without error,
injected faults are recorded under their error codes without ending the run, and a run killed with SIGKILL
resumes from its log without measuring anything twice.

CI tunes a 256^3 matmul; AUTOSCHED_TUNE_LARGE=1 tunes 512^3 (the figure the docs quote) and prints the
speed-up over the default schedule and over numpy. Speed-ups are timings of the machine that runs the test,
so no test asserts one: bench/bench_tune_matmul.py measures them."""
import json
import os
import signal
import re
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import search, te
from autosched.measure import LocalBuilder, LocalRunner, measure
from schedule_helpers import matmul_tensors

if not ans._core.has_llvm():
    pytest.skip("built without the LLVM backend", allow_module_level=True)

LARGE = os.environ.get("AUTOSCHED_TUNE_LARGE", "") not in ("", "0")
# Small search rounds keep CI fast on two cores.
FAST = dict(evolutionary_search_population=128, evolutionary_search_num_iters=2, sample_init_min_population=32)


def matmul(n, m, k, name="matmul"):
    return matmul_tensors(n, m, k, name=name)


def make_task(tensors, desc="test"):
    return ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm", desc=desc)


def fast_policy(task, model="random", **extra):
    return search.SketchPolicy(task, model, search.SearchParams(**dict(FAST, **extra)), seed=1)


def quick_runner(**kw):
    return LocalRunner(timeout=kw.pop("timeout", 10), min_repeat_ms=kw.pop("min_repeat_ms", 5), **kw)


def split_products_divide(state):
    for step in json.loads(state.to_json()):
        if step[0] == "SP":
            extent, lengths = step[3], step[4]
            assert all(length is not None for length in lengths)
            assert extent % int(np.prod(lengths)) == 0, step


def random_inputs(task, seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for name, dtype, shape in ans.build(task).arg_specs:
        arrays.append(rng.uniform(-1, 1, size=shape).astype(dtype))
    return arrays


# ---- mutations and search rounds ----

def test_mutations_keep_states_valid_and_products_equal():
    task = make_task(matmul(24, 32, 16))
    states, _ = search.sample_init_population(task, 8, seed=2)
    a, b, c = random_inputs(task)
    want = a @ b
    ok = 0
    for i, s in enumerate(states):
        for rule in ("tile-size", "compute-location", "parallel", "auto-unroll", None):
            new, failure, _ = search.mutate(task, s, seed=i, rule=rule)
            if new is None:
                assert failure.split(":")[1].strip() in ("nothing", "replay", "infer_bound", "lower")
                continue
            ok += 1
            split_products_divide(new)
            if ok % 5 == 1:
                out = np.zeros_like(c)
                ans.build(task, new)(a, b, out)
                np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert ok >= 10


def test_search_round_returns_distinct_unmeasured_states():
    task = make_task(matmul(32, 32, 32))
    policy = fast_policy(task)
    seen = set()
    for _ in range(2):
        batch = policy.continue_search_one_round(16)
        assert len(batch) == 16
        keys = {s.to_json() for s in batch}
        assert len(keys) == 16 and not keys & seen
        seen |= keys
        results = [ans.MeasureResult(costs=[1e-3 * (i + 1)]) for i in range(len(batch))]
        policy.record_measured(batch, results)
        stats = policy.last_round
        assert stats["generations"] == 3 and stats["picked_best"] >= 15
    assert policy.num_measured == 32 and policy.cost_model.num_samples == 32


def test_search_round_releases_the_gil():
    task = make_task(matmul(64, 64, 64))
    policy = search.SketchPolicy(task, "random", search.SearchParams(evolutionary_search_population=256))
    ticks, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.002)

    t = threading.Thread(target=tick)
    t.start()
    try:
        start = time.monotonic()
        policy.continue_search_one_round(8)
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        t.join()
    assert elapsed < 0.05 or len(ticks) > 3


def test_tuning_options_and_cost_model_errors_are_named(tmp_path):
    with pytest.raises(ValueError, match="num_measure_trials"):
        ans.TuningOptions(num_measure_trials=-1)
    with pytest.raises(TypeError, match="runner"):
        ans.TuningOptions(runner="local")
    task = make_task(matmul(8, 8, 8))
    with pytest.raises(ValueError, match="cost model"):
        task.tune(ans.TuningOptions(num_measure_trials=1, verbose=0), cost_model="gbdt")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(ValueError, match="no successful measurement"):
        task.apply_best(str(empty))
    with pytest.raises(ValueError, match="is a character device, not a regular file"):
        task.apply_best(os.devnull)


# ---- tuning ----

def test_tuned_matmul_is_its_own_schedule_and_correct(tmp_path, capsys):
    n = 512 if LARGE else 256
    task = make_task(matmul(n, n, n), desc=f"matmul{n}")
    log = str(tmp_path / "mm.json")
    runner = quick_runner(min_repeat_ms=50 if LARGE else 10)
    builder = LocalBuilder()
    opts = ans.TuningOptions(num_measure_trials=64, num_measures_per_round=31, builder=builder, runner=runner,
                             measure_callbacks=[ans.RecordToFile(log)])
    model = "auto" if LARGE else "random"
    policy = search.SketchPolicy(task, search.make_cost_model(model, "auto"),
                                 None if LARGE else search.SearchParams(**FAST), seed=0)
    result = task.tune(opts, search_policy=policy)
    out = capsys.readouterr().out
    assert re.search(r"^Tuned matmul\d+ with 64 measurements in \d+ s: best [0-9.]+ (us|ms), [0-9.]+ GFLOP/s "
                     r"\(untuned [0-9.]+ (us|ms), ", out, re.M), out
    assert "Tuning summary" not in out  # the detailed rows: verbose 2
    assert result.trials == 64 and result.baseline_cost is not None
    assert result.best_cost <= result.baseline_cost
    # The default schedule measured the same way, in the same run.
    default = measure(task, [task.compute_dag.get_init_state()], builder, runner)[0]
    assert default.ok, default.error_msg
    speedup = default.mean_cost / result.best_cost
    a, b, c = random_inputs(task)
    mod = task.build_best(log)
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    assert "s.split" in task.print_best(log) or "s.parallel" in task.print_best(log)
    if LARGE:
        t0 = time.perf_counter()
        for _ in range(20):
            a @ b
        numpy_cost = (time.perf_counter() - t0) / 20
        with capsys.disabled():
            print(f"\n512^3 matmul: default {default.mean_cost * 1e3:.2f} ms, tuned {result.best_cost * 1e3:.3f} "
                  f"ms ({result.best_gflops:.1f} GFLOP/s), x{speedup:.1f} over default, numpy "
                  f"{numpy_cost * 1e3:.3f} ms (tuned/numpy time {result.best_cost / numpy_cost:.2f}); time "
                  f"{dict(result.seconds)}")


def test_early_stopping_and_time_budget_end_the_run():
    task = make_task(matmul(32, 32, 32))
    opts = ans.TuningOptions(num_measure_trials=400, num_measures_per_round=4, early_stopping=4,
                             runner=quick_runner(min_repeat_ms=1), verbose=0)
    result = task.tune(opts, search_policy=fast_policy(task))
    assert result.trials < 400 and result.stop_reason.startswith("early stopping"), result.stop_reason
    opts = ans.TuningOptions(num_measure_trials=400, num_measures_per_round=4, time_budget_s=0.5,
                             runner=quick_runner(min_repeat_ms=1), verbose=0)
    result = task.tune(opts, search_policy=fast_policy(task))
    assert result.trials < 400 and result.stop_reason.startswith("time budget"), result.stop_reason


def tiny_tasks():
    A = te.placeholder((2,), name="A")
    B = te.placeholder((2,), name="B")
    add2 = [A, B, te.compute((2,), lambda i: A[i] + B[i], name="add")]
    X = te.placeholder((3,), name="X")
    k = te.reduce_axis((0, 3), name="k")
    scalar = [X, te.compute((), lambda: te.sum(X[k], axis=k), name="total")]
    P = te.placeholder((6, 40), name="P")
    r = te.reduce_axis((0, 40), name="r")
    prod = [P, te.compute((6,), lambda i: te.prod(P[i, r], axis=r), name="rowprod")]
    return {"add2": add2, "scalar": scalar, "prod": prod}


@pytest.mark.parametrize("name", ["add2", "scalar", "prod"])
def test_tiny_and_prod_tasks_tune_without_error(name, tmp_path):
    task = make_task(tiny_tasks()[name], desc=name)
    log = str(tmp_path / "t.json")
    trials = 24 if name == "prod" else 40
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=8, runner=quick_runner(),
                             measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    result = task.tune(opts, search_policy=fast_policy(task))
    assert result.best_cost is not None and not result.errors, result.errors
    if name == "add2":  # no sketch offers a choice worth 40 trials
        assert result.trials < trials and "exhausted" in result.stop_reason
    arrays = random_inputs(task, seed=3)
    if name == "prod":
        arrays[0] = (1 + 0.01 * arrays[0]).astype(np.float32)  # a product of 40 terms near 1
    ins, out = arrays[:-1], np.zeros_like(arrays[-1])
    task.build_best(log)(*ins, out)
    want = ans.evaluate(task.compute_dag, ins)[-1]
    np.testing.assert_allclose(out, np.asarray(want).reshape(out.shape), rtol=1e-4, atol=1e-5)


def test_injected_faults_are_recorded_and_the_best_is_correct(tmp_path):
    task = make_task(matmul(64, 64, 64))
    log = str(tmp_path / "faults.json")
    faults = {"wrong_result": 0.1, "crash": 0.1, "hang": 0.05, "zero_time": 0.1}
    runner = quick_runner(timeout=2, inject_faults=faults, fault_seed=3)
    opts = ans.TuningOptions(num_measure_trials=40, num_measures_per_round=19, runner=runner,
                             builder=LocalBuilder(n_parallel=2), measure_callbacks=[ans.RecordToFile(log)],
                             verbose=0)
    result = task.tune(opts, search_policy=fast_policy(task))
    assert result.trials == 40
    errors = [res.error for _, res in ans.load_records(log)]
    for code in ("wrong_answer", "runtime", "run_timeout", "implausible"):
        assert code in errors, (code, errors)
        assert result.errors[code] == errors.count(code)
    a, b, c = random_inputs(task)
    task.build_best(log)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    flop = task.compute_dag.flop_ct
    assert flop / result.best_cost < 1e13  # plausible: far below any CPU's peak


KILLED_RUN = textwrap.dedent("""
    import sys
    sys.path[:0] = {paths!r}
    import autosched as ans
    from autosched import search, te
    A = te.placeholder((48, 48), name="A"); B = te.placeholder((48, 48), name="B")
    r = te.reduce_axis((0, 48), name="k")
    C = te.compute((48, 48), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="mm")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target="llvm", desc="killed")
    policy = search.SketchPolicy(task, "random", search.SearchParams(**{fast!r}), seed=5)
    opts = ans.TuningOptions(num_measure_trials=400, num_measures_per_round=8,
                             runner=ans.LocalRunner(min_repeat_ms=5),
                             measure_callbacks=[ans.RecordToFile({log!r})], verbose=0)
    task.tune(opts, search_policy=policy)
""")


def test_killed_run_leaves_a_log_that_resumes_without_remeasuring(tmp_path):
    log = str(tmp_path / "killed.json")
    paths = [p for p in sys.path if p]
    script = KILLED_RUN.format(paths=paths, fast=FAST, log=log)
    child = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    try:
        deadline = time.time() + 60
        while time.time() < deadline and child.poll() is None:
            if os.path.exists(log) and sum(1 for _ in open(log)) >= 20:
                break
            time.sleep(0.05)
        assert child.poll() is None, "the tuning child ended before it was killed"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    before = ans.load_records(log)
    assert len(before) >= 20
    old_keys = {inp.state.to_json() for inp, _ in before}

    task = make_task(matmul(48, 48, 48, name="mm"), desc="killed")
    target = len(before) + 16
    opts = ans.TuningOptions(num_measure_trials=target, num_measures_per_round=8, runner=quick_runner(),
                             measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    result = task.tune(opts, search_policy=fast_policy(task))
    assert result.resumed_trials == len(before)
    assert result.trials == target
    after = ans.load_records(log)
    new = after[len(before):]
    assert len(new) == 16
    new_keys = [inp.state.to_json() for inp, _ in new]
    assert len(set(new_keys)) == 16 and not set(new_keys) & old_keys


CTRL_C_SEARCH = textwrap.dedent("""
    import sys
    sys.path[:0] = {paths!r}
    import autosched as ans
    import autosched.ops
    from autosched.tune import task_tuner
    searching = task_tuner.TaskTuner.search_round
    def announced(self, params):
        print("searching", flush=True)
        return searching(self, params)
    task_tuner.TaskTuner.search_round = announced
    task = ans.SearchTask(func="conv2d_nchw", args=(1, 64, 56, 56, 64, 3, 3, 1, 1), target=ans.Target("llvm"))
    try:
        task.tune(ans.TuningOptions(num_measure_trials=1000, measure_callbacks=[ans.RecordToFile({log!r})],
                                    verbose=0))
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


def test_ctrl_c_during_the_search_ends_tuning_within_a_second(tmp_path):
    """SIGINT half a second into a search round with the default options on ResNet-18's 1x64x56x56 conv (a
    round of several seconds on two cores) raises KeyboardInterrupt at once, leaves a log without a torn line,
    and no measurement worker behind."""
    from process_helpers import read_line, wait_ended, worker_pids
    log = str(tmp_path / "conv.json")
    script = CTRL_C_SEARCH.format(paths=[p for p in sys.path if p], log=log)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, bufsize=0)
    try:
        assert read_line(child, 300) == "searching"
        workers = worker_pids(child.pid)
        assert workers, "the baseline was measured in worker processes"
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        line = read_line(child, 60)
        waited = time.monotonic() - sent
        assert line == "interrupted", line
        # The margin over a second is for a loaded machine; the search alone takes several.
        assert waited < 2.5, f"KeyboardInterrupt came {waited:.1f} s after SIGINT"
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert wait_ended(workers) == []
    with open(log) as f:
        text = f.read()
    assert text.endswith("\n")
    for line in text.splitlines():
        json.loads(line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(ans.load_records(log)) == len(text.splitlines())


def test_baselines_include_a_reduction_with_its_spatial_loop_innermost():
    """The baseline schedules: the plain nest, parallel + vectorized, and the same with the reduce loop moved
    outside the last spatial loop (i, k, j), so even a large matmul has a baseline that runs in time. Each one
    builds to the reference's answer."""
    tensors = matmul(24, 17, 9, name="C")
    task = make_task(tensors)
    states = search.baseline_states(task)
    orders = [[it.name for it in s["C"].iters] for s in states]
    assert any(o[-1] == "j" and o.index("k") < o.index("j") for o in orders), orders
    dag = task.compute_dag
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((24, 9)).astype("float32"), rng.standard_normal((9, 17)).astype("float32")
    for s in states:
        out = np.zeros((24, 17), "float32")
        ans.build(dag, s, "llvm")(a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_a_search_round_crosses_into_the_core_once(tmp_path):
    """A round (search, measure, record, cost-model update) is one call into the core: profiled, the second
    round of a task calls no other function of autosched._core. A callback after the RecordToFile log still
    gets the round's inputs (States) and results, after the log has them."""
    from autosched.tune import task_tuner as tuner
    task = make_task(matmul(32, 32, 32))
    log = str(tmp_path / "once.json")
    core_calls, seen = [], []

    def profile(frame, event, arg):
        if event == "c_call":
            owner = getattr(arg, "__module__", None) or type(getattr(arg, "__self__", None)).__module__ or ""
            if owner.startswith("autosched"):
                core_calls.append(getattr(arg, "__name__", repr(arg)))

    def callback(policy, inputs, results):
        outer = sys.getprofile()  # what the callback itself calls is not the round's
        sys.setprofile(None)
        seen.append((len(ans.load_records(log)), [type(inp.state) for inp in inputs], len(results)))
        sys.setprofile(outer)

    real = tuner.TaskTuner.search_round

    def profiled(self, params):
        if self.result.rounds != 1:
            return real(self, params)
        sys.setprofile(profile)
        try:
            return real(self, params)
        finally:
            sys.setprofile(None)

    opts = ans.TuningOptions(num_measure_trials=40, num_measures_per_round=8, runner=quick_runner(min_repeat_ms=1),
                             measure_callbacks=[ans.RecordToFile(log), callback], verbose=0)
    tuner.TaskTuner.search_round = profiled
    try:
        result = task.tune(opts, search_policy=fast_policy(task))
    finally:
        tuner.TaskTuner.search_round = real
    assert result.rounds >= 2
    assert [c for c in core_calls if c != "RoundParams"] == ["tuning_round"], core_calls
    assert len(seen) == 1 + result.rounds  # the start states, then every round
    total = 0
    for in_log, types, n in seen:
        total += n
        assert in_log == total and set(types) == {ans.State}


def test_the_peak_of_progress_lines_is_the_cores_one_estimate():
    """tune.peak_gflops is the core's estimate (cpp/task/peak.h, the one the plausibility bound uses):
    cores x FMA units x 2 x lanes x the clock the OS reports on a CPU; a GPU's needs its clock."""
    from autosched import tune as tuner
    task = make_task(matmul(64, 64, 64))
    hw = task.hardware_params
    value, how = tuner.peak_gflops(task, describe=True)
    lanes = hw.vector_unit_bytes // 4
    want = hw.num_cores * (hw.fma_units or 2) * 2 * lanes * ans._core.reported_cpu_clock_hz() / 1e9
    assert value == pytest.approx(want) and f"{hw.num_cores} cores x" in how and "clock the OS reports" in how
    bound, _ = ans._core.estimate_peak_flops(task, "upper_bound")
    assert bound >= value * 1e9
    dag = task.compute_dag
    unclocked = ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia",
                               hardware_params=ans.HardwareParams(num_cores=10, clock_mhz=0))
    assert tuner.peak_gflops(unclocked) is None
    clocked = ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia",
                             hardware_params=ans.HardwareParams(num_cores=10, clock_mhz=1500))
    assert tuner.peak_gflops(clocked) == pytest.approx(10 * 128 * 2 * 1.5)
    given = ans.SearchTask(compute_dag=dag, target="llvm", hardware_params=ans.HardwareParams(peak_gflops=77))
    assert tuner.peak_gflops(given) == 77
    with pytest.raises(ValueError, match="estimate"):
        ans._core.estimate_peak_flops(task, "guess")


class _ElsewhereRunner(LocalRunner):
    """A runner that measures outside this process's workers (as RayRunner does): its measurer is a core
    Measurer written in Python, here one that makes the results up in Python (a time per state from its
    steps) and counts the calls."""

    measures_here = False

    def __init__(self, **kw):
        super().__init__(**kw)
        self.batches = []
        self.deadlines = []

    def _measurer_for(self, builder):
        runner = self

        class MadeUp(ans._core.Measurer):
            def measure(self, task, states, deadline_s=None):
                runner.batches.append(len(states))
                runner.deadlines.append(deadline_s)
                return [ans._core.MeasureResult(costs=[_made_up_cost(s.to_json())], timestamp=time.time())
                        for s in states]
        return MadeUp()


def _made_up_cost(steps):
    return 1e-4 * (1 + sum(map(ord, steps)) % 97)


def test_a_measurer_written_in_python_drives_the_same_round(tmp_path):
    """With a runner whose measurer is written in Python, a round is the same one core call (tuning_round):
    the core's search, the Python measure, then the records and the cost model's update; the log, the trials,
    the policy and the best are those of the results the Python measurer made up."""
    from autosched.tune import task_tuner as session
    task = make_task(matmul(32, 32, 32))
    log = str(tmp_path / "elsewhere.json")
    runner = _ElsewhereRunner(timeout=10, min_repeat_ms=1)
    core_calls, seen = [], []

    def profile(frame, event, arg):
        if event == "c_call":
            owner = getattr(arg, "__module__", None) or type(getattr(arg, "__self__", None)).__module__ or ""
            if owner.startswith("autosched"):
                core_calls.append(getattr(arg, "__name__", repr(arg)))

    def callback(policy, inputs, results):
        seen.append((len(ans.load_records(log)), len(results)))

    real = session.TaskTuner.search_round

    def profiled(self, *args):
        if self.result.rounds != 1:
            return real(self, *args)
        sys.setprofile(profile)
        try:
            return real(self, *args)
        finally:
            sys.setprofile(None)

    policy = fast_policy(task)
    opts = ans.TuningOptions(num_measure_trials=30, num_measures_per_round=8, runner=runner, time_budget_s=600,
                             measure_callbacks=[ans.RecordToFile(log), callback], verbose=0)
    session.TaskTuner.search_round = profiled
    try:
        result = task.tune(opts, search_policy=policy)
    finally:
        session.TaskTuner.search_round = real
    assert result.rounds >= 2 and result.trials == 30
    assert core_calls.count("tuning_round") == 1 and "continue_search_one_round" not in core_calls, core_calls
    assert sum(runner.batches) == 30 and len(runner.batches) == 1 + result.rounds
    assert all(d is not None and 0 < d <= 600 for d in runner.deadlines)  # the budget's end reaches the measurer
    records = ans.load_records(log)
    assert len(records) == 30 and [n for _, n in seen] == runner.batches
    assert [n for n, _ in seen] == list(np.cumsum(runner.batches))  # the log has a round before its callbacks
    assert policy.num_measured == 30  # every state reached the policy (never proposed again)
    for inp, res in records:
        assert res.mean_cost == pytest.approx(_made_up_cost(inp.state.to_json()))
    best = ans.load_best_record(log, task.workload_key)[1]
    assert result.best_cost == pytest.approx(min(res.mean_cost for _, res in records)) == pytest.approx(best.mean_cost)
    assert result.seconds["search"] > 0
    # Resuming from that log measures nothing again.
    again = _ElsewhereRunner(timeout=10, min_repeat_ms=1)
    resumed = task.tune(ans.TuningOptions(num_measure_trials=30, runner=again, verbose=0,
                                          measure_callbacks=[ans.RecordToFile(log)]), search_policy=fast_policy(task))
    assert resumed.resumed_trials == 30 and again.batches == []


def test_a_python_measurer_must_return_one_result_per_state():
    task = make_task(matmul(16, 16, 16))
    policy = fast_policy(task)
    state = task.compute_dag.get_init_state()

    class Short(ans._core.Measurer):
        def measure(self, task, states, deadline_s=None):
            return []

    class Wrong(ans._core.Measurer):
        def measure(self, task, states, deadline_s=None):
            return "fast"

    params = ans._core.RoundParams()
    with pytest.raises(ValueError, match="one result per state, got 0 results for 1 states"):
        ans._core.tuning_round(policy, Short(), [], task.to_json(), params, [state])
    with pytest.raises(TypeError, match="must return a list of MeasureResult, got str"):
        ans._core.tuning_round(policy, Wrong(), [], task.to_json(), params, [state])
    assert policy.num_measured == 0

