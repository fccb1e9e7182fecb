"""Measurement in worker processes: verified, plausible times for good schedules; every failure (injected wrong
results, crashes, hangs, zero times; compile errors) recorded under its error code while the batch goes on."""
import threading
import time

import numpy as np
import pytest

import autosched as ans
from autosched import measure as am

from schedule_helpers import generated_schedules, matmul_bias_relu

if not ans._core.has_llvm():
    pytest.skip("built without the LLVM backend", allow_module_level=True)


@pytest.fixture(scope="module")
def task():
    dag = matmul_bias_relu(16, 12, 8)[0]
    return ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))


def good_states(task, n):
    dag = task.compute_dag
    states = []
    for _, schedule in generated_schedules(dag)[:n]:
        s = dag.get_init_state()
        schedule(s)
        states.append(s)
    return states



def test_good_states_verify_and_get_plausible_times(task, builder, runner):
    states = good_states(task, 4)
    results = am.measure(task, states, builder, runner)
    assert len(results) == len(states)
    flop = task.compute_dag.flop_ct
    for r in results:
        assert r.error == "none", r.error_msg
        assert r.error_no == am.MeasureErrorNo.NONE
        assert len(r.costs) == 1 and r.costs[0] > 0
        assert flop / r.costs[0] < 1e13  # far below any CPU's peak
        assert r.all_cost > 0 and r.timestamp > 1.6e9
    # The same runner keeps its workers for the next batch of the task.
    started = runner._measurer.processes_started
    am.measure(task, states[:1], builder, runner)
    assert runner._measurer.processes_started == started


def test_measure_releases_the_gil(task, builder, runner):
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.005)

    t = threading.Thread(target=tick)
    t.start()
    try:
        before = len(ticks)
        am.measure(task, good_states(task, 2), builder, am.LocalRunner(timeout=5, min_repeat_ms=50))
        assert len(ticks) - before > 5
    finally:
        stop.set()
        t.join()


def test_every_injected_fault_is_recorded_and_the_batch_goes_on(task, builder):
    faults = {"wrong_result": 0.15, "crash": 0.15, "hang": 0.12, "zero_time": 0.15}
    runner = am.LocalRunner(timeout=1, min_repeat_ms=1, inject_faults=faults, fault_seed=1)
    states = good_states(task, 2) * 5
    start = time.time()
    results = am.measure(task, states, builder, runner)
    assert time.time() - start < 30
    kinds = [r.error for r in results]
    for kind in ("none", "wrong_answer", "runtime", "run_timeout", "implausible"):
        assert kind in kinds, kinds
    for r in results:
        if r.error == "runtime":
            assert "SIGSEGV" in r.error_msg
        if r.error == "wrong_answer":
            assert "differs from the reference" in r.error_msg and not r.costs
        if r.error == "run_timeout":
            assert "timeout of 1" in r.error_msg
        if r.error == "implausible":
            assert "not a positive finite" in r.error_msg
        if r.error == "none":
            assert r.costs and r.costs[0] > 0
    # The same seed gives the same faults (checked on a prefix without hangs, to stay quick).
    prefix = kinds.index("run_timeout")
    again = am.measure(task, states[:prefix], builder,
                       am.LocalRunner(timeout=1, min_repeat_ms=1, inject_faults=faults, fault_seed=1))
    assert [r.error for r in again] == kinds[:prefix]


def test_sampled_reference_passes_good_and_catches_wrong_results(task, builder):
    runner = am.LocalRunner(timeout=5, min_repeat_ms=1, whole_output_work=0, num_points=20,
                            inject_faults={"wrong_result": 0.5})
    results = am.measure(task, good_states(task, 2) * 2, builder, runner)
    assert {r.error for r in results} == {"none", "wrong_answer"}
    assert all("sampled values differ" in r.error_msg for r in results if r.error == "wrong_answer")


def test_a_crash_mid_batch_loses_no_other_candidate(task, builder):
    runner = am.LocalRunner(timeout=5, min_repeat_ms=1, inject_faults={"crash": 0.3})
    results = am.measure(task, good_states(task, 4) * 2, builder, runner)
    crashed = [r for r in results if r.error == "runtime"]
    assert 1 <= len(crashed) <= 4
    assert all(r.error == "none" for r in results if r not in crashed), [r.error for r in results]


def test_a_hang_ends_at_its_timeout(task, builder):
    runner = am.LocalRunner(timeout=0.5, min_repeat_ms=1, inject_faults={"hang": 1.0})
    start = time.time()
    (r,) = am.measure(task, good_states(task, 1), builder, runner)
    assert r.error == "run_timeout" and r.error_no == am.MeasureErrorNo.RUN_TIMEOUT
    assert time.time() - start < 10


