"""Plots of a tuning run (matplotlib, optional: ``pip install matplotlib``; nothing else in autosched needs it).

    ans.plot.tuning_curve("net.json", "curve.png")   # best speed per task, and the network's estimate
    ans.plot.tuning_curve(result)                    # a TuneResult or TaskSchedulerResult: against trials
    ans.plot.time_split(result, "split.png")         # where the time went: search, cost model, build, run

Each function returns the matplotlib Figure (shown inline in a notebook) and writes it to `path` when given.
From a log, the curves are drawn against trials and against the time the records were measured; a result holds
no clock times, so its curves are drawn against trials only.
"""
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .. import records as _records
from ..core.checks import describe

__all__ = ["tuning_curve", "time_split", "curves_of_log"]

Curve = List[Tuple[float, float]]  # (x, value) points


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("autosched.plot needs matplotlib, which is not installed: "
                          "pip install 'autosched[plot]' (or pip install matplotlib)") from None
    if not os.environ.get("DISPLAY") and "inline" not in str(matplotlib.get_backend()).lower():
        matplotlib.use("Agg")  # no screen: draw into files only
    import matplotlib.pyplot as plt
    return plt


def curves_of_log(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """The curves of a record log: {"tasks": {name: [(trial, best seconds)]}, "tasks_time": {name: [(seconds
    since the first record, best seconds)]}, "flop": {name: FLOPs}}; each task's best so far, records in the
    order they were written."""
    tasks: Dict[str, Curve] = {}
    times: Dict[str, Curve] = {}
    flop: Dict[str, float] = {}
    best: Dict[str, Optional[float]] = {}
    count: Dict[str, int] = {}
    start = None
    for inp, res in _records.load_records(path):
        name = inp.task.desc or inp.task.workload_key
        flop[name] = inp.task.compute_dag.flop_ct
        count[name] = count.get(name, 0) + 1
        start = res.timestamp if start is None else min(start, res.timestamp)
        if res.ok and (best.get(name) is None or res.mean_cost < best[name]):
            best[name] = res.mean_cost
        cost = best.get(name)
        if cost is not None:
            tasks.setdefault(name, []).append((count[name], cost))
            times.setdefault(name, []).append((res.timestamp - start, cost))
    return {"tasks": tasks, "tasks_time": times, "flop": flop}


def _result_curves(result: Any) -> Tuple[Dict[str, Curve], Optional[Curve], Dict[str, float]]:
    """(per task curves, the network's estimate or None, FLOPs per task) of a TuneResult or
    TaskSchedulerResult, against trials."""
    if hasattr(result, "task_results"):  # TaskSchedulerResult
        tasks, flop = {}, {}
        for task, r in zip(result.tasks, result.task_results):
            name = task.desc or task.workload_key
            tasks[name] = [(t, c) for t, c in r.history if c is not None]
            flop[name] = task.compute_dag.flop_ct
        network = [(t, c) for t, c in result.history if c is not None]
        return tasks, network, flop
    if hasattr(result, "history") and hasattr(result, "task"):  # TuneResult
        name = result.task.desc or result.task.workload_key
        return ({name: [(t, c) for t, c in result.history if c is not None]}, None,
                {name: result.task.compute_dag.flop_ct})
    raise TypeError(f"plot: expected a record log path, a TuneResult or a TaskSchedulerResult, got "
                    f"{describe(result)}")


def _draw(ax: Any, curves: Dict[str, Curve], flop: Dict[str, float], xlabel: str, gflops: bool) -> None:
    for name, points in curves.items():
        if not points:
            continue
        xs = [x for x, _ in points]
        if gflops and flop.get(name, 0) > 0:
            ys = [flop[name] / c / 1e9 for _, c in points]
        else:
            ys = [c * 1e3 for _, c in points]
        ax.step(xs, ys, where="post", label=name[:40], linewidth=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("best GFLOP/s" if gflops else "best latency (ms)")
    ax.grid(True, alpha=0.3)


def tuning_curve(log_or_result: Any, path: Optional[Union[str, "os.PathLike[str]"]] = None,
                 metric: str = "gflops") -> Any:
    """The best speed found so far against trials (and, from a log, against time), one line per task;
    from a TaskSchedulerResult also the network's estimated latency. metric: "gflops" or "latency"."""
    if metric not in ("gflops", "latency"):
        raise ValueError(f"tuning_curve: metric must be 'gflops' or 'latency', got {metric!r}")
    plt = _pyplot()
    gflops = metric == "gflops"
    if isinstance(log_or_result, (str, os.PathLike)):
        data = curves_of_log(log_or_result)
        if not data["tasks"]:
            raise ValueError(f"tuning_curve: '{os.fspath(log_or_result)}' has no successful record to plot")
        fig, (by_trials, by_time) = plt.subplots(1, 2, figsize=(11, 4))
        _draw(by_trials, data["tasks"], data["flop"], "trials of the task", gflops)
        _draw(by_time, data["tasks_time"], data["flop"], "seconds since the first record", gflops)
        by_trials.legend(fontsize=7)
    else:
        tasks, network, flop = _result_curves(log_or_result)
        panels = 2 if network else 1
        fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4), squeeze=False)
        _draw(axes[0][0], tasks, flop, "trials of the task", gflops)
        axes[0][0].legend(fontsize=7)
        if network:
            ax = axes[0][1]
            ax.step([t for t, _ in network], [c * 1e3 for _, c in network], where="post", color="C3", linewidth=2)
            ax.set_xlabel("trials in all")
            ax.set_ylabel("estimated network latency (ms)")
            ax.grid(True, alpha=0.3)
    fig.suptitle("tuning curve")
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=100)
    return fig


def _seconds(result: Any) -> Dict[str, float]:
    if hasattr(result, "task_results"):
        total: Dict[str, float] = {}
        for r in result.task_results:
            for k, v in r.seconds.items():
                if k != "total":
                    total[k] = total.get(k, 0.0) + v
        return total
    if hasattr(result, "seconds") and hasattr(result.seconds, "items"):
        return {k: v for k, v in result.seconds.items() if k != "total"}
    raise TypeError(f"time_split: expected a TuneResult or a TaskSchedulerResult, got {describe(result)}")


def time_split(result: Any, path: Optional[Union[str, "os.PathLike[str]"]] = None) -> Any:
    """Where a tuning run's time went (search, cost model, build, run), as horizontal bars in seconds."""
    seconds = _seconds(result)
    plt = _pyplot()
    order: Sequence[str] = [k for k in ("search", "cost_model", "build", "run", "measure") if k in seconds]
    order = list(order) + sorted(k for k in seconds if k not in order)
    fig, ax = plt.subplots(figsize=(6, 0.6 * max(2, len(order)) + 1))
    values = [seconds[k] for k in order]
    ax.barh([k.replace("_", " ") for k in order], values, color=[f"C{i}" for i in range(len(order))])
    total = sum(values)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.1f} s ({100 * v / total:.0f}%)" if total > 0 else "", va="center", fontsize=8)
    ax.set_xlabel("seconds")
    ax.invert_yaxis()
    ax.set_title("tuning time by phase")
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=100)
    return fig
