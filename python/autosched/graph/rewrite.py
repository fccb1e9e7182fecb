"""Graph rewrites that keep what a graph computes and make its kernels cheaper.

    graph = expand_small_powers(graph)   # x ** 3 (a constant exponent 2, 3 or 4) -> x * x * x

Importers write GELU's tanh form (GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x ** 3))))
with a Pow node whose exponent is a constant; computed as a power, each element is a call of the C library's
powf (a vector of them one call per lane), where two multiplies do. The multiplies round after each step, so a
cube may differ from powf's by an ulp or so.
"""
from .ir import Graph

__all__ = ["expand_small_powers", "rebuild", "taken_names", "unique_name"]

# Exponents written as multiplies: each costs one multiply less than the next.
_SMALL_EXPONENTS = (2, 3, 4)


def _small_exponent(graph, node):
    """The exponent of a power node as an int when it is a constant scalar in _SMALL_EXPONENTS (and the result
    has the base's shape); None otherwise."""
    if node.op != "power" or node.inputs[1] not in graph.constants:
        return None
    exponent = graph.constants[node.inputs[1]]
    if exponent.size != 1 or graph.shape(node.name) != graph.shape(node.inputs[0]):
        return None
    value = float(exponent.reshape(-1)[0])
    return int(value) if value in _SMALL_EXPONENTS else None


def unique_name(taken, base):
    """`base`, or `base`_1, _2, ... : the first not in the set `taken`, which then holds it."""
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    return name


def taken_names(graph):
    """Every value name of the graph (inputs, constants, nodes), for unique_name."""
    return set(graph.constants) | set(graph.inputs) | {n.name for n in graph.nodes}


def rebuild(graph, rewrite_node):
    """A copy of `graph` (its inputs, constants and outputs) whose nodes are written by rewrite_node(out, node)
    into the new graph `out` where it returns True, and copied as they are where it returns False."""
    out = Graph(graph.name)
    for v in graph.inputs:
        out.add_input(v, graph.shape(v), graph.dtype(v))
    for k, array in graph.constants.items():
        out.add_constant(k, array)
    for node in graph.nodes:
        if rewrite_node(out, node):
            continue
        if node.op == "unsupported":
            out.add_unsupported(node.attrs["op_type"], node.inputs, node.name, node.shape, node.dtype,
                                node.attrs["reason"])
        else:
            out.add_node(node.op, node.inputs, node.attrs, name=node.name)
    out.set_outputs(graph.outputs)
    return out


def expand_small_powers(graph):
    """A graph where every power node whose exponent is a constant scalar 2, 3 or 4 is a chain of multiplies of
    its base (the last one named as the power); `graph` itself when there is none."""
    expanded = {node.name: n for node in graph.nodes if (n := _small_exponent(graph, node)) is not None}
    if not expanded:
        return graph
    names = taken_names(graph)

    def rewrite(out, node):
        if node.name not in expanded:
            return False
        product = node.inputs[0]
        for power in range(2, expanded[node.name] + 1):
            last = power == expanded[node.name]
            product = out.add_node("multiply", [product, node.inputs[0]],
                                   name=node.name if last else unique_name(names, f"{node.name}.power{power}"))
        return True
    return rebuild(graph, rewrite)
