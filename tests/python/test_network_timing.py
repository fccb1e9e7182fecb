"""NetworkTiming: a network built from given schedules has its kernels timed inside runs of it (a time per task,
the time between the kernels); a TaskScheduler given one scales each task's latency by its time in the network
per tuner-timed second (the least of its last timings, so that one timed while the machine was slowed does not
count), in its estimate, its rounds and its summary, replaces the time outside the kernels by the measured one,
and a timing that fails ends the timing, never the session."""
import time
from types import SimpleNamespace

import numpy as np
import pytest

import autosched as ans
from autosched import graph as agraph
from autosched.tune.budget import TimeBudget
from autosched.search import baseline_states
from autosched.tune.network import SCALE_TIMINGS, NetworkTimingPhase
from test_graph_build import cnn

pytestmark = pytest.mark.needs_llvm

FAST = dict(evolutionary_search_population=64, evolutionary_search_num_iters=1, sample_init_min_population=16)


def test_network_timing_times_each_task_inside_the_built_network():
    g = cnn()
    tasks, weights = agraph.extract_tasks(g, "llvm")
    timing = agraph.NetworkTiming(g, "llvm", every_s=60, number=3, repeat=2)
    assert timing.due(0.0)
    states = [baseline_states(t)[-1] for t in tasks]
    times = timing.measure(tasks, states, [1e-3] * len(tasks), elapsed_s=5.0)
    assert len(times.task_seconds) == len(tasks) and all(s > 0 for s in times.task_seconds), times
    assert times.tuned_groups == len(agraph.build(g, "llvm", verbose=False).groups)  # every group ran its state
    assert times.between_s >= 0 and times.run_s >= sum(times.task_seconds) and times.seconds > 0
    assert not timing.due(30.0) and timing.due(65.0)
    # A task given no state takes its baseline; a task the network does not run has no time.
    other = ans.SearchTask(compute_dag=ans.ComputeDAG(tasks[0].compute_dag.tensors), target="llvm",
                           workload_key="not-in-this-network")
    times = timing.measure(tasks + [other], [None] * len(tasks) + [None], [None] * (len(tasks) + 1))
    assert times.task_seconds[-1] is None and all(s > 0 for s in times.task_seconds[:-1])
    assert times.tuned_groups == 0


def test_network_timing_checks_its_arguments():
    g = cnn()
    for bad in (-1, "often", True):
        with pytest.raises(ValueError, match="every_s"):
            agraph.NetworkTiming(g, "llvm", every_s=bad)
    with pytest.raises(ValueError, match="number and repeat"):
        agraph.NetworkTiming(g, "llvm", number=0)
    with pytest.raises(ValueError, match="1 inputs, got 2 arrays"):
        agraph.NetworkTiming(g, "llvm", inputs=[np.zeros((1, 3, 12, 12), np.float32)] * 2)
    with pytest.raises(ValueError, match=r"input 'data' must be a float32\[1, 3, 12, 12\] array, got float64\[1, 3, 12, 12\]"):
        agraph.NetworkTiming(g, "llvm", inputs=[np.zeros((1, 3, 12, 12))])
    with pytest.raises(ValueError, match=r"input 'data' must be a float32\[1, 3, 12, 12\] array, got list"):
        agraph.NetworkTiming(g, "llvm", inputs=[[0.0]])
    tasks, _ = agraph.extract_tasks(g, "llvm")
    with pytest.raises(TypeError, match="network_timing must be a graph.NetworkTiming"):
        ans.TaskScheduler(tasks, network_timing=object())


