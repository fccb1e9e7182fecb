"""The importer tests' shared checks: an ONNX model built from nodes, and an import (from_onnx or from_torch)
compiled untuned and compared with the framework that made it."""
import warnings

import numpy as np
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from autosched.graph import build
from graph_cases import assert_outputs_match


def onnx_model(nodes, inputs, outputs, initializers=(), opset=18):
    """inputs: (name, array) fed at run time; outputs: names (types left to the runtime); initializers:
    (name, array)."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper

    def info(name, array):
        dtype = helper.np_dtype_to_tensor_dtype(np.asarray(array).dtype)
        return helper.make_tensor_value_info(name, dtype, np.shape(array))
    outs = [onnx.ValueInfoProto(name=n) for n in outputs]
    inits = [numpy_helper.from_array(np.asarray(a), name=n) for n, a in initializers]
    graph = helper.make_graph(nodes, "m", [info(n, a) for n, a in inputs], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 9)
    return model


def check_onnx_import(model, feeds, tol=1e-5, reexport=False):
    """from_onnx imports every node and the untuned build equals onnxruntime (with `reexport`, so does the
    graph's own ONNX export); returns the graph."""
    ort = pytest.importorskip("onnxruntime")
    feeds = dict(feeds)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_onnx(model)
    assert_outputs_match(build(graph, "llvm", verbose=False)(**feeds), want, tol)
    if reexport:
        exported = ort.InferenceSession(graph.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
        assert_outputs_match(exported.run(None, feeds), want, tol)
    return graph


def check_torch_import(module, *inputs, tol=1e-5, torch_runner=False):
    """from_torch imports every op and the untuned build equals the module (with `torch_runner`, so does the
    graph run by TorchGraph, the ops' torch functions); returns the graph."""
    torch = pytest.importorskip("torch")
    module.eval()
    with torch.no_grad():
        want = module(*inputs)
    want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else [want])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)
        graph = frontends.from_torch(module, tuple(inputs))
    arrays = [i.numpy() for i in inputs]
    assert_outputs_match(build(graph, "llvm", verbose=False)(*arrays), want, tol)
    if torch_runner:
        from autosched.graph.torch_runner import TorchGraph
        assert_outputs_match(TorchGraph(graph)(*arrays), want, tol)
    return graph
