"""Tuning one task: measure a baseline, then rounds of search -> measure -> learn, with progress and resume.

    opts = ans.TuningOptions(num_measure_trials=200, measure_callbacks=[ans.RecordToFile("mm.json")])
    result = task.tune(opts)              # a progress line per round, a summary table at the end
    state = task.apply_best("mm.json")    # the fastest verified schedule in the log
    print(result.speedup, result.best_cost)

Before searching, the tuner measures the plain loop nest and simple parallel + vectorized variants of it
(the baseline, see search.baseline_states), and with them the expert schedule (search.expert_schedule: register
blocks, packing and cache tiles from the target's hardware parameters): the best schedule is never slower than
any of them, and the summary reports the speed-up over the baseline and the expert schedule's time. Each round
asks the search policy (SketchPolicy) for up to
``num_measures_per_round`` states never measured, measures them (LocalBuilder / LocalRunner: verified, plausible times only), passes
the results to the measure callbacks (RecordToFile appends them to a log) and to the cost model. Tuning stops
after ``num_measure_trials`` trials, after ``early_stopping`` trials without improvement, when
``time_budget_s`` has passed, or when the search finds no schedule it has not measured (tiny tasks).

Resume: when a RecordToFile log of the options already holds records of this task (same workload key and
target), they count as trials, none of their states is measured again, and the cost model starts from them.

Transfer: ``TuningOptions(transfer_logs=["earlier.json"])`` trains the cost model first on the successful records
of the task's target in those logs (other tasks tuned before); records of other targets are never used.
"""
import math
import os
import re
import time
import warnings
from collections import Counter

from . import _core
from .measure import LocalBuilder, LocalRunner, MeasureInput, measure
from .progress import Progress
from .text import format_time
from .records import RecordToFile, RecordWarning
from .search import SearchParams, SketchPolicy, baseline_states, make_cost_model
from .state import State

__all__ = ["TuningOptions", "TuneResult", "TaskTuner", "tune", "peak_gflops", "format_time", "round_search_params"]

# The evolutionary search of a round measuring n states keeps a population of n * ROUND_POPULATION_PER_STATE
# states, at least ROUND_POPULATION_MIN and at most the SearchParams default (2048): a round of 16 searches
# 512 states instead of 2048 (docs/task_scheduler.md has the measurements behind these numbers).
ROUND_POPULATION_PER_STATE = 32
ROUND_POPULATION_MIN = 512
# The name of the expert schedule among the states measured before the search (TaskTuner.start_states).
EXPERT = "expert"


def _count(name, value, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"TuningOptions: {name} must be an int >= {minimum}, got {value!r}")
    return value


