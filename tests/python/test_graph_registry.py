"""The op registry: every op is one OpDef with all it needs; an op registered in one place (here, in the test)
runs through every path (Graph.evaluate, fusion and graph.build, to_onnx and onnxruntime, from_onnx,
TorchGraph, from_torch) with no other table touched; the importers map foreign ops onto the registry; what
would be ambiguous is refused."""
import pathlib
import re
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import te
from autosched.frontends import UnsupportedOperatorWarning
from autosched.graph import Graph, GraphError, OpDef, OpError, fusion, op_table, registry
from autosched.graph.layout import BLOCKED_OPS, convert_layout
from autosched.graph.opdef import FUSION_KINDS, LAYOUT_KINDS

RNG = np.random.default_rng(11)


def _same_shape(attrs, shapes, dtypes):
    return shapes[0], dtypes[0]


def _softsign_te(node, x):
    one = te.const(1.0, x.dtype)
    return te.compute(x.shape, lambda *i: x[i] / (one + te.abs(x[i])), name=node.name, tag="elemwise")


# The whole definition of a new op: x / (1 + |x|).
SOFTSIGN = OpDef("softsign", 1, _same_shape, fusion="injective", layout="elementwise", float_only=True,
                 reference=lambda node, x: x / (1 + np.abs(x)), te=_softsign_te, onnx="Softsign",
                 torch=lambda torch, node, x: torch.nn.functional.softsign(x))


@pytest.fixture
def softsign():
    registry.register(SOFTSIGN)
    yield SOFTSIGN
    registry.unregister("softsign")


def conv_softsign():
    g = Graph("net")
    x = g.add_input("x", (1, 3, 6, 6))
    w = g.add_constant("w", RNG.standard_normal((4, 3, 3, 3)).astype(np.float32))
    y = g.add_node("conv2d", [x, w], dict(pads=1), name="conv")
    g.set_outputs([g.add_node("softsign", [y], name="act")])
    return g


