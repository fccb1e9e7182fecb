"""The search policy from Python: sketches of a task, random states sampled from them, and rounds of the
evolutionary search guided by a cost model.

    from autosched import search
    sketches = search.generate_sketches(task)                  # [State], split lengths unknown
    states, drops = search.sample_init_population(task, 64, seed=1)
    mod = ans.build(task, states[0])

    policy = search.SketchPolicy(task, "xgb")                  # or a CostModel, "random", None (random)
    batch = policy.continue_search_one_round(64)               # [State] never measured before
    policy.record_measured(batch, ans.measure(task, batch))    # dedup + cost model update

`drops` counts the attempts that were not kept, per reason: the name of the init rule that failed,
"infer_bound", "lower", or "duplicate". Knobs are the fields of `SearchParams` (see docs/search.md):

    params = search.SearchParams(max_vectorize_size=8)

Your own sketch rules go before the built-in ones (see SketchRule and docs/search.md):

    policy = search.SketchPolicy(task, "xgb", sketch_rules=[MyRule()])
    policy.add_sketch_rule(condition, apply, name="my-rule")
"""
import enum
import numbers
import warnings
from typing import Any, Optional, Sequence
import weakref

from .. import _core
from . import cost_model as cm
from ..core.checks import check_type
from .._core import SearchParams
from .pretrained import PretrainedModelWarning
from ..core.state import State

__all__ = ["SearchParams", "SketchPolicy", "SketchRule", "SketchRuleCondition", "SketchRuleError",
           "generate_sketches", "sample_init_population", "mutate", "baseline_states", "default_schedules",
           "expert_schedule", "expert_schedule_info", "expert_alternatives", "make_cost_model",
           "tuning_start_states", "EXPERT"]

# The name of the expert schedule among the default schedules (default_schedules) and tuning's start states.
EXPERT = "expert"


def _pretrained_kind(target):
    """The kind of shipped model "auto" starts from on `target`, or None to learn from scratch. Code run in this
    process (llvm): the CPU model. OpenCL on a GPU with warps: the GPU model, which started four kernels of shapes
    outside its corpus faster than a model learning from scratch on an H100 (docs/notes/cost_model_figures.md)."""
    if target is None:
        return None
    t = _core.Target(getattr(target, "text", target))
    if t.runs_in_host_process:
        return "llvm"
    if t.kind == "opencl" and t.hardware_params.warp_size > 1:
        return "opencl"
    return None


def _shipped_model(kind):
    """XGBModel starting from the model shipped for targets of `kind` ("llvm": the CPU model)."""
    return cm.XGBModel(pretrained=True) if kind == "llvm" else cm.XGBModel.shipped(kind)


def make_cost_model(spec=None, default="random", target=None):
    """A cost model from a spec: a CostModel (returned as is), "scratch" (XGBModel learning from the session's
    measurements alone; "xgb" is the same), "pretrained" (XGBModel starting from the model shipped in the
    package for the target's kind, autosched.pretrained: llvm targets', or, given an OpenCL `target`, the GPU model
    trained on an H100's records), "random" (RandomModel), or None (the `default` spec). "auto" (`target`: a
    Target or its text) is "pretrained" for llvm targets and for OpenCL targets of a GPU that runs work items in
    warps (hardware_params.warp_size above 1: the kind of device the GPU model learned on), "scratch" for the
    others (PoCL on a CPU, Mali, an unnamed device), and RandomModel when autosched was built without XGBoost;
    where the shipped model cannot be used (missing, trained on other features) it falls back to "scratch" with
    a PretrainedModelWarning."""
    if spec is None:
        spec = default
    if isinstance(spec, cm.CostModel):
        return spec
    if spec == "auto":
        if not _core.has_xgboost():
            return cm.RandomModel()
        kind = _pretrained_kind(target)
        if kind is None:
            return cm.XGBModel()
        try:
            return _shipped_model(kind)
        except ValueError as err:
            warnings.warn(f"the tuner's cost model learns from scratch: {err}", PretrainedModelWarning,
                          stacklevel=3)
            return cm.XGBModel()
    if spec in ("xgb", "scratch"):
        return cm.XGBModel()
    if spec == "pretrained":
        return _shipped_model("llvm" if target is None else _core.Target(getattr(target, "text", target)).kind)
    if spec == "random":
        return cm.RandomModel()
    raise ValueError("cost model must be a CostModel, 'auto', 'pretrained', 'scratch' (or 'xgb') or 'random', "
                     f"got {spec!r}")