class TuningOptions:
    """How long and how to tune.

    num_measure_trials: schedules to measure in all (a resumed log's records count).
    num_measures_per_round: schedules per search round (64).
    early_stopping: stop after this many trials without a better schedule (None: never).
    time_budget_s: stop starting rounds after this many seconds (None: no limit).
    builder, runner: a LocalBuilder and a LocalRunner (None: their defaults).
    measure_callbacks: called as callback(policy, inputs, results) after every batch (e.g. RecordToFile).
    verbose: 0 warnings only, 1 a progress bar and the summary, 2 also a line per round and the search's own
        statistics (logging levels WARNING, INFO, DEBUG of the "autosched" logger: see autosched.progress).
    peak_gflops: the target's peak for "% of peak" (None: estimated from the CPU, see peak_gflops()).
    transfer_logs: record logs whose successful records of the task's target train the cost model before the
        search starts (the task's own records in a resumed log are left to resume).
    """

    def __init__(self, num_measure_trials=64, num_measures_per_round=64, early_stopping=None,
                 time_budget_s=None, builder=None, runner=None, measure_callbacks=(), verbose=1,
                 peak_gflops=None, transfer_logs=()):
        self.num_measure_trials = _count("num_measure_trials", num_measure_trials, 0)
        self.num_measures_per_round = _count("num_measures_per_round", num_measures_per_round, 1)
        self.early_stopping = _count("early_stopping", early_stopping, 1, allow_none=True)
        if time_budget_s is not None and (isinstance(time_budget_s, bool) or
                                          not isinstance(time_budget_s, (int, float)) or not time_budget_s > 0):
            raise ValueError(f"TuningOptions: time_budget_s must be a positive number, got {time_budget_s!r}")
        self.time_budget_s = time_budget_s
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
        self.verbose = _count("verbose", verbose, 0)
        if peak_gflops is not None and not (isinstance(peak_gflops, (int, float)) and peak_gflops > 0):
            raise ValueError(f"TuningOptions: peak_gflops must be a positive number, got {peak_gflops!r}")
        self.peak_gflops = peak_gflops
        if isinstance(transfer_logs, (str, os.PathLike)):
            transfer_logs = [transfer_logs]
        self.transfer_logs = [os.fspath(p) for p in transfer_logs or ()]
        for path in self.transfer_logs:
            if not os.path.exists(path):
                raise ValueError(f"TuningOptions: transfer log '{path}' does not exist")
            if not os.path.isfile(path):
                raise ValueError(f"TuningOptions: transfer log '{path}' is not a regular file")

    def __repr__(self):
        return (f"TuningOptions(num_measure_trials={self.num_measure_trials}, "
                f"num_measures_per_round={self.num_measures_per_round}, early_stopping={self.early_stopping}, "
                f"time_budget_s={self.time_budget_s})")


def _cpu_ghz():
    """The CPU's clock in GHz: the highest frequency the kernel reports, else 3.0."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read()) / 1e6
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", f.read(), re.M)]
        if mhz:
            return max(mhz) / 1e3
    except OSError:
        pass
    return 3.0


def peak_gflops(task, describe=False):
    """Estimated peak GFLOP/s of the task's CPU target: cores x FMA units (HardwareParams.fma_units, from the
    target's features) x 2 FLOP x SIMD lanes of the DAG's output type x the clock the kernel reports (under a
    hypervisor often the base clock, below the boost clock: pass TuningOptions(peak_gflops=...) for the real
    figure). None for other targets. With
    describe=True, (value, how it was estimated)."""
    if str(task.target).split()[0] != "llvm":
        return (None, "") if describe else None
    hw = task.hardware_params
    cores = hw.num_cores if hw.num_cores > 0 else (os.cpu_count() or 1)
    bits = 32
    try:
        found = re.findall(r"(\d+)", str(task.compute_dag.tensors[-1].dtype))
        bits = int(found[-1]) if found else 32
    except (AttributeError, IndexError):
        pass
    lanes = max(1, hw.vector_unit_bytes * 8 // max(bits, 8))
    ghz = _cpu_ghz()
    fma_units = hw.fma_units or 2  # 0: not known
    value = cores * fma_units * 2 * lanes * ghz
    if not describe:
        return value
    return value, (f"{value:.4g} GFLOP/s = {cores} cores x {2 * fma_units * lanes} FLOP/cycle x {ghz:.3g} GHz, "
                   "the clock the OS reports")


class TuneResult:
    """What a tuning run did. Costs are seconds per run; None where nothing valid was measured."""

    def __init__(self, task):
        self.task = task
        self.trials = 0            # measurements in all (resumed records included)
        self.resumed_trials = 0    # records of the task found in the log at the start
        self.transferred = []      # cost_model.FileUpdate per transfer log
        self.rounds = 0
        self.best_cost = None
        self.best_state = None
        self.baseline_cost = None  # the better of the baseline schedules
        self.baseline_costs = {}   # "plain" / "parallel" / "parallel 2" -> cost (None: failed)
        self.expert_cost = None    # the expert schedule's (None: none, or not measured)
        self.errors = Counter()    # error name -> count, over every trial
        self.error_messages = {}   # error name -> the first message of that error
        self.seconds = Counter()   # "search", "cost_model", "build", "run" (or "measure"), "total"
        self.stop_reason = ""
        self.history = []          # (trials, best cost) after every batch

    @property
    def speedup(self):
        """Baseline cost over best cost (None when either is missing)."""
        if self.best_cost is None or self.baseline_cost is None:
            return None
        return self.baseline_cost / self.best_cost

    @property
    def best_gflops(self):
        flop = self.task.compute_dag.flop_ct
        return flop / self.best_cost / 1e9 if self.best_cost and flop > 0 else None

    def __repr__(self):
        best = "none" if self.best_cost is None else format_time(self.best_cost)
        speedup = "" if self.speedup is None else f", x{self.speedup:.3g} over baseline"
        return f"TuneResult(trials={self.trials}, best={best}{speedup}, stop='{self.stop_reason}')"




def _transfer_text(report):
    """'120 records of 3 tasks from a.json (skipped: 2 of other targets, 5 failed)'."""
    skipped = [f"{n} {what}" for n, what in ((report.other_target, "of other targets"), (report.failed, "failed"),
                                            (report.excluded, "of this task, left to resume")) if n]
    return (f"{report.used} records of {report.tasks} tasks from {report.path}"
            + (f" (skipped: {', '.join(skipped)})" if skipped else ""))


def _failed_text(results):
    """' (failed: implausible 2, runtime 1)' for the failed ones among results; '' when none failed (records
    loaded with a time measurement would have refused count as implausible)."""
    failed = Counter(res.error for res in results if not res.ok)
    return f" (failed: {', '.join(f'{k} {v}' for k, v in sorted(failed.items()))})" if failed else ""


def _phase_seconds(runner):
    """(build, run) seconds the runner's measurer has spent so far, when it reports them; else None."""
    measurer = getattr(runner, "_measurer", None)
    phases = getattr(measurer, "phase_seconds", None)
    if phases is None:
        return None
    phases = phases() if callable(phases) else phases
    return float(phases[0]), float(phases[1])


