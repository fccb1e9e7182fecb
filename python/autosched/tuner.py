"""Tuning sessions: one driver for one task or many. A session measures every task's start states (the
baselines and the expert schedule), then gives out search rounds until a stop reason holds, with progress and
resume.

    opts = ans.TuningOptions(num_measure_trials=200, measure_callbacks=[ans.RecordToFile("mm.json")])
    result = task.tune(opts)              # a session of one task: a progress bar, a summary
    state = task.apply_best("mm.json")    # the fastest verified schedule in the log
    print(result.speedup, result.best_cost)

`TaskScheduler.tune` (task_scheduler.py) runs the same session over many tasks, choosing the task of each round;
`task.tune` is that session with one task. Either way:

- Start states: before searching, a task measures its default schedule, what an untuned build runs (the
  parallel + vectorized loop nest, search.default_schedules), then the expert schedule (search.expert_schedule:
  register blocks, packing and cache tiles from the target's hardware parameters) and the other baselines, the
  plain loop nest last: a task given one trial has measured its default, the best schedule is never slower
  than it, and the summary reports the speed-up over it (the baseline) and the expert schedule's time.
- A round is one call into the core (`_core.tuning_round`): the task's search policy (SketchPolicy) proposes up
  to ``num_measures_per_round`` states never measured, the workers measure them (LocalBuilder / LocalRunner:
  verified, plausible times only), the RecordToFile logs of the options get their records, and the cost model
  learns from them. Measure callbacks after the first one that is not a RecordToFile are called afterwards, from
  Python, in order. A runner that measures elsewhere (RayRunner: ``measures_here`` False) splits the round: the
  core's search, the runner's measurement, then the records and the update in one core call
  (`_core.record_round`); TaskScheduler(parallel_tasks=k) measures the rounds of k tasks at once that way.
- Stop: after ``num_measure_trials`` trials, after ``early_stopping`` trials of a task without improvement,
  when ``time_budget_s`` has passed (counted from the call; every phase stops at its end, budget.py), or when
  the search finds no schedule it has not measured (tiny tasks).
- Resume: the records of a task (same workload key and target) in the options' RecordToFile logs count as
  trials; the logs are read once, none of their states is measured again, and the cost model starts from them.
- Transfer: ``TuningOptions(transfer_logs=["earlier.json"])`` trains each cost model first on the successful
  records of its target in those logs (other tasks tuned before); records of other targets are never used.
  ``transfer_seeds`` (the default): rounds start from the best states of similar tasks (transfer.py).
- Output: the session is the one place that prints (progress.Progress): a progress bar (or, where output is not
  interactive, a line at every tenth of the budget), the task table when it changed materially, the summary;
  through the "autosched" logger.
"""
import contextlib
import math
import os
import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from . import _core
from .budget import TimeBudget
from .measure import LocalBuilder, LocalRunner, MeasureInput, check_runs_here
from .record_log import RecordToFile, RecordWarning, read_logs, replay
from .progress import Progress
from .search import SketchPolicy, default_schedules, make_cost_model, tuning_start_states
from .search_share import (ROUND_POPULATION_MIN, ROUND_POPULATION_PER_STATE, SearchShare,  # noqa: F401
                           round_search_params)
from .text import format_time
from .transfer import SeedSources, note_seeds_measured, seeds_text
from .tune_result import (TaskSchedulerResult, TuneResult, _failed_text, _model_seconds_text,  # noqa: F401
                          _network_timing_text, _rows_text, _transfer_text, peak_gflops)

__all__ = ["TuningOptions", "TuneResult", "TaskSchedulerResult", "TaskTuner", "TuningSession", "tune",
           "peak_gflops", "format_time", "round_search_params"]