def test_the_scheduler_scales_each_task_by_its_time_in_the_network(tmp_path, capsys):
    g = cnn()
    tasks, weights = agraph.extract_tasks(g, "llvm")
    timing = agraph.NetworkTiming(g, "llvm", every_s=0, number=3, repeat=2)
    scheduler = ans.TaskScheduler(tasks, weights, cost_model="random", outside_kernels_s=1.0,
                                  network_timing=timing)
    log = str(tmp_path / "cnn.json")
    opts = ans.TuningOptions(num_measure_trials=40, num_measures_per_round=2, verbose=2,
                             runner=ans.LocalRunner(timeout=10, min_repeat_ms=1),
                             measure_callbacks=[ans.RecordToFile(log)])
    result = scheduler.tune(opts, search_policy_params=FAST)
    out = capsys.readouterr().out
    assert result.network_timings, out
    # The timing's lines and the summary's rows about it are details: verbose 2.
    assert "Network timing at" in out and "network timing" in out and "x its time in the network" in out, out
    # The measured time between the kernels (the least of the last SCALE_TIMINGS timings) replaces the 1 s
    # given, and every task has a scale of its own.
    recent = [t["between_s"] for t in result.network_timings[-SCALE_TIMINGS:]]
    assert result.outside_kernels_s == pytest.approx(min(recent)) and result.outside_kernels_s < 1.0
    assert all(k > 0 for k in result.latency_scales) and any(k != 1.0 for k in result.latency_scales)
    expected = sum(w * k * r.best_cost for w, k, r in zip(result.weights, result.latency_scales,
                                                           result.task_results)) + result.outside_kernels_s
    assert result.latency_after == pytest.approx(expected)
    net = agraph.build(g, "llvm", log, verbose=False)
    data = np.random.default_rng(0).standard_normal((1, 3, 12, 12)).astype(np.float32)
    np.testing.assert_allclose(net(data)[0], g.evaluate(data)[0], rtol=1e-4, atol=1e-4)


class _Broken:
    def due(self, elapsed_s):
        return True

    def measure(self, tasks, states, costs, elapsed_s=0.0):
        raise RuntimeError("no network here")


def test_a_failing_network_timing_ends_the_timing_not_the_session(capsys):
    g = cnn()
    tasks, weights = agraph.extract_tasks(g, "llvm")
    scheduler = ans.TaskScheduler(tasks, weights, cost_model="random", network_timing=_Broken())
    opts = ans.TuningOptions(num_measure_trials=40, num_measures_per_round=2, verbose=1,
                             runner=ans.LocalRunner(timeout=10, min_repeat_ms=1))
    result = scheduler.tune(opts, search_policy_params=FAST)
    out = capsys.readouterr()
    assert (out.out + out.err).count("Network timing failed (RuntimeError: no network here)") == 1  # then no more
    assert result.trials == 40 and not result.network_timings
    assert result.latency_scales == [1.0] * len(tasks)


class _Scripted:
    """A NetworkTiming whose kernels take `factors[k]` times their tuner-timed latency at its k-th timing."""

    def __init__(self, weights, factors, between):
        self.weights, self.factors, self.between = weights, list(factors), list(between)

    def due(self, elapsed_s):
        return True

    def measure(self, tasks, states, costs, elapsed_s=0.0):
        factor, between = self.factors.pop(0), self.between.pop(0)
        seconds = [factor * w * c for w, c in zip(self.weights, costs)]
        return agraph.NetworkTimes(seconds, between, sum(seconds) + between, 0.1, len(tasks))


class _Session:
    """What the network timing phase (tune/network.py) reads of a TuningSession: every task has a schedule of
    1 ms."""

    def __init__(self, n):
        self.start, self.verbose = time.monotonic(), 0
        self.budget = TimeBudget(None, self.start)
        self.result = SimpleNamespace(latency_scales=[1.0] * n, done=set(), network_timings=[],
                                      outside_kernels_s=0.0)
        self.tuners = [SimpleNamespace(result=SimpleNamespace(best_state="a state", best_cost=1e-3))
                       for _ in range(n)]


def test_a_timing_in_a_slow_spell_of_the_machine_does_not_double_the_estimate():
    tasks, weights = agraph.extract_tasks(cnn(), "llvm")
    # the third timing falls in a spell where everything runs at half speed
    factors, between = [1.3, 1.2, 2.6, 1.25, 1.4, 1.5, 1.6], [2e-5, 3e-5, 9e-5, 3e-5, 4e-5, 5e-5, 6e-5]
    phase = NetworkTimingPhase(_Scripted(weights, factors, between), tasks, weights)
    session = _Session(len(tasks))
    assert SCALE_TIMINGS == 3
    expected = [1.3, 1.2, 1.2, 1.2, 1.25, 1.25, 1.4]  # the least of the last three
    for want, factor in zip(expected, factors):
        phase.run(session)
        assert session.result.latency_scales == pytest.approx([want] * len(tasks))
        assert session.result.network_timings[-1]["kernel_scale"] == pytest.approx(factor)  # reported as timed
    assert session.result.outside_kernels_s == pytest.approx(4e-5)
