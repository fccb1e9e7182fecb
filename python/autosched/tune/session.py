"""The tuning session: one driver for one task or many. A session measures every task's start states (the
baselines and the expert schedule), then runs search rounds until a stop reason holds, with progress and resume.

    opts = ans.TuningOptions(num_measure_trials=200, measure_callbacks=[ans.RecordToFile("mm.json")])
    result = task.tune(opts)              # a session of one task: a progress bar, a summary
    state = task.apply_best("mm.json")    # the fastest verified schedule in the log
    print(result.speedup, result.best_cost)

`TaskScheduler.tune` (scheduler.py) runs a session over many tasks, choosing the task of each round; `task.tune`
is a scheduler of one task (scheduler.tune). What differs, the labels, the bar, the tables and the summary, is
the session's view (views.py), chosen once. The session's loop (run) reads top-down:

1. transfer: each cost model trains on the options' transfer_logs (records of its target only);
2. resume: the records of a task (same workload key and target) in the options' RecordToFile logs (and a
   scheduler's load_log_file) count as trials; the logs are read once, none of their states is measured again,
   and the cost model starts from them;
3. warm-up: every task measures its start states, its default schedule first (what an untuned build runs:
   search.default_schedules), then the expert schedule and the other baselines, the plain loop nest last (a
   task given one trial has measured its default, the best schedule is never slower than it, and the summary
   reports the speed-up over it); then one search round each;
4. rounds until a stop reason holds: the network timing when due (network.py), the task the scheduler picks,
   and its round. A round is one call into the core (`_core.tuning_round`) with its parameters
   (`_core.RoundParams`: the states to measure, the search's population and generations that the search share
   affords, share.py, and the seeds of similar tasks, transfer.py): the task's policy proposes states never
   measured, the runner's measurer measures them (a LocalRunner's workers, or RayRunner's actors through the
   core's Measurer interface), the RecordToFile logs get their records and the cost model learns. Measure
   callbacks after the first one that is not a RecordToFile are called afterwards, from Python, in order.
   TaskScheduler(parallel_tasks=k) runs the rounds of k tasks at once in threads (their measurements overlap);
5. the summary.

Stop: after ``num_measure_trials`` trials, after ``early_stopping`` trials of a task without improvement, when
``time_budget_s`` has passed (counted from the call; every phase stops at its end, budget.py), or when the
search finds no schedule it has not measured (tiny tasks). Output: the session is the one place that prints
(progress.Progress): a progress bar (or, where output is not interactive, a line at every tenth of the budget),
the task table when it changed materially, the summary; through the "autosched" logger.
"""
import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor

from .. import _core
from ..measure.local import LocalBuilder, LocalRunner, check_runs_here
from ..core.record_log import read_logs
from .budget import TimeBudget
from .progress import Progress
from .results import TaskSchedulerResult, _failed_text, _transfer_text
from .share import SearchShare
from .task_tuner import TaskTuner
from .transfer import SeedSources, note_seeds_given

__all__ = ["TuningSession"]


