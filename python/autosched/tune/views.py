"""How a tuning session speaks: the differences between a task tuned alone (task.tune) and many tasks
(TaskScheduler.tune) are the session's view, chosen once when the session is made. The session (session.py)
is the same driver either way; its view names things, updates the bar, prints the tables and the summary.

    TaskAlone()   # the bar shows the task's best time; its own lines at verbose 1; the task's summary table
    ManyTasks()   # the bar shows the estimated total; a task table per round; the scheduler's summary
"""
import time
from collections import Counter

from ..core.text import format_time
from .results import _model_seconds_text, _network_timing_text, _rows_text
from .transfer import seeds_text

__all__ = ["TaskAlone", "ManyTasks"]


class TaskAlone:
    """The view of a session of one task."""

    trials_scope = ""  # "reached num_measure_trials (64)"

    @staticmethod
    def title(tasks):
        return tasks[0].desc or "tuning"

    @staticmethod
    def task_verbose(verbose):
        """The level of a task's own lines (a line per round at verbose 2)."""
        return verbose

    @staticmethod
    def task_label(i, task):
        """How a line names task i ("Transfer: 3 seeds ...")."""
        return ""

    @staticmethod
    def target_label(target):
        return ""

    @staticmethod
    def resumed_which(tasks):
        return "this task"

    @staticmethod
    def all_done(session):
        return session.result.done[0]

    @staticmethod
    def note_batch(session):
        session.reporter.update(session.total_trials(), session.tuners[0].result.best_cost)

    @staticmethod
    def print_table(session, label, force=False):
        """A task alone has the bar, no table."""

    @staticmethod
    def summary(session):
        rows = session.tuners[0].summary_rows()
        if session.share.active:
            rows.insert(-1, ("search share", session.share.summary()))
        session.reporter.info(_rows_text("Tuning summary", rows))


