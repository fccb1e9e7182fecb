"""from_torch: a torch.nn.Module as an autosched Graph, through torch.export.

Roadmap: ``from_torch`` exports the module (eval mode) with ``torch.export.export``; ``_Importer`` walks the
exported FX graph in order. Placeholders become graph inputs (user inputs) or lazily added constants
(parameters, buffers, lifted constants). Each call_function node is
  - folded with torch itself when all its tensor inputs are constants (a weight's ``t()``, an ``arange``, a
    mask computed from constants), unless it is random or in-place (NEVER_FOLDED),
  - converted by ATEN (torch_ops.py), keyed by the ATen op name ("conv2d", "addmm", ...), or as the graph op
    it is (the graph's op registry names its ATen op: "relu", "exp", ...),
  - converted, or skipped, as torch_quant.py planned before the walk: a PT2E export's quantize and dequantize
    ops, and the conv2d / linear / matmul between them fused into integer ops,
  - or added as an "unsupported" node with the shape torch.export recorded.
``sym_size`` nodes become the dims they stand for (int or the dynamic dim's name), so views of dynamic
shapes reach the converters as lists of ints and str. One UnsupportedOperatorWarning lists the problems.
"""
import operator

import numpy as np

from ..deploy.torch_tensors import tensor_to_numpy
from ..graph import Graph, GraphError
from ._common import Names, NotConvertible, dim_name, warn_problems
from .torch_ops import NEVER_FOLDED, converter
from .torch_quant import SKIPPED, check_eager_quantized, plan_quantized

__all__ = ["from_torch"]


def _import_torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("from_torch needs PyTorch, which is not installed: pip install 'autosched[torch]' "
                          "(or pip install torch==2.13.0)") from e
    return torch


def from_torch(module, example_inputs=None, dynamic_shapes=None, name=None):
    """The module as a Graph, exported with ``torch.export.export(module, example_inputs)`` in eval mode
    (the module's mode is restored afterwards; a module torch.export made, such as convert_pt2e's, keeps the
    mode it was exported in); ``module`` may also be a torch.export.ExportedProgram (then
    example_inputs is not used), e.g. one after ``run_decompositions()``. ``example_inputs`` is a tensor or a
    tuple of tensors;
    ``dynamic_shapes`` goes to torch.export (its dims stay str in the Graph: ``graph.bind`` binds them).
    Parameters and buffers become constants. ATen operators that cannot be imported become "unsupported"
    nodes, listed by one UnsupportedOperatorWarning and by ``graph.problems()``. An eager-mode quantized module
    (quantize_dynamic's), which torch.export cannot export, raises ValueError (docs/quantized.md: use PT2E)."""
    torch = _import_torch()
    if isinstance(module, torch.export.ExportedProgram):
        graph = _Importer(torch, module, name or "exported_program").run()
        warn_problems(graph, f"from_torch({graph.name})")
        return graph
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"from_torch expects a torch.nn.Module or a torch.export.ExportedProgram, got "
                        f"{type(module).__name__}")
    if example_inputs is None:
        raise TypeError("from_torch: a module needs example_inputs (a tensor or a tuple of tensors) to export it")
    args = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    if not all(isinstance(a, torch.Tensor) for a in args):
        raise TypeError("from_torch: example_inputs must be a tensor or a tuple of tensors, got "
                        f"{[type(a).__name__ for a in args]}")
    check_eager_quantized(torch, module)
    training = module.training
    switched = _set_mode(module, False)
    try:
        program = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    except Exception as e:
        raise ValueError(f"from_torch: torch.export could not export {type(module).__name__}: "
                         f"{type(e).__name__}: {e}") from e
    finally:
        if switched:
            module.train(training)
    program = _functional(program)
    importer = _Importer(torch, program, name or type(module).__name__)
    importer.dim_names = _user_dim_names(module, program, dynamic_shapes)
    graph = importer.run()
    warn_problems(graph, f"from_torch({graph.name})")
    return graph


def _set_mode(module, training):
    """module.train(training); False, switching nothing, for a model torch.export made (convert_pt2e's output),
    which refuses the switch: its mode was fixed when it was exported."""
    try:
        module.train(training)
    except NotImplementedError:
        return False
    return True


def _mutates(node):
    schema = getattr(node.target, "_schema", None)
    return node.op == "call_function" and schema is not None and schema.is_mutable


def _functional(program):
    """The program with its in-place ops rewritten as functional ones where it has any (torchvision's Swin
    writes its attention mask into slices of a tensor with fill_: as slice_scatter over constants it folds),
    by run_decompositions with no decomposition, which only functionalizes."""
    if not any(_mutates(node) for node in program.graph.nodes):
        return program
    return program.run_decompositions({})


