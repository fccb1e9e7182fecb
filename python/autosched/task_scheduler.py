"""TaskScheduler: tune many tasks (the kernels of a network) under one budget of trials and time.

    tasks, weights = ans.extract_tasks(graph, target)          # or tasks of your own, weight = use count
    scheduler = ans.TaskScheduler(tasks, weights)
    opts = ans.TuningOptions(num_measure_trials=64 * len(tasks), measure_callbacks=[ans.RecordToFile("net.json")])
    result = scheduler.tune(opts)                              # a latency table per round, a summary at the end
    print(result.latency_before, result.latency_after)         # sum of weight x latency, in seconds

The objective is the estimated latency of the network: the sum over tasks of weight x best latency. Each task
is tuned a round at a time by its own tuner.TaskTuner (resume, baseline, search rounds, the same measurement
and records as `task.tune`), and the scheduler decides which task gets the next round:

1. Warm-up: every task first measures its baseline schedules (so each has a valid schedule early), then every
   task gets one search round. A task whose search space is exhausted (a tiny task) is done, not an error.
2. Then, with strategy "gradient", the task whose next round is expected to lower the objective most: its
   gradient is weight x (alpha x backward + (1 - alpha) x forward) where backward is the latency it gained per
   round over its last `backward_window` rounds, and forward an optimistic guess of the next round's gain:
   the larger of latency / rounds so far (gains shrink as a task matures) and the distance to `1 / beta` of
   the speed (FLOP/s) the fastest similar task reached (same target, same kind of ops, FLOPs within a factor
   of 2: a task slower than its peers has room left). A share `eps_random` of the rounds goes to a random
   task instead, so a wrong estimate cannot starve a task for ever. A task without any valid schedule comes
   first, until `failed_rounds_to_give_up` of its rounds found none: then it is given up (and diagnosed).
   Strategy "round-robin" gives the rounds in turn, for comparison.
3. A task that is done (search space exhausted, early-stopped by `early_stopping`, which counts per task, or
   given up) gets no more rounds. The run stops at num_measure_trials in all, at time_budget_s (wall clock
   of the whole run) or when every task is done; the reason is printed.

Cost model: one shared by all tasks of a target (one per target; records of one target never train the model
of another). Tasks of a network are alike (convolutions of several shapes, dense layers), so what the model
learns from one transfers to the others; a shared model leaves its warm-up after a few rounds in all instead
of a few rounds per task, and its labels are normalised per task (the best cost of each task), so tasks of
very different sizes do not drown each other. `cost_model` is "auto", "xgb", "random" or a CostModel (shared by
every task; its tasks must then all have the same target).

Resume: the records of the tasks in the options' RecordToFile logs and in `load_log_file` count as trials
(the log is read once); no state of them is measured again, and the cost model starts from them. A run
killed at any moment resumes from its log.
"""
import math
import numbers
import os
import random
import time

from . import _core
from .measure import LocalBuilder, LocalRunner
from .progress import Progress
from .search import SearchParams, SketchPolicy, make_cost_model
from .tuner import (TaskTuner, TuningOptions, _failed_text, _transfer_text, format_time, load_logs,
                    round_search_params)

__all__ = ["TaskScheduler", "TaskSchedulerResult"]

STRATEGIES = ("gradient", "round-robin")


class TaskSchedulerResult:
    """What a TaskScheduler run did. Latencies are seconds (weighted sums over tasks); None where unknown."""

    def __init__(self, tasks, weights):
        self.tasks = list(tasks)
        self.weights = list(weights)
        self.task_results = []     # tuner.TuneResult per task
        self.done = {}             # task index -> why it got no more rounds
        self.rounds = []           # task index of every search round, in order (warm-up included)
        self.history = []          # (trials in all, estimated total latency) after every batch
        self.stop_reason = ""
        self.seconds = 0.0

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
        return sum(w * c for w, c in zip(self.weights, costs))

    @property
    def latency_after(self):
        """Sum of weight x best cost (None while a task has no valid schedule)."""
        return self._weighted([r.best_cost for r in self.task_results])

    @property
    def latency_before(self):
        """Sum of weight x baseline cost (None while a task has no valid baseline)."""
        return self._weighted([r.baseline_cost for r in self.task_results])

    @property
    def failed_tasks(self):
        """Indices of the tasks without a valid schedule."""
        return [i for i, r in enumerate(self.task_results) if r.best_cost is None]

    def __repr__(self):
        return (f"TaskSchedulerResult({len(self.tasks)} tasks, trials={self.trials}, latency "
                f"{format_time(self.latency_before)} -> {format_time(self.latency_after)}, "
                f"stop='{self.stop_reason}')")


