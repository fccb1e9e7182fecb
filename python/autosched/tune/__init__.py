"""The tuning session and everything only it uses, in the order a session runs them:

    options.py      TuningOptions: how long and how to tune
    scheduler.py    TaskScheduler (which task gets the next round) and tune(task), a scheduler of one task
    session.py      TuningSession: the loop (transfer, resume, warm-up, rounds, network timing, summary)
    task_tuner.py   TaskTuner: one task's rounds (one core call each), bookkeeping, resume, start states
    share.py        the search's share of the time: each round's search parameters (_core.RoundParams)
    transfer.py     transfer seeds: the best states of similar tasks, for a round
    network.py      timing the network built from the best schedules (graph.NetworkTiming, passed in)
    budget.py       the time budget and the stop reason it gives
    views.py        what differs in the output of a task alone and of many tasks
    progress.py     the bar, the tables and the lines, through the "autosched" logger
    results.py      TuneResult, TaskSchedulerResult and the summary's texts

Importing it installs the session SearchTask.tune runs (task.set_tuning_session): the task sits below the
session, which the tasks' module never imports.
"""
from ..core import task as _task
from . import progress, transfer  # noqa: F401  (autosched.tune.progress, autosched.tune.transfer)
from .options import TuningOptions
from .results import TaskSchedulerResult, TuneResult, peak_gflops
from .scheduler import TaskScheduler, tune

_task.set_tuning_session(tune)

__all__ = ["TuningOptions", "TuneResult", "TaskSchedulerResult", "TaskScheduler", "tune", "peak_gflops",
           "progress", "transfer"]
