"""Graph.to_onnx: the graph as an ONNX model (opset 17) with its weights, e.g. to run it with onnxruntime.

Each op becomes one ONNX node or a few (dense over (..., K) is Transpose + MatMul + Add; the exact GELU is
written with Erf, since Gelu only arrives in opset 20). Dynamic dims become dim_params. Unsupported nodes and
avg_pool2d with dilations (no such attribute before opset 19) cannot be exported: GraphError names the node.
"""
import math

import numpy as np

from .errors import GraphError

OPSET = 17

_SIMPLE = {"matmul": "MatMul", "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow",
           "maximum": "Max", "minimum": "Min", "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp",
           "log": "Log", "sqrt": "Sqrt", "erf": "Erf", "negative": "Neg", "abs": "Abs",
           "global_avg_pool2d": "GlobalAveragePool"}


def _import_onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as e:
        raise ImportError("Graph.to_onnx needs the 'onnx' package (pip install onnx)") from e
    return onnx, helper, numpy_helper


class _Writer:
    """Collects ONNX nodes and initializers; fresh names for helper values."""

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


def _pool_attrs(a):
    return dict(kernel_shape=list(a["kernel"]), strides=list(a["strides"]), pads=list(a["pads"]),
                ceil_mode=int(a["ceil_mode"]))


def _export_node(w, node):
    a, ins, out, op = node.attrs, list(node.inputs), node.name, node.op
    if op in _SIMPLE:
        return w.node(_SIMPLE[op], ins, out)
    if op == "conv2d":
        kh, kw = w.graph.shape(ins[1])[2:]
        return w.node("Conv", ins, out, kernel_shape=[kh, kw], strides=list(a["strides"]), pads=list(a["pads"]),
                      dilations=list(a["dilations"]), group=a["groups"])
    if op == "dense":
        if len(w.graph.shape(ins[0])) == 2:
            return w.node("Gemm", ins, out, transB=1)
        weight_t = w.node("Transpose", [ins[1]], w.fresh(out + "_weight_t"), perm=[1, 0])
        if len(ins) == 2:
            return w.node("MatMul", [ins[0], weight_t], out)
        product = w.node("MatMul", [ins[0], weight_t], w.fresh(out + "_matmul"))
        return w.node("Add", [product, ins[2]], out)
    dtype = node.dtype
    if op == "gelu":
        x = ins[0]
        half = w.scalar("half", 0.5, dtype)
        one = w.scalar("one", 1.0, dtype)
        if a["approximate"] == "tanh":
            cube = w.node("Mul", [x, w.node("Mul", [x, x], w.fresh(out + "_sq"))], w.fresh(out + "_cube"))
            inner = w.node("Add", [x, w.node("Mul", [cube, w.scalar("c", 0.044715, dtype)], w.fresh(out + "_t"))],
                           w.fresh(out + "_inner"))
            scaled = w.node("Mul", [inner, w.scalar("k", math.sqrt(2.0 / math.pi), dtype)], w.fresh(out + "_s"))
            core = w.node("Tanh", [scaled], w.fresh(out + "_tanh"))
        else:
            scaled = w.node("Mul", [x, w.scalar("inv_sqrt2", 1.0 / math.sqrt(2.0), dtype)], w.fresh(out + "_s"))
            core = w.node("Erf", [scaled], w.fresh(out + "_erf"))
        plus_one = w.node("Add", [core, one], w.fresh(out + "_p1"))
        return w.node("Mul", [w.node("Mul", [x, half], w.fresh(out + "_half")), plus_one], out)
    if op == "clip":
        lo = "" if a["min"] is None else w.scalar("min", a["min"], dtype)
        hi = "" if a["max"] is None else w.scalar("max", a["max"], dtype)
        return w.node("Clip", [ins[0], lo, hi], out)
    if op == "softmax":
        return w.node("Softmax", ins, out, axis=a["axis"])
    if op == "layer_norm":
        return w.node("LayerNormalization", ins, out, axis=a["axis"], epsilon=a["epsilon"])
    if op == "batch_norm":
        return w.node("BatchNormalization", ins, out, epsilon=a["epsilon"])
    if op == "max_pool2d":
        return w.node("MaxPool", ins, out, dilations=list(a["dilations"]), **_pool_attrs(a))
    if op == "avg_pool2d":
        if a["dilations"] != (1, 1):
            raise GraphError(f"to_onnx: node '{out}' (avg_pool2d): dilations {a['dilations']} have no ONNX "
                             f"AveragePool equivalent in opset {OPSET}")
        return w.node("AveragePool", ins, out, count_include_pad=int(a["count_include_pad"]), **_pool_attrs(a))
    if op == "reshape":
        return w.node("Reshape", [ins[0], w.const(out + "_shape", np.asarray(a["shape"], np.int64))], out)
    if op == "flatten":
        return w.node("Flatten", ins, out, axis=a["axis"])
    if op == "transpose":
        return w.node("Transpose", ins, out, perm=list(a["perm"]))
    if op == "concat":
        return w.node("Concat", ins, out, axis=a["axis"])
    if op in ("reduce_mean", "reduce_max"):
        return w.node({"reduce_mean": "ReduceMean", "reduce_max": "ReduceMax"}[op], ins, out, axes=list(a["axes"]),
                      keepdims=int(a["keepdims"]))
    if op == "reduce_sum":
        axes = w.const(out + "_axes", np.asarray(a["axes"], np.int64))
        return w.node("ReduceSum", [ins[0], axes], out, keepdims=int(a["keepdims"]))
    if op == "strided_slice":
        params = [w.const(f"{out}_{k}", np.asarray(a[key], np.int64))
                  for k, key in (("starts", "begin"), ("ends", "end"), ("axes", "axes"), ("steps", "strides"))]
        return w.node("Slice", [ins[0]] + params, out)
    if op == "take":
        return w.node("Gather", ins, out, axis=a["axis"])
    if op == "cast":
        return w.node("Cast", ins, out, to=w.helper.np_dtype_to_tensor_dtype(np.dtype(a["dtype"])))
    if op == "unsupported":
        raise GraphError(f"to_onnx: node '{out}' is unsupported op '{a['op_type']}' and cannot be exported")
    raise GraphError(f"to_onnx: node '{out}': no ONNX export for op '{op}'")


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
