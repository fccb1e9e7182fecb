"""Importers of networks from other frameworks into autosched's graph IR (autosched.graph.Graph).

    graph = ans.frontends.from_onnx("model.onnx", shape_dict={"batch": 1})
    graph = ans.frontends.from_torch(module, (example_input,))

Weights become the graph's constants. Neither importer stops at the first operator it cannot map: such a node
becomes an "unsupported" node (``graph.problems()`` lists it), and one UnsupportedOperatorWarning at the end
lists every unsupported operator and every dynamic dimension. The ``onnx`` and ``torch`` packages are imported
only when an importer is called. docs/frontends.md lists the operators.
"""
from ._common import UnsupportedOperatorWarning
from .onnx import from_onnx
from .torch import from_torch

__all__ = ["from_onnx", "from_torch", "UnsupportedOperatorWarning"]
