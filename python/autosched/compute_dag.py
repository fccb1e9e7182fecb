"""ComputeDAG: the operations a task computes, with the schedule entry points.

    dag = ans.ComputeDAG([A, B, C])        # inputs and outputs, in argument order
    s = dag.get_init_state()               # a State: one stage per op, plain loop nests
    print(dag.print_python_steps(s))       # its steps as calls of the State API
    bounded = dag.infer_bound(s)           # iterator extents after bound inference

The C++ core's DAG (autosched._core.ComputeDAG) holds the ops, the access analysis, the FLOP count and
the workload key; this subclass adds what returns Python States. DAGs that come from the core
(``task.compute_dag``, ``state.dag``) are handed out as this class. A DAG is immutable: it pickles as its
JSON, and copies are the DAG itself.
"""
from . import _core
from ._check import call_core, describe
from .state import State, core_state

__all__ = ["ComputeDAG"]


class ComputeDAG(_core.ComputeDAG):
    """ComputeDAG(tensors): the ops reachable from the given inputs and outputs, in topological order.
    ComputeDAG(dag) gives the same DAG as this class (from a core ComputeDAG)."""

    def __init__(self, tensors):
        if not isinstance(tensors, _core.ComputeDAG):
            if isinstance(tensors, (str, bytes)) or not isinstance(tensors, (list, tuple)):
                raise TypeError(f"ComputeDAG: tensors must be a list of te tensors (inputs and outputs), got "
                                f"{describe(tensors)}")
            for i, t in enumerate(tensors):
                if not isinstance(t, _core.Tensor):
                    raise TypeError(f"ComputeDAG: tensors[{i}] must be a te tensor (te.placeholder / te.compute), "
                                    f"got {describe(t)}")
        call_core("ComputeDAG", super().__init__, tensors)

    @classmethod
    def from_json(cls, text):
        """The DAG of ``dag.to_json()``."""
        return cls(_core.ComputeDAG.from_json(text))

    def get_init_state(self):
        """The state with no steps: the plain loop nest of the DAG."""
        return State(_core.LoopState(self))

    def print_python_steps(self, state):
        """The steps of ``state`` as calls of the State API (``s`` is the state)."""
        return core_state(state).print_python_steps()

    def infer_bound(self, state):
        """A copy of ``state`` whose iterators have the extents bound inference gives."""
        return State(core_state(state).infer_bound())


def as_compute_dag(dag):
    """``dag`` as a ComputeDAG of this module (the same DAG; a core one is wrapped)."""
    return dag if isinstance(dag, ComputeDAG) else ComputeDAG(dag)
