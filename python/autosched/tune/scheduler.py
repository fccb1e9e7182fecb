"""TaskScheduler: tune many tasks (the kernels of a network) under one budget of trials and time.

    tasks, weights = ans.extract_tasks(graph, target)          # or tasks of your own, weight = use count
    scheduler = ans.TaskScheduler(tasks, weights)
    opts = ans.TuningOptions(num_measure_trials=64 * len(tasks), measure_callbacks=[ans.RecordToFile("net.json")])
    result = scheduler.tune(opts)                              # a latency table per round, a summary at the end
    print(result.latency_before, result.latency_after)         # sum of weight x latency, in seconds

The objective is the estimated latency of the network: the sum over tasks of weight x best latency (plus
`outside_kernels_s`, what the network spends outside the tasks' kernels: graph.outside_kernels_seconds). The tasks
are tuned by one session.TuningSession, the same driver `task.tune` runs with one task (resume, start states,
search rounds of one core call each, the same measurement, records, stop reasons and summary), and the
scheduler decides which task gets the next round (pick):

1. Warm-up: every task first measures its start states, its default schedule first (what an untuned build
   runs; so each has a valid schedule early), then the tasks get one search round each, largest weighted
   latency first, down to those below half of an equal share of the estimated latency (warm_up_rounds: the
   gradient gives those theirs). A task whose search space is exhausted (a tiny task) is done, not an error.
2. Then, with strategy "gradient", the task whose next round is expected to lower the objective most: its
   gradient is weight x (alpha x backward + (1 - alpha) x forward) where backward is the latency it gained per
   round over its last `backward_window` rounds, and forward an optimistic guess of the next round's gain:
   the larger of latency / rounds so far (gains shrink as a task matures) and the distance to `1 / beta` of
   the speed (FLOP/s) the fastest similar task reached (same target, same kind of ops, FLOPs within a factor
   of 2: a task slower than its peers has room left), that distance divided by 1 + the task's last rounds in a
   row that gained nothing (a peer's speed is a guess: a stride-2 depthwise convolution of MobileNet-V2, below
   half its stride-1 peer's speed and gaining little, took 31% of a 30-minute run's trials undivided). A share
   `eps_random` of the rounds goes to a random task instead, so a wrong estimate cannot starve a task for ever.
   A floor keeps the estimate from starving a task whose latency matters: a task whose search rounds are fewer
   than ``min_share`` x its share of the estimated latency (weight x latency over the sum) x the rounds given
   out so far gets the next round (the one furthest below its floor first). A task without any valid schedule
   comes first, until `failed_rounds_to_give_up` of its rounds found none: then it is given up (and diagnosed).
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

Task-level parallelism: with ``parallel_tasks=k`` and RayRunner(s), each round after the warm-up goes to the k
tasks the strategy ranks first: their searches run one after another in this process (they share cost models),
their measurements at once on the runners' actors, and their results are taken in rank order (one shared
log, the same budgets and stop reasons). A LocalRunner measures on this machine, where tasks measured at once
would disturb each other's timings, so parallel_tasks > 1 needs RayRunners.

Resume: the records of the tasks in the options' RecordToFile logs and in `load_log_file` count as trials
(the log is read once); no state of them is measured again, and the cost model starts from them. A run
killed at any moment resumes from its log.
"""
import copy
import math
import numbers
import os
import random
import time
from typing import Any, Literal, Mapping, Optional, Sequence, Union

from .. import _core
from ..core.keywords import TimeBudget, checked_keywords, time_budget_seconds
from ..search.cost_model import CostModel
from ..measure.local import LocalRunner
from ..search.policy import SearchParams, SketchPolicy, make_cost_model
from .network import NetworkTimingPhase
from .options import TuningOptions
from .results import TaskSchedulerResult, TuneResult
from .session import TuningSession
from .share import round_search_params
from .views import ManyTasks, TaskAlone

__all__ = ["TaskScheduler", "TaskSchedulerResult", "tune", "set_dispatch_seconds"]

STRATEGIES = ("gradient", "round-robin")

Strategy = Literal["gradient", "round-robin"]
# A cost model by name (search.make_cost_model) or one of its own.
CostModelSpec = Union[Literal["auto", "scratch", "pretrained", "xgb", "random"], CostModel, None]
PathText = Union[str, "os.PathLike[str]"]

# What outside_kernels_s="measure" multiplies by the weights: the graph runtime's seconds per kernel call of a
# target (graph.dispatch_seconds), installed by autosched.graph when it is imported: the tuning layer sits
# below the graph runtime and never imports it.
_dispatch_seconds = None


