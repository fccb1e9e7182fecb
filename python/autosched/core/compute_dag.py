"""ComputeDAG: the operations a task computes, with the schedule entry points.

    dag = ans.ComputeDAG([A, B, C])        # inputs and outputs, in argument order
    s = dag.get_init_state()               # a State: one stage per op, plain loop nests
    print(dag.print_python_steps(s))       # its steps as calls of the State API
    bounded = dag.infer_bound(s)           # iterator extents after bound inference

The C++ core's DAG (autosched._core.ComputeDAG) holds the ops, the access analysis, the FLOP count and
the workload key; this subclass adds what returns Python States. The core hands every DAG out as this
class (``task.compute_dag``, ``state.dag``). A DAG is immutable: it pickles as its
JSON, and copies are the DAG itself.
"""
from .state import ComputeDAG  # defined beside State: each hands out the other

__all__ = ["ComputeDAG"]
