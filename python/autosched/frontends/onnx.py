"""from_onnx: an ONNX model (opset 13 and newer) as an autosched Graph, its weights as constants.

Roadmap: ``from_onnx`` loads and checks the model (``_load``, ``_opset``), then ``_Importer`` walks the
nodes that reach an output, in file order, with the QDQ form's quantized convolutions and matrix products fused
into integer ops first (``fuse_qdq``, onnx_quant.py). Each node is either
  - folded: every input is a constant and FOLD (onnx_fold.py) computes it in numpy, or else its converter
    writes it into a graph of its own that the numpy reference evaluates (``_fold_by_reference``), so no
    node over constants only becomes a task; shape arithmetic ends here, so Reshape and Expand targets arrive
    as constants and become int attrs;
  - converted: CONVERTERS (onnx_ops.py) maps it onto graph ops through the helpers below (``const``,
    ``value``, ``emit``...), or it is a graph op as it is (the graph's op registry names its ONNX op); a
    converter of MULTI_OUTPUT (Split) returns one value per output;
  - or added as an "unsupported" node (output shape from ONNX shape inference where it knows it), when no
    converter exists or the converter or the graph refuses it (NotConvertible, GraphError).
The import never stops at the first problem: one UnsupportedOperatorWarning at the end lists them all.
"""
import copy
import os

import numpy as np

from ..graph import Graph, GraphError
from ._common import Names, NotConvertible, dim_name, warn_problems
from .onnx_fold import FoldError, fold
from .onnx_ops import MULTI_OUTPUT, converter
from .onnx_quant import MICROSOFT_OPS, fuse_qdq

__all__ = ["from_onnx", "MIN_OPSET"]

MIN_OPSET = 13


def _import_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("from_onnx needs the 'onnx' package, which is not installed: "
                          "pip install 'autosched[onnx]' (or pip install onnx)") from e
    return onnx


def _load(onnx, model_or_path):
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray)):
        source, load = "the given bytes", lambda: onnx.load_from_string(bytes(model_or_path))
    elif isinstance(model_or_path, (str, os.PathLike)):
        path = os.fspath(model_or_path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"from_onnx: no such file: '{path}'")
        if os.path.isdir(path):
            raise ValueError(f"from_onnx: '{path}' is a folder, not an ONNX model file")
        source, load = f"'{path}'", lambda: onnx.load(path)
    else:
        raise TypeError(f"from_onnx expects an onnx.ModelProto, a path or bytes, got {type(model_or_path).__name__}")
    try:
        model = load()
    except Exception as e:  # protobuf's DecodeError and friends
        raise ValueError(f"from_onnx: {source} is not an ONNX model ({type(e).__name__}: {e})") from None
    # Protobuf parses many byte strings without complaint: a model has at least an IR version and a graph.
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise ValueError(f"from_onnx: {source} is not an ONNX model (no IR version or no graph)")
    return model


def _opset(model):
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise ValueError("from_onnx: the model imports no version of the standard ONNX operator set")
    if versions[0] < MIN_OPSET:
        raise ValueError(f"from_onnx: the model uses ONNX opset {versions[0]}; autosched imports opset "
                         f"{MIN_OPSET} and newer (upgrade it with onnx.version_converter.convert_version"
                         f"(model, {MIN_OPSET}))")
    return versions[0]


def _attr(onnx, a):
    value = onnx.helper.get_attribute_value(a)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, float):  # stored as float32: its shortest decimal (epsilon 1e-05, not 9.99999974e-06)
        return float(str(np.float32(value)))
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value


def _dims(type_proto):
    """Dims of an ONNX tensor type: int, str (named dynamic dim) or None (unknown); None when rank unknown."""
    t = type_proto.tensor_type
    if not t.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else (dim_name(d.dim_param) if d.dim_param else None)
                 for d in t.shape.dim)


def from_onnx(model_or_path, shape_dict=None):
    """The ONNX model ``model_or_path`` (an onnx.ModelProto, a path, or its bytes) as a Graph.

    ``shape_dict`` binds inputs' dynamic dims, either by input ({"data": (1, 3, 224, 224)}) or by dim name
    ({"batch": 1}); dims left dynamic stay str in the Graph (``graph.bind(batch=1)`` binds them later).
    Operators that cannot be imported become "unsupported" nodes; one UnsupportedOperatorWarning lists them
    and the dynamic dims, and ``graph.problems()`` lists every node they affect."""
    onnx = _import_onnx()
    model = _load(onnx, model_or_path)
    opset = _opset(model)
    graph = _Importer(onnx, model, opset, shape_dict).run()
    warn_problems(graph, f"from_onnx({graph.name})")
    return graph