def _user_dim_names(module, program, dynamic_shapes):
    """{torch.export's symbol ("s77"): the name of the torch.export.Dim the user gave ("batch")}."""
    import inspect
    if not dynamic_shapes:
        return {}
    specs = dynamic_shapes
    if isinstance(specs, dict):  # keyed by forward's parameter names
        params = list(inspect.signature(module.forward).parameters)
        specs = [specs.get(p) for p in params]
    user = [n for n in program.graph_module.graph.nodes if n.op == "placeholder"
            and n.name in set(program.graph_signature.user_inputs)]
    names = {}
    for node, spec in zip(user, specs):
        items = spec.items() if isinstance(spec, dict) else enumerate(spec or ())
        for axis, dim in items:
            shape = node.meta["val"].shape
            if dim is not None and hasattr(dim, "__name__") and axis < len(shape):
                names[str(shape[axis])] = dim.__name__
    return names


class _Multi:
    """The result of an op returning a tuple or list: `values` holds the graph values of the elements that were
    converted (element 0 only, for most ops; every piece of a split); the others are unsupported."""

    def __init__(self, values, node, reason, inputs):
        self.values, self.node, self.reason, self.inputs = list(values), node, reason, inputs

    def element(self, index):
        return self.values[index] if index < len(self.values) else None