class TuningOptions(_core.TuningParams):
    """How long and how to tune. The scalar fields, their defaults and checks are those of the core's
    TuningParams (cpp/tune/tuning_params.h; ``TuningParams.field_names``, each property's doc):
    num_measure_trials, num_measures_per_round, early_stopping, time_budget_s, verbose, peak_gflops,
    transfer_seeds. This class adds the fields that hold Python objects:

    builder, runner: a LocalBuilder and a LocalRunner (None: their defaults).
    measure_callbacks: called as callback(policy, inputs, results) after every batch (e.g. RecordToFile).
    transfer_logs: record logs whose successful records of the task's target train the cost model before the
        search starts (the task's own records in a resumed log are left to resume).
    """

    def __init__(self, builder=None, runner=None, measure_callbacks=(), transfer_logs=(), **fields):
        try:
            super().__init__(**fields)
        except (TypeError, ValueError) as e:  # name the class the user made
            raise type(e)(str(e).replace("TuningParams", "TuningOptions", 1)) from None
        if builder is not None and not isinstance(builder, LocalBuilder):
            raise TypeError(f"TuningOptions: builder must be a LocalBuilder, got {type(builder).__name__}")
        if runner is not None and not isinstance(runner, LocalRunner):
            raise TypeError(f"TuningOptions: runner must be a LocalRunner, got {type(runner).__name__}")
        self.builder = builder
        self.runner = runner
        self.measure_callbacks = list(measure_callbacks or ())
        for cb in self.measure_callbacks:
            if not callable(cb):
                raise TypeError(f"TuningOptions: measure callback {cb!r} is not callable")
        if isinstance(transfer_logs, (str, os.PathLike)):
            transfer_logs = [transfer_logs]
        self.transfer_logs = [os.fspath(p) for p in transfer_logs or ()]
        for path in self.transfer_logs:
            if not os.path.exists(path):
                raise ValueError(f"TuningOptions: transfer log '{path}' does not exist")
            if not os.path.isfile(path):
                raise ValueError(f"TuningOptions: transfer log '{path}' is not a regular file")

    def __eq__(self, other):
        return _core.TuningParams.__eq__(self, other) and self.__dict__ == getattr(other, "__dict__", None)

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    # The core's pickling keeps the scalar fields; the Python ones travel beside them.
    def __getstate__(self):
        return _core.TuningParams.__getstate__(self), dict(self.__dict__)

    def __setstate__(self, state):
        fields, extra = state
        _core.TuningParams.__setstate__(self, fields)
        self.__dict__.update(extra)


