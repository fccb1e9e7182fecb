"""The reference evaluator with the argument checks of a built module.

    (out,) = ans.evaluate(dag, [a, b])     # one numpy array per placeholder, of its dtype

A module refuses an array whose dtype is not its tensor's (TypeError); the evaluator refuses it too, rather
than converting it (a float64 array would be rounded to float32 silently, and the reference would not be what
a module given the same arrays computes). Counts and shapes are checked by the evaluator itself.
"""
from typing import Any, List, Sequence

import numpy as np

from .. import _core
from .dtypes import numpy_dtype

__all__ = ["evaluate", "evaluate_points"]


def _check_inputs(dag, inputs):
    if not isinstance(dag, _core.ComputeDAG):
        raise TypeError(f"evaluate: dag must be a ComputeDAG, got {type(dag).__name__}")
    if isinstance(inputs, np.ndarray):
        raise TypeError("evaluate: inputs must be a list of numpy arrays (one per placeholder), got one array")
    placeholders = [t for t in dag.tensors if t.op_kind == "placeholder"]
    inputs = list(inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"input {i} must be a numpy.ndarray, got {type(x).__name__}")
    if len(inputs) != len(placeholders) or any(x.shape != tuple(t.shape) for t, x in zip(placeholders, inputs)):
        return inputs  # the evaluator names the expected count or shape
    for i, (t, x) in enumerate(zip(placeholders, inputs)):
        if x.dtype != numpy_dtype(t.dtype):
            raise TypeError(f"input {i} (tensor '{t.name}') must have dtype {t.dtype}, got {x.dtype} "
                            f"(convert it with .astype('{t.dtype}'))")
    return inputs


def evaluate(dag: Any, inputs: Sequence[Any]) -> List[Any]:
    """Reference results: one array per compute tensor among dag.tensors, from one array per placeholder (of
    the placeholder's dtype and shape)."""
    return _core.evaluate(dag, _check_inputs(dag, inputs))


def evaluate_points(dag: Any, inputs: Sequence[Any], output_index: int, points: Sequence[Sequence[int]]) -> Any:
    """Reference values (float64) of output `output_index` (counting compute tensors among dag.tensors) at the
    given index tuples."""
    return _core.evaluate_points(dag, _check_inputs(dag, inputs), output_index, points)
