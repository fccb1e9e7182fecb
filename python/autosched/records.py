"""The record log: one JSON line per measurement (format: docs/records.md).

    opts = ans.TuningOptions(..., measure_callbacks=[ans.RecordToFile("mm.json")])
    for inp, res in ans.records.load_records("mm.json"):   # (MeasureInput, MeasureResult)
        print(inp.task.workload_key, res.error, res.costs)
    inp, res = ans.records.load_best_record("mm.json", workload_key=task.workload_key, target=task.target)

Lines that cannot be used (a torn last line after a crash, malformed or foreign lines, other versions, schedules
that no longer replay) are skipped with a RecordWarning naming the file and line.

Command line: ``python -m autosched.records distill in.json -o out.json`` keeps the best record of every task and
target.
"""
import argparse
import os
import sys
import warnings

from . import _core
from .measure import MeasureInput
from .state import State, core_state as _core_state
from .task import SearchTask

__all__ = ["RecordWarning", "RecordToFile", "load_records", "load_best_record", "load_best_state", "distill",
           "save_records"]


class RecordWarning(UserWarning):
    """A problem with a record log: a line skipped, or a log removed or replaced while records were written."""


def _load(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"record file '{path}' does not exist")
    loaded = _core.load_records(path)
    for message in loaded.warnings:
        warnings.warn(message, RecordWarning, stacklevel=3)
    return loaded


def read_log(path):
    """The records of a log file as the core reads them (for load_best_state's `loaded`)."""
    return _load(path)


def _to_pairs(records):
    tasks = {}  # task JSON as stored -> SearchTask, so records of one task share it
    pairs = []
    for rec in records:
        text = rec.task_json
        task = tasks.get(text)
        if task is None:
            task = tasks[text] = SearchTask.from_json(text)
        pairs.append((MeasureInput(task, State(rec.state)), rec.result))
    return pairs


def load_records(path):
    """Every usable record of the log, as a list of (MeasureInput, MeasureResult)."""
    return _to_pairs(_load(path).records)


def load_best_record(path, workload_key=None, target=None):
    """(MeasureInput, MeasureResult) of the fastest record without error, of that workload key and target
    (None: any); never a record of another target. (None, None) when there is none."""
    loaded = _load(path)
    if target is not None and not isinstance(target, str):
        target = target.text  # a Target: its canonical text, as records store it
    index = loaded.best(workload_key or "", target or "")
    if index is None:
        return None, None
    return _to_pairs([loaded.records[index]])[0]


def load_best_state(path, task, loaded=None):
    """(State of the task's DAG, MeasureResult) of the fastest record without error of `task` (its workload key
    and target) whose schedule replays on the task's DAG; (None, None) when there is none. A better record whose
    schedule does not replay is skipped with a RecordWarning; one measured on another DAG than the task's (the
    same workload key, given by hand, on another structure) is used, with a RecordWarning saying so. `loaded`:
    the log as read_log(path) gave it, so that a caller choosing states of many tasks reads the file once."""
    loaded = loaded if loaded is not None else _load(path)
    key, target = task.workload_key, task.target.text
    dag_key = task.compute_dag.workload_key()
    mine = [rec for rec in loaded.records if rec.result.ok and rec.task.workload_key == key
            and rec.task.target.text == target]
    mine.sort(key=lambda rec: rec.result.mean_cost)  # stable: the first of equal costs, as load_best_record
    for rec in mine:
        try:
            state = State.from_json(task.compute_dag, rec.state.to_json())
        except ValueError as err:
            warnings.warn(f"{path}:{rec.line}: the schedule does not replay on the DAG of task "
                          f"'{task.desc or key}' ({err}); skipped", RecordWarning, stacklevel=2)
            continue
        measured_on = rec.task.compute_dag.workload_key()
        if measured_on != dag_key:
            warnings.warn(f"{path}:{rec.line}: the record has the workload key {key} of task '{task.desc or key}' "
                          f"but was measured on another DAG (structural key {measured_on}, the task's is "
                          f"{dag_key}); its schedule replays on the task's DAG, but its time was not measured "
                          "there", RecordWarning, stacklevel=2)
        return state, rec.result
    return None, None


class RecordToFile:
    """A measure callback appending every measurement to a log. Each record is one line written whole and at
    once, so a tuner killed at any moment leaves every earlier record intact (fsync=True also survives a
    power loss). When the log is removed or replaced (e.g. by ``distill log.json -o log.json``) while tuning,
    the records that follow go to the file at the path (created if need be), with a RecordWarning."""

    def __init__(self, path, fsync=False):
        self.path = os.fspath(path)
        self._writer = _core.RecordWriter(self.path, bool(fsync))

    def __call__(self, *args):
        """Called as callback(policy, inputs, results) or callback(inputs, results)."""
        if len(args) < 2:
            raise TypeError("RecordToFile is called with (inputs, results) or (policy, inputs, results)")
        inputs, results = args[-2], args[-1]
        if len(inputs) != len(results):
            raise ValueError(f"{len(inputs)} inputs but {len(results)} results")
        task_json = {}
        for inp, res in zip(inputs, results):
            text = task_json.get(id(inp.task))
            if text is None:
                text = task_json[id(inp.task)] = inp.task.to_json()
            self._writer.write(text, _core_state(inp.state), res)
        for message in self._writer.take_notices():
            warnings.warn(message, RecordWarning, stacklevel=2)

    def __repr__(self):
        return f"RecordToFile({self.path!r})"


def save_records(path, inputs, results, fsync=False):
    """Appends (inputs[i], results[i]) records to the log."""
    RecordToFile(path, fsync)(inputs, results)


def distill(in_path, out_path=None):
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autosched.records", description="Work on record logs.")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("distill", help="keep the best record of every task and target")
    d.add_argument("input")
    d.add_argument("-o", "--output", default=None, help="output file (default: INPUT.best.json)")
    args = parser.parse_args(argv)
    try:
        out, kept = distill(args.input, args.output)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"kept {kept} records in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