def test_a_new_op_runs_through_every_path(softsign):
    g = conv_softsign()
    assert g.node("act").shape == (1, 4, 6, 6) and g.node("act").dtype == "float32"
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    (want,) = g.evaluate(x)
    y = Graph("conv")  # the convolution alone
    y.set_outputs([y.add_node("conv2d", [y.add_input("x", (1, 3, 6, 6)), y.add_constant("w", g.constants["w"])],
                              dict(pads=1))])
    (pre,) = y.evaluate(x)
    np.testing.assert_allclose(want, pre / (1 + np.abs(pre)), rtol=1e-6)

    groups = fusion.partition(g)  # injective (the default): it joins the convolution's kernel
    assert [[n.name for n in grp.nodes] for grp in groups] == [["conv", "act"]]
    net = ans.graph.build(g, "llvm", verbose=False)
    (got,) = net(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

    ort = pytest.importorskip("onnxruntime")
    model = g.to_onnx()
    assert [n.op_type for n in model.graph.node] == ["Conv", "Softsign"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

    back = ans.frontends.from_onnx(model)  # the ONNX importer maps Softsign onto the op
    assert [n.op for n in back.nodes] == ["conv2d", "softsign"]
    np.testing.assert_allclose(back.evaluate(x)[0], want, rtol=1e-6)

    pytest.importorskip("torch")
    from autosched.graph.torch_runner import TorchGraph
    np.testing.assert_allclose(TorchGraph(g)(x)[0], want, rtol=1e-5, atol=1e-6)


def test_a_new_op_is_checked_like_the_others(softsign):
    g = Graph("ints")
    x = g.add_input("x", (3,), "int32")
    with pytest.raises(GraphError, match=r"node 'bad' \(softsign\): needs floating-point inputs, got int32"):
        g.add_node("softsign", [x], name="bad")
    with pytest.raises(GraphError, match=r"softsign\): unknown attr axis \(known: none\)"):
        g.add_node("softsign", [g.add_input("y", (3,))], attrs=dict(axis=0))
    assert "softsign" in op_table.FLOAT_ONLY and "softsign" in op_table.OPS


def test_an_unregistered_op_is_gone():
    registry.register(SOFTSIGN)
    registry.unregister("softsign")
    g = Graph("g")
    with pytest.raises(GraphError, match="unknown op 'softsign'"):
        g.add_node("softsign", [g.add_input("x", (3,))])
    assert registry.by_onnx("Softsign") is None


def test_the_aten_name_of_a_new_op_is_imported():
    torch = pytest.importorskip("torch")
    registry.register(OpDef("sinc", 1, _same_shape, fusion="injective", layout="elementwise", float_only=True,
                            reference=lambda node, x: np.sinc(x), aten="sinc"))
    try:
        class Net(torch.nn.Module):
            def forward(self, x):
                return torch.sinc(x) * 2.0

        with warnings.catch_warnings():
            warnings.simplefilter("error", UnsupportedOperatorWarning)
            g = ans.frontends.from_torch(Net(), (torch.zeros(2, 3),))
        assert [n.op for n in g.nodes] == ["sinc", "multiply"]
        x = RNG.standard_normal((2, 3)).astype(np.float32)
        np.testing.assert_allclose(g.evaluate(x)[0], np.sinc(x) * 2, rtol=1e-6)
    finally:
        registry.unregister("sinc")


def test_what_an_op_lacks_is_named():
    registry.register(OpDef("halve", 1, _same_shape, fusion="injective", layout="nchw"))  # inference only
    try:
        g = Graph("g")
        g.set_outputs([g.add_node("halve", [g.add_input("x", (3,))], name="h")])
        with pytest.raises(GraphError, match=r"evaluate: node 'h' \(halve\): op 'halve' has no numpy reference"):
            g.evaluate(np.ones(3, np.float32))
        with pytest.raises(OpError, match="op 'halve' has no te builder$"):
            ans.extract_tasks(g, "llvm")
        pytest.importorskip("onnx")
        with pytest.raises(GraphError, match="to_onnx: node 'h': no ONNX export for op 'halve'"):
            g.to_onnx()
        pytest.importorskip("torch")
        from autosched.graph.torch_runner import TorchGraph
        with pytest.raises(ValueError, match="graph 'g' has ops TorchGraph cannot run: halve"):
            TorchGraph(g)
    finally:
        registry.unregister("halve")


def test_every_built_in_op_is_defined_completely():
    for name, op_def in registry.OPS.items():
        assert op_def.fusion in FUSION_KINDS, f"op '{name}' has no fusion kind"
        assert callable(op_def.layout) or op_def.layout in LAYOUT_KINDS, f"op '{name}' has no layout facet"
        if name == "unsupported":
            continue
        missing = [f for f in ("infer_fn", "reference", "te", "onnx", "torch") if getattr(op_def, f) is None]
        assert not missing, f"op '{name}' has no {', '.join(missing)}"


def test_op_table_and_fusion_keep_their_names():
    assert op_table.FLOAT_ONLY == {"sigmoid", "tanh", "exp", "log", "sqrt", "erf", "gelu", "softmax", "layer_norm",
                                   "batch_norm", "avg_pool2d", "global_avg_pool2d", "reduce_mean", "power", "divide",
                                   "avg_pool2d_nchwc", "global_avg_pool2d_nchwc", "isnan", "isinf", "hard_sigmoid",
                                   "hard_swish", "silu", "mish", "group_norm", "sin", "cos", "floor", "ceil", "round",
                                   "softplus", "elu", "leaky_relu", "prelu", "log_softmax", "avg_pool3d"}
    assert fusion.ANCHOR_OPS == {"conv2d", "dense", "matmul", "max_pool2d", "avg_pool2d", "global_avg_pool2d",
                                 "softmax", "layer_norm", "group_norm", "conv2d_nchwc", "depthwise_conv2d_nchwc",
                                 "max_pool2d_nchwc", "avg_pool2d_nchwc", "global_avg_pool2d_nchwc",
                                 "conv2d_winograd_nchwc", "log_softmax", "argmax", "argmin", "conv3d", "max_pool3d",
                                 "avg_pool3d", "matmul_integer", "conv2d_integer", "conv2d_integer_nchwc",
                                 "dense_bf16_dot", "conv2d_nchwc_bf16_dot"}
    assert fusion.REDUCE_OPS == {"reduce_mean", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "cumsum"}
    assert registry.ops_of_layout("elementwise") == {"relu", "clip", "sigmoid", "tanh", "gelu", "abs", "negative",
                                                     "erf", "add", "subtract", "multiply", "maximum", "minimum",
                                                     "hard_sigmoid", "hard_swish", "silu", "mish", "sin", "cos",
                                                     "floor", "ceil", "round", "sign", "softplus", "elu",
                                                     "leaky_relu", "prelu"}
    assert registry.ops_of_layout("elementwise-unpadded") == {"exp", "log", "sqrt", "divide", "power"}
    assert registry.ops_of_layout("blocked") == BLOCKED_OPS == {
        "layout_transform", "conv2d_nchwc", "depthwise_conv2d_nchwc", "max_pool2d_nchwc", "avg_pool2d_nchwc",
        "global_avg_pool2d_nchwc", "conv2d_winograd_nchwc", "conv2d_integer_nchwc", "conv2d_nchwc_bf16_dot"}
    assert {op for op, d in registry.OPS.items() if callable(d.layout)} == {"conv2d", "max_pool2d", "avg_pool2d",
                                                                            "global_avg_pool2d", "concat", "conv2d_integer"}
    assert {op for op, d in registry.OPS.items() if d.bias_input is not None} == {
        "conv2d", "conv3d", "dense", "requantize", "dense_bf16_dot", "conv2d_nchwc_bf16_dot"}
    assert op_table.infer is registry.infer and op_table.OpError is OpError is registry.OpError
    with pytest.raises(OpError, match="unknown op 'nope'"):
        registry.get("nope")
    with pytest.raises(OpError, match=r"no te builder \(it is not compilable\)"):
        registry.te_builder("unsupported")


def test_registering_what_would_be_ambiguous_is_refused():
    with pytest.raises(ValueError, match="op 'relu' is already registered"):
        registry.register(OpDef("relu", 1, _same_shape, fusion="injective", layout="elementwise"))
    with pytest.raises(ValueError, match="ONNX op 'Relu' already is op 'relu'"):
        registry.register(OpDef("my_relu", 1, _same_shape, fusion="injective", layout="elementwise", onnx="Relu"))
    with pytest.raises(ValueError, match="ATen op 'exp' already is op 'exp'"):
        registry.register(OpDef("my_exp", 1, _same_shape, fusion="injective", layout="elementwise-unpadded",
                                aten=("exp",)))
    assert "my_relu" not in registry.OPS and "my_exp" not in registry.OPS
    with pytest.raises(TypeError, match="expected an OpDef"):
        registry.register("softsign")
    with pytest.raises(ValueError, match="an op with attrs exports through a function"):
        OpDef("scaled", 1, _same_shape, {"scale": (1.0, float)}, fusion="injective", layout="elementwise",
              onnx="Mul")
    with pytest.raises(ValueError, match="fusion must be one of"):
        OpDef("odd", 1, _same_shape, fusion="elementwise", layout="elementwise")
    with pytest.raises(ValueError, match="layout must be one of .* or a converter function"):
        OpDef("odd", 1, _same_shape, fusion="injective", layout="any")


def test_an_op_must_state_its_fusion_kind_and_layout_facet():
    with pytest.raises(TypeError, match=r"OpDef 'sine': layout is required: how the layout pass treats the op "
                                        r"in the channel-blocked layout, one of \('elementwise', "):
        OpDef("sine", 1, _same_shape, fusion="injective", reference=lambda node, x: np.sin(x))
    with pytest.raises(TypeError, match=r"OpDef 'sine': fusion is required: how fusion treats the op, one of "
                                        r"\('anchor', 'reduce', 'injective'\)"):
        OpDef("sine", 1, _same_shape, layout="elementwise", reference=lambda node, x: np.sin(x))
    assert "sine" not in registry.OPS


def test_a_new_elementwise_op_runs_inside_the_blocked_layout(softsign):
    """conv2d -> softsign -> conv2d: softsign stays between the blocked convolutions, also with a padded
    channel block (6 channels in blocks of 4), and computes what it computed in NCHW."""
    g = Graph("net")
    x = g.add_input("x", (1, 3, 6, 6))
    w1 = g.add_constant("w1", RNG.standard_normal((6, 3, 3, 3)).astype(np.float32))
    w2 = g.add_constant("w2", RNG.standard_normal((4, 6, 3, 3)).astype(np.float32))
    y = g.add_node("conv2d", [x, w1], dict(pads=1), name="conv1")
    a = g.add_node("softsign", [y], name="act")
    g.set_outputs([g.add_node("conv2d", [a, w2], dict(pads=1), name="conv2")])
    blocked = convert_layout(g, block=4)
    assert [n.op for n in blocked.nodes] == ["layout_transform", "conv2d_nchwc", "softsign", "conv2d_nchwc",
                                             "layout_transform"]
    act = blocked.node("act")
    assert blocked.producer(act.inputs[0]).op == "conv2d_nchwc" and act.shape == (1, 2, 6, 6, 4)
    data = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    (want,) = g.evaluate(data)
    np.testing.assert_allclose(blocked.evaluate(data)[0], want, rtol=1e-5, atol=1e-5)
    (got,) = ans.graph.build(g, "llvm", verbose=False, layout="NCHWc")(data)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_nchw_only_op_gets_its_input_back_in_nchw():
    registry.register(OpDef("halve", 1, _same_shape, fusion="injective", layout="nchw",
                            reference=lambda node, x: x / 2))
    try:
        g = Graph("net")
        w = g.add_constant("w", RNG.standard_normal((4, 3, 3, 3)).astype(np.float32))
        y = g.add_node("conv2d", [g.add_input("x", (1, 3, 6, 6)), w], dict(pads=1), name="conv")
        g.set_outputs([g.add_node("halve", [y], name="h")])
        blocked = convert_layout(g, block=4)
        assert [n.op for n in blocked.nodes] == ["layout_transform", "conv2d_nchwc", "layout_transform", "halve"]
        data = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
        np.testing.assert_allclose(blocked.evaluate(data)[0], g.evaluate(data)[0], rtol=1e-5, atol=1e-5)
    finally:
        registry.unregister("halve")


def test_onnx_ops_that_are_graph_ops_are_mapped_through_the_registry():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from autosched.frontends import onnx_ops

    assert "Relu" not in onnx_ops.CONVERTERS and "Add" not in onnx_ops.CONVERTERS
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"], odd=1)]  # an attribute the graph op does not have
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("x", "y")]
    model = helper.make_model(helper.make_graph(nodes, "g", info[:1], info[1:]),
                              opset_imports=[helper.make_opsetid("", 17)])
    assert isinstance(model, onnx.ModelProto)
    with pytest.warns(UnsupportedOperatorWarning, match="attribute\\(s\\) odd: graph op 'relu' takes none"):
        g = ans.frontends.from_onnx(model)
    assert [n.op for n in g.nodes] == ["relu", "add", "unsupported"]


def test_torch_graph_runs_cast():
    pytest.importorskip("torch")
    from autosched.graph.torch_runner import TorchGraph
    g = Graph("cast")
    g.set_outputs([g.add_node("cast", [g.add_input("x", (7,))], dict(dtype="int32"))])
    x = np.array([-2.7, -1.5, -0.2, 0.0, 0.4, 1.5, 3.9], np.float32)
    (got,) = TorchGraph(g)(x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, g.evaluate(x)[0])


def test_the_example_of_docs_graph_ops_runs():
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "graph_ops.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    try:
        exec(compile(code, "graph_ops.md", "exec"), {"__name__": "__docs__"})
        assert registry.get("softsign").onnx == "Softsign"
    finally:
        if "softsign" in registry.OPS:
            registry.unregister("softsign")