def load_logs(paths, stacklevel=3):
    """Every record of the logs that exist among `paths`, as (path, record) pairs; the loader's warnings
    (lines skipped) are issued as RecordWarning."""
    pairs = []
    for path in paths:
        if not os.path.exists(path):
            continue
        loaded = _core.load_records(path)
        for message in loaded.warnings:
            warnings.warn(message, RecordWarning, stacklevel=stacklevel)
        pairs.extend((path, rec) for rec in loaded.records)
    return pairs


class TaskTuner:
    """One task's tuning, advanced a step at a time: tune() runs resume(), baseline(), then search_round()
    until stop_reason() names a reason; TaskScheduler interleaves the steps of many tasks.

    builder, runner: override the options' (a scheduler shares one runner between its tasks). start: the
    monotonic time the time budget counts from. verbose: overrides options.verbose for this task's own lines.
    """

    def __init__(self, task, options, policy, builder=None, runner=None, start=None, verbose=None, reporter=None):
        self.task = task
        self.options = options
        self.policy = policy
        self.builder = builder or options.builder or LocalBuilder()
        self.runner = runner or options.runner or LocalRunner()
        self.verbose = options.verbose if verbose is None else verbose
        self.result = TuneResult(task)
        self.start = time.monotonic() if start is None else start
        # The session's output; a tuner of its own (not a scheduler's) also moves the bar.
        self.owns_bar = reporter is None
        self.reporter = reporter or Progress(options.num_measure_trials, options.time_budget_s, self.verbose,
                                             desc=task.desc or "tuning", start=self.start)
        self.last_improvement = 0  # trial count at the last better schedule
        self.baseline_keys = {}    # state key -> "plain" / "parallel" / "parallel 2" / EXPERT
        self._start_states = None
        if options.peak_gflops:
            self.peak, self.peak_text = options.peak_gflops, f"{options.peak_gflops:.4g} GFLOP/s (given)"
        else:
            self.peak, self.peak_text = peak_gflops(task, describe=True)
        self.empty_reason = ""

    # ---- bookkeeping ----
    def absorb(self, states, results, resumed=False):
        """Counts measured (state, result) pairs: trials, errors, the best, the baseline."""
        r = self.result
        for state, res in zip(states, results):
            r.trials += 1
            key = _core.state_key(state.core)
            cost = res.mean_cost if res.ok else None
            if not res.ok:
                r.errors[res.error] += 1
                r.error_messages.setdefault(res.error, res.error_msg)
            name = self.baseline_keys.get(key)
            if name == EXPERT and cost is not None:
                r.expert_cost = cost if r.expert_cost is None else min(r.expert_cost, cost)
            elif name is not None and cost is not None:
                old = r.baseline_costs.get(name)
                r.baseline_costs[name] = cost if old is None else min(old, cost)
                r.baseline_cost = min(c for c in r.baseline_costs.values() if c is not None)
            if cost is not None and math.isfinite(cost) and (r.best_cost is None or cost < r.best_cost):
                r.best_cost, r.best_state = cost, state
                self.last_improvement = r.trials
        if resumed:
            r.resumed_trials = r.trials
            self.last_improvement = r.trials
        r.history.append((r.trials, r.best_cost))

    def measure_batch(self, states):
        """Measures states, runs the callbacks, feeds the policy; returns the results."""
        before = _phase_seconds(self.runner)
        t0 = time.monotonic()
        results = measure(self.task, states, self.builder, self.runner)
        elapsed = time.monotonic() - t0
        after = _phase_seconds(self.runner)
        if before is not None and after is not None:
            self.result.seconds["build"] += after[0] - before[0]
            self.result.seconds["run"] += after[1] - before[1]
        else:
            self.result.seconds["measure"] += elapsed
        inputs = [MeasureInput(self.task, s) for s in states]
        for cb in self.options.measure_callbacks:
            cb(self.policy, inputs, results)
        update_before = self.policy.model_update_seconds
        self.policy.record_measured(states, results)
        self.result.seconds["cost_model"] += self.policy.model_update_seconds - update_before
        self.absorb(states, results)
        return results

    # ---- the phases of tune() ----
    def resume_paths(self):
        return list(dict.fromkeys(cb.path for cb in self.options.measure_callbacks if isinstance(cb, RecordToFile)))

    def transfer(self):
        """Trains the cost model on the records of the task's target in the options' transfer logs."""
        resumed = {os.path.realpath(p) for p in self.resume_paths()}
        model = self.policy.cost_model
        for path in self.options.transfer_logs:
            own = (self.task.workload_key,) if os.path.realpath(path) in resumed else ()
            t0 = time.monotonic()
            model.update_from_file(path, target=self.task.target, exclude_workload_keys=own)
            self.result.seconds["cost_model"] += time.monotonic() - t0
            report = model.last_file_update
            self.result.transferred.append(report)
            if self.verbose:
                self.reporter.info(f"Transfer: the cost model starts from {_transfer_text(report)}")

    def resume(self, records=None):
        """Takes this task's records (same workload key and target) as measured trials: from `records`,
        (path, record) pairs of load_logs(), or else from the RecordToFile logs of the options."""
        paths = self.resume_paths()
        if records is None:
            records = load_logs(paths, stacklevel=5)
        else:
            paths = list(dict.fromkeys(path for path, _ in records))
        states, results = [], []
        target = str(self.task.target)
        dag_key = self.task.compute_dag.workload_key()
        other_dag = Counter()  # path -> records of this task's key measured on another DAG
        for path, rec in records:
            if rec.task.workload_key != self.task.workload_key or str(rec.task.target) != target:
                continue
            try:
                core = _core.LoopState.from_json(self.task.compute_dag, rec.state.to_json())
            except ValueError as err:
                warnings.warn(f"{path}:{rec.line}: skipped, the schedule does not replay ({err})",
                              RecordWarning, stacklevel=4)
                continue
            if rec.task.compute_dag.workload_key() != dag_key:
                other_dag[path] += 1
            states.append(State(core))
            results.append(rec.result)
        for path, n in other_dag.items():
            warnings.warn(f"{path}: {n} records have the workload key {self.task.workload_key} of task "
                          f"'{self.task.desc or self.task.workload_key}' but were measured on another DAG (the "
                          f"task's structural key is {dag_key}); their times were not measured on this task",
                          RecordWarning, stacklevel=4)
        for name, s in self.start_states():
            self.baseline_keys[_core.state_key(s.core)] = name
        if states:
            t0 = time.monotonic()
            self.policy.record_measured(states, results)
            self.result.seconds["cost_model"] += time.monotonic() - t0
            self.absorb(states, results, resumed=True)
            if self.verbose:
                self.reporter.info(f"Resumed {len(states)} trials of this task from {', '.join(paths)}"
                                   f"{_failed_text(results)}")

    def start_states(self):
        """(name, State) of what tuning measures first: the baselines ("plain", "parallel", "parallel 2") and
        the expert schedule (EXPERT) where the task has one."""
        if self._start_states is None:
            states = [("plain" if i == 0 else "parallel" if i == 1 else f"parallel {i}", s)
                      for i, s in enumerate(baseline_states(self.task, self.policy.params))]
            expert = self.policy.expert_schedule()
            if expert is not None:
                states.append((EXPERT, expert))
            self._start_states = states
        return self._start_states

    def baseline(self, limit=None):
        """Measures the baseline states and the expert schedule not measured yet, at most `limit` of them
        (None: as many as num_measure_trials leaves); returns how many."""
        if limit is None:
            limit = self.options.num_measure_trials - self.result.trials
        todo = [s for _, s in self.start_states() if not self.policy.is_measured(s)]
        todo = todo[:max(0, limit)]
        if todo:
            self.measure_batch(todo)
            self.progress("baseline", {})
        return len(todo)

    @property
    def num_baselines(self):
        return len(self.baseline_keys)

    def search_round(self, n=None):
        """One round of at most n states (None: a round's worth, as num_measure_trials leaves); False when
        the search found nothing new (the reason is in empty_reason)."""
        if n is None:
            n = min(self.options.num_measures_per_round, self.options.num_measure_trials - self.result.trials)
        states = self.policy.continue_search_one_round(n)
        stats = self.policy.last_round
        self.result.seconds["search"] += stats["search_seconds"]
        self.result.seconds["cost_model"] += stats["cost_model_seconds"]
        if not states:
            if stats["sampled"] == 0:
                drops = ", ".join(f"{k} {v}" for k, v in sorted(stats["sample_drops"].items())) or "none"
                self.empty_reason = f"no valid schedule could be sampled from the sketches (dropped: {drops})"
            else:
                self.empty_reason = "search space exhausted: every schedule the sketches offer was measured"
            return False
        self.result.rounds += 1
        self.measure_batch(states)
        self.progress(f"round {self.result.rounds}", stats)
        return True

    def stop_reason(self):
        o, r = self.options, self.result
        if r.trials >= o.num_measure_trials:
            return f"reached num_measure_trials ({o.num_measure_trials})"
        if self.early_stopped():
            return f"early stopping: no better schedule in the last {o.early_stopping} trials"
        if o.time_budget_s is not None and time.monotonic() - self.start >= o.time_budget_s:
            return f"time budget of {o.time_budget_s} s used"
        return None

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
        parts = [f"{k.replace('_', ' ')} {s[k]:.1f}s" for k in ("search", "cost_model", "build", "run", "measure")
                 if k in s]
        return ", ".join(parts)

    def progress(self, label, stats):
        """The bar (a tuner of its own), and at verbose 2 a line for the round."""
        r = self.result
        if self.owns_bar:
            self.reporter.update(r.trials, r.best_cost)
        if self.verbose < (2 if self.owns_bar else 1):  # a scheduler's tuners run one level quieter
            return
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

    def summary(self):
        r = self.result
        r.seconds["total"] = time.monotonic() - self.start
        if not self.verbose:
            return
        flop = self.task.compute_dag.flop_ct
        gflops = f"{flop / r.best_cost / 1e9:.4g}" if r.best_cost and flop > 0 else "-"
        peak = "-"
        if r.best_cost and flop > 0 and self.peak:
            share = 100 * flop / r.best_cost / 1e9 / self.peak
            peak = f"{share:.3g} (of {self.peak_text})"
            if share > 100:
                peak += "; above 100: the CPU ran faster than that clock (a boost clock the OS does not report)"
        speedup = f"{r.speedup:.3g}x" if r.speedup else "-"
        if r.speedup is not None and r.best_state is not None and r.best_cost >= r.baseline_cost:
            speedup += " (the budget found nothing faster than the baseline: the best schedule is a baseline)"
        errors = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "none"
        rows = [("task", self.task.desc or self.task.workload_key), ("trials", f"{r.trials} ({r.resumed_trials} "
                f"resumed, {r.rounds} rounds)"), ("baseline", format_time(r.baseline_cost)), ("best", format_time(r.best_cost)),
                ("GFLOP/s", gflops), ("% of peak", peak), ("speed-up", speedup), ("errors", errors)]
        if r.expert_cost is not None:
            rows.insert(3, ("expert seed", self.speed_text(r.expert_cost)))
        rows += [("transfer", _transfer_text(t)) for t in r.transferred]
        measured = max(1, r.trials - r.resumed_trials)
        shares = ", ".join(f"{k.replace('_', ' ')} {v:.1f}s ({100 * v / max(r.seconds['total'], 1e-9):.0f}%)"
                           for k, v in r.seconds.items() if k != "total")
        rows += [("time", f"{r.seconds['total']:.1f}s = {shares}; {r.seconds['total'] / measured:.3g}s per trial"),
                 ("stopped", r.stop_reason)]
        width = max(len(k) for k, _ in rows)
        self.reporter.info("\n".join(["Tuning summary"] + [f"| {k:<{width}} | {v}" for k, v in rows]))