class TaskTuner:
    """One task of a tuning session: its search policy, its measurements (a round is one core call, see
    _core.tuning_round), its bookkeeping (TuneResult) and its progress line. TuningSession drives the tuners.

    builder, runner: override the options' (a session shares one runner between its tasks). start: the
    monotonic time the time budget counts from (budget.TimeBudget: the session's, shared by its tuners).
    verbose: overrides options.verbose for this task's own lines.
    reporter: the session's progress.Progress, through which the tuner's lines go (set by TuningSession.run).
    """

    def __init__(self, task, options, policy, builder=None, runner=None, start=None, verbose=None):
        self.task = task
        self.options = options
        self.policy = policy
        self.builder = builder or options.builder or LocalBuilder()
        self.runner = runner or options.runner or LocalRunner()
        self.verbose = options.verbose if verbose is None else verbose
        self.result = TuneResult(task)
        self.start = time.monotonic() if start is None else start
        self.budget = TimeBudget(options.time_budget_s, self.start)
        self.last_improvement = 0  # trial count at the last better schedule
        self.baseline_keys = {}    # state key -> its name among the start states ("expert", "plain", ...)
        self._start_states = None
        self._task_json = None     # the task as its records store it, made once
        self._measurer = None      # the runner's supervisor for this builder, taken once per session
        # The RecordToFile logs at the head of the callbacks are written by the core during the round; the
        # callbacks from the first other one on are called from here, in order, after it.
        callbacks = list(options.measure_callbacks)
        head = 0
        while head < len(callbacks) and type(callbacks[head]) is RecordToFile:
            head += 1
        self._logs, self._callbacks = callbacks[:head], callbacks[head:]
        if options.peak_gflops:
            self.peak, self.peak_text = options.peak_gflops, f"{options.peak_gflops:.4g} GFLOP/s (given)"
        else:
            self.peak, self.peak_text = peak_gflops(task, describe=True)
        self.empty_reason = ""
        self.reporter = None

    # ---- bookkeeping ----
    def absorb(self, keys, states, results, resumed=False):
        """Counts measured (state key, State, result) triples: trials, errors, the best, the baseline."""
        r = self.result
        for key, state, res in zip(keys, states, results):
            r.trials += 1
            cost = res.mean_cost if res.ok else None
            if not res.ok:
                r.errors[res.error] += 1
                r.error_messages.setdefault(res.error, res.error_msg)
            if key in self.baseline_keys:
                r.note_start_state(self.baseline_keys[key], cost, self.default_names)
            if cost is not None and math.isfinite(cost) and (r.best_cost is None or cost < r.best_cost):
                r.best_cost, r.best_state = cost, state
                self.last_improvement = r.trials
        if resumed:
            r.resumed_trials = r.trials
            self.last_improvement = r.trials
        r.history.append((r.trials, r.best_cost))

    def run_round(self, n=0, states=None, turns=None, turn=0):
        """One round: `states` (States) or up to n the search proposes, measured by the runner's measurer
        (a LocalMeasurer, or RayRunner's, a core Measurer written in Python), recorded in the RecordToFile
        logs, learned from, in one core call (_core.tuning_round); then the other callbacks and the
        bookkeeping. Returns the round (a _core.TuningRound). turns, turn: the round's turn among rounds run
        at once in several threads (TaskScheduler's parallel_tasks, _core.RoundTurns)."""
        if self._measurer is None:
            self._measurer = self.runner._measurer_for(self.builder)
        # Candidates many times slower than this task's best are timed by one run (cut_short_factor); the
        # round stops at the end of the time budget (budget.py: search, builds, runs, training).
        params = _core.RoundParams(num_measure=int(n), best_seconds=self.result.best_cost or 0.0,
                                   deadline_s=self.budget.seconds_left())
        rnd = _core.tuning_round(self.policy, self._measurer, [log._writer for log in self._logs], self._json(),
                                 params, states, turns, turn)
        return rnd

    def take_round(self, rnd):
        """What follows a round in the core, in the driver's thread: the budget's notes, the times, notices,
        the other callbacks and the bookkeeping."""
        self.budget.note_round(self.task.desc or "the task", rnd)
        if rnd.searched:
            self.result.seconds["search"] += rnd.search_seconds
        self.result.seconds["measure"] += rnd.measure_seconds
        return self._take_round(rnd)

    def _json(self):
        if self._task_json is None:
            self._task_json = self.task.to_json()
        return self._task_json

    def _take_round(self, rnd):
        """What follows a round in the core: its time, notices, the other callbacks and the bookkeeping."""
        self.result.seconds["cost_model"] += rnd.cost_model_seconds
        for message in rnd.notices:
            warnings.warn(message, RecordWarning, stacklevel=5)
        states, results = rnd.states, rnd.results
        if states and self._callbacks:
            inputs = [MeasureInput(self.task, s) for s in states]
            for cb in self._callbacks:
                cb(self.policy, inputs, results)
        if states:
            self.absorb(rnd.keys, states, results)
        return rnd

    def resume_paths(self):
        return list(dict.fromkeys(cb.path for cb in self.options.measure_callbacks if isinstance(cb, RecordToFile)))

    def resume(self, records):
        """Takes this task's records among `records`, (path, Record) pairs of record_log.read_logs, as measured
        trials (same workload key and target; a schedule that does not replay on the task's DAG is skipped with
        a warning). Returns their results."""
        states, results = [], []
        target, key = str(self.task.target), self.task.workload_key
        other_dag = Counter()  # path -> records of this task's key measured on another DAG
        for path, rec in records:
            if rec.task.workload_key != key or str(rec.task.target) != target:
                continue
            try:
                core, elsewhere = replay(rec, self.task)
            except ValueError as err:
                warnings.warn(f"{path}:{rec.line}: skipped, the schedule does not replay ({err})",
                              RecordWarning, stacklevel=5)
                continue
            other_dag[path] += elsewhere
            states.append(core)
            results.append(rec.result)
        for path, n in other_dag.items():
            if n:
                warnings.warn(f"{path}: {n} records have the workload key {key} of task "
                              f"'{self.task.desc or key}' but were measured on another DAG (the task's "
                              f"structural key is {self.task.compute_dag.workload_key()}); their times were not "
                              "measured on this task", RecordWarning, stacklevel=5)
        for name, s in self.start_states():
            self.baseline_keys[_core.state_key(s)] = name
        if states:
            t0 = time.monotonic()
            self.policy.record_measured(states, results)
            self.result.seconds["cost_model"] += time.monotonic() - t0
            self.absorb([_core.state_key(s) for s in states], states, results, resumed=True)
        return results

    def start_states(self):
        """(name, State) of what tuning measures first, in order (search.tuning_start_states): the task's
        default (what an untuned build runs), the other parallel default, the expert schedule, the plain loop
        nest last. default_names: search.default_schedules' names, the order in which a build takes its default."""
        if self._start_states is None:
            self._start_states = tuning_start_states(self.policy)
            self.default_names = [name for name, _ in default_schedules(self.task)]
        return self._start_states

    def baseline(self, limit):
        """Measures the start states not measured yet, in order (the default first), at most `limit` of them;
        returns how many."""
        todo = [s for _, s in self.start_states() if not self.policy.is_measured(s)][:max(0, limit)]
        if todo:
            self.take_round(self.run_round(states=todo))
            self.progress("baseline", {})
        return len(todo)

    @property
    def num_baselines(self):
        return len(self.baseline_keys)

    def search_round(self, n):
        """One round of at most n states; False when the search found nothing new (the reason is in
        empty_reason)."""
        return self.end_search_round(self.take_round(self.run_round(n)))

    def set_empty_reason(self):
        stats = self.policy.last_round
        if stats["sampled"] == 0:
            drops = ", ".join(f"{k} {v}" for k, v in sorted(stats["sample_drops"].items())) or "none"
            self.empty_reason = f"no valid schedule could be sampled from the sketches (dropped: {drops})"
        else:
            self.empty_reason = "search space exhausted: every schedule the sketches offer was measured"

    def end_search_round(self, rnd):
        """The progress of a search round that measured rnd.states; False when it measured nothing."""
        if self.policy.last_round["cut_at_deadline"]:
            self.budget.note_search_cut(self.task.desc or "the task")
        if not rnd.states and (rnd.skipped or self.policy.last_round["cut_at_deadline"]):
            return True  # the time budget ended before any state was measured: not an exhausted search
        if not rnd.states:
            self.set_empty_reason()
            return False
        self.result.rounds += 1
        note_seeds_measured(self, rnd)
        self.progress(f"round {self.result.rounds}", self.policy.last_round if self.verbose >= 2 else {})
        return True

    def early_stopped(self):
        """True when early_stopping trials have passed without a better schedule."""
        stop = self.options.early_stopping
        return stop is not None and self.result.trials - self.last_improvement >= stop

    # ---- output ----
    def speed_text(self, cost):
        if cost is None:
            return "no valid schedule yet"
        flop = self.task.compute_dag.flop_ct
        text = format_time(cost)
        if flop > 0:
            gflops = flop / cost / 1e9
            text += f" = {gflops:.4g} GFLOP/s"
            if self.peak:
                text += f" ({100 * gflops / self.peak:.3g}% of peak)"
        return text

    def time_text(self):
        s = self.result.seconds
        return ", ".join(f"{k.replace('_', ' ')} {s[k]:.1f}s" for k in ("search", "cost_model", "measure") if k in s)

    def progress(self, label, stats):
        """A line for the batch (DEBUG: shown at the session's verbose 2; the bar is the session's)."""
        if not self.verbose or self.reporter is None:
            return
        r = self.result
        errors = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "none"
        speedup = f" | x{r.speedup:.3g} over baseline" if r.speedup else ""
        self.reporter.debug(f"[{label:>9}] {self.task.desc or 'task'}: trials {r.trials:>5} | best "
                            f"{self.speed_text(r.best_cost)}{speedup} | errors: {errors} | time: {self.time_text()}")
        if stats:
            fails = ", ".join(f"{k} {v}" for k, v in sorted(stats["mutation_failures"].items())) or "none"
            self.reporter.debug(f"            sampled {stats['sampled']}, +{stats['seeded_measured']} measured, "
                                f"{stats['generations']} generations, {stats['mutated']} mutations "
                                f"(failed: {fails}), picked {stats['picked_best']} best + "
                                f"{stats['picked_random']} random")

    def summary_rows(self):
        """The rows of the summary of this task's tuning."""
        r = self.result
        flop = self.task.compute_dag.flop_ct
        gflops = f"{flop / r.best_cost / 1e9:.4g}" if r.best_cost and flop > 0 else "-"
        peak = "-" if self.peak or not r.best_cost else f"- ({self.peak_text})"
        if r.best_cost and flop > 0 and self.peak:
            share = 100 * flop / r.best_cost / 1e9 / self.peak
            peak = f"{share:.3g} (of {self.peak_text})"
            if share > 100:
                peak += "; above 100: the CPU ran faster than that clock (a boost clock the OS does not report)"
        speedup = f"{r.speedup:.3g}x" if r.speedup else "-"
        if r.speedup is not None and r.best_state is not None and r.best_cost >= r.baseline_cost:
            speedup += " (the budget found nothing faster than the baseline: the best schedule is the default)"
        errors = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "none"
        baseline = format_time(r.baseline_cost) + (f" (the default: {r.default_name})" if r.default_name else "")
        rows = [("task", self.task.desc or self.task.workload_key), ("trials", f"{r.trials} ({r.resumed_trials} "
                f"resumed, {r.rounds} rounds)"), ("baseline", baseline), ("best", format_time(r.best_cost)),
                ("GFLOP/s", gflops), ("% of peak", peak), ("speed-up", speedup), ("errors", errors)]
        if r.expert_cost is not None:
            rows.insert(3, ("expert seed", self.speed_text(r.expert_cost)))
        rows += [("transfer", _transfer_text(t)) for t in r.transferred]
        rows += [("transfer seeds", seeds_text([r]))] if self.options.transfer_seeds else []
        measured = max(1, r.trials - r.resumed_trials)
        total = r.seconds["total"]
        shares = ", ".join(f"{k.replace('_', ' ')} {v:.1f}s ({100 * v / max(total, 1e-9):.0f}%)"
                           for k, v in r.seconds.items() if k != "total")
        rows.append(("time", f"{total:.1f}s = {shares}; {total / measured:.3g}s per trial, "
                             f"{_model_seconds_text(r.seconds, r.trials - r.resumed_trials)}"))
        rows.append(("stopped", r.stop_reason))
        return rows


