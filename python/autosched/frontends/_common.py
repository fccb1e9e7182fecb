"""What the ONNX and PyTorch importers share: the warning that lists what could not be imported, the error
a converter raises for a node it cannot map, unique naming, reshapes whose target has dynamic dims, and the
pieces of a split (ONNX Split, torch split / chunk / unbind)."""
import re
import warnings

import numpy as np

__all__ = ["UnsupportedOperatorWarning", "NotConvertible", "Names", "reshape", "warn_problems", "dim_name",
           "split_sizes", "slices_of"]


class UnsupportedOperatorWarning(UserWarning):
    """Issued once per import when the graph has nodes that cannot be compiled: the message lists every
    unsupported operator (type, node name, why) and every dynamic dimension left in the graph."""


class NotConvertible(Exception):
    """Raised by a converter for a node it cannot map; the node becomes an "unsupported" node."""


class Names:
    """Unique value names for one Graph (inputs, constants and nodes share one name space)."""

    def __init__(self):
        self._used = set()

    def used(self, name):
        return name in self._used

    def take(self, wanted):
        base = str(wanted) or "v"
        name, i = base, 1
        while name in self._used:
            name, i = f"{base}_{i}", i + 1
        self._used.add(name)
        return name


def dim_name(text):
    """A dynamic dimension's name usable as a keyword of Graph.bind."""
    name = re.sub(r"\W", "_", str(text))
    return name if name and not name[0].isdigit() else "d_" + name


def reshape(graph, x, target, name):
    """Adds a reshape of value ``x`` to ``target`` (ints, at most one -1; str entries are dynamic dims).

    The graph's reshape takes ints only, so a target with dynamic dims is rewritten: a single dynamic entry
    becomes -1 (the total size fixes it), and (d, -1) on an input whose first dim is d becomes flatten."""
    target = [d if isinstance(d, str) else int(d) for d in target]
    dynamic = [i for i, d in enumerate(target) if isinstance(d, str)]
    if not dynamic:
        return graph.add_node("reshape", [x], attrs=dict(shape=tuple(target)), name=name)
    in_shape = graph.shape(x)
    if len(dynamic) == 1 and -1 not in target:
        target[dynamic[0]] = -1
        return graph.add_node("reshape", [x], attrs=dict(shape=tuple(target)), name=name)
    if len(target) == 2 and dynamic == [0] and in_shape and in_shape[0] == target[0]:
        rest = in_shape[1:]
        if target[1] == -1 or (all(isinstance(d, int) for d in rest) and int(np.prod(rest)) == target[1]):
            return graph.add_node("flatten", [x], attrs=dict(axis=1), name=name)
    raise NotConvertible(f"reshape to {tuple(target)}: the target has dynamic dims that cannot be expressed with "
                         f"static sizes; import with shape_dict binding them")


def split_sizes(extent, sizes, parts, what):
    """The extents of the pieces of an axis of ``extent``: ``sizes`` when given, else ``parts`` pieces of
    ceil(extent / parts) (the last one smaller, as ONNX Split's num_outputs and torch.chunk have them)."""
    if not isinstance(extent, int):
        raise NotConvertible(f"{what} of a dynamic dim {extent}: bind it at import")
    if sizes is None:
        step = -(-extent // parts)
        sizes = [min(step, extent - k) for k in range(0, extent, step)] if extent else []
    if sum(sizes) != extent or any(s < 0 for s in sizes):
        raise NotConvertible(f"{what} into {list(sizes)} does not cover the axis of extent {extent}")
    return list(sizes)


def slices_of(ctx, value, axis, sizes):
    """One strided_slice per piece of ``sizes`` along ``axis`` (None for an empty piece, which no graph value
    can hold)."""
    out, start = [], 0
    for size in sizes:
        if size == 0:
            out.append(None)
        elif size == ctx.g.shape(value)[axis]:
            out.append(value)
        else:
            out.append(ctx.emit("strided_slice", [value], begin=(start,), end=(start + size,), axes=(axis,)))
        start += size
    return out


def _dynamic_dims(graph):
    dims = {}
    for value in list(graph.inputs) + [n.name for n in graph.nodes]:
        for d in graph.shape(value) or ():
            if isinstance(d, str):
                dims.setdefault(d, value)
    return dims


def warn_problems(graph, source, stacklevel=3):
    """One UnsupportedOperatorWarning listing every unsupported node and every dynamic dim of ``graph``."""
    unsupported = [n for n in graph.nodes if n.op == "unsupported"]
    dims = _dynamic_dims(graph)
    if not unsupported and not dims:
        return
    lines = [f"{source}: {len(unsupported)} unsupported operator(s) and {len(dims)} dynamic dimension(s); "
             f"the rest of the graph was imported (graph.problems() lists every affected node):"]
    for n in unsupported:
        lines.append(f"  unsupported operator {n.attrs.get('op_type')} (node {n.name}): {n.attrs.get('reason')}")
    for d, where in dims.items():
        lines.append(f"  dynamic dimension '{d}' (first in {where}): bind it with graph.bind({d}=...) "
                     f"or at import")
    warnings.warn("\n".join(lines), UnsupportedOperatorWarning, stacklevel=stacklevel)
