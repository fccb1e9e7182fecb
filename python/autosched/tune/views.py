"""How a tuning session speaks: the differences between a task tuned alone (task.tune) and many tasks
(TaskScheduler.tune) are the session's view, chosen once when the session is made. The session (session.py)
is the same driver either way; its view names things, updates the bar, prints the tables and the summary.

    TaskAlone()   # the bar shows the task's best time; its own lines at verbose 2; the task's summary line
    ManyTasks()   # the bar shows the estimated total; the task table once at the end (at verbose 2 also when
                  # it changed materially); the summary line

At verbose 1 a summary is a sentence or two in plain words ("Tuned 6 tasks with 229 measurements in 60 s;
estimated network latency 191.3 us (untuned 554.0 us, 2.9x faster)"); the detailed rows (time split, search
share, transfer) are printed at verbose 2.
"""
import time
from collections import Counter

from ..core.text import format_duration_column, format_durations, format_time, plain_number, short_task_name
from .results import _model_seconds_text, _network_timing_text, _rows_text
from .transfer import seeds_text

__all__ = ["TaskAlone", "ManyTasks", "TASK_NAME_WIDTH"]

# The task column's width: longer names have their op part abbreviated (their shape is always kept whole).
TASK_NAME_WIDTH = 40
# At verbose 1 the final table shows at most this many tasks: those taking the most of the estimated latency
# (a one-minute tune of a network prints about 25 lines); verbose 2 lists every task.
TABLE_ROWS = 12
# A stop reason longer than this prints its first clause at verbose 1 (the whole of it at verbose 2).
SHORT_REASON = 80


def short_reason(reason):
    """The stop reason without its parenthesised details when it is long."""
    return reason.split(" (")[0] if len(reason) > SHORT_REASON else reason


def faster_text(before, after):
    """'2.9x faster' (after over before, seconds); '' when either is unknown."""
    if not (before and after):
        return ""
    if after >= before:
        return "the budget found nothing faster"
    ratio = before / after
    return f"{ratio:.2g}x faster" if ratio < 10 else f"{ratio:.0f}x faster"


