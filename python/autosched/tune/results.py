"""What a tuning session hands back (TuneResult per task, TaskSchedulerResult for the session) and the short
texts its output uses about records, the cost model and the hardware's peak."""
import math
from collections import Counter

from .. import _core
from ..search.policy import EXPERT
from ..core.text import format_time

__all__ = ["TuneResult", "TaskSchedulerResult"]


class TuneResult:
    """What tuning one task did. Costs are seconds per run; None where nothing valid was measured."""

    def __init__(self, task):
        self.task = task
        self.trials = 0            # measurements in all (resumed records included)
        self.resumed_trials = 0    # records of the task found in the log at the start
        self.transferred = []      # cost_model.FileUpdate per transfer log
        self.transfer_seeds = 0    # re-fitted states of similar tasks its search holds (transfer.py)
        self.transfer_seeds_measured = 0
        self.transfer_seed_keys = set()  # state keys of the seeds measured
        self.best_from_transfer = False  # the best schedule is a transfer seed, measured as it came
        self.rounds = 0
        self.best_cost = None
        self.best_state = None
        # The default's cost: what an untuned build runs (search.default_schedules: the first of them that
        # did not fail), None until measured; default_name: which schedule that is ("expert", "parallel 2", ...).
        self.baseline_cost = None
        self.default_name = None
        self.baseline_costs = {}   # the defaults' ("expert", "parallel 2", "plain" ...) -> cost (None: failed)
        self.expert_cost = None    # the expert schedule's (None: none, or not measured)
        self.start_costs = {}      # start state name -> its best cost (inf: every measurement of it failed)
        self.errors = Counter()    # error name -> count, over every trial
        self.error_messages = {}   # error name -> the first message of that error
        self.seconds = Counter()   # "search", "cost_model", "measure", "total"
        self.stop_reason = ""
        self.history = []          # (trials, best cost) after every batch

    def note_start_state(self, name, cost, default_order):
        """A measurement of the start state `name` (cost None: it failed). `default_order`: the names of
        search.default_schedules, in the order a build tries them; the default is the first of them that did
        not fail, and its cost is the baseline (None while it is not measured)."""
        self.start_costs[name] = min(self.start_costs.get(name, math.inf), math.inf if cost is None else cost)
        costs = {n: c for n, c in self.start_costs.items() if math.isfinite(c)}
        experts = [c for n, c in costs.items() if n.startswith(EXPERT)]
        self.expert_cost = min(experts) if experts else None
        if not name.startswith(EXPERT) or name in default_order:
            self.baseline_costs[name] = costs.get(name)
        self.baseline_cost = self.default_name = None
        for candidate in default_order:
            if candidate not in self.start_costs:
                break
            if candidate in costs:
                self.baseline_cost, self.default_name = costs[candidate], candidate
                break

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


class TaskSchedulerResult:
    """What a session of many tasks did. Latencies are seconds (weighted sums over tasks); None where unknown."""

    def __init__(self, tasks, weights):
        self.tasks = list(tasks)
        self.weights = list(weights)
        self.task_results = []     # TuneResult per task
        self.done = {}             # task index -> why it got no more rounds
        self.rounds = []           # task index of every search round, in order (warm-up included)
        self.history = []          # (trials in all, estimated total latency) after every batch
        self.time_history = []     # (seconds since the session started, estimated total latency), likewise
        self.stop_reason = ""
        self.seconds = 0.0
        self.outside_kernels_s = 0.0  # seconds per network run outside the tasks' kernels (TaskScheduler)
        # Per task, its kernels' time inside the built network per second of their tuner-timed latency, as the
        # last NetworkTiming measured it (1.0 until then); network_timings: one dict per such measurement.
        self.latency_scales = [1.0] * len(self.tasks)
        self.network_timings = []

    @property
    def trials(self):
        return sum(r.trials for r in self.task_results)

    @property
    def resumed_trials(self):
        return sum(r.resumed_trials for r in self.task_results)

    @property
    def task_trials(self):
        """Trials per task (resumed ones included)."""
        return [r.trials for r in self.task_results]

    def _weighted(self, costs):
        if any(c is None for c in costs):
            return None
        return sum(w * c * k for w, c, k in zip(self.weights, costs, self.latency_scales)) + self.outside_kernels_s

    @property
    def latency_after(self):
        """Sum of weight x best cost (x its latency scale), plus outside_kernels_s (None while a task has no
        valid schedule)."""
        return self._weighted([r.best_cost for r in self.task_results])

    @property
    def latency_before(self):
        """Sum of weight x baseline cost (x its latency scale), plus outside_kernels_s (None while a task has no
        valid baseline)."""
        return self._weighted([r.baseline_cost for r in self.task_results])

    @property
    def failed_tasks(self):
        """Indices of the tasks without a valid schedule."""
        return [i for i, r in enumerate(self.task_results) if r.best_cost is None]

    def __repr__(self):
        return (f"TaskSchedulerResult({len(self.tasks)} tasks, trials={self.trials}, latency "
                f"{format_time(self.latency_before)} -> {format_time(self.latency_after)}, "
                f"stop='{self.stop_reason}')")


def _network_timing_text(timings):
    """'3 times (9.1 s); the last at 1205 s: the built network 2.81 ms, its kernels 1.38x their tuner times,
    0.10 ms between them'."""
    last = timings[-1]
    return (f"{len(timings)} time{'s' if len(timings) > 1 else ''} ({sum(t['seconds'] for t in timings):.1f} s); "
            f"the last at {last['at_s']:.0f} s: the built network {format_time(last['run_s'])}, its kernels "
            f"{last['kernel_scale']:.2f}x their tuner times, {format_time(last['between_s'])} between them")


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


def _model_seconds_text(seconds, measured):
    """'search + cost model 0.11 s per measured trial' (the share of tuning the search itself costs)."""
    spent = seconds.get("search", 0.0) + seconds.get("cost_model", 0.0)
    return f"search + cost model {spent / max(1, measured):.3g} s per measured trial"


def peak_gflops(task, describe=False):
    """Estimated peak GFLOP/s of the task's hardware, from the core's one estimate (cpp/task/peak.h, which the
    measurement's plausibility bound also uses): CPU cores x FMA units (HardwareParams.fma_units) x 2 FLOP x SIMD
    lanes of the DAG's narrowest type x the clock the OS reports (under a hypervisor often the base clock, below
    the boost clock: pass TuningOptions(peak_gflops=...) for the real figure); a GPU's compute units x lanes x 2
    x HardwareParams.clock_mhz; HardwareParams.peak_gflops where given. None where it cannot be estimated (a GPU
    of unknown clock, where the target selects no device of this machine whose clock is known). With
    describe=True, (value, how it was estimated), or (None, why there is no estimate)."""
    flops, how = _core.estimate_peak_flops(task, "estimate")
    if flops <= 0:
        return (None, how) if describe else None
    value = flops / 1e9
    return (value, f"{value:.4g} GFLOP/s = {how}") if describe else value


def _rows_text(title, rows):
    width = max(len(k) for k, _ in rows)
    return "\n".join([title] + [f"| {k:<{width}} | {v}" for k, v in rows])