class _Importer:
    def __init__(self, torch, program, name):
        self.torch, self.program = torch, program
        self.g = Graph(name=name)
        self.names = Names()
        self.env = {}  # fx node -> graph value name | (name, torch.Tensor) of a constant | int/str (a dim) | _Multi
        self.const_names = {}  # id of a constant tensor -> graph constant name
        self.node = None
        self.dim_names = {}
        self.quantized = {}  # fx node -> the converter torch_quant.py planned for it, or SKIPPED

    def run(self):
        sig = self.program.graph_signature
        self.quantized = plan_quantized(self.torch, self.program)
        kinds = {spec.arg.name: spec for spec in sig.input_specs}
        for node in self.program.graph_module.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                self._placeholder(node, kinds[node.name])
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                self._outputs(node, sig)
        return self.g

    def _outputs(self, node, sig):
        user = [a for a, spec in zip(node.args[0], sig.output_specs) if spec.kind.name == "USER_OUTPUT"]
        try:
            self.g.set_outputs([self.value(a) for a in user])
        except NotConvertible as e:
            raise ValueError(f"from_torch: an output of the module is not a tensor ({e})") from None

    def _placeholder(self, node, spec):
        kind = spec.kind.name
        if kind == "USER_INPUT":
            val = node.meta["val"]
            shape = tuple(self.dim(d) for d in val.shape)
            self.env[node] = self.g.add_input(self.names.take(node.name), shape, self.dtype_name(val.dtype))
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            # non-persistent buffers and lifted constants live in program.constants
            tensors = self.program.state_dict if spec.target in self.program.state_dict else self.program.constants
            self.env[node] = (spec.target, tensors[spec.target])
        else:
            raise ValueError(f"from_torch: unexpected input kind {kind} of {node.name}")

    def dim(self, d):
        """A dim of the export: int, or the name of a dynamic dim ("s0")."""
        expr = getattr(getattr(d, "node", None), "expr", None)  # int() of a SymInt would pin it to its hint
        if expr is None or expr.is_number:
            return int(d)
        return dim_name(self.dim_names.get(str(expr), str(expr)))  # the user's Dim name where there is one

    def dtype_name(self, dtype):
        return str(dtype).replace("torch.", "")

    def _call(self, node):
        target = node.target
        op = getattr(getattr(target, "_schema", None), "name", str(target)).split("::")[-1]
        if not node.users and not op.endswith("_"):
            return  # an unused result (the indices of a topk ...); in-place ops count by what they change
        if target is operator.getitem:
            return self._getitem(node)
        if op == "sym_size":
            self.env[node] = self.dim(node.meta["val"])
            return
        planned = self.quantized.get(node)
        if planned is SKIPPED:
            return  # part of a fused quantized op
        if self._foldable(node, op):
            return self._fold(node)
        convert = planned or converter(op)
        inplace = convert is None and op.endswith("_") and converter(op[:-1]) is not None  # relu_, add_ ...
        convert = converter(op[:-1]) if inplace else convert
        try:
            if convert is None:
                raise NotConvertible(f"no converter for aten::{op}")
            out = convert(self, *node.args, **node.kwargs)
        except (NotConvertible, GraphError) as e:
            return self._unsupported(node, op, str(e))
        except (TypeError, ValueError, IndexError, KeyError) as e:  # arguments the converter did not expect
            return self._unsupported(node, op, f"cannot convert it ({type(e).__name__}: {e})")
        if isinstance(out, self.torch.Tensor):  # a constant: later ops on it fold too
            out = (node.name, out)
        elif isinstance(out, list):
            out = _Multi(out, node, f"an empty piece of aten::{op} cannot be a graph value", [])
        elif isinstance(node.meta.get("val"), (tuple, list)):
            out = _Multi([out], node, f"only the first output of aten::{op} is supported", [])
        self.env[node] = out
        if inplace and isinstance(node.args[0], self.torch.fx.Node):
            self.env[node.args[0]] = out  # later readers of the mutated tensor see the result

    def _flat_args(self, node):
        out = []
        for a in list(node.args) + list(node.kwargs.values()):
            out.extend(a if isinstance(a, (list, tuple)) else [a])
        return out

    def _foldable(self, node, op):
        """Whether torch computes the node at import: a tensor result from constants and static dims only."""
        in_place = op.endswith("_") and op != "detach_"  # detach_ changes no value
        if op in NEVER_FOLDED or in_place or not isinstance(node.meta.get("val"), self.torch.Tensor):
            return False
        for a in self._flat_args(node):
            if isinstance(a, self.torch.fx.Node):
                value = self.env.get(a)
                if not isinstance(value, tuple) and (isinstance(value, bool) or not isinstance(value, int)):
                    return False
        return True

    def _fold(self, node):
        def real(a):
            if isinstance(a, self.torch.fx.Node):
                value = self.env[a]
                return value[1] if isinstance(value, tuple) else value
            if isinstance(a, (list, tuple)):
                return type(a)(real(x) for x in a)
            return a
        args = [real(a) for a in node.args]
        kwargs = {k: real(v) for k, v in node.kwargs.items()}
        with self.torch.no_grad():
            self.env[node] = (node.name, node.target(*args, **kwargs))

    def _getitem(self, node):
        src, index = node.args
        value = self.env[src]
        if not isinstance(value, _Multi):
            raise ValueError(f"from_torch: getitem of {src.name}, which is not a tuple")
        if value.element(index) is not None:
            self.env[node] = value.element(index)
            return
        self.env[node] = self._add_unsupported(node, value.node.target, value.inputs, value.reason,
                                               self.names.take(value.node.name if index == 0 else node.name))

    def _unsupported(self, node, op, reason):
        inputs = [self.env[a] for a in self._flat_args(node)
                  if isinstance(a, self.torch.fx.Node) and isinstance(self.env.get(a), str)]
        if isinstance(node.meta.get("val"), (tuple, list)):
            self.env[node] = _Multi([], node, reason, inputs)  # getitem adds one node per used element
            return
        self.env[node] = self._add_unsupported(node, node.target, inputs, reason, self.names.take(node.name))

    def _add_unsupported(self, node, target, inputs, reason, name):
        val = node.meta.get("val")
        shape = dtype = None
        if isinstance(val, self.torch.Tensor):
            shape, dtype = tuple(self.dim(d) for d in val.shape), self.dtype_name(val.dtype)
            shape = None if 0 in shape else shape  # an empty tensor (a cache's first state): no graph shape
        op_type = getattr(getattr(target, "_schema", None), "name", str(target))
        return self.g.add_unsupported(op_type, inputs, name, shape=shape, dtype=dtype, reason=reason)

    # ---- helpers for the converters -----------------------------------------------------------------
    def const(self, arg):
        """The constant tensor behind ``arg`` as numpy, None when it is computed at run time."""
        value = self.env.get(arg) if isinstance(arg, self.torch.fx.Node) else None
        return tensor_to_numpy(value[1].cpu()) if isinstance(value, tuple) else None

    def value(self, arg):
        """The graph value of fx argument ``arg`` (a tensor; constants are added on first use)."""
        value = self.env.get(arg) if isinstance(arg, self.torch.fx.Node) else None
        if isinstance(value, str):
            return value
        if isinstance(value, _Multi) and value.element(0) is not None:
            return value.element(0)
        if isinstance(value, tuple):
            key = id(value[1])
            if key not in self.const_names:
                self.const_names[key] = self.g.add_constant(self.names.take(value[0]),
                                                            tensor_to_numpy(value[1].cpu()))
            return self.const_names[key]
        raise NotConvertible(f"argument {arg} is not a tensor")

    def out_dtype(self):
        """The dtype torch.export recorded for the current node's output (None when not a tensor)."""
        val = self.node.meta.get("val")
        return self.dtype_name(val.dtype) if isinstance(val, self.torch.Tensor) else None

    def operand(self, arg, dtype):
        """``arg`` as a graph value of ``dtype``: numbers become constants of it, tensors of another dtype are
        cast (torch promotes: an int tensor times 0.5 is float)."""
        if isinstance(arg, (int, float, bool)) and not isinstance(arg, self.torch.fx.Node):
            return self.add_const(np.asarray(arg, dtype=dtype), "scalar")
        value = self.value(arg)
        if dtype is None or self.g.dtype(value) == dtype:
            return value
        const = self.const(arg)
        if const is not None:
            return self.add_const(const.astype(dtype), "cast")
        return self.emit("cast", [value], dtype=dtype)

    def dims(self, arg):
        """A list of ints (and dynamic dims, as str) from an argument such as view's size."""
        items = arg if isinstance(arg, (list, tuple)) else [arg]
        return [self.env[a] if isinstance(a, self.torch.fx.Node) else int(a) for a in items]

    def add_const(self, array, hint):
        return self.g.add_constant(self.names.take(f"{self.node.name}.{hint}"), np.ascontiguousarray(array))

    def shape(self, arg):
        return self.g.shape(self.value(arg))

    def emit(self, op, inputs, **attrs):
        return self.g.add_node(op, inputs, attrs=attrs, name=self.fresh_name(op))

    def fresh_name(self, op):
        base = self.node.name
        return self.names.take(base if not self.names.used(base) else f"{base}/{op}")
