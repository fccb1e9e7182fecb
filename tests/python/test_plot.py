"""Plots (autosched.plot): PNGs of tuning curves and time splits hold the data, checked by their pixels."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import _core  # noqa: E402
from autosched import measure as am  # noqa: E402

from schedule_helpers import matmul_bias_relu  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _pixels_of(path, color, tol=0.08):
    """How many pixels of the PNG are within `tol` of the RGB `color` (0..1)."""
    image = matplotlib.image.imread(str(path))[..., :3]
    return int(np.sum(np.all(np.abs(image - np.array(color)) < tol, axis=-1)))


def _rgb(name):
    return matplotlib.colors.to_rgb(name)


def _log(path, tasks_costs, start=1000.0):
    """A log whose records of each task have the given costs (0: an error), one second apart."""
    cb = ans.RecordToFile(path)
    t = start
    for task, costs in tasks_costs:
        for cost in costs:
            res = _core.MeasureResult(costs=[cost] if cost else [], error="none" if cost else "runtime",
                                      error_msg="" if cost else "why", all_cost=0.1, timestamp=t)
            cb([am.MeasureInput(task, task.compute_dag.get_init_state())], [res])
            t += 1.0


def _task(n, desc):
    return ans.SearchTask(compute_dag=matmul_bias_relu(n, n, n)[0], target="llvm", desc=desc)


def test_tuning_curve_of_a_log_draws_each_task(tmp_path):
    log = tmp_path / "log.json"
    a, b = _task(8, "a"), _task(4, "b")
    _log(log, [(a, [4e-3, 0, 2e-3, 3e-3, 1e-3]), (b, [2e-3, 1e-3])])
    data = ans.plot.curves_of_log(log)
    assert data["tasks"]["a"] == [(1, 4e-3), (2, 4e-3), (3, 2e-3), (4, 2e-3), (5, 1e-3)]
    assert data["tasks_time"]["b"] == [(5.0, 2e-3), (6.0, 1e-3)]
    png = tmp_path / "curve.png"
    ans.plot.tuning_curve(str(log), png)
    assert _pixels_of(png, _rgb("C0")) > 200 and _pixels_of(png, _rgb("C1")) > 100  # both tasks' lines


def test_an_empty_figure_has_no_line_pixels(tmp_path):
    """The pixel check can fail: the same axes without data hold no pixel of the line colours."""
    plt = ans.plot._curves._pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    fig.savefig(tmp_path / "empty.png", dpi=100)
    assert _pixels_of(tmp_path / "empty.png", _rgb("C0")) == 0
    assert _pixels_of(tmp_path / "empty.png", _rgb("C1")) == 0


def test_plots_of_a_real_tuning_result(tmp_path):
    task = _task(16, "mm16")
    opts = ans.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0)
    result = task.tune(opts, cost_model="random")
    assert result.best_cost is not None
    curve, split = tmp_path / "curve.png", tmp_path / "split.png"
    ans.plot.tuning_curve(result, curve, metric="latency")
    ans.plot.time_split(result, split)
    assert _pixels_of(curve, _rgb("C0")) > 100
    assert _pixels_of(split, _rgb("C0")) > 100 and _pixels_of(split, _rgb("C2")) > 100  # search and build bars
    with pytest.raises(TypeError, match="time_split: expected a TuneResult"):
        ans.plot.time_split(np.zeros(3))
    with pytest.raises(ValueError, match="metric must be"):
        ans.plot.tuning_curve(result, metric="speed")


def test_tuning_curve_of_a_task_scheduler_result_draws_the_estimate(tmp_path):
    tasks = [_task(8, "a"), _task(16, "b")]
    opts = ans.TuningOptions(num_measure_trials=12, num_measures_per_round=2, verbose=0)
    result = ans.TaskScheduler(tasks, cost_model="random").tune(opts)
    png = tmp_path / "net.png"
    ans.plot.tuning_curve(result, png)
    assert _pixels_of(png, _rgb("C3")) > 100  # the network's estimate
    # Each task's curve is drawn; how the scheduler shares the 12 trials between them (and so how long each
    # curve is) depends on the measured times, which load on the machine moves.
    task_a, task_b = _pixels_of(png, _rgb("C0")), _pixels_of(png, _rgb("C1"))
    assert task_a > 0 and task_b > 0 and task_a + task_b > 100, (task_a, task_b)


def test_command_line_plot_option(tmp_path):
    pytest.importorskip("onnx")
    sys.path.insert(0, HERE)
    from test_cli import _dense_relu_model
    model = _dense_relu_model(str(tmp_path / "m.onnx"))
    log, png = str(tmp_path / "log.json"), str(tmp_path / "curve.png")
    proc = subprocess.run([sys.executable, "-m", "autosched", "tune", model, "--shape", "N=4", "--trials", "6",
                           "--per-round", "3", "--log", log, "--plot", png, "--cost-model", "random"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"tuning curve in {png}" in proc.stdout
    assert _pixels_of(png, _rgb("C0")) > 100
