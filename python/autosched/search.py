"""The search policy from Python: sketches of a task and random states sampled from them.

    from autosched import search
    sketches = search.generate_sketches(task)                  # [State], split lengths unknown
    states, drops = search.sample_init_population(task, 64, seed=1)
    mod = ans.build(task, states[0])

`drops` counts the attempts that were not kept, per reason: the name of the init rule that failed,
"infer_bound", "lower", or "duplicate". Knobs are the fields of `SearchParams` (see docs/search.md):

    params = search.SearchParams(max_vectorize_size=8)
"""
from . import _core
from .state import State

__all__ = ["SearchParams", "SketchPolicy", "generate_sketches", "sample_init_population"]


class SearchParams(_core.SearchParams):
    """The knobs of the search with their defaults; fields given by keyword (unknown names raise
    TypeError)."""

    def __init__(self, **fields):
        super().__init__()
        for name, value in fields.items():
            if name.startswith("_") or not hasattr(self, name):
                raise TypeError(f"SearchParams has no field '{name}'")
            setattr(self, name, value)


class SketchPolicy:
    """Sketch generation and sampling for one task (CPU targets)."""

    def __init__(self, task, params=None):
        self._policy = _core.SketchPolicy(task, params)

    @property
    def sketch_rule_names(self):
        return self._policy.sketch_rule_names

    @property
    def init_rule_names(self):
        return self._policy.init_rule_names

    @property
    def rule_failures(self):
        """Rules whose apply the core refused during the last generate_sketches (one line each)."""
        return self._policy.rule_failures

    def generate_sketches(self):
        return [State(s) for s in self._policy.generate_sketches()]

    def sample_init_population(self, n, seed=0):
        states, drops = self._policy.sample_init_population(n, seed)
        return [State(s) for s in states], drops


def generate_sketches(task, params=None):
    """The sketches of `task` as States whose split lengths are still unknown."""
    return SketchPolicy(task, params).generate_sketches()


def sample_init_population(task, n, seed=0, params=None, sketches=None):
    """Up to n distinct random complete States of the task's sketches (or of `sketches`, States from
    generate_sketches), and the dropped attempts per reason (a dict)."""
    core_sketches = None if sketches is None else [s.core for s in sketches]
    states, drops = _core.sample_init_population(task, n, seed, params, core_sketches)
    return [State(s) for s in states], drops
