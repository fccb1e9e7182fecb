"""The record log as tasks, tuning and cost models read and write it: RecordToFile, reading a log with its
warnings, and replaying a record's schedule on a task's DAG. `autosched.records` is the public module (it
re-exports these and adds the records as (MeasureInput, MeasureResult) pairs); this one needs no Python
SearchTask, so the modules below the tuner can use it.
"""
import os
import warnings
from typing import Union

from .. import _core
from .checks import check_path
from .state import State

__all__ = ["RecordWarning", "RecordToFile", "read_log", "read_logs", "replay", "load_best_state"]


class RecordWarning(UserWarning):
    """A problem with a record log: a line skipped, or a log removed or replaced while records were written."""


def read_log(path, stacklevel=2):
    """The records of a log file as the core reads them (core Records: task, state, result, line, text); the
    lines it skipped are issued as RecordWarning. FileNotFoundError when the file does not exist."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"record file '{path}' does not exist")
    loaded = _core.load_records(path)
    for message in loaded.warnings:
        warnings.warn(message, RecordWarning, stacklevel=stacklevel + 1)
    return loaded


def read_logs(paths, stacklevel=2):
    """Every record of the logs that exist among `paths`, as (path, Record) pairs, each log read once."""
    pairs = []
    for path in dict.fromkeys(os.fspath(p) for p in paths):
        if os.path.exists(path):
            pairs.extend((path, rec) for rec in read_log(path, stacklevel + 1).records)
    return pairs


def replay(rec, task):
    """(State of the record's schedule replayed on `task`'s DAG, whether the record was measured on
    another DAG than the task's: the same workload key given by hand to another structure). ValueError when the
    schedule does not replay on the task's DAG. Every reader of records that hands out states goes through
    here (resuming, the best state of a task)."""
    state = State.from_json(task.compute_dag, rec.state.to_json())
    return state, rec.task.compute_dag.workload_key() != task.compute_dag.workload_key()


def load_best_state(path, task, loaded=None):
    """(State of the task's DAG, MeasureResult) of the fastest record without error of `task` (its workload key
    and target) whose schedule replays on the task's DAG; (None, None) when there is none. A better record whose
    schedule does not replay is skipped with a RecordWarning; one measured on another DAG than the task's (the
    same workload key, given by hand, on another structure) is used, with a RecordWarning saying so. `loaded`:
    the log as read_log(path) gave it, so that a caller choosing states of many tasks reads the file once."""
    loaded = loaded if loaded is not None else read_log(path)
    key, target = task.workload_key, task.target.text
    mine = [rec for rec in loaded.records if rec.result.ok and rec.task.workload_key == key
            and rec.task.target.text == target]
    mine.sort(key=lambda rec: rec.result.mean_cost)  # stable: the first of equal costs, as load_best_record
    for rec in mine:
        try:
            state, other_dag = replay(rec, task)
        except ValueError as err:
            warnings.warn(f"{path}:{rec.line}: the schedule does not replay on the DAG of task "
                          f"'{task.desc or key}' ({err}); skipped", RecordWarning, stacklevel=2)
            continue
        if other_dag:
            warnings.warn(f"{path}:{rec.line}: the record has the workload key {key} of task '{task.desc or key}' "
                          f"but was measured on another DAG (structural key {rec.task.compute_dag.workload_key()}, "
                          f"the task's is {task.compute_dag.workload_key()}); its schedule replays on the task's "
                          "DAG, but its time was not measured there", RecordWarning, stacklevel=2)
        return state, rec.result
    return None, None


class RecordToFile:
    """A measure callback appending every measurement to a log. Each record is one line written whole and at
    once, so a tuner killed at any moment leaves every earlier record intact (fsync=True also survives a
    power loss). When the log is removed or replaced (e.g. by ``distill log.json -o log.json``) while tuning,
    the records that follow go to the file at the path (created if need be), with a RecordWarning.
    Tuning hands its writer to the core, which appends a round's records itself."""

    def __init__(self, path: "Union[str, os.PathLike[str]]", fsync: bool = False) -> None:
        self.path = check_path("RecordToFile", path)
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
            self._writer.write(text, inp.state, res)
        self.warn_notices(stacklevel=2)

    def warn_notices(self, stacklevel=2):
        """Issues a RecordWarning for each time the path no longer named the file written (removed or replaced)
        and was opened again since the last call."""
        for message in self._writer.take_notices():
            warnings.warn(message, RecordWarning, stacklevel=stacklevel + 1)

    def __repr__(self):
        return f"RecordToFile({self.path!r})"