def _positive_number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0 or not math.isfinite(value):
        raise ValueError(f"TaskScheduler: {name} must be a positive number, got {value!r}")
    return float(value)


def _similarity_signature(task):
    """Tasks alike enough to compare speeds: same target, same compute ops (kind, spatial and reduce axes,
    dtype)."""
    ops = tuple((str(op.op_kind), len(op.axis), len(op.reduce_axis), str(op.dtype))
                for op in task.compute_dag.ops if str(op.op_kind) != "placeholder")
    return task.target.text, ops


class TaskScheduler:
    """Tunes several tasks under one budget (see the module docstring).

    tasks: SearchTasks (distinct workload key and target). task_weights: how often each task runs in the
    network (None: 1 each). strategy: "gradient" or "round-robin". load_log_file: a record log to resume
    from besides the options' RecordToFile logs. cost_model: "auto", "xgb", "random" or a CostModel.
    The knobs of the gradient strategy (alpha, beta, backward_window, eps_random, failed_rounds_to_give_up,
    seed) are keywords.
    """

    def __init__(self, tasks, task_weights=None, strategy="gradient", load_log_file=None, cost_model="auto", *,
                 alpha=0.2, beta=2.0, backward_window=3, eps_random=0.05, failed_rounds_to_give_up=3, seed=0):
        self.tasks = self._check_tasks(tasks)
        if task_weights is None:
            task_weights = [1] * len(self.tasks)
        task_weights = list(task_weights)
        if len(task_weights) != len(self.tasks):
            raise ValueError(f"TaskScheduler: {len(self.tasks)} tasks but {len(task_weights)} weights")
        self.task_weights = [_positive_number(f"task_weights[{i}]", w) for i, w in enumerate(task_weights)]
        if strategy not in STRATEGIES:
            raise ValueError(f"TaskScheduler: strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
        self.strategy = strategy
        if load_log_file is not None:
            load_log_file = os.fspath(load_log_file)
            if not os.path.exists(load_log_file):
                raise ValueError(f"TaskScheduler: load_log_file '{load_log_file}' does not exist")
            if not os.path.isfile(load_log_file):
                raise ValueError(f"TaskScheduler: load_log_file '{load_log_file}' is not a regular file")
        self.load_log_file = load_log_file
        self.cost_model = cost_model
        self.alpha = float(alpha)
        self.beta = _positive_number("beta", beta)
        self.backward_window = int(backward_window)
        self.eps_random = float(eps_random)
        self.failed_rounds_to_give_up = int(failed_rounds_to_give_up)
        if not 0 <= self.alpha <= 1 or not 0 <= self.eps_random <= 1:
            raise ValueError("TaskScheduler: alpha and eps_random must lie in [0, 1]")
        if self.backward_window < 1 or self.failed_rounds_to_give_up < 1:
            raise ValueError("TaskScheduler: backward_window and failed_rounds_to_give_up must be >= 1")
        self.seed = seed
        self.signatures = [_similarity_signature(t) for t in self.tasks]
        self.result = None

    @staticmethod
    def _check_tasks(tasks):
        if isinstance(tasks, _core.SearchTask):
            raise TypeError("TaskScheduler needs a list of SearchTasks, got one SearchTask: pass [task]")
        tasks = list(tasks)
        if not tasks:
            raise ValueError("TaskScheduler: no tasks to tune")
        seen = {}
        for i, task in enumerate(tasks):
            if not isinstance(task, _core.SearchTask):
                raise TypeError(f"TaskScheduler: tasks[{i}] is a {type(task).__name__}, not a SearchTask")
            key = (task.workload_key, task.target.text)
            if key in seen:
                raise ValueError(f"TaskScheduler: tasks {seen[key]} and {i} are the same task (workload key "
                                 f"{task.workload_key}, target '{task.target.text}'): give it once, with the "
                                 "sum of their weights")
            seen[key] = i
        return tasks

    # ---- setting up ----
    def _models(self):
        """One cost model per target (a given CostModel is the one model of the one target)."""
        targets = list(dict.fromkeys(t.target.text for t in self.tasks))
        if not isinstance(self.cost_model, (str, type(None))):
            model = make_cost_model(self.cost_model)
            if len(targets) > 1:
                raise ValueError(f"TaskScheduler: one CostModel cannot serve tasks of {len(targets)} targets "
                                 f"({', '.join(targets)}); pass 'auto', 'xgb' or 'random' for one model per target")
            models = {targets[0]: model}
        else:
            models = {t: make_cost_model(self.cost_model, default="auto") for t in targets}
        for target, model in models.items():
            self._check_model_target(model, target)
        return models

    @staticmethod
    def _check_model_target(model, target):
        foreign = set(getattr(model, "targets", ())) - {target}
        if foreign:
            raise ValueError(f"the cost model holds records of target '{sorted(foreign)[0]}', not of the "
                             f"tasks' target '{target}': timings of another target would mislead the search")

    def _policies(self, options, search_policy, search_policy_params):
        if search_policy is not None and search_policy != "default":
            policies = list(search_policy)
            if len(policies) != len(self.tasks):
                raise ValueError(f"TaskScheduler: {len(policies)} search policies for {len(self.tasks)} tasks")
            for i, (p, t) in enumerate(zip(policies, self.tasks)):
                if not isinstance(p, SketchPolicy):
                    raise TypeError(f"search_policy[{i}] must be a SketchPolicy, got {type(p).__name__}")
                if p.task.workload_key != t.workload_key:
                    raise ValueError(f"search_policy[{i}] was made for another task than tasks[{i}]")
                self._check_model_target(p.cost_model, t.target.text)
            return policies
        if isinstance(search_policy_params, dict):
            search_policy_params = SearchParams(**search_policy_params)
        # explicit params are used as given; the default ones size the search to the round
        params = search_policy_params or round_search_params(options.num_measures_per_round)
        models = self._models()
        return [SketchPolicy(t, models[t.target.text], params, seed=self.seed + i) for i, t in enumerate(self.tasks)]

    def _runners(self, options, runners):
        runners = dict(runners or {})
        for i, runner in runners.items():
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.tasks):
                raise ValueError(f"runners: key {i!r} is not a task index (0 to {len(self.tasks) - 1})")
            if not isinstance(runner, LocalRunner):
                raise TypeError(f"runners[{i}] must be a LocalRunner, got {type(runner).__name__}")
        shared = options.runner or LocalRunner()
        return [runners.get(i, shared) for i in range(len(self.tasks))]

    def tune(self, options, search_policy=None, search_policy_params=None, runners=None):
        """Tunes the tasks; returns a TaskSchedulerResult (also kept as self.result).

        options: TuningOptions (num_measure_trials is the total over all tasks). search_policy: None (a
        SketchPolicy per task, sharing the cost model) or a list of SketchPolicy, one per task.
        search_policy_params: SearchParams (or a dict of its fields) for the default policies. runners:
        {task index: LocalRunner} for tasks measured otherwise than with options.runner (e.g. a longer timeout
        for one large task).
        """
        if not isinstance(options, TuningOptions):
            raise TypeError(f"TaskScheduler.tune needs TuningOptions, got {type(options).__name__}")
        run = _SchedulerRun(self, options, self._policies(options, search_policy, search_policy_params),
                            self._runners(options, runners))
        self.result = run.result
        run.run()
        return run.result