def set_dispatch_seconds(measure):
    """Installs measure(target) -> seconds per kernel call of the graph runtime (graph/__init__.py does)."""
    global _dispatch_seconds
    _dispatch_seconds = measure


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


def _rounds_without_gain(history):
    """How many of the last rounds in `history` ((trials, best cost) per round) did not lower the best cost."""
    costs = [c for _, c in history if c is not None]
    stale = 0
    while stale + 1 < len(costs) and costs[-2 - stale] <= costs[-1]:
        stale += 1
    return stale


class TaskScheduler:
    """Tunes several tasks under one budget (see the module docstring).

    tasks: SearchTasks (distinct workload key and target). task_weights: how often each task runs in the
    network (None: 1 each). strategy: "gradient" or "round-robin". load_log_file: a record log to resume
    from besides the options' RecordToFile logs. cost_model: "auto" (the pretrained model on llvm targets and
    on OpenCL GPUs with warps), "scratch", "pretrained", "random" or a CostModel (search.make_cost_model).
    The knobs of the gradient strategy (alpha, beta, backward_window, eps_random, failed_rounds_to_give_up,
    seed, min_share: the floor of rounds by share of latency, 0 for none) are keywords. outside_kernels_s:
    seconds per network run spent outside the tasks' kernels, added to the estimated total (None: 0;
    "measure": the weights' sum of kernel calls x graph.dispatch_seconds of the tasks' target, measured once;
    graph.outside_kernels_seconds(graph, target) for a network). parallel_tasks: tasks whose rounds are measured at once (RayRunners only).
    """

    @checked_keywords("TaskScheduler")
    def __init__(self, tasks: Sequence[_core.SearchTask], task_weights: Optional[Sequence[float]] = None,
                 strategy: Strategy = "gradient", load_log_file: Optional[PathText] = None,
                 cost_model: CostModelSpec = "auto", *, alpha: float = 0.2, beta: float = 2.0,
                 backward_window: int = 3, eps_random: float = 0.05, failed_rounds_to_give_up: int = 3,
                 seed: int = 0, parallel_tasks: int = 1, min_share: float = 0.5,
                 outside_kernels_s: Union[float, Literal["measure"], None] = None,
                 network_timing: Any = None) -> None:
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
        self.min_share = float(min_share)
        if not 0 <= self.alpha <= 1 or not 0 <= self.eps_random <= 1 or not 0 <= self.min_share <= 1:
            raise ValueError("TaskScheduler: alpha, eps_random and min_share must lie in [0, 1]")
        if self.backward_window < 1 or self.failed_rounds_to_give_up < 1:
            raise ValueError("TaskScheduler: backward_window and failed_rounds_to_give_up must be >= 1")
        self.seed = seed
        if isinstance(parallel_tasks, bool) or not isinstance(parallel_tasks, int) or parallel_tasks < 1:
            raise ValueError(f"TaskScheduler: parallel_tasks must be an int >= 1, got {parallel_tasks!r}")
        self.parallel_tasks = parallel_tasks
        if not (outside_kernels_s is None or outside_kernels_s == "measure" or (
                isinstance(outside_kernels_s, numbers.Real) and not isinstance(outside_kernels_s, bool)
                and 0 <= outside_kernels_s < math.inf)):
            raise ValueError("TaskScheduler: outside_kernels_s must be None, 'measure' or seconds >= 0, got "
                             f"{outside_kernels_s!r}")
        self.outside_kernels_s = outside_kernels_s
        if network_timing is not None and not (callable(getattr(network_timing, "measure", None))
                                               and callable(getattr(network_timing, "due", None))):
            raise TypeError("TaskScheduler: network_timing must be a graph.NetworkTiming (measure and due), got "
                            f"{type(network_timing).__name__}")
        self.network_timing = network_timing
        self.signatures = [_similarity_signature(t) for t in self.tasks]
        self.result: Optional[TaskSchedulerResult] = None

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
            models = {t: make_cost_model(self.cost_model, default="auto", target=t) for t in targets}
        for target, model in models.items():
            model.check_target(target)
        return models

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
                p.cost_model.check_target(t.target)
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
        chosen = [runners.get(i, shared) for i in range(len(self.tasks))]
        if self.parallel_tasks > 1 and any(r.measures_here for r in chosen):
            raise ValueError("TaskScheduler: parallel_tasks > 1 needs RayRunner(s): a LocalRunner measures on "
                             "this machine, where tasks measured at once would disturb each other's timings")
        return chosen

    @checked_keywords("TaskScheduler.tune")
    def tune(self, options: TuningOptions, search_policy: Union[Sequence[SketchPolicy], Literal["default"], None] = None,
             search_policy_params: Union[SearchParams, Mapping[str, Any], None] = None,
             runners: Optional[Mapping[int, LocalRunner]] = None, start: Optional[float] = None, *,
             time_budget: TimeBudget = None, time_budget_s: TimeBudget = None) -> TaskSchedulerResult:
        """Tunes the tasks; returns a TaskSchedulerResult (also kept as self.result).

        options: TuningOptions (num_measure_trials is the total over all tasks). time_budget:
        this call's time budget in seconds or as a text such as "10m" (time_budget_s: its alias), in place of
        the options' (see TuningOptions). search_policy: None (a
        SketchPolicy per task, sharing the cost model) or a list of SketchPolicy, one per task.
        search_policy_params: SearchParams (or a dict of its fields) for the default policies. runners:
        {task index: LocalRunner} for tasks measured otherwise than with options.runner (e.g. a longer timeout
        for one large task). start: the time.monotonic() value options.time_budget_s counts from (None: this
        call; the command line passes its process's start, budget.process_start).
        """
        start = time.monotonic() if start is None else start
        options = _with_time_budget("TaskScheduler.tune", options, time_budget, time_budget_s)
        session = self.session(options, self._policies(options, search_policy, search_policy_params),
                               self._runners(options, runners), start=start)
        self.result = session.result
        return session.run()

    def session(self, options, policies, runners, start=None, view=None, give_up_after="default"):
        """The TuningSession of these tasks, whose rounds this scheduler gives out (pick); its time budget counts
        from `start` (None: now). view: how the session speaks (views.py; None: ManyTasks, a table per round).
        give_up_after: rounds without a valid schedule before a task is given up (the default:
        failed_rounds_to_give_up; None: never, early stopping ends it)."""
        self._rng = random.Random(self.seed)
        self._next_robin = 0
        timing = None if self.network_timing is None else NetworkTimingPhase(self.network_timing, self.tasks,
                                                                           self.task_weights)
        session = TuningSession(self.tasks, options, policies, runners, self, view or ManyTasks(),
                                self.failed_rounds_to_give_up if give_up_after == "default" else give_up_after,
                                network_timing=timing, start=start)
        session.result.outside_kernels_s = self.outside_seconds()
        return session

    def outside_seconds(self):
        """outside_kernels_s in seconds ("measure": one kernel call per weight unit, each with the graph
        runtime's dispatch time of the first task's target, set_dispatch_seconds)."""
        if self.outside_kernels_s != "measure":
            return float(self.outside_kernels_s or 0.0)
        if _dispatch_seconds is None:
            raise ValueError("TaskScheduler: outside_kernels_s='measure' needs the graph runtime: import "
                             "autosched.graph, or pass seconds (graph.outside_kernels_seconds(graph, target))")
        return sum(self.task_weights) * _dispatch_seconds(self.tasks[0].target)

    # ---- allocation ----
    def warm_up_rounds(self, session):
        """The tasks that get a search round in the warm-up, in order. Round-robin: every task, in turn.
        Gradient: the tasks by weighted latency (weight x latency after their start states), largest first,
        down to those with less than half of an equal share (1 / 2n) of the estimated latency: the gradient
        gives those their rounds when they are worth one (their optimistic forward estimate is their whole
        weighted latency), so that a short budget over many tasks (DenseNet-121's 135) is not spent on one
        round of every small task before the large ones get a second."""
        n = session.n
        if self.strategy == "round-robin" or n == 1:
            return list(range(n))
        scales = session.result.latency_scales
        weighted = {i: self.task_weights[i] * scales[i] * tt.result.best_cost
                    for i, tt in enumerate(session.tuners) if tt.result.best_cost is not None}
        total = sum(weighted.values())
        without = [i for i in range(n) if i not in weighted]  # no valid schedule yet: first, as in pick
        ranked = sorted(weighted, key=lambda i: -weighted[i])
        return without + [i for i in ranked if total <= 0 or weighted[i] >= total / (2 * n)]

    def pick(self, session, exclude=()):
        """The task of the session's next round, by the strategy, among the active tasks not in `exclude`
        (None: there is none)."""
        active, n = [i for i in session.active() if i not in exclude], session.n
        if not active:
            return None
        if self.strategy == "round-robin":
            order = [(self._next_robin + k) % n for k in range(n)]
            i = next(j for j in order if j in active)
            self._next_robin = (i + 1) % n
            return i
        if len(active) > 1 and self._rng.random() < self.eps_random:
            return self._rng.choice(active)
        starving = self.below_floor(session, active)
        if starving is not None:
            return starving
        gradients = {i: self.gradient(session, i) for i in active}
        return max(active, key=lambda i: (gradients[i], -session.tuners[i].result.trials))

    def below_floor(self, session, active):
        """The active task furthest below its floor of search rounds (min_share x its share of the estimated
        latency x the rounds given out so far), None when none is a round or more below it."""
        scales = session.result.latency_scales
        weighted = {i: self.task_weights[i] * scales[i] * tt.result.best_cost for i, tt in enumerate(session.tuners)
                    if tt.result.best_cost is not None}
        total, given = sum(weighted.values()), len(session.result.rounds)
        if not self.min_share or total <= 0:
            return None
        missing = {}
        for i in active:
            if i in weighted:
                floor = self.min_share * weighted[i] / total * given
                missing[i] = floor - session.tuners[i].result.rounds
        i = max(missing, key=lambda j: missing[j], default=None)
        return i if i is not None and missing[i] >= 1 else None

    def gradient(self, session, i):
        """Expected decrease of the weighted total latency from one more round of task i (seconds)."""
        r = session.tuners[i].result
        if r.best_cost is None:
            return math.inf  # a task without a valid schedule first, until it is given up
        cost = r.best_cost
        past = [c for _, c in r.history[-1 - self.backward_window:] if c is not None]
        rounds_seen = max(1, len(past) - 1)
        backward = (past[0] - cost) / rounds_seen if past else 0.0
        rounds = max(1.0, r.trials / session.options.num_measures_per_round)
        forward = cost / (rounds + 1)
        peer = self.best_similar_speed(session, i)
        flop = session.tuners[i].task.compute_dag.flop_ct
        if peer and flop > 0:
            # The peer's speed is a guess of what the task could reach (a stride-2 convolution never reaches
            # its stride-1 peer); each round that gains nothing makes it less believable, so a task stalled
            # below its peers stops taking round after round.
            forward = max(forward, (cost - self.beta * flop / peer) / (1 + _rounds_without_gain(r.history)))
        scale = session.result.latency_scales[i]  # its time in the network per tuner-timed second
        return self.task_weights[i] * scale * (self.alpha * backward + (1 - self.alpha) * forward)

    def best_similar_speed(self, session, i):
        """The highest FLOP/s reached by another task like task i (see _similarity_signature), FLOPs within a
        factor of 2; None when there is none."""
        flop_i = session.tuners[i].task.compute_dag.flop_ct
        best = None
        for j, tt in enumerate(session.tuners):
            flop_j, cost = tt.task.compute_dag.flop_ct, tt.result.best_cost
            if j == i or cost is None or flop_j <= 0 or flop_i <= 0:
                continue
            if self.signatures[j] != self.signatures[i] or max(flop_i, flop_j) > 2 * min(flop_i, flop_j):
                continue
            best = max(best or 0.0, flop_j / cost)
        return best


