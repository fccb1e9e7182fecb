"""The graph IR: a network as a list of single-output nodes over named values.

    g = Graph(name="net")
    x = g.add_input("data", (1, 3, 224, 224), "float32")       # a dim may be a str: a dynamic dimension
    w = g.add_constant("conv1.weight", weight_array)
    y = g.add_node("conv2d", [x, w], attrs=dict(strides=(2, 2), pads=(3, 3, 3, 3)), name="conv1")
    g.set_outputs([y])

Every value (input, constant, node output) has a unique name; a node's output value is named after the node.
add_node checks the inputs exist, normalises the attrs and infers the output shape and dtype at once (the op's
OpDef in the registry, registry.py, says how), so a malformed graph is refused where it is built, naming the
node and op. Shapes are tuples of dims: an int, a str (a named dynamic dimension, e.g. "batch") or None
(unknown); the shape of a value whose rank is unknown is None.
"""
import numbers

import numpy as np

from ..core.dtypes import dtype_name
from . import registry
from .errors import GraphError, OpError
from .onnx_export import to_onnx
from .reference import evaluate_graph

__all__ = ["Graph", "Node", "GraphError"]


class Node:
    """One op applied to named values; its output value has the node's name."""

    __slots__ = ("op", "name", "inputs", "attrs", "shape", "dtype")

    def __init__(self, op, name, inputs, attrs, shape, dtype):
        self.op, self.name, self.inputs, self.attrs = op, name, list(inputs), dict(attrs)
        self.shape, self.dtype = shape, dtype

    def __repr__(self):
        return f"Node({self.op!r}, name={self.name!r}, inputs={self.inputs!r}, shape={self.shape!r})"


def _check_name(name, what):
    if not isinstance(name, str) or not name:
        raise GraphError(f"{what}: a name must be a non-empty str, got {name!r}")
    return name


def _normalize_shape(shape, what):
    if shape is None:
        return None
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise GraphError(f"{what}: shape must be a tuple of ints / strs / None, got {shape!r}") from None
    out = []
    for d in dims:
        if isinstance(d, numbers.Integral) and not isinstance(d, bool):
            if d < 1:
                raise GraphError(f"{what}: dims must be positive, got {d} in {dims}")
            out.append(int(d))
        elif d is None or (isinstance(d, str) and d):
            out.append(d)
        else:
            raise GraphError(f"{what}: a dim must be an int, a non-empty str (dynamic) or None, got {d!r}")
    return tuple(out)


def _dtype_name(dtype, what):
    if dtype is None:
        raise GraphError(f"{what}: needs a dtype")
    try:
        return dtype_name(dtype)
    except TypeError:
        raise GraphError(f"{what}: not a dtype: {dtype!r}") from None


def _format_attr(value):
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    return str(value)


