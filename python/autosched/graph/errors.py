"""The errors of the graph IR. This module imports nothing of the package, so every graph module (the IR, the
op definitions, the evaluators, the exporters) and every importer can raise them without importing each other."""

__all__ = ["GraphError", "OpError"]


class GraphError(ValueError):
    """A malformed graph or a graph that cannot do what was asked; the message names node, op and why."""


class OpError(ValueError):
    """What is wrong with an op's inputs or attrs (Graph turns it into a GraphError naming the node)."""