def round_search_params(num_measures_per_round):
    """The SearchParams of the default search policy for rounds of `num_measures_per_round` states: the
    defaults, with the evolutionary search's population sized to the round (see ROUND_POPULATION_PER_STATE)."""
    params = SearchParams(num_measures_per_round=num_measures_per_round)
    wanted = max(ROUND_POPULATION_MIN, num_measures_per_round * ROUND_POPULATION_PER_STATE)
    params.evolutionary_search_population = min(params.evolutionary_search_population, wanted)
    return params


def tune(task, options, search_policy=None, cost_model=None):
    """Tunes `task` (see the module docstring); returns a TuneResult. cost_model: a CostModel, "xgb",
    "random" or None (XGBModel when autosched was built with XGBoost, else RandomModel); it is given to the
    default SketchPolicy, so it cannot be combined with search_policy."""
    if not isinstance(options, TuningOptions):
        raise TypeError(f"tune needs TuningOptions, got {type(options).__name__}")
    if search_policy is None:
        params = round_search_params(options.num_measures_per_round)
        search_policy = SketchPolicy(task, make_cost_model(cost_model, default="auto"), params)
    elif cost_model is not None:
        raise TypeError("give the cost model to the SketchPolicy (search_policy), not to tune()")
    elif not isinstance(search_policy, SketchPolicy):
        raise TypeError(f"search_policy must be a search.SketchPolicy, got {type(search_policy).__name__}")
    elif search_policy.task.workload_key != task.workload_key:
        raise ValueError("search_policy was made for another task (workload key "
                         f"{search_policy.task.workload_key}, not {task.workload_key})")
    foreign = set(getattr(search_policy.cost_model, "targets", ())) - {task.target.text}
    if foreign:
        raise ValueError(f"the cost model holds records of target '{sorted(foreign)[0]}', not of the task's "
                         f"target '{task.target.text}': timings of another target would mislead the search")
    run = TaskTuner(task, options, search_policy)
    try:
        run.transfer()
        run.resume()
        run.baseline()
        while True:
            reason = run.stop_reason()
            if reason is None and not run.search_round():
                reason = run.empty_reason
            if reason is not None:
                run.result.stop_reason = reason
                break
        run.reporter.finish_bar()  # the bar ends before the summary
        run.summary()
    finally:
        run.reporter.close()
    return run.result