class Graph:
    """A network: inputs, constants (numpy arrays), nodes in topological (add) order, outputs."""

    def __init__(self, name="graph"):
        self.name = str(name)
        self._inputs = []
        self._outputs = []
        self._constants = {}
        self._nodes = []
        self._node_by_name = {}
        self._values = {}  # name -> (shape, dtype)
        self._consumers = {}  # name -> [Node]
        self._op_counts = {}

    # ---------------- building ----------------

    def _claim(self, name, what):
        _check_name(name, what)
        if name in self._values:
            raise GraphError(f"{what}: the name '{name}' is already used in graph '{self.name}'")

    def add_input(self, name, shape, dtype="float32"):
        """A graph input; returns its value name."""
        what = f"input '{name}'"
        self._claim(name, what)
        shape = _normalize_shape(shape, what)
        if shape is None:
            raise GraphError(f"{what}: needs a shape (dims may be strs for dynamic dimensions)")
        self._values[name] = (shape, _dtype_name(dtype, what))
        self._inputs.append(name)
        self._consumers[name] = []
        return name

    def add_constant(self, name, value):
        """A constant (a weight); the array is kept, not copied, and never written. Returns its value name."""
        what = f"constant '{name}'"
        self._claim(name, what)
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
        if array.dtype == object:
            raise GraphError(f"{what}: not a numeric array")
        if any(d == 0 for d in array.shape):
            raise GraphError(f"{what}: has a zero-size dimension {array.shape}")
        self._constants[name] = array
        self._values[name] = (tuple(int(d) for d in array.shape), array.dtype.name)
        self._consumers[name] = []
        return name

    def _fresh_name(self, base):
        base = base or "node"
        while True:
            count = self._op_counts.get(base, 0)
            self._op_counts[base] = count + 1
            name = f"{base}_{count}"
            if name not in self._values:
                return name

    def _check_inputs(self, inputs, what):
        if isinstance(inputs, str):
            inputs = [inputs]
        inputs = list(inputs)
        for v in inputs:
            if not isinstance(v, str):
                raise GraphError(f"{what}: inputs must be value names (str), got {v!r}")
            if v not in self._values:
                raise GraphError(f"{what}: input '{v}' is not a value of graph '{self.name}'")
        return inputs

    def _append(self, node):
        self._nodes.append(node)
        self._node_by_name[node.name] = node
        self._values[node.name] = (node.shape, node.dtype)
        self._consumers[node.name] = []
        for v in dict.fromkeys(node.inputs):
            self._consumers[v].append(node)
        return node.name

    def add_node(self, op, inputs, attrs=None, name=None):
        """Apply `op` to the input values; returns the output value name (the node's name)."""
        if name is None:
            name = self._fresh_name(op if isinstance(op, str) else "node")
        what = f"node '{name}' ({op})"
        self._claim(name, what)
        if op == "unsupported":
            raise GraphError(f"{what}: add unsupported ops with add_unsupported()")
        inputs = self._check_inputs(inputs, what)
        shapes = [self._values[v][0] for v in inputs]
        dtypes = [self._values[v][1] for v in inputs]
        try:
            attrs, shape, dtype = registry.infer(op, dict(attrs or {}), shapes, dtypes)
        except OpError as e:
            raise GraphError(f"{what}: {e}") from None
        return self._append(Node(op, name, inputs, attrs, shape, dtype))

    def add_unsupported(self, op_type, inputs, name=None, shape=None, dtype=None, reason=""):
        """A node the compiler cannot handle (kept so the graph is whole); problems() lists it."""
        if name is None:
            name = self._fresh_name("unsupported")
        what = f"node '{name}' (unsupported {op_type})"
        self._claim(name, what)
        inputs = self._check_inputs(inputs, what)
        shape = _normalize_shape(shape, what)
        dtype = None if dtype is None else _dtype_name(dtype, what)
        attrs = {"op_type": str(op_type), "reason": str(reason)}
        return self._append(Node("unsupported", name, inputs, attrs, shape, dtype))

    def set_outputs(self, outputs):
        """The graph outputs, by value name."""
        outputs = self._check_inputs(outputs, f"graph '{self.name}' outputs")
        if not outputs:
            raise GraphError(f"graph '{self.name}': needs at least one output")
        self._outputs = outputs

    # ---------------- reading ----------------

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def constants(self):
        return dict(self._constants)

    @property
    def nodes(self):
        return list(self._nodes)

    def _value(self, value):
        if value not in self._values:
            raise GraphError(f"'{value}' is not a value of graph '{self.name}'")
        return self._values[value]

    def node(self, name):
        if name not in self._node_by_name:
            raise GraphError(f"graph '{self.name}' has no node '{name}'")
        return self._node_by_name[name]

    def shape(self, value):
        return self._value(value)[0]

    def dtype(self, value):
        return self._value(value)[1]

    def producer(self, value):
        self._value(value)
        return self._node_by_name.get(value)

    def consumers(self, value):
        self._value(value)
        return list(self._consumers[value])

    def problems(self):
        """(node name, op, why) for every node that cannot be compiled."""
        found = []
        for node in self._nodes:
            if node.op == "unsupported":
                why = f"unsupported op '{node.attrs['op_type']}'"
                found.append((node.name, node.op, why + (f": {node.attrs['reason']}" if node.attrs["reason"]
                                                         else "")))
                continue
            why = self._dynamic_dims(node)
            if why:
                found.append((node.name, node.op, why))
        return found

    def _dynamic_dims(self, node):
        for v in list(node.inputs) + [node.name]:
            shape = self._values[v][0]
            role = "output" if v == node.name else f"input '{v}'"
            if shape is None:
                return f"{role} has an unknown shape"
            for d in shape:
                if isinstance(d, str):
                    return f"{role} has the dynamic dim '{d}' in {shape}"
                if d is None:
                    return f"{role} has an unknown dim in {shape}"
        return ""

    def dynamic_dims(self):
        """The names of the dynamic dims of the inputs, in order of appearance."""
        names = {}
        for v in self._inputs:
            for d in self._values[v][0]:
                if isinstance(d, str):
                    names[d] = None
        return list(names)

    # ---------------- transforming ----------------

    def bind(self, dims=None, **kwargs):
        """A new graph with the named dynamic dims replaced by ints and shapes inferred again."""
        dims = dict(dims or {}, **kwargs)
        known = set(self.dynamic_dims())
        for node in self._nodes:
            if node.op == "unsupported" and node.shape is not None:
                known.update(d for d in node.shape if isinstance(d, str))
        for key, value in dims.items():
            if key not in known:
                raise GraphError(f"bind: graph '{self.name}' has no dynamic dim '{key}' (it has "
                                 f"{sorted(known) or 'none'})")
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise GraphError(f"bind: dim '{key}' must be bound to a positive int, got {value!r}")

        def sub(shape):
            return None if shape is None else tuple(int(dims[d]) if isinstance(d, str) and d in dims else d
                                                    for d in shape)

        g = Graph(self.name)
        for v in self._inputs:
            g.add_input(v, sub(self._values[v][0]), self._values[v][1])
        for k, array in self._constants.items():
            g.add_constant(k, array)
        for node in self._nodes:
            if node.op == "unsupported":
                g.add_unsupported(node.attrs["op_type"], node.inputs, node.name, sub(node.shape), node.dtype,
                                  node.attrs["reason"])
            else:
                g.add_node(node.op, node.inputs, node.attrs, node.name)
        if self._outputs:
            g.set_outputs(self._outputs)
        return g

    # ---------------- running and exporting ----------------

    def evaluate(self, *arrays, **named):
        """The numpy reference of the graph: one array per output, from one array per input (positional in
        the order of g.inputs, or by name)."""
        return evaluate_graph(self, arrays, named)

    def to_onnx(self, path=None):
        """The graph as an onnx.ModelProto (opset 17) with its weights; saved to `path` when given."""
        return to_onnx(self, path)

    # ---------------- printing ----------------

    def _format_node(self, node):
        args = ", ".join(f"%{v}" for v in node.inputs)
        attrs = " ".join(f"{k}={_format_attr(v)}" for k, v in node.attrs.items())
        shape = "?" if node.shape is None else str(node.shape)
        return f"%{node.name} = {node.op}({args}){' ' + attrs if attrs else ''} -> {shape} {node.dtype or '?'}"

    def __str__(self):
        lines = [f"graph {self.name}("]
        for v in self._inputs:
            lines.append(f"  %{v}: {self._values[v][0]} {self._values[v][1]}")
        lines.append(f") {len(self._constants)} constants, {len(self._nodes)} nodes")
        lines += [self._format_node(n) for n in self._nodes]
        lines.append("return " + ", ".join(f"%{v}" for v in self._outputs))
        return "\n".join(lines)

    def __repr__(self):
        return (f"<Graph {self.name}: {len(self._inputs)} inputs, {len(self._constants)} constants, "
                f"{len(self._nodes)} nodes>")