class _SchedulerRun:
    """One TaskScheduler.tune: the tuners of the tasks, the allocation, the output."""

    def __init__(self, scheduler, options, policies, runners):
        self.s = scheduler
        self.options = options
        self.start = time.monotonic()
        builder = options.builder or LocalBuilder()
        self.reporter = Progress(options.num_measure_trials, options.time_budget_s, options.verbose,
                                 desc=f"{len(scheduler.tasks)} tasks", start=self.start)
        quiet = max(0, options.verbose - 1)  # a task's own lines only at verbose >= 2
        self.tuners = [TaskTuner(t, options, p, builder=builder, runner=r, start=self.start, verbose=quiet,
                                 reporter=self.reporter) for t, p, r in zip(scheduler.tasks, policies, runners)]
        self.result = TaskSchedulerResult(scheduler.tasks, scheduler.task_weights)
        self.result.task_results = [tt.result for tt in self.tuners]
        self.rng = random.Random(scheduler.seed)
        self.failed_rounds = [0] * len(self.tuners)
        self.next_robin = 0
        self.verbose = options.verbose

    @property
    def n(self):
        return len(self.tuners)

    def total_trials(self):
        return sum(tt.result.trials for tt in self.tuners)

    def remaining(self):
        return self.options.num_measure_trials - self.total_trials()

    def active(self):
        return [i for i in range(self.n) if i not in self.result.done]

    # ---- the run ----
    def run(self):
        try:
            self.tune_all()
        finally:
            self.reporter.close()

    def tune_all(self):
        self.transfer()
        self.resume()
        reason = self.warm_up()
        while reason is None:
            reason = self.stop_reason()
            if reason is None:
                self.search_round(self.pick())
        self.result.stop_reason = reason
        self.result.seconds = time.monotonic() - self.start
        for i, tt in enumerate(self.tuners):
            tt.result.stop_reason = self.result.done.get(i, reason)
            tt.result.seconds["total"] = self.result.seconds
        self.reporter.finish_bar()
        if self.verbose:
            self.print_table("end", force=True)
            self.reporter.info(f"Stopped: {reason}")
            self.print_diagnosis()
            self.print_summary()

    def stop_reason(self):
        o = self.options
        if self.remaining() <= 0:
            return f"reached num_measure_trials ({o.num_measure_trials} in all)"
        if o.time_budget_s is not None and time.monotonic() - self.start >= o.time_budget_s:
            return f"time budget of {o.time_budget_s} s used"
        if not self.active():
            return "every task is done (search space exhausted, early stopping or given up)"
        return None

    def transfer(self):
        """Trains each shared cost model once on the transfer logs (the tasks' own records are left to
        resume)."""
        resumed = {os.path.realpath(p) for p in self.log_paths()}
        models = {}
        for tt in self.tuners:
            models.setdefault(id(tt.policy.cost_model), (tt.policy.cost_model, tt.task.target, []))[2].append(
                tt.task.workload_key)
        for path in self.options.transfer_logs:
            for model, target, keys in models.values():
                own = keys if os.path.realpath(path) in resumed else ()
                model.update_from_file(path, target=target, exclude_workload_keys=own)
                report = model.last_file_update
                for tt in self.tuners:
                    if tt.policy.cost_model is model:
                        tt.result.transferred.append(report)
                if self.verbose:
                    self.reporter.info(f"Transfer: the cost model of '{target.text}' starts from "
                                       f"{_transfer_text(report)}")

    def log_paths(self):
        paths = self.tuners[0].resume_paths()
        if self.s.load_log_file:
            paths.append(self.s.load_log_file)
        return list(dict.fromkeys(paths))

    def resume(self):
        paths = self.log_paths()
        records = load_logs(paths, stacklevel=5)
        by_task = {}
        for path, rec in records:
            by_task.setdefault((rec.task.workload_key, str(rec.task.target)), []).append((path, rec))
        for i, tt in enumerate(self.tuners):
            tt.resume(by_task.get((tt.task.workload_key, str(tt.task.target)), []))
            if tt.result.best_cost is None and tt.result.trials > tt.num_baselines:
                self.failed_rounds[i] = (tt.result.trials - tt.num_baselines) // self.options.num_measures_per_round
            self.update_done(i)
        resumed = self.result.resumed_trials
        if self.verbose and resumed:
            tasks = sum(1 for tt in self.tuners if tt.result.resumed_trials)
            keys = {(tt.task.workload_key, str(tt.task.target)) for tt in self.tuners}
            mine = [rec.result for key in keys for _, rec in by_task.get(key, [])]
            self.reporter.info(f"Resumed {resumed} trials of {tasks} tasks from {', '.join(paths)}"
                               f"{_failed_text(mine)}")

    def warm_up(self):
        """Baselines of every task, then one round each (tasks resumed past their baselines have had it).
        Returns a stop reason when the budget ends it."""
        measured = 0
        for i, tt in enumerate(self.tuners):
            reason = self.stop_reason()
            if reason is not None:
                return reason
            # Leave at least one trial to each task after this one, so that a small budget does not go
            # to the start states (baselines, expert seed) of the first tasks alone.
            measured += tt.baseline(limit=max(1, self.remaining() - (len(self.tuners) - i - 1)))
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
        n = min(self.options.num_measures_per_round, self.remaining())
        before = tt.result.trials
        found = tt.search_round(n)
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
        """Marks task i done when it stopped early or gave up."""
        if i in self.result.done:
            return
        tt, limit = self.tuners[i], self.s.failed_rounds_to_give_up
        if tt.result.best_cost is None and self.failed_rounds[i] >= limit:
            self.result.done[i] = f"given up: {limit} search rounds found no valid schedule"
        elif tt.result.best_cost is not None and tt.early_stopped():
            self.result.done[i] = (f"early stopping: no better schedule in the last {self.options.early_stopping}"
                                   " trials")

    def note_batch(self):
        latency, missing = self.estimated_latency()
        self.result.history.append((self.total_trials(), latency))
        best = [tt.result.best_cost for tt in self.tuners if tt.result.best_cost is not None]
        self.reporter.update(self.total_trials(), min(best) if len(self.tuners) == 1 and best else None,
                             latency if best and not missing else None,
                             note=f"{len(best)}/{len(self.tuners)} tasks with a schedule")

    # ---- allocation ----
    def pick(self):
        active = self.active()
        if self.s.strategy == "round-robin":
            order = [(self.next_robin + k) % self.n for k in range(self.n)]
            i = next(j for j in order if j in active)
            self.next_robin = (i + 1) % self.n
            return i
        if len(active) > 1 and self.rng.random() < self.s.eps_random:
            return self.rng.choice(active)
        gradients = {i: self.gradient(i) for i in active}
        return max(active, key=lambda i: (gradients[i], -self.tuners[i].result.trials))

    def gradient(self, i):
        """Expected decrease of the weighted total latency from one more round of task i (seconds)."""
        r = self.tuners[i].result
        if r.best_cost is None:
            return math.inf  # a task without a valid schedule first, until it is given up
        cost = r.best_cost
        past = [c for _, c in r.history[-1 - self.s.backward_window:] if c is not None]
        rounds_seen = max(1, len(past) - 1)
        backward = (past[0] - cost) / rounds_seen if past else 0.0
        rounds = max(1.0, r.trials / self.options.num_measures_per_round)
        forward = cost / (rounds + 1)
        peer = self.best_similar_speed(i)
        flop = self.tuners[i].task.compute_dag.flop_ct
        if peer and flop > 0:
            forward = max(forward, cost - self.s.beta * flop / peer)
        return self.s.task_weights[i] * (self.s.alpha * backward + (1 - self.s.alpha) * forward)

    def best_similar_speed(self, i):
        """The highest FLOP/s reached by another task like task i (see _similarity_signature), FLOPs within a
        factor of 2; None when there is none."""
        flop_i = self.tuners[i].task.compute_dag.flop_ct
        best = None
        for j, tt in enumerate(self.tuners):
            flop_j, cost = tt.task.compute_dag.flop_ct, tt.result.best_cost
            if j == i or cost is None or flop_j <= 0 or flop_i <= 0:
                continue
            if self.s.signatures[j] != self.s.signatures[i] or max(flop_i, flop_j) > 2 * min(flop_i, flop_j):
                continue
            best = max(best or 0.0, flop_j / cost)
        return best

    # ---- output ----
    def estimated_latency(self):
        """(sum of weight x best cost over the tasks with a valid schedule, tasks without one)."""
        total, missing = 0.0, 0
        for w, tt in zip(self.s.task_weights, self.tuners):
            if tt.result.best_cost is None:
                missing += 1
            else:
                total += w * tt.result.best_cost
        return total, missing

    def print_table(self, label, force=False):
        """The task table, printed when it changed materially (see progress.Progress.table) or forced."""
        if not self.verbose:
            return
        width = max(4, min(40, max(len(t.desc or t.workload_key) for t in self.s.tasks)))
        lines = [f"|  ID | {'Task':<{width}} | Latency (ms) | Speed (GFLOP/s) | Weight | Trials | Done"]
        for i, tt in enumerate(self.tuners):
            desc = (tt.task.desc or tt.task.workload_key)[:width]
            cost, flop = tt.result.best_cost, tt.task.compute_dag.flop_ct
            latency = f"{cost * 1e3:.4g}" if cost is not None else "-"
            speed = f"{flop / cost / 1e9:.4g}" if cost and flop > 0 else "-"
            done = self.result.done.get(i, "").split(":")[0]
            lines.append(f"| {i:>3} | {desc:<{width}} | {latency:>12} | {speed:>15} | "
                         f"{self.s.task_weights[i]:>6.4g} | {tt.result.trials:>6} | {done}")
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
            r, task = self.tuners[i].result, self.s.tasks[i]
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

    def print_summary(self):
        res = self.result
        valid = [i for i, r in enumerate(res.task_results) if r.best_cost is not None]
        after = sum(res.weights[i] * res.task_results[i].best_cost for i in valid) if valid else None
        based = [i for i in valid if res.task_results[i].baseline_cost is not None]
        before = (sum(res.weights[i] * res.task_results[i].baseline_cost for i in based)
                  if based and len(based) == len(valid) else None)
        speedup = f" (x{before / after:.3g})" if before and after else ""
        if before and after and after >= before:
            speedup += "; the budget found nothing faster than the baselines"
        if len(valid) < len(res.tasks):
            missing = len(res.tasks) - len(valid)
            speedup += f"; {missing} task{'s' if missing > 1 else ''} without a valid schedule not counted"
        measured = res.trials - res.resumed_trials
        done = ", ".join(f"{i}: {why.split(':')[0]}" for i, why in sorted(res.done.items())) or "none"
        seconds = {}
        for tt in self.tuners:
            for k, v in tt.result.seconds.items():
                if k != "total":
                    seconds[k] = seconds.get(k, 0.0) + v
        shares = ", ".join(f"{k.replace('_', ' ')} {v:.1f}s" for k, v in seconds.items())
        rows = [("tasks", f"{len(res.tasks)} ({len(res.failed_tasks)} without a valid schedule; done: {done})"),
                ("trials", f"{res.trials} ({res.resumed_trials} resumed, {measured} measured in "
                           f"{sum(r.rounds for r in res.task_results)} rounds); per task {res.task_trials}"),
                ("latency", f"estimated total (sum of weight x latency): before (baselines) "
                            f"{format_time(before)}, after {format_time(after)}{speedup}"),
                ("time", f"{res.seconds:.1f}s = {shares}"), ("stopped", res.stop_reason)]
        width = max(len(k) for k, _ in rows)
        self.reporter.info("\n".join(["Task scheduler summary"] + [f"| {k:<{width}} | {v}" for k, v in rows]))