class TuningSession:
    """One tuning session: the tasks' TaskTuners, the warm-up, the rounds, the stop reasons, transfer, resume,
    the time accounting and the output, for one task (task.tune) or many (TaskScheduler.tune).

    scheduler: the TaskScheduler whose weights, strategy (its pick(session)), give-up rule and load_log_file
    apply; None for one task tuned on its own (weight 1, never given up, the summary of that task). Its output
    goes through one progress.Progress (the bar, the tables, the summary), made by run.
    """

    def __init__(self, tasks, options, policies, runners, scheduler=None, start=None):
        self.scheduler = scheduler
        self.options = options
        self.start = time.monotonic() if start is None else start
        self.single = scheduler is None
        builder = options.builder or LocalBuilder()
        # a task's own lines: always for a task tuned alone; among many, only at verbose >= 2
        verbose = options.verbose if self.single else max(0, options.verbose - 1)
        self.tuners = [TaskTuner(t, options, p, builder=builder, runner=r, start=self.start, verbose=verbose)
                       for t, p, r in zip(tasks, policies, runners)]
        self.budget = TimeBudget(options.time_budget_s, self.start)  # the tuners' too: one account of the end
        for tt in self.tuners:
            tt.budget = self.budget
        for tt in self.tuners:
            check_runs_here(tt.task, tt.runner)
        # TaskScheduler(parallel_tasks=k): the rounds of k tasks measured at once (runners that measure
        # elsewhere only; the scheduler checks)
        self.parallel = 1 if self.single else scheduler.parallel_tasks
        weights = [1.0] * len(tasks) if self.single else scheduler.task_weights
        self.result = TaskSchedulerResult(tasks, weights)
        self.result.task_results = [tt.result for tt in self.tuners]
        self.failed_rounds = [0] * len(self.tuners)
        self.give_up_after = None if self.single else scheduler.failed_rounds_to_give_up
        self.verbose = options.verbose
        self.reporter = None
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
        """The task of the next round: the scheduler's choice, or the one task; not one of `exclude` (None:
        no task is left)."""
        if self.single:
            active = [i for i in self.active() if i not in exclude]
            return active[0] if active else None
        return self.scheduler.pick(self, exclude)

    # ---- the run ----
    def run(self):
        """Tunes until a stop reason holds; returns the TaskSchedulerResult."""
        desc = (self.result.tasks[0].desc or "tuning") if self.single else f"{self.n} tasks"
        self.reporter = Progress(self.options.num_measure_trials, self.options.time_budget_s, self.verbose,
                                 desc=desc, start=self.start)
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
                    if reason is None and pool is not None:
                        self.parallel_rounds(pool)
                    elif reason is None:
                        self.search_round(self.pick())
        finally:
            self.share.close()
        self.result.stop_reason = reason
        self.result.seconds = time.monotonic() - self.start
        for i, tt in enumerate(self.tuners):
            tt.result.stop_reason = self.result.done.get(i, reason)
            tt.result.seconds["total"] = self.result.seconds
        self.reporter.finish_bar()  # the bar ends before the summary
        self.summary()
        return self.result

    def stop_reason(self):
        o = self.options
        if self.remaining() <= 0:
            return f"reached num_measure_trials ({o.num_measure_trials}{'' if self.single else ' in all'})"
        if self.budget.passed():
            return self.budget.stop_reason()
        if not self.active():
            if self.single:
                return self.result.done[0]
            return "every task is done (search space exhausted, early stopping or given up)"
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
                    of = "" if self.single else f" of '{target.text}'"
                    self.reporter.info(f"Transfer: the cost model{of} starts from {_transfer_text(report)}")

    def log_paths(self):
        paths = self.tuners[0].resume_paths()
        if not self.single and self.scheduler.load_log_file:
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
            which = "this task" if self.single else f"{tasks} tasks"
            self.reporter.info(f"Resumed {resumed} trials of {which} from {', '.join(self.log_paths())}"
                               f"{_failed_text(results)}")
        return records

    def warm_up(self):
        """The start states of every task, then one search round each (tasks resumed past their start states
        have had it). Returns a stop reason when the budget ends it."""
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
        for i, tt in enumerate(self.tuners):
            reason = self.stop_reason()
            if reason is not None:
                return reason
            if i not in self.result.done and tt.result.trials <= tt.num_baselines:
                self.search_round(i)
        return None

    def search_round(self, i):
        tt = self.tuners[i]
        SeedSources.seed_task(self, i)
        n = min(self.options.num_measures_per_round, self.remaining())
        before = tt.result.trials
        self.share.before_round(tt, n)
        found = tt.search_round(n)
        self.share.after_round(tt)
        self.end_round(i, before, found)

    def parallel_rounds(self, pool):
        """The rounds of up to `parallel` tasks, in the order the scheduler ranks them, each one core call in a
        thread of `pool`: their searches and records take turns in that order (_core.RoundTurns: they share
        cost models and logs), their measurements run at once (the runners measure elsewhere); the rounds are then counted in
        rank order."""
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
            SeedSources.seed_task(self, i)
            self.share.before_round(tt, n)
            rounds.append((i, tt.result.trials, pool.submit(tt.run_round, n, None, self.turns, self.turns.take())))
        for i, before, running in rounds:
            tt = self.tuners[i]
            found = tt.end_search_round(tt.take_round(running.result()))
            self.share.after_round(tt)
            self.end_round(i, before, found)

    def end_round(self, i, before, found):
        """The bookkeeping after task i's search round (found: it measured something)."""
        tt = self.tuners[i]
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
        latency, missing = self.estimated_latency()
        self.result.history.append((self.total_trials(), latency))
        if self.single:
            self.reporter.update(self.total_trials(), self.tuners[0].result.best_cost)
            return
        with_schedule = self.n - missing
        self.reporter.update(self.total_trials(), None, latency if not missing else None,
                             note=f"{with_schedule}/{self.n} tasks with a schedule")

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
        """Among many tasks, a table of them, printed when it changed materially (see progress.Progress.table)
        or forced (a task alone has the bar)."""
        if not self.verbose or self.single:
            return
        tasks = self.result.tasks
        width = max(4, min(40, max(len(t.desc or t.workload_key) for t in tasks)))
        lines = [f"|  ID | {'Task':<{width}} | Latency (ms) | Speed (GFLOP/s) | Weight | Trials | Done"]
        for i, tt in enumerate(self.tuners):
            desc = (tt.task.desc or tt.task.workload_key)[:width]
            cost, flop = tt.result.best_cost, tt.task.compute_dag.flop_ct
            latency = f"{cost * 1e3:.4g}" if cost is not None else "-"
            speed = f"{flop / cost / 1e9:.4g}" if cost and flop > 0 else "-"
            done = self.result.done.get(i, "").split(":")[0]
            lines.append(f"| {i:>3} | {desc:<{width}} | {latency:>12} | {speed:>15} | "
                         f"{self.result.weights[i]:>6.4g} | {tt.result.trials:>6} | {done}")
        total, missing = self.estimated_latency()
        note = f" (+ {missing} task{'s' if missing > 1 else ''} without a valid schedule)" if missing else ""
        elapsed = time.monotonic() - self.start
        lines.append(f"Estimated total latency: {total * 1e3:.4g} ms{note} | {label} | trials "
                     f"{self.total_trials()}/{self.options.num_measure_trials} | time {elapsed:.1f} s")
        state = (tuple(tt.result.best_cost is None for tt in self.tuners), tuple(sorted(self.result.done)))
        self.reporter.table(lines, None if missing else total, state, force=force)

    def print_diagnosis(self):
        """A paragraph per task without a valid schedule: its errors, how many, the first message of each."""
        for i in self.result.failed_tasks:
            r, task = self.tuners[i].result, self.result.tasks[i]
            name = task.desc or task.workload_key
            if r.trials == 0:
                self.reporter.warning(f"Task {i} ({name}): no valid schedule: not measured, the run stopped "
                                      "before its turn")
                continue
            errors = ", ".join(f"{k} {v}" for k, v in r.errors.most_common()) or "none"
            why = f" ({self.result.done[i]})" if i in self.result.done else ""
            lines = [f"Task {i} ({name}): no valid schedule in {r.trials} trials{why}; errors: {errors}"]
            for kind, message in r.error_messages.items():
                first = (message or "").strip().splitlines()
                lines.append(f"    first {kind}: {first[0][:200] if first else '(no message)'}")
            self.reporter.warning("\n".join(lines))

    def summary(self):
        """The summary: a task alone gets its own table; many get the stop reason, a diagnosis of each task
        without a valid schedule and the scheduler's table."""
        if not self.verbose:
            return
        if self.single:
            rows = self.tuners[0].summary_rows()
            if self.share.active:
                rows.insert(-1, ("search share", self.share.summary()))
            self.reporter.info(_rows_text("Tuning summary", rows))
            return
        res = self.result
        self.print_table("end", force=True)
        self.reporter.info(f"Stopped: {res.stop_reason}")
        self.print_diagnosis()
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
        for tt in self.tuners:
            seconds.update({k: v for k, v in tt.result.seconds.items() if k != "total"})
        shares = ", ".join(f"{k.replace('_', ' ')} {v:.1f}s" for k, v in seconds.items())
        self.reporter.info(_rows_text("Task scheduler summary", [
            ("tasks", f"{len(res.tasks)} ({len(res.failed_tasks)} without a valid schedule; done: {done})"),
            ("trials", f"{res.trials} ({res.resumed_trials} resumed, {measured} measured in "
                       f"{sum(r.rounds for r in res.task_results)} rounds); per task {res.task_trials}"),
            ("latency", f"estimated total (sum of weight x latency"
                        f"{' x its time in the network per tuner-timed second' if res.network_timings else ''}"
                        f"{f' + {format_time(outside)} outside the kernels' if outside else ''}): before (baselines) "
                        f"{format_time(before)}, after {format_time(after)}{speedup}"),
            *([("network timing", _network_timing_text(res.network_timings))] if res.network_timings else []),
            ("transfer seeds", seeds_text(res.task_results)),
            ("time", f"{res.seconds:.1f}s = {shares}; {_model_seconds_text(seconds, measured)}"),
            *([("search share", self.share.summary())] if self.share.active else []),
            ("stopped", res.stop_reason)]))


