"""Graph.to_onnx: the graph as an ONNX model (opset 17) with its weights, e.g. to run it with onnxruntime.

Each node is exported by the `onnx` of its OpDef (registry.py): the bare ONNX op it is, or a function that
writes one ONNX node or a few through the _Writer below (dense over (..., K) is Transpose + MatMul + Add; the
exact GELU is written with Erf, since Gelu only arrives in opset 20). Dynamic dims become dim_params.
Unsupported nodes and avg_pool2d with dilations (no such attribute before opset 19) cannot be exported:
GraphError names the node.
"""
import numpy as np

from . import registry
from .errors import GraphError

OPSET = 17


def _import_onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as e:
        raise ImportError("Graph.to_onnx needs the 'onnx' package, which is not installed: "
                          "pip install 'autosched[onnx]' (or pip install onnx)") from e
    return onnx, helper, numpy_helper


class _Writer:
    """Collects ONNX nodes and initializers; fresh names for helper values. What an OpDef's export uses:
    node(op_type, inputs, output, **attrs), const(base, array), scalar(base, value, dtype), fresh(base), graph,
    helper (onnx.helper), opset."""

    opset = OPSET

    def __init__(self, graph, helper, numpy_helper):
        self.graph, self.helper, self.numpy_helper = graph, helper, numpy_helper
        self.nodes, self.initializers = [], []
        self.used = set(graph.inputs) | set(graph.constants) | {n.name for n in graph.nodes}

    def fresh(self, base):
        k = 0
        while f"{base}_{k}" in self.used:
            k += 1
        self.used.add(f"{base}_{k}")
        return f"{base}_{k}"

    def const(self, base, array):
        name = self.fresh(base)
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name

    def scalar(self, base, value, dtype):
        return self.const(base, np.asarray(value, dtype=dtype))

    def node(self, op_type, inputs, output, **attrs):
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], name=self.fresh(output + "_" + op_type),
                                                **attrs))
        return output


def _export_node(w, node):
    if node.op == "unsupported":
        raise GraphError(f"to_onnx: node '{node.name}' is unsupported op '{node.attrs['op_type']}' and cannot be "
                         f"exported")
    export = registry.get(node.op).onnx
    if export is None:
        raise GraphError(f"to_onnx: node '{node.name}': no ONNX export for op '{node.op}'")
    if isinstance(export, str):
        return w.node(export, list(node.inputs), node.name)
    return export(w, node)


def _value_info(helper, graph, name):
    shape = graph.shape(name)
    dtype = helper.np_dtype_to_tensor_dtype(np.dtype(graph.dtype(name)))
    return helper.make_tensor_value_info(name, dtype, None if shape is None else list(shape))


def to_onnx(graph, path=None):
    """An onnx.ModelProto (opset 17) of `graph` with its constants as initializers; saved when path is given."""
    onnx, helper, numpy_helper = _import_onnx()
    if not graph.outputs:
        raise GraphError(f"to_onnx: graph '{graph.name}' has no outputs (call set_outputs)")
    w = _Writer(graph, helper, numpy_helper)
    for name, array in graph.constants.items():
        # np.ascontiguousarray would make a 0-d constant (a Gather's single index) 1-d
        w.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array).reshape(array.shape), name))
    for node in graph.nodes:
        _export_node(w, node)
    inputs = [_value_info(helper, graph, v) for v in graph.inputs]
    outputs = [_value_info(helper, graph, v) for v in graph.outputs]
    onnx_graph = helper.make_graph(w.nodes, graph.name, inputs, outputs, initializer=w.initializers)
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="autosched")
    model.ir_version = min(model.ir_version, 8)  # opset 17 models are IR 8; older runtimes refuse newer IRs
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, str(path))
    return model
