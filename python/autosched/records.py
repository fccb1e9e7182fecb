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

from .measure import MeasureInput
from .record_log import RecordToFile, RecordWarning, load_best_state, read_log
from .state import State
from .task import SearchTask

__all__ = ["RecordWarning", "RecordToFile", "load_records", "load_best_record", "load_best_state", "distill",
           "save_records"]


def _load(path):
    return read_log(path, stacklevel=3)


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