class ManyTasks:
    """The view of a session of many tasks (a TaskScheduler's)."""

    trials_scope = " in all"

    @staticmethod
    def title(tasks):
        return f"{len(tasks)} tasks"

    @staticmethod
    def task_verbose(verbose):
        """Among many tasks, a task's own lines only at verbose >= 2."""
        return max(0, verbose - 1)

    @staticmethod
    def task_label(i, task):
        return f" task {i} ({task.desc or task.workload_key}):"

    @staticmethod
    def target_label(target):
        return f" of '{target.text}'"

    @staticmethod
    def resumed_which(tasks):
        return f"{tasks} tasks"

    @staticmethod
    def all_done(session):
        return "every task is done (search space exhausted, early stopping or given up)"

    @staticmethod
    def note_batch(session):
        latency, missing = session.estimated_latency()
        with_schedule = session.n - missing
        session.reporter.update(session.total_trials(), None, latency if not missing else None,
                                note=f"{with_schedule}/{session.n} tasks with a schedule")

    @staticmethod
    def print_table(session, label, force=False):
        """A table of the tasks, printed when it changed materially (see progress.Progress.table) or forced."""
        if not session.verbose:
            return
        tasks = session.result.tasks
        width = max(4, min(40, max(len(t.desc or t.workload_key) for t in tasks)))
        lines = [f"|  ID | {'Task':<{width}} | Latency (ms) | Speed (GFLOP/s) | Weight | Trials | Done"]
        for i, tt in enumerate(session.tuners):
            desc = (tt.task.desc or tt.task.workload_key)[:width]
            cost, flop = tt.result.best_cost, tt.task.compute_dag.flop_ct
            latency = f"{cost * 1e3:.4g}" if cost is not None else "-"
            speed = f"{flop / cost / 1e9:.4g}" if cost and flop > 0 else "-"
            done = session.result.done.get(i, "").split(":")[0]
            lines.append(f"| {i:>3} | {desc:<{width}} | {latency:>12} | {speed:>15} | "
                         f"{session.result.weights[i]:>6.4g} | {tt.result.trials:>6} | {done}")
        total, missing = session.estimated_latency()
        note = f" (+ {missing} task{'s' if missing > 1 else ''} without a valid schedule)" if missing else ""
        elapsed = time.monotonic() - session.start
        lines.append(f"Estimated total latency: {total * 1e3:.4g} ms{note} | {label} | trials "
                     f"{session.total_trials()}/{session.options.num_measure_trials} | time {elapsed:.1f} s")
        state = (tuple(tt.result.best_cost is None for tt in session.tuners), tuple(sorted(session.result.done)))
        session.reporter.table(lines, None if missing else total, state, force=force)

    @staticmethod
    def print_diagnosis(session):
        """A paragraph per task without a valid schedule: its errors, how many, the first message of each."""
        for i in session.result.failed_tasks:
            r, task = session.tuners[i].result, session.result.tasks[i]
            name = task.desc or task.workload_key
            if r.trials == 0:
                session.reporter.warning(f"Task {i} ({name}): no valid schedule: not measured, the run stopped "
                                         "before its turn")
                continue
            errors = ", ".join(f"{k} {v}" for k, v in r.errors.most_common()) or "none"
            why = f" ({session.result.done[i]})" if i in session.result.done else ""
            lines = [f"Task {i} ({name}): no valid schedule in {r.trials} trials{why}; errors: {errors}"]
            for kind, message in r.error_messages.items():
                first = (message or "").strip().splitlines()
                lines.append(f"    first {kind}: {first[0][:200] if first else '(no message)'}")
            session.reporter.warning("\n".join(lines))

    @classmethod
    def summary(cls, session):
        """The stop reason, a diagnosis of each task without a valid schedule and the scheduler's table."""
        res = session.result
        cls.print_table(session, "end", force=True)
        session.reporter.info(f"Stopped: {res.stop_reason}")
        cls.print_diagnosis(session)
        valid = [i for i, r in enumerate(res.task_results) if r.best_cost is not None]
        outside, scales = res.outside_kernels_s, res.latency_scales
        after = (sum(res.weights[i] * scales[i] * res.task_results[i].best_cost for i in valid) + outside
                 if valid else None)
        based = [i for i in valid if res.task_results[i].baseline_cost is not None]
        before = (sum(res.weights[i] * scales[i] * res.task_results[i].baseline_cost for i in based) + outside
                  if based and len(based) == len(valid) else None)
        speedup = f" (x{before / after:.3g})" if before and after else ""
        if before and after and after >= before:
            speedup += "; the budget found nothing faster than the baselines"
        if len(valid) < len(res.tasks):
            missing = len(res.tasks) - len(valid)
            speedup += f"; {missing} task{'s' if missing > 1 else ''} without a valid schedule not counted"
        measured = res.trials - res.resumed_trials
        done = ", ".join(f"{i}: {why.split(':')[0]}" for i, why in sorted(res.done.items())) or "none"
        seconds = Counter()
        for tt in session.tuners:
            seconds.update({k: v for k, v in tt.result.seconds.items() if k != "total"})
        shares = ", ".join(f"{k.replace('_', ' ')} {v:.1f}s" for k, v in seconds.items())
        share = session.share
        session.reporter.info(_rows_text("Task scheduler summary", [
            ("tasks", f"{len(res.tasks)} ({len(res.failed_tasks)} without a valid schedule; done: {done})"),
            ("trials", f"{res.trials} ({res.resumed_trials} resumed, {measured} measured in "
                       f"{sum(r.rounds for r in res.task_results)} rounds); per task {res.task_trials}"),
            ("latency", f"estimated total (sum of weight x latency"
                        f"{' x its time in the network per tuner-timed second' if res.network_timings else ''}"
                        f"{f' + {format_time(outside)} outside the kernels' if outside else ''}): before "
                        f"(baselines) {format_time(before)}, after {format_time(after)}{speedup}"),
            *([("network timing", _network_timing_text(res.network_timings))] if res.network_timings else []),
            ("transfer seeds", seeds_text(res.task_results)),
            ("time", f"{res.seconds:.1f}s = {shares}; {_model_seconds_text(seconds, measured)}"),
            *([("search share", share.summary())] if share.active else []),
            ("stopped", res.stop_reason)]))
