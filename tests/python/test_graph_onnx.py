"""Graph.to_onnx: every op of the table exported (opset 17) and run by onnxruntime equals Graph.evaluate; dynamic
dims become dim_params; what cannot be exported is refused by name; a missing onnx package is a clear
ImportError."""
import sys

import numpy as np
import pytest

from autosched.graph import Graph, GraphError
from autosched.graph.layout import BLOCKED_OPS

from graph_cases import CASES, one_node_graph, random_inputs

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def run_onnxruntime(g, arrays):
    session = ort.InferenceSession(g.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(g.inputs, arrays)))


def _exportable(case):
    """Cases onnxruntime runs: no avg_pool2d dilations (not in opset 17), no pooling pad as large as the kernel
    (onnxruntime refuses it; the ONNX spec does not), no channel-blocked op (ONNX has no such layout; refused,
    see test_blocked_ops_are_refused), no weight packed for the bfloat16 dot product (test_bf16_dot.py)."""
    op, _, attrs = case
    if op in BLOCKED_OPS or op == "dense_bf16_dot":
        return False
    if op == "avg_pool2d" and attrs.get("dilations", 1) != 1:
        return False
    if op in ("max_pool2d", "avg_pool2d"):
        return max(np.atleast_1d(attrs.get("pads", 0))) < min(np.atleast_1d(attrs["kernel"]))
    return True


ONNX_CASES = [c for c in CASES if _exportable(c)]


@pytest.mark.parametrize("op, shapes, attrs", ONNX_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(ONNX_CASES)])
def test_onnxruntime_matches_evaluate(op, shapes, attrs):
    g = one_node_graph(op, shapes, attrs)
    arrays = random_inputs(op, shapes)
    (want,) = g.evaluate(*arrays)
    (got,) = run_onnxruntime(g, arrays)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-5 if want.dtype == np.float32 else 2e-3
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_weights_dynamic_dims_and_path(tmp_path):
    g = Graph("dyn")
    x = g.add_input("x", ("batch", 4))
    w = g.add_constant("w", np.arange(12, dtype=np.float32).reshape(3, 4))
    g.set_outputs([g.add_node("dense", [x, w], name="y")])
    path = tmp_path / "dyn.onnx"
    model = g.to_onnx(path)
    assert model.opset_import[0].version == 17
    assert [i.name for i in model.graph.initializer] == ["w"]
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 4
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    a = np.ones((5, 4), np.float32)
    (got,) = session.run(None, {"x": a})
    np.testing.assert_allclose(got, a @ g.constants["w"].T)


def test_what_cannot_be_exported_is_refused():
    g = Graph()
    g.set_outputs([g.add_unsupported("Loop", [g.add_input("x", (2,))], name="loop")])
    with pytest.raises(GraphError, match="'loop' is unsupported op 'Loop'"):
        g.to_onnx()
    g = one_node_graph("avg_pool2d", [(1, 1, 9, 9)], dict(kernel=2, dilations=2))
    with pytest.raises(GraphError, match="avg_pool2d_out.*dilations"):
        g.to_onnx()
    with pytest.raises(GraphError, match="no outputs"):
        e = Graph("e")
        e.add_input("x", (2,))
        e.to_onnx()


@pytest.mark.parametrize("op", sorted(BLOCKED_OPS))
def test_blocked_ops_are_refused(op):
    _, shapes, attrs = next(c for c in CASES if c[0] == op)
    with pytest.raises(GraphError, match=f"{op}_out' \\({op}\\) is in the channel-blocked layout.*export the "
                                         "graph before the layout pass"):
        one_node_graph(op, shapes, attrs).to_onnx()


def test_missing_onnx_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    g = one_node_graph("relu", [(2,)])
    with pytest.raises(ImportError, match="needs the 'onnx' package"):
        g.to_onnx()