def measurements_text(trials, resumed):
    """'229 measurements' or '229 measurements (180 resumed from the log)'."""
    return f"{trials} measurement{'s' if trials != 1 else ''}" + (
        f" ({resumed} resumed from the log)" if resumed else "")


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
        """'Tuned matmul256 with 64 measurements in 12 s: best 1.234 ms, 91.2 GFLOP/s (untuned 2.580 ms, 2.1x
        faster)' and the stop reason; the rows of the task's summary at verbose 2."""
        tt = session.tuners[0]
        r = tt.result
        name = tt.task.desc or "the task"
        head = f"Tuned {name} with {measurements_text(r.trials, r.resumed_trials)} in {r.seconds['total']:.0f} s"
        if r.best_cost is None:
            line = f"{head}: no valid schedule"
        else:
            best, baseline = format_durations(r.best_cost, r.baseline_cost)
            gflops = f", {plain_number(r.best_gflops)} GFLOP/s" if r.best_gflops else ""
            untuned = f" (untuned {baseline}, {faster_text(r.baseline_cost, r.best_cost)})" if r.baseline_cost else ""
            line = f"{head}: best {best}{gflops}{untuned}"
        failed = sum(r.errors.values())
        if failed:  # what the log's records say too: "; 3 failed (runtime 2, compile 1)"
            line += f"; {failed} failed ({', '.join(f'{k} {v}' for k, v in r.errors.most_common())})"
        session.reporter.info(line)
        session.reporter.info(f"Stopped: {short_reason(r.stop_reason)}")
        rows = tt.summary_rows()
        if session.share.active:
            rows.insert(-1, ("search share", session.share.summary()))
        session.reporter.debug(_rows_text("Tuning summary", rows))


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
        """The table of the tasks: at the end (forced), and at verbose 2 also when it changed materially (see
        progress.Progress.table)."""
        if not session.verbose or (not force and session.verbose < 2):
            return
        lines = task_table_lines(session, max_rows=None if session.verbose >= 2 else TABLE_ROWS)
        total, missing = session.estimated_latency()
        if session.verbose >= 2:
            note = f" (+ {missing} task{'s' if missing > 1 else ''} without a valid schedule)" if missing else ""
            elapsed = time.monotonic() - session.start
            lines.append(f"Estimated total latency: {format_time(total)}{note} | {label} | trials "
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
        """The table, a sentence of what the session did, the stop reason, a diagnosis of each task without a
        valid schedule; the scheduler's detailed rows at verbose 2."""
        res = session.result
        cls.print_table(session, "end", force=True)
        valid = [i for i, r in enumerate(res.task_results) if r.best_cost is not None]
        outside, scales = res.outside_kernels_s, res.latency_scales
        after = (sum(res.weights[i] * scales[i] * res.task_results[i].best_cost for i in valid) + outside
                 if valid else None)
        based = [i for i in valid if res.task_results[i].baseline_cost is not None]
        before = (sum(res.weights[i] * scales[i] * res.task_results[i].baseline_cost for i in based) + outside
                  if based and len(based) == len(valid) else None)
        missing = len(res.tasks) - len(valid)
        not_counted = f"; {missing} task{'s' if missing > 1 else ''} without a valid schedule not counted" \
            if missing else ""
        line = (f"Tuned {len(res.tasks)} tasks with {measurements_text(res.trials, res.resumed_trials)} in "
                f"{res.seconds:.0f} s; ")
        if after is None:
            line += "no task has a valid schedule"
        else:
            after_text, before_text = format_durations(after, before)
            untuned = f" (untuned {before_text}, {faster_text(before, after)})" if before else ""
            line += f"estimated network latency {after_text}{untuned}{not_counted}"
        session.reporter.info(line)
        session.reporter.info(f"Stopped: {short_reason(res.stop_reason)}")
        cls.print_diagnosis(session)
        session.reporter.debug(_rows_text("Task scheduler summary", cls.summary_rows(session, before, after)))

    @staticmethod
    def summary_rows(session, before, after):
        """The rows of the scheduler's detailed summary (verbose 2)."""
        res = session.result
        outside = res.outside_kernels_s
        speedup = f" (x{before / after:.3g})" if before and after else ""
        if before and after and after >= before:
            speedup += "; the budget found nothing faster than the baselines"
        measured = res.trials - res.resumed_trials
        done = ", ".join(f"{i}: {why.split(':')[0]}" for i, why in sorted(res.done.items())) or "none"
        seconds = Counter()
        for tt in session.tuners:
            seconds.update({k: v for k, v in tt.result.seconds.items() if k != "total"})
        shares = ", ".join(f"{k.replace('_', ' ')} {v:.1f}s" for k, v in seconds.items())
        share = session.share
        before_text, after_text, outside_text = format_durations(before, after, outside)
        return [
            ("tasks", f"{len(res.tasks)} ({len(res.failed_tasks)} without a valid schedule; done: {done})"),
            ("trials", f"{res.trials} ({res.resumed_trials} resumed, {measured} measured in "
                       f"{sum(r.rounds for r in res.task_results)} rounds); per task {res.task_trials}"),
            ("latency", f"estimated total (sum of weight x latency"
                        f"{' x its time in the network per tuner-timed second' if res.network_timings else ''}"
                        f"{f' + {outside_text} outside the kernels' if outside else ''}): before "
                        f"(baselines) {before_text}, after {after_text}{speedup}"),
            *([("network timing", _network_timing_text(res.network_timings))] if res.network_timings else []),
            ("transfer seeds", seeds_text(res.task_results)),
            ("time", f"{res.seconds:.1f}s = {shares}; {_model_seconds_text(seconds, measured)}"),
            *([("search share", share.summary())] if share.active else []),
            ("stopped", res.stop_reason)]


def _weight_text(weight):
    return str(int(weight)) if float(weight).is_integer() else plain_number(weight, 3)


def task_table_lines(session, max_rows=None):
    """The task table: ID, name (the shape always whole), latency (one unit for the column), speed, weight,
    trials, and why a task stopped early where any did. With more tasks than max_rows, the rows of the tasks
    taking the most of the estimated latency (weight x latency; those without a schedule first), in ID order,
    and one line for the rest."""
    res = session.result
    shown = list(range(len(session.tuners)))
    if max_rows is not None and len(shown) > max_rows:
        def share(i):
            cost = session.tuners[i].result.best_cost
            return float("inf") if cost is None else res.weights[i] * cost
        shown = sorted(sorted(shown, key=share, reverse=True)[:max_rows - 1])
    names = [short_task_name(t.desc or t.workload_key, TASK_NAME_WIDTH) for t in res.tasks]
    width = max(4, max(len(names[i]) for i in shown))
    unit, latencies = format_duration_column([session.tuners[i].result.best_cost for i in shown])
    latency_head = f"Latency ({unit})"
    stopped = [res.done.get(i, "").split(":")[0] for i in range(len(session.tuners))]
    any_stopped = any(stopped[i] for i in shown)
    lines = [f"|  ID | {'Task':<{width}} | {latency_head} | Speed (GFLOP/s) | Weight | Trials"
             + (" | Stopped" if any_stopped else "")]
    for row_index, i in enumerate(shown):
        tt = session.tuners[i]
        gflops = tt.result.best_gflops
        speed = plain_number(gflops) if gflops else "-"
        row = (f"| {i:>3} | {names[i]:<{width}} | {latencies[row_index]:>{len(latency_head)}} | {speed:>15} | "
               f"{_weight_text(res.weights[i]):>6} | {tt.result.trials:>6}")
        lines.append((row + (f" | {stopped[i]}" if any_stopped else "")).rstrip())
    hidden = [i for i in range(len(session.tuners)) if i not in shown]
    if hidden:
        costs = [(res.weights[i], session.tuners[i].result.best_cost) for i in range(len(session.tuners))]
        total = sum(w * c for w, c in costs if c is not None)
        rest = sum(costs[i][0] * costs[i][1] for i in hidden if costs[i][1] is not None)
        share_text = f": {plain_number(100 * rest / total, 2)}% of the estimated latency" if total > 0 else ""
        lines.append(f"| ... {len(hidden)} more tasks{share_text} (verbose=2 lists every task)")
    return lines
