"""Networks: the graph IR (Graph, Node, GraphError), its op registry (one OpDef per op), and a zoo of models.

    from autosched.graph import Graph
    g = Graph("net")
    x = g.add_input("x", ("batch", 16), "float32")
    ...

See docs/graph.md; docs/graph_ops.md says how an op is defined.
"""
from .errors import GraphError, OpError
from .ir import Graph, Node
from .opdef import OpDef
from . import op_table, registry, zoo
from .extract import UnsupportedGraphWarning, extract_tasks
from .deploy import GraphModule, build, load_module
from .overhead import dispatch_seconds, outside_kernels_seconds
from .network_timing import NetworkTimes, NetworkTiming
from ..tune import scheduler as _scheduler

# TaskScheduler(outside_kernels_s="measure") multiplies the weights by the graph runtime's cost of a kernel call:
# given to the tuning layer here, which never imports graph/.
_scheduler.set_dispatch_seconds(dispatch_seconds)

__all__ = ["Graph", "Node", "GraphError", "OpError", "OpDef", "op_table", "registry", "zoo",
           "UnsupportedGraphWarning", "extract_tasks", "GraphModule", "build", "load_module",
           "dispatch_seconds", "outside_kernels_seconds", "NetworkTiming", "NetworkTimes"]