class TuningSession:
    """One tuning session: the tasks' TaskTuners, the warm-up, the rounds, the stop reasons, transfer, resume,
    the network timing, the time accounting and the output.

    scheduler: the TaskScheduler whose weights, strategy (its pick(session)), parallel_tasks and load_log_file
    apply (task.tune: a scheduler of one task). view: how the session speaks (views.TaskAlone or
    views.ManyTasks). give_up_after: search rounds without a valid schedule before a task is given up (None:
    never; early stopping ends it). network_timing: a network.NetworkTimingPhase, or None. Its output goes
    through one progress.Progress (the bar, the tables, the summary), made by run.
    """

    def __init__(self, tasks, options, policies, runners, scheduler, view, give_up_after, network_timing=None,
                 start=None):
        self.scheduler = scheduler
        self.view = view
        self.options = options
        self.start = time.monotonic() if start is None else start
        self.budget = TimeBudget(options.time_budget_s, self.start)  # the tuners' too: one account of the end
        builder = options.builder or LocalBuilder()
        verbose = view.task_verbose(options.verbose)
        self.tuners = [TaskTuner(t, options, p, builder, r or options.runner or LocalRunner(), self.budget, verbose)
                       for t, p, r in zip(tasks, policies, runners)]
        for tt in self.tuners:
            check_runs_here(tt.task, tt.runner)
        # TaskScheduler(parallel_tasks=k): the rounds of k tasks run at once (runners that measure elsewhere
        # only; the scheduler checks)
        self.parallel = scheduler.parallel_tasks
        self.result = TaskSchedulerResult(tasks, scheduler.task_weights)
        self.result.task_results = [tt.result for tt in self.tuners]
        self.failed_rounds = [0] * len(self.tuners)
        self.give_up_after = give_up_after
        self.network_timing = network_timing
        self.verbose = options.verbose
        self.reporter = None
        self.seeds = None  # transfer.SeedSources, made by run
        self.share = SearchShare(self.tuners, 1.0, self.budget)  # inactive; run() makes the session's
        self.turns = _core.RoundTurns()

    @property
    def n(self):
        return len(self.tuners)

    def total_trials(self):
        return sum(tt.result.trials for tt in self.tuners)

    def remaining(self):
        return self.options.num_measure_trials - self.total_trials()

    def active(self):
        return [i for i in range(self.n) if i not in self.result.done]

    def pick(self, exclude=()):
        """The task of the next round, the scheduler's choice; not one of `exclude` (None: no task is left)."""
        return self.scheduler.pick(self, exclude)

    # ---- the run ----
    def run(self):
        """Tunes until a stop reason holds; returns the TaskSchedulerResult."""
        self.reporter = Progress(self.options.num_measure_trials, self.options.time_budget_s, self.verbose,
                                 desc=self.view.title(self.result.tasks), start=self.start)
        for tt in self.tuners:
            tt.reporter = self.reporter
        try:
            return self._run()
        finally:
            self.reporter.close()

    def _run(self):
        self.transfer()
        self.seeds = SeedSources.of_session(self, self.resume())
        self.share = SearchShare(self.tuners, self.options.search_time_share, self.budget)
        try:
            reason = self.warm_up()
            with ThreadPoolExecutor(self.parallel) if self.parallel > 1 else contextlib.nullcontext() as pool:
                while reason is None:
                    reason = self.stop_reason()
                    if reason is not None:
                        break
                    self.time_network()
                    if pool is not None:
                        self.parallel_rounds(pool)
                    else:
                        self.search_round(self.pick())
        finally:
            self.share.close()
        self.result.stop_reason = reason
        self.result.seconds = time.monotonic() - self.start
        for i, tt in enumerate(self.tuners):
            tt.result.stop_reason = self.result.done.get(i, reason)
            tt.result.seconds["total"] = self.result.seconds
        self.reporter.finish_bar()  # the bar ends before the summary
        if self.verbose:
            self.view.summary(self)
        return self.result

    def stop_reason(self):
        o = self.options
        if self.remaining() <= 0:
            return f"reached num_measure_trials ({o.num_measure_trials}{self.view.trials_scope})"
        if self.budget.passed():
            return self.budget.stop_reason()
        if not self.active():
            return self.view.all_done(self)
        return None

    def transfer(self):
        """Trains each cost model once on the transfer logs, with its tasks' target (their own records in a log
        also resumed are left to resume)."""
        resumed = {os.path.realpath(p) for p in self.log_paths()}
        models = {}
        for tt in self.tuners:
            models.setdefault(id(tt.policy.cost_model), (tt.policy.cost_model, tt.task.target, []))[2].append(
                tt.task.workload_key)
        for path in self.options.transfer_logs:
            for model, target, keys in models.values():
                own = keys if os.path.realpath(path) in resumed else ()
                t0 = time.monotonic()
                model.update_from_file(path, target=target, exclude_workload_keys=own)
                spent = time.monotonic() - t0
                report = model.last_file_update
                users = [tt for tt in self.tuners if tt.policy.cost_model is model]
                for tt in users:
                    tt.result.transferred.append(report)
                    tt.result.seconds["cost_model"] += spent / len(users)
                if self.verbose:
                    self.reporter.info(f"Transfer: the cost model{self.view.target_label(target)} starts from "
                                       f"{_transfer_text(report)}")

    def log_paths(self):
        paths = self.tuners[0].resume_paths()
        if self.scheduler.load_log_file:
            paths.append(self.scheduler.load_log_file)
        return list(dict.fromkeys(paths))

    def resume(self):
        """Reads the logs once; each task takes its records as trials."""
        records = read_logs(self.log_paths(), stacklevel=4)
        by_task = {}
        for path, rec in records:
            by_task.setdefault((rec.task.workload_key, str(rec.task.target)), []).append((path, rec))
        results = []
        for i, tt in enumerate(self.tuners):
            results += tt.resume(by_task.get((tt.task.workload_key, str(tt.task.target)), []))
            if tt.result.best_cost is None and tt.result.trials > tt.num_baselines:
                self.failed_rounds[i] = (tt.result.trials - tt.num_baselines) // self.options.num_measures_per_round
            self.update_done(i)
        resumed = self.result.resumed_trials
        if self.verbose and resumed:
            tasks = sum(1 for tt in self.tuners if tt.result.resumed_trials)
            self.reporter.info(f"Resumed {resumed} trials of {self.view.resumed_which(tasks)} from {', '.join(self.log_paths())}"
                               f"{_failed_text(results)}")
        return records

    def warm_up(self):
        """The start states of every task, then one search round for each task the scheduler names
        (warm_up_rounds; tasks resumed past their start states have had it). Returns a stop reason when the
        budget ends it."""
        measured = 0
        for i, tt in enumerate(self.tuners):
            reason = self.stop_reason()
            if reason is not None:
                return reason
            # Leave at least one trial to each task after this one, so that a small budget does not go
            # to the start states (baselines, expert seed) of the first tasks alone.
            count = tt.baseline(limit=max(1, self.remaining() - (self.n - i - 1)))
            measured += count
            if count:
                self.update_done(i)
                self.note_batch()
        if measured:
            self.print_table("baselines")
        for i in self.scheduler.warm_up_rounds(self):
            reason = self.stop_reason()
            if reason is not None:
                return reason
            tt = self.tuners[i]
            if i not in self.result.done and tt.result.trials <= tt.num_baselines:
                self.search_round(i)
        return None

    def time_network(self):
        """The network timing phase, when it is due (network.py)."""
        if self.network_timing is not None:
            self.network_timing.run(self)

    def round_params(self, i, n):
        """The _core.RoundParams of task i's next search round of n states: the search the share affords, the
        seeds of similar tasks when they changed."""
        params = self.share.round_params(self.tuners[i], n)
        if self.seeds is not None:
            params.transfer_seeds = self.seeds.seeds_for(i)
            params.max_transfer_seeds = self.seeds.max_seeds
        return params

    def search_round(self, i):
        tt = self.tuners[i]
        before = tt.result.trials
        params = self.round_params(i, min(self.options.num_measures_per_round, self.remaining()))
        found = tt.search_round(params)
        self.end_round(i, before, found)

    def parallel_rounds(self, pool):
        """The rounds of up to `parallel` tasks, in the order the scheduler ranks them, each one core call in a
        thread of `pool`: their searches and records take turns in that order (_core.RoundTurns: they share
        cost models and logs), their measurements run at once (the runners measure elsewhere); the rounds are
        then counted in that order."""
        picks, budget = [], self.remaining()
        while len(picks) < self.parallel and budget > 0:
            i = self.pick(exclude=[j for j, _ in picks])
            if i is None:
                break
            picks.append((i, min(self.options.num_measures_per_round, budget)))
            budget -= picks[-1][1]
        rounds = []
        for i, n in picks:
            tt = self.tuners[i]
            params = self.round_params(i, n)
            rounds.append((i, tt.result.trials, pool.submit(tt.run_round, params, None, self.turns,
                                                            self.turns.take())))
        for i, before, running in rounds:
            tt = self.tuners[i]
            found = tt.end_search_round(tt.take_round(running.result()))
            self.end_round(i, before, found)

    def end_round(self, i, before, found):
        """After task i's search round (found: it measured something): the seeds it was given, the search
        share's account and trainings, the bookkeeping and the table."""
        tt = self.tuners[i]
        rnd = tt.last_round
        if rnd.transfer is not None:
            note_seeds_given(tt, rnd.transfer, self.reporter if self.verbose else None,
                             self.view.task_label(i, tt.task))
        self.share.after_round(tt, rnd.population)
        self.result.rounds.append(i)
        if not found:
            self.result.done[i] = tt.empty_reason
        elif tt.result.best_cost is None:
            self.failed_rounds[i] += 1
        self.update_done(i)
        self.note_batch()
        label = f"round {len(self.result.rounds)}: task {i}, " + (f"{tt.result.trials - before} trials" if found
                                                                 else "nothing new to measure")
        self.print_table(label)

    def update_done(self, i):
        """Marks task i done when it stopped early or gave up. Among many tasks, one without a valid schedule
        is given up after give_up_after rounds rather than early-stopped; alone, early stopping ends it."""
        if i in self.result.done:
            return
        tt, limit = self.tuners[i], self.give_up_after
        if limit is not None and tt.result.best_cost is None and self.failed_rounds[i] >= limit:
            self.result.done[i] = f"given up: {limit} search rounds found no valid schedule"
        elif tt.early_stopped() and (tt.result.best_cost is not None or limit is None):
            self.result.done[i] = (f"early stopping: no better schedule in the last {self.options.early_stopping}"
                                   " trials")

    def note_batch(self):
        latency, _ = self.estimated_latency()
        self.result.history.append((self.total_trials(), latency))
        self.result.time_history.append((time.monotonic() - self.start, latency))
        self.view.note_batch(self)

    # ---- output ----
    def estimated_latency(self):
        """(outside_kernels_s + weight x best cost over the tasks with a valid schedule, tasks without one)."""
        total, missing = self.result.outside_kernels_s, 0
        for w, k, tt in zip(self.result.weights, self.result.latency_scales, self.tuners):
            if tt.result.best_cost is None:
                missing += 1
            else:
                total += w * k * tt.result.best_cost
        return total, missing

    def print_table(self, label, force=False):
        self.view.print_table(self, label, force)