class _Importer:
    def __init__(self, onnx, model, opset, shape_dict):
        self.onnx, self.model, self.opset = onnx, model, opset
        self.g = Graph(name=model.graph.name or "onnx_model")
        self.names = Names()
        self.consts = {}     # ONNX value name -> np.ndarray (initializers, Constant nodes, folded values)
        self.values = {}     # ONNX value name -> graph value name
        self.materialized = {}  # ONNX value name of a constant -> graph constant name
        self._inferred = None
        self._base = None
        self.output_count = 1  # the number of outputs of the node being converted
        self.nodes = fuse_qdq(onnx, model)  # the QDQ form's integer ops fused (onnx_quant.py)
        self._bind_inputs(shape_dict or {})

    # ---- inputs -------------------------------------------------------------------------------------
    def _bind_inputs(self, shape_dict):
        """Adds the graph inputs, their dims bound by ``shape_dict``: a key is an input (its whole shape) or a
        dynamic dim (its value). The order of the keys does not matter: an input's shape binds the dynamic
        dims at its positions for every input, and a dim bound twice to different values (by its name and by
        an input's shape, or by two inputs' shapes) is refused, naming both."""
        onnx = self.onnx
        for t in self.model.graph.initializer:
            self.consts[t.name] = onnx.numpy_helper.to_array(t)
        inputs = [vi for vi in self.model.graph.input if vi.name not in self.consts]
        dims = {vi.name: _dims(vi.type) for vi in inputs}
        for vi in inputs:  # unnamed dynamic dims get a name of their own
            if dims[vi.name] is not None:
                dims[vi.name] = [dim_name(f"{vi.name}_dim{i}") if d is None else d
                                 for i, d in enumerate(dims[vi.name])]
        known_dims = {d for ds in dims.values() for d in ds or () if isinstance(d, str)}
        by_dim = {}  # dim name -> (value, what bound it)
        given = {}   # input name -> its dims from shape_dict (int, or str: a dim named there)
        for key, value in shape_dict.items():  # dims by name first, so that the order does not matter
            if key in dims:
                continue
            if key not in known_dims:
                raise ValueError(f"from_onnx: shape_dict key '{key}' is neither an input ({', '.join(dims)}) "
                                 f"nor a dynamic dim of one")
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"from_onnx: shape_dict['{key}'] must be a positive int, got {value!r}")
            by_dim[key] = (int(value), f"shape_dict['{key}'] = {int(value)}")
        for key, value in shape_dict.items():
            if key not in dims:
                continue
            shape = tuple(value)
            given[key] = self._bind_input_shape(key, dims[key], shape)
            for i, (have, want) in enumerate(zip(dims[key] or (), given[key])):
                if not isinstance(have, str) or not isinstance(want, int):
                    continue
                source = f"shape_dict['{key}'] = {shape}"
                bound = by_dim.get(have)
                if bound is not None and bound[0] != want:
                    raise ValueError(f"from_onnx: {source} sets dim {i} of '{key}', the dynamic dim '{have}', to "
                                     f"{want}, but {bound[1]} binds '{have}' to {bound[0]}: give one of them, "
                                     f"or agreeing values")
                by_dim.setdefault(have, (want, source))
        for vi in inputs:
            if vi.name not in given and dims[vi.name] is None:
                raise ValueError(f"from_onnx: the model does not give the rank of input '{vi.name}': give its "
                                 f"shape with shape_dict={{'{vi.name}': (...)}}")
            shape = tuple(by_dim[d][0] if isinstance(d, str) and d in by_dim else d
                          for d in given.get(vi.name, dims[vi.name]))
            dtype = self._np_type(vi.type.tensor_type.elem_type)
            self.values[vi.name] = self.g.add_input(self.names.take(vi.name), shape, dtype)

    def _bind_input_shape(self, name, dims, shape):
        if dims is None:
            dims = list(shape)
        if len(shape) != len(dims):
            raise ValueError(f"from_onnx: shape_dict['{name}'] = {shape} has rank {len(shape)}, the input has "
                             f"rank {len(dims)} {tuple(dims)}")
        for i, (want, have) in enumerate(zip(shape, dims)):
            if isinstance(have, int) and isinstance(want, (int, np.integer)) and int(want) != have:
                raise ValueError(f"from_onnx: shape_dict['{name}'] = {shape} disagrees with the model's static "
                                 f"dim {i} = {have}")
        return [int(s) if isinstance(s, (int, np.integer)) else dim_name(s) for s in shape]

    def _np_type(self, elem_type):
        if not elem_type:
            return None
        return np.dtype(self.onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name

    # ---- the walk -----------------------------------------------------------------------------------
    def run(self):
        live = self._live_values()
        for node in self.nodes:
            if any(o in live for o in node.output):
                self._node(node, live)
        outputs = [self._output(o.name) for o in self.model.graph.output]
        self.g.set_outputs(outputs)
        return self.g

    def _live_values(self):
        """Names of the values that the graph outputs depend on (dead nodes are skipped)."""
        producer = {o: n for n in self.nodes for o in n.output if o}
        live, stack = set(), [o.name for o in self.model.graph.output]
        while stack:
            v = stack.pop()
            if v in live:
                continue
            live.add(v)
            if v in producer:
                stack.extend(i for i in producer[v].input if i)
        return live

    def _output(self, name):
        if name in self.values:
            return self.values[name]
        try:
            return self.value(name)  # a constant output
        except NotConvertible as e:
            raise ValueError(f"from_onnx: graph output '{name}' is computed by no node ({e})") from None

    def _node(self, node, live):
        attrs = {a.name: _attr(self.onnx, a) for a in node.attribute}
        self._base = node.name or node.output[0] or node.op_type
        if node.domain == "com.microsoft" and node.op_type not in MICROSOFT_OPS:
            return self._unsupported(node, live, f"operator of domain 'com.microsoft' (of that domain, the "
                                                 f"quantized ops {', '.join(sorted(MICROSOFT_OPS))} are supported)")
        if node.domain not in ("", "ai.onnx", "com.microsoft"):
            return self._unsupported(node, live, f"operator of domain '{node.domain}'")
        if node.op_type == "Constant":
            return self._constant(node, attrs)
        inputs = [i for i in node.input]
        if all(i == "" or i in self.consts for i in inputs) or node.op_type in ("Shape", "Size"):
            try:
                if self._fold(node, inputs, attrs):
                    return
            except (FoldError, NotConvertible) as e:
                return self._unsupported(node, live, f"cannot compute it at import time: {e}")
        convert = converter(node.op_type)
        if convert is None:
            return self._unsupported(node, live, "no converter for this operator")
        extra = [o for o in node.output[1:] if o in live]
        if extra and node.op_type not in MULTI_OUTPUT:
            return self._unsupported(node, live, f"its extra output(s) {', '.join(extra)} are used; only the "
                                                 f"first output is supported")
        self.output_count = len(node.output)
        try:
            out = convert(self, inputs, attrs)
        except (NotConvertible, GraphError) as e:
            return self._unsupported(node, live, str(e))
        except (TypeError, ValueError, IndexError, KeyError) as e:  # attrs or shapes the converter did not expect
            return self._unsupported(node, live, f"cannot convert it ({type(e).__name__}: {e})")
        outs = out if isinstance(out, list) else [out]
        empty = [o for o, v in zip(node.output, outs) if v is None and o in live]
        if empty:
            return self._unsupported(node, live, f"its output(s) {', '.join(empty)} are empty (a zero-size "
                                                 f"value cannot be a graph value)")
        for name, value in zip(node.output, outs):
            if isinstance(value, np.ndarray):
                self.consts[name] = value
            elif value is not None:
                self.values[name] = value

    def _fold(self, node, inputs, attrs):
        """Folds the node into constants; False when it cannot be (then it is converted)."""
        if node.op_type in ("Shape", "Size"):
            shape = self.shape(inputs[0])
            if shape is None or None in shape:
                raise FoldError(f"the shape of {inputs[0]} is not known")
            args = [shape]
        else:
            args = [self.consts[i] if i else None for i in inputs]
        symbolic = any(isinstance(a, np.ndarray) and a.dtype == object for a in args)
        try:
            outs = fold(node.op_type, args, attrs, symbolic)
        except FoldError:
            if symbolic:
                raise
            outs = self._fold_by_reference(node, inputs, attrs)
            if outs is None:
                return False
        for name, value in zip(node.output, outs):
            self.consts[name] = value
        return True

    def _fold_by_reference(self, node, inputs, attrs):
        """The outputs of a node on constants that FOLD does not know: its converter writes it into a graph of
        its own, which the numpy reference evaluates (Graph.evaluate). None when that cannot be done (no
        converter, a refusal, an op without a reference); the node is then converted as usual."""
        convert = converter(node.op_type)
        if convert is None:
            return None
        scratch = copy.copy(self)  # the same constants, a graph of its own
        scratch.g, scratch.names, scratch.values, scratch.materialized = Graph("fold"), Names(), {}, {}
        scratch.output_count = len(node.output)
        try:
            out = convert(scratch, inputs, attrs)
            outs = out if isinstance(out, list) else [out]
            if any(v is None for v in outs):
                return None
            computed = [v for v in outs if isinstance(v, str)]
            if computed:
                scratch.g.set_outputs(computed)
            with np.errstate(all="ignore"):  # log(0) of T5's position buckets is -inf, as in onnxruntime
                results = iter(scratch.g.evaluate() if computed else [])
        except (NotConvertible, GraphError, TypeError, ValueError, IndexError, KeyError):
            return None
        return [next(results) if isinstance(v, str) else v for v in outs]

    def _constant(self, node, attrs):
        for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            if key in attrs:
                value = np.asarray(attrs[key])
                if key.startswith("value_float"):
                    value = value.astype(np.float32)
                elif key.startswith("value_int"):
                    value = value.astype(np.int64)
                self.consts[node.output[0]] = value
                return
        self._unsupported(node, {node.output[0]}, f"Constant with {', '.join(attrs) or 'no value'}")

    def _unsupported(self, node, live, reason):
        inputs = [self.values[i] for i in node.input if i in self.values]
        for k, out in enumerate(node.output):
            if out not in live:
                continue
            shape, dtype = self._inferred_type(out)
            shape = None if shape is not None and 0 in shape else shape  # an empty value has no graph shape
            name = self.names.take(self._base if k == 0 else out)
            self.values[out] = self.g.add_unsupported(node.op_type, inputs, name, shape=shape, dtype=dtype,
                                                      reason=reason)

    def _inferred_type(self, value):
        """Shape and dtype of ``value`` from ONNX shape inference (run once, on the first need)."""
        if self._inferred is None:
            self._inferred = {}
            try:
                inferred = self.onnx.shape_inference.infer_shapes(self._bound_model())
                for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
                    self._inferred[vi.name] = (_dims(vi.type), self._np_type(vi.type.tensor_type.elem_type))
            except Exception:  # inference is a help for the report, not a requirement
                pass
        return self._inferred.get(value, (None, None))

    def _bound_model(self):
        model = self.onnx.ModelProto()
        model.CopyFrom(self.model)
        for vi in model.graph.input:
            if vi.name in self.values:
                shape = self.g.shape(self.values[vi.name])
                for d, s in zip(vi.type.tensor_type.shape.dim, shape):
                    if isinstance(s, int):
                        d.dim_value = s
                    else:
                        d.dim_param = s
        return model

    # ---- helpers for the converters -----------------------------------------------------------------
    def const(self, name):
        """The constant array of ONNX value ``name``, None for an absent input or a computed value."""
        return self.consts.get(name) if name else None

    def const_or_fail(self, name, what):
        value = self.const(name)
        if value is None:
            raise NotConvertible(f"{what} ({name}) is computed at run time; only a constant is supported")
        if value.dtype == object:
            raise NotConvertible(f"{what} ({name}) depends on a dynamic dim: bind it at import with shape_dict")
        return value

    def value(self, name):
        """The graph value of ONNX value ``name`` (a constant is added to the graph on first use)."""
        if name in self.values:
            return self.values[name]
        if name not in self.consts:
            raise NotConvertible(f"input '{name}' is missing")
        if name not in self.materialized:
            array = self.consts[name]
            if array.dtype == object:
                raise NotConvertible(f"{name} holds dynamic dims and is used as data")
            self.materialized[name] = self.g.add_constant(self.names.take(name), array)
        return self.materialized[name]

    def add_const(self, array, hint):
        # np.array, not np.ascontiguousarray: the latter makes a 0-d array 1-d.
        return self.g.add_constant(self.names.take(f"{self._base}.{hint}"), np.array(array, order="C"))

    def shape(self, name):
        if name in self.values:
            return self.g.shape(self.values[name])
        if name in self.consts:
            return tuple(self.consts[name].shape)
        raise NotConvertible(f"input '{name}' is missing")

    def dtype(self, name):
        if name in self.values:
            return self.g.dtype(self.values[name])
        return self.consts[name].dtype.name

    def emit(self, op, inputs, **attrs):
        """Adds a graph node; the first one of an ONNX node takes its name, later ones get a suffix."""
        return self.g.add_node(op, inputs, attrs=attrs, name=self.fresh_name(op))

    def convert(self, op_type, values, attrs):
        """What the converter of ONNX op ``op_type`` computes from graph values ``values`` (a quantized op written
        as its float one between dequantize and quantize)."""
        names = []
        for value in values:
            name = ("graph value", value)  # a key no ONNX value name can be
            self.values[name] = value
            names.append(name)
        return converter(op_type)(self, names, attrs)

    def fresh_name(self, op):
        return self.names.take(self._base if not self.names.used(self._base) else f"{self._base}/{op}")
