"""TaskTuner: one task of a tuning session (session.py): its policy, its rounds (one core call each), its
bookkeeping (results.TuneResult: trials, errors, the best, the baselines), resume from its records, its start
states and its lines.
"""
import math
import time
import warnings
from collections import Counter

from .. import _core
from ..measure.local import MeasureInput
from ..core.record_log import RecordToFile, RecordWarning, replay
from ..search.policy import default_schedules, tuning_start_states
from ..core.text import format_time
from .results import TuneResult, _model_seconds_text, _transfer_text, peak_gflops
from .transfer import note_seeds_measured, seeds_text

__all__ = ["TaskTuner"]


class TaskTuner:
    """One task of a tuning session: its search policy, its rounds (each one core call, _core.tuning_round),
    its bookkeeping (TuneResult) and its progress line. TuningSession (session.py) drives the tuners and decides
    each round's parameters (share.py, transfer.py).

    builder, runner: the session's builder and this task's runner. budget: the session's budget.TimeBudget.
    verbose: the level of this task's own lines (the session chooses it). reporter: the session's
    progress.Progress, through which the tuner's lines go (set by TuningSession.run).
    """

    def __init__(self, task, options, policy, builder, runner, budget, verbose):
        self.task = task
        self.options = options
        self.policy = policy
        self.builder = builder
        self.runner = runner
        self.verbose = verbose
        self.result = TuneResult(task)
        self.budget = budget
        self.last_improvement = 0  # trial count at the last better schedule
        self.baseline_keys = {}    # state key -> its name among the start states ("expert", "plain", ...)
        self._start_states = None
        self._task_json = None     # the task as its records store it, made once
        self._measurer = None      # the runner's measurer for this builder, taken once per session
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
        self.last_round = None     # the _core.TuningRound last taken
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

    def run_round(self, params, states=None, turns=None, turn=0):
        """One round in one core call (_core.tuning_round): `states` (States) or up to params.num_measure the
        search proposes with the round's parameters (params: a _core.RoundParams the session made), measured by
        the runner's measurer (a LocalMeasurer, or a core Measurer written in Python: RayRunner's), recorded in
        the RecordToFile logs and learned from. Returns the _core.TuningRound; take_round does the rest.
        turns, turn: the round's turn among rounds run at once in several threads (_core.RoundTurns)."""
        if self._measurer is None:
            self._measurer = self.runner._measurer_for(self.builder)
        # Candidates many times slower than this task's best are timed by one run (cut_short_factor); the
        # round stops at the end of the time budget (budget.py: search, builds, runs, training).
        params.best_seconds = self.result.best_cost or 0.0
        params.deadline_s = self.budget.seconds_left()
        return _core.tuning_round(self.policy, self._measurer, [log._writer for log in self._logs], self._json(),
                                  params, states, turns, turn)

    def take_round(self, rnd):
        """What follows a round in the core, in the session's thread: what the budget's end cut, the times,
        the record writers' notices, the other callbacks and the bookkeeping. Returns rnd."""
        self.last_round = rnd
        self.budget.note_round(self.task.desc or "the task", rnd)
        if rnd.searched:
            self.result.seconds["search"] += rnd.search_seconds
        self.result.seconds["measure"] += rnd.measure_seconds
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

    def _json(self):
        if self._task_json is None:
            self._task_json = self.task.to_json()
        return self._task_json

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
            self.default_names = [name for name, _ in default_schedules(self.task, self.policy.params)]
        return self._start_states

    def baseline(self, limit):
        """Measures the start states not measured yet, in order (the default first), at most `limit` of them;
        returns how many."""
        todo = [s for _, s in self.start_states() if not self.policy.is_measured(s)][:max(0, limit)]
        if todo:
            self.take_round(self.run_round(_core.RoundParams(), states=todo))
            self.progress("baseline", {})
        return len(todo)

    @property
    def num_baselines(self):
        return len(self.baseline_keys)

    def search_round(self, params):
        """One search round with the session's parameters (a _core.RoundParams); False when the search found
        nothing new (the reason is in empty_reason)."""
        return self.end_search_round(self.take_round(self.run_round(params)))

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
