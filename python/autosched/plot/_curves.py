"""Plots of a tuning run (matplotlib, optional: ``pip install matplotlib``; nothing else in autosched needs it).

    ans.plot.tuning_curve("net.json", "curve.png")   # best speed per task, and the network's estimate
    ans.plot.tuning_curve(result)                    # a TuneResult or TaskSchedulerResult: against trials
    ans.plot.time_split(result, "split.png")         # where the time went: search, cost model, build, run
    ans.plot.time_split("net.json")                  # from a log (or its records): measurement time per task

Each function returns the matplotlib Figure (shown inline in a notebook) and writes it to `path` when given.
From a log, the curves are drawn against trials and against the time the records were measured; a result holds
no clock times, so its curves are drawn against trials only. A log's records (load_records' list) serve as the
log. Task names in legends and labels are abbreviated with their shape kept whole (core.text.short_task_name).
"""
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .. import records as _records
from ..core.checks import describe
from ..core.text import short_task_name

__all__ = ["tuning_curve", "time_split", "curves_of_log"]

Curve = List[Tuple[float, float]]  # (x, value) points
LogLike = Union[str, "os.PathLike[str]", Sequence[Tuple[Any, Any]]]  # a log path or its records
# Legends and labels name a task in about this many characters (the shape always whole).
LABEL_WIDTH = 40


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


def _is_records(value: Any) -> bool:
    """Whether `value` is a list of (MeasureInput, MeasureResult) pairs, as load_records returns."""
    return (isinstance(value, (list, tuple)) and all(isinstance(r, tuple) and len(r) == 2 and hasattr(r[0], "task")
                                                     and hasattr(r[1], "all_cost") for r in value))


def _records_of(log: LogLike, who: str) -> List[Tuple[Any, Any]]:
    """The records of a log path, or `log` itself when it is records already; TypeError otherwise."""
    if isinstance(log, (str, os.PathLike)):
        return list(_records.load_records(log))
    if _is_records(log):
        return list(log)
    raise TypeError(f"{who}: expected a record log path or its records (load_records' list of (MeasureInput, "
                    f"MeasureResult) pairs), got {describe(log)}")


def curves_of_log(path: LogLike) -> Dict[str, Any]:
    """The curves of a record log (a path, or its records): {"tasks": {name: [(trial, best seconds)]}, "tasks_time": {name: [(seconds
    since the first record, best seconds)]}, "flop": {name: FLOPs}}; each task's best so far, records in the
    order they were written."""
    tasks: Dict[str, Curve] = {}
    times: Dict[str, Curve] = {}
    flop: Dict[str, float] = {}
    best: Dict[str, Optional[float]] = {}
    count: Dict[str, int] = {}
    start = None
    for inp, res in _records_of(path, "curves_of_log"):
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
        ax.step(xs, ys, where="post", label=short_task_name(name, LABEL_WIDTH), linewidth=2)
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
    if isinstance(log_or_result, (str, os.PathLike)) or _is_records(log_or_result):
        data = curves_of_log(log_or_result)
        if not data["tasks"]:
            where = (f"'{os.fspath(log_or_result)}'" if isinstance(log_or_result, (str, os.PathLike))
                     else "the list of records")
            raise ValueError(f"tuning_curve: {where} has no successful record to plot")
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


def _seconds(source: Any) -> Tuple[Dict[str, float], str]:
    """(seconds per bar, title) of a result (by phase) or a log path or records (measurement time by task: a log
    records each candidate's build and run, not the search's or the cost model's time)."""
    if hasattr(source, "task_results"):
        total: Dict[str, float] = {}
        for r in source.task_results:
            for k, v in r.seconds.items():
                if k != "total":
                    total[k] = total.get(k, 0.0) + v
        return total, "tuning time by phase"
    if hasattr(source, "seconds") and hasattr(source.seconds, "items"):
        return {k: v for k, v in source.seconds.items() if k != "total"}, "tuning time by phase"
    if not (isinstance(source, (str, os.PathLike)) or _is_records(source)):
        raise TypeError(f"time_split: expected a TuneResult, a TaskSchedulerResult, a record log path or its "
                        f"records (load_records' list), got {describe(source)}")
    by_task: Dict[str, float] = {}
    for inp, res in _records_of(source, "time_split"):
        name = short_task_name(inp.task.desc or inp.task.workload_key, LABEL_WIDTH)
        by_task[name] = by_task.get(name, 0.0) + res.all_cost
    if not by_task:
        where = f"'{os.fspath(source)}' holds no record" if isinstance(source, (str, os.PathLike)) else \
            "the list of records is empty"
        raise ValueError(f"time_split: {where}")
    return by_task, "measurement time (build + run) by task"


def time_split(source: Any, path: Optional[Union[str, "os.PathLike[str]"]] = None) -> Any:
    """Where a tuning run's time went, as horizontal bars in seconds: of a TuneResult or TaskSchedulerResult by
    phase (search, cost model, build, run); of a record log (a path or its records) by task, the seconds its
    measurements took (a log holds no search or cost-model time)."""
    seconds, title = _seconds(source)
    plt = _pyplot()
    order: Sequence[str] = [k for k in ("search", "cost_model", "build", "run", "measure") if k in seconds]
    order = list(order) + [k for k in seconds if k not in order]
    fig, ax = plt.subplots(figsize=(6, 0.6 * max(2, len(order)) + 1))
    values = [seconds[k] for k in order]
    ax.barh([k.replace("_", " ") if k in ("cost_model",) else k for k in order], values,
            color=[f"C{i % 10}" for i in range(len(order))])
    total = sum(values)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.1f} s ({100 * v / total:.0f}%)" if total > 0 else "", va="center", fontsize=8)
    ax.set_xlabel("seconds")
    ax.invert_yaxis()
    ax.set_title(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=100)
    return fig
