"""The record log: one JSON line per measurement (format: docs/records.md).

    opts = ans.TuningOptions(..., measure_callbacks=[ans.RecordToFile("mm.json")])
    for inp, res in ans.records.load_records("mm.json"):   # (MeasureInput, MeasureResult)
        print(inp.task.workload_key, res.error, res.costs)
    inp, res = ans.records.load_best_record("mm.json", workload_key=task.workload_key, target=task.target)

Lines that cannot be used (a torn last line after a crash, malformed or foreign lines, other versions, schedules
that no longer replay) are skipped with a RecordWarning naming the file and line.

Command line (records/__main__.py): ``python -m autosched.records show log.json`` prints, per task, its trials,
best time, errors by kind and target; ``python -m autosched.records distill in.json -o out.json`` keeps the best
record of every task and target.
"""
import contextvars
import os
import warnings
from collections import Counter
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from .. import _core
from ..core.checks import check_path
from ..measure.local import MeasureInput
from ..core.record_log import RecordToFile, RecordWarning, load_best_state, read_log
from ..core.task import SearchTask
from ..core.text import format_duration_column, plain_number, short_task_name

__all__ = ["RecordWarning", "RecordToFile", "RecordReader", "load_records", "load_best_record", "load_best_state",
           "distill", "save_records", "summarize", "TaskSummary", "ApplyHistoryBest", "applied_log"]


def _load(path):
    return read_log(check_path("records", path, "the log path"), stacklevel=3)


def _to_pairs(records):
    tasks = {}  # task JSON as stored -> SearchTask, so records of one task share it
    pairs = []
    for rec in records:
        text = rec.task_json
        task = tasks.get(text)
        if task is None:
            task = tasks[text] = SearchTask.from_json(text)
        pairs.append((MeasureInput(task, rec.state), rec.result))
    return pairs


PathLike = Union[str, "os.PathLike[str]"]
Record = Tuple[MeasureInput, Any]  # (MeasureInput, MeasureResult)


def load_records(path: PathLike) -> List[Record]:
    """Every usable record of the log, as a list of (MeasureInput, MeasureResult)."""
    return _to_pairs(_load(path).records)


def load_best_record(path: PathLike, workload_key: Optional[str] = None,
                     target: Any = None) -> Union[Record, Tuple[None, None]]:
    """(MeasureInput, MeasureResult) of the fastest record without error, of that workload key and target
    (None: any); never a record of another target. (None, None) when there is none."""
    loaded = _load(path)
    if target is not None and not isinstance(target, str):
        target = target.text  # a Target: its canonical text, as records store it
    index = loaded.best(workload_key or "", target or "")
    if index is None:
        return None, None
    return _to_pairs([loaded.records[index]])[0]


def save_records(path: PathLike, inputs: List[MeasureInput], results: List[Any], fsync: bool = False) -> None:
    """Appends (inputs[i], results[i]) records to the log."""
    RecordToFile(path, fsync)(inputs, results)


def distill(in_path: PathLike, out_path: Optional[PathLike] = None) -> Tuple[str, int]:
    """Writes the best record of every (workload key, target) of in_path to out_path (default:
    ``<in_path>.best.json``), lines unchanged; returns out_path and the number of records kept."""
    out_path = os.fspath(out_path) if out_path is not None else os.fspath(in_path) + ".best.json"
    if os.path.exists(out_path) and not os.path.isfile(out_path):
        raise ValueError(f"distill: the output '{out_path}' exists and is not a regular file")
    loaded = _load(in_path)
    lines = [loaded.records[i].text for i in loaded.distill()]
    tmp = out_path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.isfile(tmp):
            os.remove(tmp)
        raise
    return out_path, len(lines)


class RecordReader:
    """The records of a log, as TVM's auto_scheduler.RecordReader reads them: iterate it for (MeasureInput,
    MeasureResult) pairs, or call read_lines() for (inputs, results) lists."""

    def __init__(self, filename: PathLike) -> None:
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"RecordReader: filename must be a path (str), got {type(filename).__name__}")
        self.filename = os.fspath(filename)

    def read_lines(self, max_lines: Optional[int] = None,
                   skip_lines: int = 0) -> Tuple[List[MeasureInput], List[Any]]:
        """(inputs, results): lists of the log's records, skipping `skip_lines` and keeping at most
        `max_lines` (None: all)."""
        pairs = load_records(self.filename)[skip_lines:]
        if max_lines is not None:
            pairs = pairs[:max_lines]
        return [inp for inp, _ in pairs], [res for _, res in pairs]

    def __iter__(self) -> Iterator[Record]:
        return iter(load_records(self.filename))

    def __repr__(self):
        return f"RecordReader({self.filename!r})"