def tune(task, options, search_policy=None, cost_model=None):
    """Tunes `task` in a session of its own (see the module docstring); returns a TuneResult. cost_model: a
    CostModel, "xgb", "random" or None (XGBModel when autosched was built with XGBoost, else RandomModel); it is
    given to the default SketchPolicy, so it cannot be combined with search_policy. "auto" (None) starts from
    the pretrained model shipped in the package on llvm targets; "scratch" learns from the session alone. The
    time budget counts from this call (budget.py)."""
    start = time.monotonic()
    if not isinstance(options, TuningOptions):
        raise TypeError(f"tune needs TuningOptions, got {type(options).__name__}")
    if search_policy is None:
        params = round_search_params(options.num_measures_per_round)
        model = make_cost_model(cost_model, default="auto", target=task.target)
        search_policy = SketchPolicy(task, model, params)
    elif cost_model is not None:
        raise TypeError("give the cost model to the SketchPolicy (search_policy), not to tune()")
    elif not isinstance(search_policy, SketchPolicy):
        raise TypeError(f"search_policy must be a search.SketchPolicy, got {type(search_policy).__name__}")
    elif search_policy.task.workload_key != task.workload_key:
        raise ValueError("search_policy was made for another task (workload key "
                         f"{search_policy.task.workload_key}, not {task.workload_key})")
    search_policy.cost_model.check_target(task.target)
    session = TuningSession([task], options, [search_policy], [options.runner or LocalRunner()], start=start)
    return session.run().task_results[0]
