"""The estimated total of a network counts what the graph runtime spends outside the tasks' kernels: the
dispatch time per kernel call is measured once per target (a positive time, remembered), a network's share is
its groups times it, and a TaskScheduler given it adds it to its estimate, its latencies and its summary."""
import numpy as np
import pytest

import autosched as ans
from autosched import graph as agraph
from autosched.graph import Graph
from schedule_helpers import matmul_tensors

pytestmark = pytest.mark.needs_llvm


def small_net():
    g = Graph(name="small")
    x = g.add_input("x", (1, 16), "float32")
    w = g.add_constant("w", np.ones((8, 16), np.float32))
    y = g.add_node("dense", [x, w], name="fc")
    y = g.add_node("relu", [y])
    z = g.add_node("softmax", [y], name="prob")
    g.set_outputs([z])
    return g


def test_dispatch_time_is_measured_once_and_counts_per_group():
    per_call = agraph.dispatch_seconds("llvm")
    # A native call sequence adds tens of nanoseconds per kernel, within the timing noise: 0 is a valid answer.
    assert 0 <= per_call < 0.01
    assert agraph.dispatch_seconds(ans.Target("llvm")) == per_call  # remembered
    g = small_net()
    groups = len(agraph.extract.lower_graph(g, ans.Target("llvm")).groups)
    assert groups >= 2
    assert agraph.outside_kernels_seconds(g, "llvm") == pytest.approx(groups * per_call)


def test_the_scheduler_adds_the_time_outside_the_kernels(capsys):
    tasks = [ans.SearchTask(compute_dag=ans.ComputeDAG(matmul_tensors(n, n, n)), target="llvm", desc=f"mm{n}")
             for n in (8, 12)]
    scheduler = ans.TaskScheduler(tasks, [2, 3], cost_model="random", outside_kernels_s=1e-3)
    opts = ans.TuningOptions(num_measure_trials=1000, verbose=1)
    session = scheduler.session(opts, scheduler._policies(opts, None, None), [None, None])
    for tt, cost in zip(session.tuners, (1e-5, 2e-5)):
        tt.result.best_cost = tt.result.baseline_cost = cost
    assert session.estimated_latency() == (pytest.approx(2e-5 + 6e-5 + 1e-3), 0)
    assert session.result.latency_after == pytest.approx(8e-5 + 1e-3)
    assert session.result.latency_before == pytest.approx(8e-5 + 1e-3)
    session.reporter = ans.tune.progress.Progress(1000, None, 2, desc="2 tasks")  # 2: the detailed rows
    session.view.summary(session)
    assert "estimated total (sum of weight x latency + 1.000 ms outside the kernels)" in capsys.readouterr().out
    measured = ans.TaskScheduler(tasks, [2, 3], outside_kernels_s="measure").outside_seconds()
    assert measured == pytest.approx(5 * agraph.dispatch_seconds("llvm"))
    assert ans.TaskScheduler(tasks).outside_seconds() == 0
    for bad in (-1, "auto", float("inf"), True):
        with pytest.raises(ValueError, match="outside_kernels_s"):
            ans.TaskScheduler(tasks, outside_kernels_s=bad)