class SketchPolicy(_core.SketchPolicy):
    """Sketch generation, sampling and the evolutionary search for one task (CPU targets): the core's
    SketchPolicy, with the Python forms of its arguments and your own sketch rules.

    program_cost_model: a CostModel, "xgb", "random" or None (RandomModel). params: SearchParams (also
    accepted in place of the cost model, for the older form SketchPolicy(task, params)). seed: the search is
    reproducible for a seed and a sequence of measured results. sketch_rules: your own rules (SketchRule
    objects, or any object with `condition` and `apply` methods), asked before the built-in ones, in order.
    """

    def __init__(self, task: Any, program_cost_model: Any = None, params: Any = None, seed: int = 0,
                 sketch_rules: Optional[Sequence[Any]] = None) -> None:
        if isinstance(program_cost_model, _core.SearchParams) and params is None:
            program_cost_model, params = None, program_cost_model
        if params is not None and not isinstance(params, _core.SearchParams):
            raise TypeError(f"params must be a SearchParams, got {type(params).__name__}")
        check_type("SketchPolicy", "task", task, _core.SearchTask, "a SearchTask")
        check_type("SketchPolicy", "seed", seed, int, "an int")
        model = make_cost_model(program_cost_model)
        super().__init__(task, params, model, seed)
        self.cost_model = model
        self.task = task  # the task as given (the Python SearchTask, with its workload)
        if isinstance(sketch_rules, (str, bytes)) or not isinstance(sketch_rules, (list, tuple, type(None))):
            raise TypeError(f"sketch_rules must be a list of sketch rules, got {type(sketch_rules).__name__}")
        for rule in sketch_rules or ():
            self.add_sketch_rule(rule)

    def add_sketch_rule(self, condition, apply=None, name=None):
        """Adds a sketch rule before the built-in ones (after the rules you added before it).

        Either a rule object (a SketchRule, or any object with `condition` and `apply` methods; its name is
        its `name` attribute, else its class name), or two functions and a name:
            condition(policy, state, stage_id) -> SketchRuleCondition or "skip" / "apply" / "apply_and_skip_rest"
            apply(policy, state, stage_id) -> [(State, next_stage_id), ...]
        `policy` is this SketchPolicy (its task and params), `state` a State of your own to change (e.g.
        state.split(...), state.compute_inline(...)), `stage_id` the stage being visited; generation walks
        the stages from the last to the first, so a rule usually returns stage_id - 1. An exception raised by
        your rule stops generation with a SketchRuleError naming the rule (the original exception as its
        cause); a result of the wrong type is a TypeError.
        """
        if apply is None:
            rule = condition
            cond_fn, apply_fn = getattr(rule, "condition", None), getattr(rule, "apply", None)
            if not (callable(cond_fn) and callable(apply_fn)):
                raise TypeError(f"a sketch rule needs callable condition and apply methods, got {rule!r}; "
                                "or call add_sketch_rule(condition, apply, name=...)")
            name = name or getattr(rule, "name", None) or type(rule).__name__
        else:
            cond_fn, apply_fn = condition, apply
            if not (callable(cond_fn) and callable(apply_fn)):
                raise TypeError("add_sketch_rule: condition and apply must be callable")
            name = name or getattr(apply_fn, "__name__", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a sketch rule's name must be a non-empty string, got {name!r}")
        adapter = _RuleAdapter(weakref.ref(self), name, cond_fn, apply_fn)
        super().add_sketch_rule(name, adapter.condition, adapter.apply)

    def record_measured(self, inputs, results):
        """Measured states (States or MeasureInputs) and their MeasureResults: never proposed again, and
        given to the cost model."""
        super().record_measured([getattr(x, "state", x) for x in inputs], list(results))

    def expert_schedule(self):
        """The expert schedule made from this policy's sketches (see search.expert_schedule), or None; every
        round's initial population holds it."""
        state, _, _ = super().expert_schedule()
        return state


class SketchRuleCondition(enum.IntEnum):
    """What a sketch rule's condition says about a stage."""
    SKIP = 0                 # the rule does not apply; the next rules are asked
    APPLY = 1                # apply it, and ask the next rules too
    APPLY_AND_SKIP_REST = 2  # apply it, and ask no further rule at this stage


class SketchRuleError(RuntimeError):
    """A sketch rule of yours raised an exception (its __cause__) during sketch generation."""


class SketchRule:
    """Base class of a sketch rule written in Python: override `condition` and `apply` (and set `name`,
    which defaults to the class name). See SketchPolicy.add_sketch_rule for what they receive and return.

        class InlineAll(search.SketchRule):
            name = "inline-elementwise"
            def condition(self, policy, state, stage_id):
                ...
                return search.SketchRuleCondition.APPLY_AND_SKIP_REST
            def apply(self, policy, state, stage_id):
                state.compute_inline(stage_id)
                return [(state, stage_id - 1)]
    """
    name = None

    def condition(self, policy, state, stage_id):
        return SketchRuleCondition.SKIP

    def apply(self, policy, state, stage_id):
        raise NotImplementedError(f"sketch rule {type(self).__name__} has no apply")


_CONDITION_NAMES = {c.name.lower(): c for c in SketchRuleCondition}


class _RuleAdapter:
    """The callables the C++ rule calls: calls the user's function with the policy, checks what it returns.
    Holds the policy weakly (the C++ policy owns this adapter)."""

    def __init__(self, policy_ref, name, condition, apply):
        self.policy_ref, self.name, self.user_condition, self.user_apply = policy_ref, name, condition, apply

    def _call(self, what, fn, state, stage_id):
        try:
            return fn(self.policy_ref(), state, stage_id)
        except Exception as err:  # noqa: BLE001  (any failure of user code, reported with the rule's name)
            stage = state.stages[stage_id].name
            raise SketchRuleError(f"sketch rule '{self.name}' raised {type(err).__name__} in its {what} at "
                                  f"stage {stage_id} ('{stage}'): {err}") from err

    def condition(self, state, stage_id):
        result = self._call("condition", self.user_condition, state, stage_id)
        if isinstance(result, SketchRuleCondition):
            return int(result)
        if isinstance(result, str) and result.lower() in _CONDITION_NAMES:
            return int(_CONDITION_NAMES[result.lower()])
        raise TypeError(f"sketch rule '{self.name}': its condition must return a SketchRuleCondition or one "
                        f"of {sorted(_CONDITION_NAMES)}, got {result!r}")

    def apply(self, state, stage_id):
        result = self._call("apply", self.user_apply, state, stage_id)
        expected = "a list of (State, next_stage_id) pairs"
        if isinstance(result, (str, bytes, dict)) or not hasattr(result, "__iter__"):
            raise TypeError(f"sketch rule '{self.name}': its apply must return {expected}, got {result!r}")
        out = []
        for item in result:
            if not (isinstance(item, (tuple, list)) and len(item) == 2):
                raise TypeError(f"sketch rule '{self.name}': its apply must return {expected}, got the item "
                                f"{item!r}")
            state, next_id = item
            if not isinstance(state, State):
                raise TypeError(f"sketch rule '{self.name}': its apply returned {type(state).__name__} "
                                f"where a State goes, in {item!r}")
            if isinstance(next_id, bool) or not isinstance(next_id, numbers.Integral):
                raise TypeError(f"sketch rule '{self.name}': its apply returned the next stage id "
                                f"{next_id!r}; it must be an int (-1 when the sketch is finished)")
            out.append((state, int(next_id)))
        return out


def mutate(task, state, seed=0, params=None, rule=None):
    """One random mutation of a complete state: (State or None, failure reason, message). rule picks one
    rule by name ("tile-size", "register-block", "auto-unroll", "compute-location", "parallel"; GPU tasks have
    their own); None picks by probability."""
    return _core.mutate_state(task, state, seed, params, rule or "")


def expert_schedule(task, params=None):
    """The analytic expert schedule of a task (a State). CPU: register blocks of accumulators sized to the
    target's register file, vectorized along the contiguous output axis and unrolled, tiles sized by its caches,
    operands packed, outer loops parallel. GPU: the group, register and reduction tiles of each tiled stage
    derived from the warp, the thread limit, the registers of a work item, the shared memory and the vector
    width (see docs/search.md). None where the task has none (no stage to tile, or
    SearchParams.use_expert_schedule is off); expert_schedule_info says why."""
    state, _, _ = expert_schedule_info(task, params)
    return state


def expert_schedule_info(task, params=None):
    """(State or None, the reason there is none, how each number was chosen) of expert_schedule."""
    return _core.expert_schedule(task, params or SearchParams())


def expert_alternatives(task, params=None):
    """On a GPU target, the expert schedule planned with the choices its plan fixes made the other way,
    [(name, State)]: at least one group per compute unit instead of two (so fewer, larger groups), and work
    items that cover a short axis's tiles exactly (7 for 7 columns) instead of by a power of two. Those that
    differ from the expert and from each other; empty on a CPU target, or without an expert. Neither is
    better everywhere (on an H100, larger groups made a strided 3x3 convolution 1.5x faster and a dense layer
    1.6x slower), so tuning measures them beside the expert (tuning_start_states)."""
    return [(name, state) for name, state in _core.expert_alternatives(task, params or SearchParams())]


def baseline_states(task, params=None):
    """The plain loop nest and its parallel + vectorized variants (see default_schedules)."""
    return _core.baseline_states(task, params or SearchParams())


def baseline_names(states):
    """The names of baseline_states' states: "plain", "parallel", "parallel 2"."""
    return ["plain" if i == 0 else "parallel" if i == 1 else f"parallel {i}" for i in range(len(states))]


def default_schedules(task, params=None):
    """The schedules an untuned build runs, [(name, State)] in the order it tries them. On a CPU target: the
    expert schedule (EXPERT; register blocks, packing and tiles derived from the target's parameters, see
    expert_schedule) where the task has one, then the parallel + vectorized loop nests of baseline_states
    ("parallel 2", whose reductions' loops are outside their last spatial loop, then "parallel"), the plain
    loop nest ("plain") last. On a GPU target likewise the expert first, then the nest with the default
    GPU schedule (one work item per output). The first that compiles is the task's default: what
    graph.build runs for a task the log has no record of, or whose best record ran slower. Tuning measures it
    first (a task given a single trial has measured its default), and reports its speed-up over it.

    Why the expert comes first on a CPU: the parallel nests leave a dense layer's weight walked with a
    stride of K and most of a convolution's arithmetic scalar (on a 2-core Zen 3: ResNet-50's kernels 294 ms in
    all, against 80 ms with the expert's; DistilBERT's dense layers 60-170x slower); on an H100 the default GPU schedule ran ResNet-50's 3x3
    convolution of 64 channels at 56x56 in 3.6 ms, the expert in 0.03 ms."""
    params = params or SearchParams()
    states = baseline_states(task, params)
    named = list(zip(baseline_names(states), states))
    defaults = named[:0:-1] + named[:1]
    expert, _, _ = _core.expert_schedule(task, params)
    return ([(EXPERT, expert)] if expert is not None else []) + defaults


def tuning_start_states(policy):
    """What tuning measures before searching the policy's task, [(name, State)]: its default (the first of
    default_schedules under the policy's SearchParams: with use_expert_schedule off, not the expert), the
    policy's expert schedule (EXPERT, where the task has one), the other parallel
    default, on a GPU target the expert's alternative plans (expert_alternatives), the policy's own baselines
    where its SearchParams make them differ from the defaults (named "... (policy)"), and the plain loop nest
    last (unless it is the default)."""
    defaults = default_schedules(policy.task, policy.params)
    own = baseline_states(policy.task, policy.params)
    extra = ([(EXPERT, policy.expert_schedule())] + expert_alternatives(policy.task, policy.params)
             + [(f"{n} (policy)", s) for n, s in list(zip(baseline_names(own), own))[::-1]])
    known = {_core.state_key(s) for _, s in defaults}
    added = []
    for name, state in extra:
        if state is not None and _core.state_key(state) not in known:
            known.add(_core.state_key(state))
            added.append((name, state))
    rest = [(name, s) for name, s in defaults[1:] if name != "plain"]
    plain = [(name, s) for name, s in defaults[1:] if name == "plain"]
    return defaults[:1] + added[:1] + rest + added[1:] + plain


def generate_sketches(task, params=None, sketch_rules=None):
    """The sketches of `task` as States whose split lengths are still unknown (with your sketch_rules first,
    see SketchPolicy)."""
    return SketchPolicy(task, params, sketch_rules=sketch_rules).generate_sketches()


def sample_init_population(task, n, seed=0, params=None, sketches=None):
    """Up to n distinct random complete States of the task's sketches (or of `sketches`, States from
    generate_sketches), and the dropped attempts per reason (a dict)."""
    return _core.sample_init_population(task, n, seed, params, sketches)