def test_a_build_past_its_timeout_is_a_build_timeout(task):
    states = good_states(task, 2)
    results = am.measure(task, states, am.LocalBuilder(timeout=0.001, n_parallel=1), am.LocalRunner())
    assert [r.error for r in results] == ["build_timeout", "build_timeout"], [r.error_msg for r in results]
    assert "builder's timeout" in results[0].error_msg


def test_a_target_without_backend_is_a_compile_error(task, builder, runner):
    gpu = ans.SearchTask(compute_dag=task.compute_dag, target=ans.Target("opencl"))
    (r,) = am.measure(gpu, [task.compute_dag.get_init_state()], builder, runner)
    if r.error != "none":  # a build with an OpenCL backend may compile it
        assert r.error == "compile", r.error_msg
        assert r.error_msg


def test_float16_and_int_tasks_verify(builder, runner):
    from op_cases import CASES
    for dtype in ("float16", "int32"):
        builder_fn = CASES["matmul"][0]
        task = ans.SearchTask(compute_dag=ans.ComputeDAG(builder_fn(dtype)), target=ans.Target("llvm"))
        (r,) = am.measure(task, good_states(task, 1), builder, runner)
        assert r.error == "none", (dtype, r.error_msg)


def test_plausibility_bound_can_be_overridden(task, builder):
    runner = am.LocalRunner(timeout=5, min_repeat_ms=1, peak_flops=1.0)
    (r,) = am.measure(task, good_states(task, 1), builder, runner)
    assert r.error == "implausible" and "faster than the hardware allows" in r.error_msg
    assert r.costs  # the measured time is kept for inspection


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="inject_faults: unknown fault 'segfault'"):
        am.LocalRunner(inject_faults={"segfault": 0.1})
    with pytest.raises(ValueError, match="add up to more than 1"):
        am.LocalRunner(inject_faults={"crash": 0.7, "hang": 0.7})
    with pytest.raises(ValueError, match="number must be"):
        am.LocalRunner(number=0)
    with pytest.raises(ValueError, match="timeout must be"):
        am.LocalBuilder(timeout=-1)
    with pytest.raises(TypeError, match="SearchTask"):
        am.measure("task", [])


def test_missing_worker_is_a_clear_error(task, monkeypatch):
    monkeypatch.setenv("AUTOSCHED_WORKER", "/nonexistent/autosched_worker")
    with pytest.raises(ValueError, match="/nonexistent/autosched_worker"):
        am.measure(task, good_states(task, 1), am.LocalBuilder(n_parallel=1), am.LocalRunner())


def test_best_measured_state_builds_to_the_right_answer(task, builder, runner):
    states = good_states(task, 3)
    results = am.measure(task, states, builder, runner)
    best = min(range(len(states)), key=lambda i: results[i].mean_cost)
    mod = ans.build(task, states[best])
    rng = np.random.default_rng(0)
    a, b = (rng.random(t.shape).astype("float32") for t in task.compute_dag.tensors[:2])
    out = np.zeros(task.compute_dag.tensors[2].shape, "float32")
    mod(a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b + 1, 0), rtol=1e-5)


INTERRUPTED = """
import sys, time
sys.path[:0] = [{helpers!r}]
import autosched as ans
from autosched import measure as am
from schedule_helpers import matmul_bias_relu
dag = matmul_bias_relu(8, 8, 8)[0]
task = ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))
runner = am.LocalRunner(timeout=60, inject_faults={{"hang": 1.0}})
print("go", flush=True)
start = time.time()
try:
    am.measure(task, [dag.get_init_state()], am.LocalBuilder(n_parallel=1), runner)
except KeyboardInterrupt:
    print("interrupted after %.1f s" % (time.time() - start), flush=True)
"""


def test_ctrl_c_interrupts_a_measurement():
    import os
    import signal
    import subprocess
    import sys
    code = INTERRUPTED.format(helpers=os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "go"
        time.sleep(2)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=20)
    finally:
        child.kill()
    assert "interrupted after" in out, out



# Workers are started by a thread that then ends; the runner goes on measuring from another thread.
WORKERS_OF_AN_ENDED_THREAD = """
import sys, threading
sys.path[:0] = [{helpers!r}]
import autosched as ans
from autosched import measure as am
from schedule_helpers import matmul_bias_relu
dag = matmul_bias_relu(16, 12, 8)[0]
task = ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))
builder, runner = am.LocalBuilder(n_parallel=2), am.LocalRunner(timeout=20, min_repeat_ms=1)
def measure_in_a_thread(n):
    results = []
    thread = threading.Thread(target=lambda: results.extend(am.measure(task, [dag.get_init_state()] * n,
                                                                       builder, runner)))
    thread.start()
    thread.join()
    return results
first = measure_in_a_thread(2)
started = runner._measurer.processes_started
print("measured", [r.error for r in first], flush=True)
sys.stdin.readline()  # the test looks at the workers meanwhile
later = measure_in_a_thread(4)
print("later", [r.error for r in later], [r.error_msg for r in later if not r.ok], flush=True)
print("started", started, runner._measurer.processes_started, flush=True)
"""