class TaskSummary:
    """One task of a log: desc, workload_key, target (text), trials, ok (trials without error), best_cost
    (seconds; None when every trial failed), flop_ct, errors (error kind -> count, from the typed error codes)."""

    def __init__(self, rec):
        self.desc = rec.task.desc
        self.workload_key = rec.task.workload_key
        self.target = rec.task.target.text
        self.flop_ct = rec.task.compute_dag.flop_ct
        self.trials, self.ok, self.best_cost = 0, 0, None
        self.errors = Counter()

    def add(self, res):
        self.trials += 1
        if res.error_no == _core.MeasureErrorNo.NONE:
            self.ok += 1
            if self.best_cost is None or res.mean_cost < self.best_cost:
                self.best_cost = res.mean_cost
        else:
            self.errors[res.error] += 1

    def __repr__(self):
        return (f"TaskSummary({self.desc or self.workload_key!r}, trials={self.trials}, ok={self.ok}, "
                f"best_cost={self.best_cost}, target={self.target!r})")


def summarize(path: PathLike) -> List[TaskSummary]:
    """A TaskSummary per (workload key, target) of the log, in order of first appearance."""
    tasks: Dict[Tuple[str, str], TaskSummary] = {}
    for rec in _load(path).records:
        key = (rec.task.workload_key, rec.task.target.text)
        summary = tasks.get(key)
        if summary is None:
            summary = tasks[key] = TaskSummary(rec)
        summary.add(rec.result)
    return list(tasks.values())


def format_summary(path: PathLike, summaries: List[TaskSummary]) -> str:
    """The table `python -m autosched.records show` prints."""
    if not summaries:
        return f"{path}: no records"
    unit, best = format_duration_column([s.best_cost for s in summaries])
    rows = [("task", "trials", f"best ({unit})", "GFLOP/s", "errors", "target")]
    for s, best_text in zip(summaries, best):
        gflops = plain_number(s.flop_ct / s.best_cost / 1e9, 4) if s.best_cost and s.flop_ct > 0 else "-"
        errors = ", ".join(f"{k} {v}" for k, v in sorted(s.errors.items())) or "none"
        rows.append((short_task_name(s.desc or s.workload_key, 48), str(s.trials), best_text, gflops, errors,
                     s.target))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [f"{path}: {sum(s.trials for s in summaries)} records of {len(summaries)} task(s)"]
    for r in rows:
        lines.append("  ".join(f"{c:<{w}}" if i in (0, 4) else f"{c:>{w}}" for i, (c, w) in enumerate(zip(r, widths)))
                     + "  " + r[-1])
    return "\n".join(line.rstrip() for line in lines)


_applied: "contextvars.ContextVar[Tuple[str, ...]]" = contextvars.ContextVar("autosched_applied_logs", default=())


class ApplyHistoryBest:
    """TVM's context manager: inside ``with ApplyHistoryBest(log):``, ``autosched.graph.build(graph, target)``
    (given no log of its own) takes the best schedules of `log`, as ``graph.build(graph, target, log)`` does."""

    def __init__(self, records: PathLike) -> None:
        self.path = check_path("ApplyHistoryBest", records, "records")
        if not os.path.isfile(self.path):
            raise ValueError(f"ApplyHistoryBest: record log '{self.path}' does not exist or is not a file")
        self._token: Any = None

    def __enter__(self) -> "ApplyHistoryBest":
        self._token = _applied.set(_applied.get() + (self.path,))
        return self

    def __exit__(self, *exc: Any) -> None:
        _applied.reset(self._token)

    def __repr__(self):
        return f"ApplyHistoryBest({self.path!r})"


def applied_log() -> Optional[str]:
    """The log of the innermost ``with ApplyHistoryBest(log):`` around the caller; None outside one."""
    logs = _applied.get()
    return logs[-1] if logs else None
