"""Graph.evaluate: the numpy reference of a whole graph, node by node, each through the `reference` of its
OpDef (registry.py).

Each reference is f(node, *arrays) -> array of node.dtype, computed in the inputs' dtype (float32 stays float32:
this is a reference for tests, not a bit-exact model of a compiled kernel). It shares nothing with the te
builders, so the two check each other.

bfloat16 values (ml_dtypes arrays) reach a reference as float32 and its result is rounded to the node's dtype
once: numpy has no bfloat16 kernels of its own (ml_dtypes' ufuncs round after every numpy call, and a matmul
of them would accumulate in bfloat16), and compiled kernels, like PyTorch's, compute bfloat16 in float32 and
round what they store.
"""
import numpy as np

from ..core.dtypes import numpy_dtype
from . import registry
from .errors import GraphError, OpError

__all__ = ["evaluate_graph"]


def _widened(array):
    """A bfloat16 array as float32 (exactly); any other array as it is."""
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array


def _bind_inputs(graph, arrays, named):
    if len(arrays) > len(graph.inputs):
        raise GraphError(f"evaluate: graph '{graph.name}' has {len(graph.inputs)} inputs, got {len(arrays)} arrays")
    values = dict(zip(graph.inputs, arrays))
    for key, array in named.items():
        if key not in graph.inputs:
            raise GraphError(f"evaluate: graph '{graph.name}' has no input '{key}' (inputs: {graph.inputs})")
        if key in values:
            raise GraphError(f"evaluate: input '{key}' is given twice")
        values[key] = array
    missing = [v for v in graph.inputs if v not in values]
    if missing:
        raise GraphError(f"evaluate: missing input{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    for key in graph.inputs:
        array = values[key]
        if not isinstance(array, np.ndarray):
            raise TypeError(f"evaluate: input '{key}' must be a numpy.ndarray, got {type(array).__name__}")
        shape, dtype = graph.shape(key), graph.dtype(key)
        if array.shape != shape:
            raise GraphError(f"evaluate: input '{key}' must have shape {shape}, got {array.shape}")
        if array.dtype != numpy_dtype(dtype):
            raise TypeError(f"evaluate: input '{key}' must have dtype {dtype}, got {array.dtype} (convert it with "
                            f".astype('{dtype}'))")
    return values


def evaluate_graph(graph, arrays, named):
    """The outputs of `graph` on the given inputs (a list of arrays, in the order of graph.outputs)."""
    problems = graph.problems()
    if problems:
        listed = "; ".join(f"{name} ({op}): {why}" for name, op, why in problems)
        raise GraphError(f"evaluate: graph '{graph.name}' cannot be evaluated: {listed}")
    if not graph.outputs:
        raise GraphError(f"evaluate: graph '{graph.name}' has no outputs (call set_outputs)")
    values = _bind_inputs(graph, arrays, named)
    values.update(graph.constants)
    remaining = {}  # value -> consumers still to run, so intermediates are freed early
    for node in graph.nodes:
        for v in node.inputs:
            remaining[v] = remaining.get(v, 0) + 1
    keep = set(graph.outputs) | set(graph.constants) | set(graph.inputs)
    for node in graph.nodes:
        try:
            fn = registry.reference(node.op)
        except OpError as e:
            raise GraphError(f"evaluate: node '{node.name}' ({node.op}): {e}") from None
        out = np.asarray(fn(node, *[_widened(values[v]) for v in node.inputs]))
        if out.dtype != numpy_dtype(node.dtype):
            out = out.astype(numpy_dtype(node.dtype))
        if out.shape != node.shape:
            raise AssertionError(f"reference of node '{node.name}' ({node.op}) gave shape {out.shape}, "
                                 f"expected {node.shape}")
        values[node.name] = out
        for v in node.inputs:
            remaining[v] -= 1
            if remaining[v] == 0 and v not in keep:
                del values[v]
    return [values[v] for v in graph.outputs]