def test_workers_outlive_the_thread_that_started_them():
    """A runner's workers belong to the process, not to the thread that happened to start them: measuring
    again from another thread, after the first one ended, reuses them and succeeds."""
    import os
    import subprocess
    import sys
    from process_helpers import alive, read_line, worker_pids
    code = WORKERS_OF_AN_ENDED_THREAD.format(helpers=os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             bufsize=0)
    try:
        assert read_line(child, 120) == "measured ['none', 'none']"
        workers = worker_pids(child.pid)
        assert len(workers) == 2
        time.sleep(0.5)  # a worker tied to the ended thread would be gone by now
        assert all(alive(p) for p in workers)
        child.stdin.write(b"go\n")
        later = read_line(child, 120)
        assert later is not None and later.startswith("later ['none', 'none', 'none', 'none']"), later
        assert read_line(child, 30) == "started 2 2"  # the same workers measured the later batch
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()


# Workers started by a thread that ended; the supervisor then dies while a candidate hangs.
SUPERVISOR_DIES = """
import sys, threading
sys.path[:0] = [{helpers!r}]
import autosched as ans
from autosched import measure as am
from schedule_helpers import matmul_bias_relu
dag = matmul_bias_relu(8, 8, 8)[0]
task = ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))
builder = am.LocalBuilder(n_parallel=2)
# With this seed and share the candidates 0 to 3 run, the fifth hangs (the fault sequence of measure.py).
runner = am.LocalRunner(timeout=120, min_repeat_ms=1, inject_faults={{"hang": 0.2}}, fault_seed=1)
thread = threading.Thread(target=lambda: am.measure(task, [dag.get_init_state()] * 2, builder, runner))
thread.start()
thread.join()
print("hanging", flush=True)
am.measure(task, [dag.get_init_state()] * 3, builder, runner)
"""


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM", "SIGHUP"])
def test_workers_end_with_the_supervisor_process(sig):
    """When the process that supervises the workers dies (killed, terminated, hung up), its workers end too,
    even one hanging in a candidate, and even when the thread that started them had ended before."""
    import os
    import signal
    import subprocess
    import sys
    from process_helpers import read_line, wait_ended, worker_pids
    code = SUPERVISOR_DIES.format(helpers=os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, bufsize=0)
    try:
        assert read_line(child, 120) == "hanging"
        time.sleep(2)  # the hanging candidate runs
        workers = worker_pids(child.pid)
        assert len(workers) == 2
        child.send_signal(getattr(signal, sig))
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert wait_ended(workers, timeout=10) == []

def test_a_slow_candidate_is_timed_once_per_repeat_within_the_timeout(builder):
    """A kernel whose verification run alone lasts min_repeat_ms is timed with one run per repeat (the
    verification run was its warm-up), so `number` does not multiply a slow kernel past the timeout."""
    from autosched import te
    n = 384
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target=ans.Target("llvm -num-cores=1"))
    # The plain loop nest takes about 0.1 s per run on this kind of machine: 200 runs would not fit in 8 s.
    runner = am.LocalRunner(timeout=8, number=200, min_repeat_ms=10)
    try:
        (r,) = am.measure(task, [task.compute_dag.get_init_state()], builder, runner)
    finally:
        runner.close()
    assert r.error == "none", r.error_msg
    assert len(r.costs) == 1 and r.costs[0] > 0.01


def test_candidates_far_slower_than_the_best_are_timed_by_their_verification_run(task, builder):
    """best_seconds_hint x cut_short_factor bounds the verification run of a candidate worth timing in full:
    a hint far below any run cuts every candidate to one cost, none or a huge one cuts nothing, and a factor of
    0 turns it off."""
    states = good_states(task, 2)
    cut = am.LocalRunner(repeat=3, min_repeat_ms=0)
    off = am.LocalRunner(repeat=3, min_repeat_ms=0, cut_short_factor=0)
    assert cut.cut_short_factor == 5
    for runner, hint, costs in ((cut, 0.0, 3), (cut, 1e-12, 1), (cut, 1e3, 3), (off, 1e-12, 3)):
        runner._measurer_for(builder).best_seconds_hint = hint
        results = am.measure(task, states, builder, runner)
        for r in results:
            assert r.error == "none", r.error_msg
            assert len(r.costs) == costs, (hint, runner.cut_short_factor, r.costs)


def test_the_tuner_gives_the_measurer_the_tasks_best_time(task, builder, runner):
    opts = ans.TuningOptions(num_measure_trials=12, num_measures_per_round=4, verbose=0, builder=builder,
                             runner=runner)
    result = task.tune(opts)
    hint = runner._measurer.best_seconds_hint
    assert result.best_cost is not None and hint >= result.best_cost > 0
