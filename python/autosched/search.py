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
"""
from . import _core
from .state import State

__all__ = ["SearchParams", "SketchPolicy", "generate_sketches", "sample_init_population", "mutate",
           "baseline_states", "make_cost_model"]


class SearchParams(_core.SearchParams):
    """The knobs of the search with their defaults; fields given by keyword (unknown names raise
    TypeError)."""

    def __init__(self, **fields):
        super().__init__()
        for name, value in fields.items():
            if name.startswith("_") or not hasattr(self, name):
                raise TypeError(f"SearchParams has no field '{name}'")
            setattr(self, name, value)


def make_cost_model(spec=None, default="random"):
    """A cost model from a spec: a CostModel (returned as is), "xgb" (XGBModel), "random" (RandomModel), or
    None (the `default` spec; "auto" picks XGBModel when autosched was built with XGBoost, else RandomModel)."""
    from . import cost_model as cm
    if spec is None:
        spec = default
    if isinstance(spec, cm.CostModel):
        return spec
    if spec == "auto":
        spec = "xgb" if _core.has_xgboost() else "random"
    if spec == "xgb":
        return cm.XGBModel()
    if spec == "random":
        return cm.RandomModel()
    raise ValueError(f"cost model must be a CostModel, 'xgb' or 'random', got {spec!r}")


class SketchPolicy:
    """Sketch generation, sampling and the evolutionary search for one task (CPU targets).

    program_cost_model: a CostModel, "xgb", "random" or None (RandomModel). params: SearchParams (also
    accepted in place of the cost model, for the older form SketchPolicy(task, params)). seed: the search is
    reproducible for a seed and a sequence of measured results.
    """

    def __init__(self, task, program_cost_model=None, params=None, seed=0):
        if isinstance(program_cost_model, _core.SearchParams) and params is None:
            program_cost_model, params = None, program_cost_model
        if params is not None and not isinstance(params, _core.SearchParams):
            raise TypeError(f"params must be a SearchParams, got {type(params).__name__}")
        self.task = task
        self.cost_model = make_cost_model(program_cost_model)
        self._policy = _core.SketchPolicy(task, params, self.cost_model._core, seed)

    @property
    def params(self):
        return self._policy.params

    @property
    def sketch_rule_names(self):
        return self._policy.sketch_rule_names

    @property
    def init_rule_names(self):
        return self._policy.init_rule_names

    @property
    def mutation_rule_names(self):
        return self._policy.mutation_rule_names

    @property
    def mutation_probabilities(self):
        """Relative weights of the mutation rules (same order as mutation_rule_names); assignable."""
        return self._policy.mutation_probabilities

    @mutation_probabilities.setter
    def mutation_probabilities(self, values):
        self._policy.mutation_probabilities = list(values)

    @property
    def rule_failures(self):
        """Rules whose apply the core refused during the last generate_sketches (one line each)."""
        return self._policy.rule_failures

    def generate_sketches(self):
        return [State(s) for s in self._policy.generate_sketches()]

    def sample_init_population(self, n, seed=0):
        states, drops = self._policy.sample_init_population(n, seed)
        return [State(s) for s in states], drops

    def continue_search_one_round(self, num_measure):
        """Up to num_measure States never measured nor proposed before (none: the search space is
        exhausted). Runs on all cores with the GIL released."""
        return [State(s) for s in self._policy.continue_search_one_round(int(num_measure))]

    def record_measured(self, inputs, results):
        """Measured states (States or MeasureInputs) and their MeasureResults: never proposed again, and
        given to the cost model."""
        states = [_core_state(getattr(x, "state", x)) for x in inputs]
        self._policy.record_measured(states, list(results))

    def is_measured(self, state):
        return self._policy.is_measured(_core_state(state))

    @property
    def num_measured(self):
        """States measured or proposed for measurement so far."""
        return self._policy.num_measured

    @property
    def last_round(self):
        """What the last round did (dict): sampled states, mutations and their failures by reason, states
        picked, seconds of search and of the cost model."""
        return self._policy.last_round

    @property
    def model_update_seconds(self):
        return self._policy.model_update_seconds


def _core_state(state):
    from .build_module import _core_state as core_of
    return core_of(state)


def mutate(task, state, seed=0, params=None, rule=None):
    """One random mutation of a complete state: (State or None, failure reason, message). rule picks one
    rule by name ("tile-size", "auto-unroll", "compute-location", "parallel"); None picks by probability."""
    new, failure, message = _core.mutate_state(task, _core_state(state), seed, params, rule or "")
    return (None if new is None else State(new)), failure, message


def baseline_states(task, params=None):
    """What tuning measures first: the plain loop nest and its parallel + vectorized variant."""
    return [State(s) for s in _core.baseline_states(task, params or SearchParams())]


def generate_sketches(task, params=None):
    """The sketches of `task` as States whose split lengths are still unknown."""
    return SketchPolicy(task, params).generate_sketches()


def sample_init_population(task, n, seed=0, params=None, sketches=None):
    """Up to n distinct random complete States of the task's sketches (or of `sketches`, States from
    generate_sketches), and the dropped attempts per reason (a dict)."""
    core_sketches = None if sketches is None else [s.core for s in sketches]
    states, drops = _core.sample_init_population(task, n, seed, params, core_sketches)
    return [State(s) for s in states], drops
