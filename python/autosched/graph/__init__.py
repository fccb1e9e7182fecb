"""Networks: the graph IR (Graph, Node, GraphError), its op table, and a zoo of models.

    from autosched.graph import Graph
    g = Graph("net")
    x = g.add_input("x", ("batch", 16), "float32")
    ...

See docs/graph.md.
"""
from .ir import Graph, GraphError, Node
from . import op_table, zoo
from .extract import UnsupportedGraphWarning, extract_tasks
from .deploy import GraphModule, build

__all__ = ["Graph", "Node", "GraphError", "op_table", "zoo", "UnsupportedGraphWarning", "extract_tasks",
           "GraphModule", "build"]
