"""TuningOptions.time_budget_s is the wall time from the call to its return (budget.py): a task alone, a task
scheduler and the command line stop within it, whatever phase its end falls in: a search cut short, a run in
progress abandoned, a network timing that would end after it skipped. Each says what the end cut in its stop
reason. The bounds allow 5% of the budget and a second of process noise (two shared cores)."""
import os
import re
import subprocess
import sys
import time

import pytest

import autosched as ans
from autosched import graph as agraph
from autosched.tune.budget import TimeBudget, process_start
from schedule_helpers import matmul_tensors
from test_task_scheduler import FAST, add2, rowprod

if not ans._core.has_llvm():
    pytest.skip("built without the LLVM backend", allow_module_level=True)

NOISE_S = 1.0
# A search of seconds on two cores (a round of the defaults on a large task takes as long on a loaded machine).
SLOW_SEARCH = dict(evolutionary_search_population=4096, evolutionary_search_num_iters=6)


def within(budget_s, took):
    return took <= budget_s * 1.05 + NOISE_S


def matmul(n):
    return ans.SearchTask(compute_dag=ans.ComputeDAG(matmul_tensors(n, n, n, name=f"mm{n}")), target="llvm",
                          desc=f"matmul{n}")


def task_of(tensors, desc):
    return ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm", desc=desc)


def quick_runner(**kw):
    return ans.LocalRunner(timeout=kw.pop("timeout", 10), min_repeat_ms=1, **kw)


def test_a_task_alone_stops_within_its_budget_its_search_cut_short():
    task = matmul(64)
    policy = ans.SketchPolicy(task, "random", ans.SearchParams(num_measures_per_round=16, **SLOW_SEARCH))
    opts = ans.TuningOptions(num_measure_trials=1000, num_measures_per_round=16, time_budget_s=3.0, verbose=0,
                             search_time_share=1.0, runner=quick_runner())
    t0 = time.monotonic()
    result = task.tune(opts, search_policy=policy)
    took = time.monotonic() - t0
    assert within(3.0, took), (took, result.stop_reason)
    assert result.stop_reason.startswith("time budget of 3.0 s used"), result.stop_reason
    assert "the budget's end cut the search of matmul64's round short" in result.stop_reason, result.stop_reason
    assert result.trials >= 1  # the baselines before the search
    assert policy.last_round["cut_at_deadline"]


def test_a_run_in_progress_at_the_budgets_end_is_abandoned():
    # Every run loops until its timeout of 30 s: the budget's end abandons the first one.
    task = matmul(16)
    opts = ans.TuningOptions(num_measure_trials=100, time_budget_s=2.0, verbose=0,
                             runner=quick_runner(timeout=30, inject_faults={"hang": 1.0}))
    t0 = time.monotonic()
    result = task.tune(opts, cost_model="random")
    took = time.monotonic() - t0
    assert within(2.0, took), (took, result.stop_reason)
    assert result.trials == 0 and not result.errors  # abandoned, not failed
    assert "the budget's end stopped the measurements of matmul16's round" in result.stop_reason, result.stop_reason


def test_a_scheduler_of_four_tasks_stops_within_its_budget():
    tasks = [matmul(64), matmul(48), task_of(add2(), "add2"), task_of(rowprod(), "rowprod")]
    opts = ans.TuningOptions(num_measure_trials=10000, num_measures_per_round=16, time_budget_s=4.0, verbose=0,
                             search_time_share=1.0, runner=quick_runner())
    t0 = time.monotonic()
    result = ans.TaskScheduler(tasks, cost_model="random").tune(opts, search_policy_params=SLOW_SEARCH)
    took = time.monotonic() - t0
    assert within(4.0, took), (took, result.stop_reason)
    assert result.stop_reason.startswith("time budget of 4.0 s used (the budget's end"), result.stop_reason
    assert result.trials >= 1


class _SlowTiming:
    """A NetworkTiming due at every round whose build and timing take `seconds`."""

    def __init__(self, seconds):
        self.seconds, self.timings = seconds, 0

    def due(self, elapsed_s):
        return True

    def measure(self, tasks, states, costs, elapsed_s=0.0):
        time.sleep(self.seconds)
        self.timings += 1
        return agraph.NetworkTimes(list(costs), 0.0, sum(costs), self.seconds, len(tasks))


def test_a_network_timing_that_would_end_after_the_budget_is_skipped():
    tasks = [matmul(32), task_of(add2(), "add2"), task_of(rowprod(), "rowprod")]
    timing = _SlowTiming(3.0)
    opts = ans.TuningOptions(num_measure_trials=10000, num_measures_per_round=4, time_budget_s=8.0, verbose=0,
                             runner=quick_runner())
    t0 = time.monotonic()
    result = ans.TaskScheduler(tasks, cost_model="random", network_timing=timing).tune(
        opts, search_policy_params=FAST)
    took = time.monotonic() - t0
    assert within(8.0, took), (took, result.stop_reason)
    # The first timing (its time unknown, estimated from the tasks' builds) ran; one due when less than its 3 s
    # were left did not.
    assert timing.timings >= 1 and len(result.network_timings) == timing.timings
    assert re.search(r"the network timing due at \d+ s was skipped: it takes about 3\.0 s, [0-2]\.\d s were left",
                     result.stop_reason), result.stop_reason


def test_the_budget_counts_from_a_given_start():
    # The command line counts from its process's start: time spent before the call is the budget's too.
    tasks = [matmul(32), task_of(rowprod(), "rowprod")]
    opts = ans.TuningOptions(num_measure_trials=10000, num_measures_per_round=4, time_budget_s=2.0, verbose=0,
                             runner=quick_runner())
    t0 = time.monotonic()
    result = ans.TaskScheduler(tasks, cost_model="random").tune(opts, search_policy_params=FAST, start=t0 - 1.5)
    took = time.monotonic() - t0
    assert within(0.5, took), (took, result.stop_reason)
    assert result.stop_reason.startswith("time budget of 2.0 s used"), result.stop_reason
    assert 0 <= time.monotonic() - process_start() < 86400  # this process started before now


def test_time_budget_notes_each_cut_once_in_the_stop_reason():
    budget = TimeBudget(10.0, start=time.monotonic() - 11)
    assert budget.passed() and budget.seconds_left() < 0 and not budget.fits(0.0)
    assert TimeBudget(None).fits(1e9) and not TimeBudget(None).passed() and TimeBudget(None).seconds_left() is None
    budget.note("network timing", "the first")
    budget.note("network timing", "a second of the same kind")
    budget.note_search_cut("mm")
    assert budget.stop_reason() == ("time budget of 10.0 s used (the first; the budget's end cut the search of "
                                    "mm's round short (nothing measured))")
    assert TimeBudget(5.0).stop_reason() == "time budget of 5.0 s used"


def test_the_command_line_stops_within_its_budget_from_its_start(tmp_path):
    pytest.importorskip("onnx")
    from test_cli import _dense_relu_model
    model = _dense_relu_model(str(tmp_path / "m.onnx"))
    log = str(tmp_path / "m.json")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "autosched", "tune", model, "--shape", "N=5", "--trials", "100000",
                           "--per-round", "4", "--time-budget", "5s", "--log", log, "--verbose", "0"],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    took = time.monotonic() - t0  # the process's start and end included
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert within(5.0, took), (took, out)
    since_start = re.search(r"Records in .*; ([0-9.]+) s since the command started", out)
    assert since_start and float(since_start.group(1)) <= 5.0 * 1.05, out