def _with_time_budget(owner: str, options: TuningOptions, time_budget: TimeBudget,
                      time_budget_s: TimeBudget) -> TuningOptions:
    """The options of a tuning call, checked, with the time budget the call gives in place of theirs (on a copy:
    the caller's options are left as they are)."""
    if not isinstance(options, TuningOptions):
        raise TypeError(f"{owner} needs TuningOptions, got {type(options).__name__}")
    seconds = time_budget_seconds(owner, time_budget, time_budget_s)
    if seconds is not None:
        options = copy.copy(options)
        options.time_budget_s = seconds
    return options


def tune(task: _core.SearchTask, options: TuningOptions, search_policy: Optional[SketchPolicy] = None,
         cost_model: CostModelSpec = None, *, time_budget: TimeBudget = None,
         time_budget_s: TimeBudget = None) -> TuneResult:
    """Tunes `task` in a session of its own, a scheduler of one task with the view of a task alone (its bar,
    its summary; never given up: early stopping ends it); returns a TuneResult. cost_model: a CostModel, "xgb",
    "random" or None (XGBModel when autosched was built with XGBoost, else RandomModel); it is given to the
    default SketchPolicy, so it cannot be combined with search_policy. "auto" (None) starts from the pretrained
    model shipped in the package on llvm targets and OpenCL GPUs with warps; "scratch" learns from the session alone. The time budget
    counts from this call (budget.py); time_budget (or its alias time_budget_s) replaces the options' for this
    call."""
    start = time.monotonic()
    options = _with_time_budget("tune", options, time_budget, time_budget_s)
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
    scheduler = TaskScheduler([task])
    session = scheduler.session(options, [search_policy], scheduler._runners(options, None), start=start,
                                view=TaskAlone(), give_up_after=None)
    return session.run().task_results[0]
