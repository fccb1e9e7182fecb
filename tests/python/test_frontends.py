"""The importers autosched.frontends.from_onnx and from_torch: imported graphs compute what onnxruntime and
torch compute (Graph.evaluate is the reference), unsupported operators and dynamic dims are all reported in
one warning while the rest is imported, and bad input gets a clear error. Tests skip when onnx, onnxruntime
or torch is missing (scripts/install_deps.sh installs them)."""
import sys
import warnings

import numpy as np
import pytest

from autosched import frontends
from autosched.frontends import UnsupportedOperatorWarning
from autosched.graph import GraphError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _torch():
    pytest.importorskip("torch")
    import frontend_models
    return frontend_models


def _ort():
    return pytest.importorskip("onnxruntime")


def helper_model(nodes, inputs, outputs, initializers=(), opset=17):
    """An ONNX model from onnx.helper parts: inputs/outputs are (name, shape) of float32 tensors."""
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs]
    vo = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs]
    inits = [numpy_helper.from_array(np.asarray(a), name=n) for n, a in initializers]
    model = helper.make_model(helper.make_graph(nodes, "helper_model", vi, vo, inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 9)  # what onnxruntime reads
    onnx.checker.check_model(model)
    return model


def run_ort(model, *arrays):
    ort = _ort()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})


def _import_quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOperatorWarning)  # a supported model warns of nothing
        return fn(*args, **kwargs)


def _close(got, want, tol=2e-4):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))


# ---- whole networks -----------------------------------------------------------------------------------------
def test_resnet18_from_onnx_matches_onnxruntime_and_torch():
    fm = _torch()
    import torch
    model = fm.resnet18(num_classes=10)
    x = torch.randn(1, 3, 64, 64)
    proto = fm.to_onnx(model, [x], fold=False)
    graph = _import_quietly(frontends.from_onnx, proto)
    ops = [n.op for n in graph.nodes]
    assert ops.count("conv2d") == 20 and ops.count("batch_norm") == 20
    assert "dense" in ops and "global_avg_pool2d" in ops and "max_pool2d" in ops
    assert graph.node(graph.outputs[0]).inputs[1:] == ["fc.weight", "fc.bias"]  # the Linear as it is
    assert graph.problems() == []
    (got,) = graph.evaluate(x.numpy())
    with torch.no_grad():
        want = model(x).numpy()
    _close(got, want)
    _close(got, run_ort(proto, x.numpy())[0])


def test_resnet18_from_torch_matches_torch():
    fm = _torch()
    import torch
    model = fm.resnet18(num_classes=10)
    x = torch.randn(1, 3, 64, 64)
    graph = _import_quietly(frontends.from_torch, model, (x,))
    ops = [n.op for n in graph.nodes]
    assert ops.count("conv2d") == 20 and ops.count("batch_norm") == 20 and "dense" in ops
    assert set(graph.constants) >= {"conv1.weight", "fc.bias", "layer1.0.bn1.running_var"}
    assert graph.problems() == []
    with torch.no_grad():
        want = model(x).numpy()
    _close(graph.evaluate(x.numpy())[0], want)
    assert not model.training  # from_torch put the mode back


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's own, from run_decompositions
def test_from_torch_reads_core_aten_decompositions():
    # convolution, _native_batch_norm_legit_no_training, max_pool2d_with_indices, addmm, mm, _softmax ...
    fm = _torch()
    import torch
    torch.manual_seed(0)
    model = fm.ResNet(layers=(1, 1, 1, 1), widths=(8, 8, 16, 16), num_classes=10).eval()
    x = torch.randn(1, 3, 32, 32)
    program = torch.export.export(model, (x,)).run_decompositions()
    graph = _import_quietly(frontends.from_torch, program)
    assert graph.problems() == [] and [n.op for n in graph.nodes].count("batch_norm") == 12
    with torch.no_grad():
        _close(graph.evaluate(x.numpy())[0], model(x).numpy())
    layer = fm.encoder_layer()
    xe = torch.randn(2, 8, 32)
    graph = _import_quietly(frontends.from_torch, torch.export.export(layer, (xe,)).run_decompositions())
    assert graph.problems() == []
    with torch.no_grad():
        _close(graph.evaluate(xe.numpy())[0], layer(xe).numpy())


def test_from_torch_scalar_arithmetic_follows_torch_promotion():
    _torch()
    import torch

    class Arith(torch.nn.Module):
        def forward(self, x, i):
            y = torch.relu_((x * 2 + 1) / 3 - 0.5 * x)  # in place: later readers see the result
            return y + x, i * 0.5, i / 2, torch.rsqrt(x.abs() + 1), 2 - x, torch.clamp(x, min=-0.1)

    x, i = torch.randn(2, 3), torch.arange(6).view(2, 3)
    graph = _import_quietly(frontends.from_torch, Arith(), (x, i))
    for got, want in zip(graph.evaluate(x.numpy(), i.numpy()), Arith()(x.clone(), i)):
        assert got.dtype == np.float32
        _close(got, want.numpy())


def test_transformer_layer_through_both_importers():
    fm = _torch()
    import torch
    model = fm.encoder_layer()
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        want = model(x).numpy()
    proto = fm.to_onnx(model, [x])  # shape arithmetic (Shape, Gather, Div ...) folds into reshape attrs
    from_onnx = _import_quietly(frontends.from_onnx, proto)
    from_torch = _import_quietly(frontends.from_torch, model, (x,))
    for graph in (from_onnx, from_torch):
        ops = {n.op for n in graph.nodes}
        assert {"layer_norm", "softmax", "matmul", "reshape", "transpose"} <= ops, ops
        assert graph.problems() == []
        _close(graph.evaluate(x.numpy())[0], want)
    assert "gelu" in {n.op for n in from_torch.nodes} and "erf" in {n.op for n in from_onnx.nodes}
    _close(from_onnx.evaluate(x.numpy())[0], run_ort(proto, x.numpy())[0])


@pytest.mark.parametrize("name, options", [("mobilenet_v2", dict(image_size=32, num_classes=10)),
                                           ("bert_layer", dict(seq_len=8, hidden=32, heads=4, ffn=64))])
def test_zoo_models_round_trip_through_onnx(name, options):
    from autosched.graph import zoo
    graph = zoo.get_model(name, **options)
    back = _import_quietly(frontends.from_onnx, graph.to_onnx())
    if name == "mobilenet_v2":  # depthwise convolutions, clip (ReLU6) ...: node for node the same graph
        assert [(n.op, n.attrs) for n in back.nodes] == [(n.op, n.attrs) for n in graph.nodes]
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(graph.shape(i)).astype(graph.dtype(i)) for i in graph.inputs]
    for got, want in zip(back.evaluate(*xs), graph.evaluate(*xs)):
        _close(got, want)


# ---- problems are reported, not fatal ----------------------------------------------------------------------
def _dynamic_topk_model():
    fm = _torch()
    import torch
    model = fm.TopKHead().eval()
    x = torch.randn(2, 3, 8, 8)
    return fm.to_onnx(model, [x], dynamic_axes={"input0": {0: "batch"}, "output": {0: "batch"}}), model, x


def test_dynamic_batch_and_unsupported_operator_are_listed_in_one_warning():
    proto, model, x = _dynamic_topk_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = frontends.from_onnx(proto)
    ours = [w for w in caught if issubclass(w.category, UnsupportedOperatorWarning)]
    assert len(ours) == 1
    text = str(ours[0].message)
    topk = [n for n in graph.nodes if n.op == "unsupported"]
    assert len(topk) == 1 and topk[0].attrs["op_type"] == "TopK"
    assert "TopK" in text and topk[0].name in text and "'batch'" in text
    # The rest is there: conv, relu, flatten, dense; the TopK output has ONNX's inferred shape.
    assert {"conv2d", "relu", "flatten", "dense"} <= {n.op for n in graph.nodes}
    assert graph.shape(graph.inputs[0]) == ("batch", 3, 8, 8)
    assert graph.shape(topk[0].name) == ("batch", 3)
    problems = graph.problems()
    assert {name for name, _, _ in problems} >= {topk[0].name}
    assert all(op == "unsupported" or "batch" in why or "dynamic" in why for _, op, why in problems), problems
    with pytest.raises(GraphError):
        graph.evaluate(x.numpy())
    # Binding the batch leaves only the operator.
    bound = graph.bind(batch=2)
    assert [(name, op) for name, op, _ in bound.problems()] == [(topk[0].name, "unsupported")]


def test_unsupported_nodes_in_the_middle_keep_the_graph_whole():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Acos", ["r"], ["s"], name="my_acos"),
             helper.make_node("Mul", ["s", "w"], ["m"]), helper.make_node("Atan", ["m"], ["q"]),
             helper.make_node("Add", ["q", "r"], ["y"])]
    model = helper_model(nodes, [("x", ("n", 4))], [("y", ("n", 4))], [("w", np.ones(4, np.float32))])
    with pytest.warns(UnsupportedOperatorWarning) as caught:
        graph = frontends.from_onnx(model)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "Acos (node my_acos)" in text and "Atan" in text and "'n'" in text
    assert [n.op for n in graph.nodes] == ["relu", "unsupported", "multiply", "unsupported", "add"]
    assert graph.shape(graph.outputs[0]) == ("n", 4)  # shapes go on through the unsupported nodes
    assert [op for _, op, _ in graph.bind(n=2).problems()] == ["unsupported", "unsupported"]


def test_dynamic_batch_through_shape_arithmetic():
    fm = _torch()
    import torch
    model = fm.encoder_layer()
    proto = fm.to_onnx(model, [torch.randn(2, 8, 32)], dynamic_axes={"input0": {0: "batch"}})
    with pytest.warns(UnsupportedOperatorWarning, match="dynamic dimension 'batch'"):
        graph = frontends.from_onnx(proto)
    assert not [n for n in graph.nodes if n.op == "unsupported"]  # reshape targets (batch, 8, 4, 8) mapped
    bound = graph.bind(batch=3)
    assert bound.problems() == []
    x = np.random.default_rng(2).standard_normal((3, 8, 32)).astype(np.float32)
    _close(bound.evaluate(x)[0], run_ort(proto, x)[0])


def test_shape_dict_binds_dynamic_dims_at_import():
    proto, model, x = _dynamic_topk_model()
    for shape_dict in ({"input0": (2, 3, 8, 8)}, {"batch": 2}):
        with pytest.warns(UnsupportedOperatorWarning) as caught:
            graph = frontends.from_onnx(proto, shape_dict=shape_dict)
        assert "batch" not in str(caught[0].message)
        assert graph.shape(graph.inputs[0]) == (2, 3, 8, 8)
        assert [op for _, op, _ in graph.problems()] == ["unsupported"]


def test_shape_dict_binds_a_dim_once_whatever_the_order_of_its_keys():
    """An input's shape binds its dynamic dims for every input; a dim bound to two values is refused."""
    nodes = [helper.make_node("Add", ["x", "y"], ["s"])]
    model = helper_model(nodes, [("x", ("n", 4)), ("y", ("n", 4))], [("s", ("n", 4))])
    for shape_dict in ({"n": 3, "x": (3, 4)}, {"x": (3, 4), "n": 3}, {"x": (3, 4)}, {"y": (3, 4), "x": (3, 4)}):
        graph = _import_quietly(frontends.from_onnx, model, shape_dict=shape_dict)
        assert [graph.shape(v) for v in graph.inputs] == [(3, 4), (3, 4)], shape_dict
    for shape_dict in ({"n": 3, "x": (1, 4)}, {"x": (1, 4), "n": 3}):
        with pytest.raises(ValueError, match=r"shape_dict\['x'\] = \(1, 4\) sets dim 0 of 'x', the dynamic dim "
                                             r"'n', to 1, but shape_dict\['n'\] = 3 binds 'n' to 3"):
            frontends.from_onnx(model, shape_dict=shape_dict)
    with pytest.raises(ValueError, match=r"shape_dict\['y'\] = \(2, 4\) .* but shape_dict\['x'\] = \(3, 4\)"):
        frontends.from_onnx(model, shape_dict={"x": (3, 4), "y": (2, 4)})
    with pytest.raises(ValueError, match="must be a positive int"):
        frontends.from_onnx(model, shape_dict={"n": (3,)})


def test_from_torch_reports_unsupported_aten_ops():
    fm = _torch()
    import torch
    model = fm.TopKHead().eval()
    x = torch.randn(2, 3, 8, 8)
    with pytest.warns(UnsupportedOperatorWarning, match="topk"):
        graph = frontends.from_torch(model, x)
    unsupported = [n for n in graph.nodes if n.op == "unsupported"]
    assert len(unsupported) == 1 and graph.shape(unsupported[0].name) == (2, 3)
    assert {"conv2d", "relu", "flatten", "dense"} <= {n.op for n in graph.nodes}
    assert [op for _, op, _ in graph.problems()] == ["unsupported"]


def test_from_torch_keeps_dynamic_dims_under_the_users_name():
    fm = _torch()
    import torch
    model = fm.encoder_layer()
    x = torch.randn(2, 8, 32)
    batch = torch.export.Dim("batch")
    with pytest.warns(UnsupportedOperatorWarning, match="dynamic dimension 'batch'"):
        graph = frontends.from_torch(model, (x,), dynamic_shapes=({0: batch},))
    assert graph.shape(graph.inputs[0]) == ("batch", 8, 32)
    assert not [n for n in graph.nodes if n.op == "unsupported"]
    bound = graph.bind(batch=3)
    assert bound.problems() == []
    x3 = torch.randn(3, 8, 32)
    with torch.no_grad():
        _close(bound.evaluate(x3.numpy())[0], model(x3).numpy())


# ---- operators and folding, node by node --------------------------------------------------------------------
def test_shape_arithmetic_folds_into_reshape_attrs():
    # reshape(x, concat(shape(x)[0:1], [-1])) and squeeze/unsqueeze of a real tensor.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Unsqueeze", ["flat", "axes"], ["u"]),
        helper.make_node("Squeeze", ["u", "axes"], ["sq"]),
        helper.make_node("ConstantOfShape", ["s2"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32))),
        helper.make_node("Mul", ["sq", "ones"], ["y"]),
    ]
    inits = [("zero", np.array(0, np.int64)), ("zero1", np.array([0], np.int64)),
             ("minus1", np.array([-1], np.int64)), ("axes", np.array([1], np.int64)),
             ("s2", np.array([2, 48], np.int64))]
    model = helper_model(nodes, [("x", (2, 3, 4, 4))], [("y", (2, 48))], inits)
    graph = _import_quietly(frontends.from_onnx, model)
    reshapes = [n for n in graph.nodes if n.op == "reshape"]
    assert reshapes and all(all(isinstance(d, int) for d in n.attrs["shape"]) for n in reshapes)
    assert not any(n.op == "cast" or n.op == "unsupported" for n in graph.nodes)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    _close(graph.evaluate(x)[0], run_ort(model, x)[0])


def test_operator_attributes_convert():
    rng = np.random.default_rng(1)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Clip", ["c", "lo", "hi"], ["c6"]),
        helper.make_node("AveragePool", ["c6"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("MaxPool", ["p"], ["m"], kernel_shape=[2, 2], strides=[1, 1], ceil_mode=1),
        helper.make_node("ReduceMean", ["m", "rm_axes"], ["r"], keepdims=0),
        helper.make_node("Gemm", ["r", "g"], ["gm"], alpha=0.5, beta=2.0, transB=0),
        helper.make_node("Gelu", ["gm"], ["ge"], approximate="tanh"),
        helper.make_node("Gemm", ["ge", "h", "hb"], ["gm2"], transB=1),
        helper.make_node("Max", ["gm2", "gm2b"], ["mx"]),
        helper.make_node("Softmax", ["mx"], ["y"], axis=0),
    ]
    inits = [("w", f(6, 3, 3, 3)), ("lo", np.array(-0.5, np.float32)), ("hi", np.array(1.0, np.float32)),
             ("rm_axes", np.array([2, 3], np.int64)), ("g", f(6, 5)), ("h", f(4, 5)), ("hb", f(4)),
             ("gm2b", f(1, 4))]
    model = helper_model(nodes, [("x", (2, 3, 9, 9))], [("y", (2, 4))], inits, opset=20)
    graph = _import_quietly(frontends.from_onnx, model)
    conv = next(n for n in graph.nodes if n.op == "conv2d")
    assert conv.attrs["pads"] == (1, 1, 1, 1) and conv.shape == (2, 6, 5, 5)
    x = f(2, 3, 9, 9)
    _close(graph.evaluate(x)[0], run_ort(model, x)[0])


GEMM_BIASES = [(), (1,), (4,), (1, 4), (4, 1), (4, 4), (1, 1)]


def _gemm_model(c_shape, trans_a, trans_b, alpha, beta, b_constant=True, c_constant=True):
    """Y = alpha * A' @ B' + beta * C with A' (4, 5), B' (5, 4): M == N, so C's size cannot tell (4,) from
    (4, 1). Returns the model and its inputs (A, and B and C where they are not constants)."""
    rng = np.random.default_rng(len(c_shape) * 7 + sum(c_shape))
    a = rng.standard_normal((5, 4) if trans_a else (4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5) if trans_b else (5, 4)).astype(np.float32)
    c = rng.standard_normal(c_shape).astype(np.float32)
    inputs, arrays, inits = [("A", a.shape)], [a], []
    for name, array, constant in (("B", b, b_constant), ("C", c, c_constant)):
        if constant:
            inits.append((name, array))
        else:
            inputs.append((name, array.shape))
            arrays.append(array)
    node = helper.make_node("Gemm", ["A", "B", "C"], ["Y"], transA=int(trans_a), transB=int(trans_b),
                            alpha=alpha, beta=beta)
    model = helper_model([node], inputs, [("Y", (4, 4))], inits)
    want = alpha * (a.T if trans_a else a) @ (b.T if trans_b else b) + beta * c
    return model, arrays, want


@pytest.mark.parametrize("c_shape", GEMM_BIASES, ids=[f"C{'x'.join(map(str, s)) or '0d'}" for s in GEMM_BIASES])
def test_gemm_broadcasts_its_bias_by_shape(c_shape):
    """C broadcasts to (M, N) by its shape (ONNX unidirectional broadcasting): a (4, 1) C adds one value per
    row, a (4,) or (1, 4) C one per column, though all have 4 elements here."""
    for trans_a, trans_b, alpha, beta in ((0, 0, 1.0, 1.0), (1, 1, 1.0, 1.0), (0, 1, 0.5, 2.0),
                                          (1, 0, 1.5, 0.25)):
        for b_constant, c_constant in ((True, True), (False, True), (True, False)):
            model, arrays, want = _gemm_model(c_shape, trans_a, trans_b, alpha, beta, b_constant, c_constant)
            graph = _import_quietly(frontends.from_onnx, model)
            got = graph.evaluate(*arrays)[0]
            where = (c_shape, trans_a, trans_b, alpha, beta, b_constant, c_constant)
            assert got.shape == (4, 4), where
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(where))
            np.testing.assert_allclose(got, run_ort(model, *arrays)[0], rtol=1e-5, atol=1e-5, err_msg=str(where))


def test_gemm_with_a_bias_per_row_builds_to_the_right_answer():
    from autosched.graph import build
    for b_constant in (True, False):
        model, arrays, want = _gemm_model((4, 1), 0, 1, 1.0, 1.0, b_constant=b_constant)
        graph = _import_quietly(frontends.from_onnx, model)
        got = build(graph, "llvm", verbose=False)(*arrays)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, run_ort(model, *arrays)[0], rtol=1e-5, atol=1e-5)


def _constant_model(nodes, inits, outputs, opset=17):
    """A model without inputs: every node reads initializers, so the importer folds it. outputs: (name,
    TensorProto type), of shapes left to inference (which onnx.checker would refuse)."""
    vo = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    model = helper.make_model(
        helper.make_graph(nodes, "folded", [], vo, [numpy_helper.from_array(np.asarray(a), n) for n, a in inits]),
        opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 9)
    return model


def _folded_outputs(model):
    graph = _import_quietly(frontends.from_onnx, model)
    assert [n.op for n in graph.nodes] == [], graph.nodes  # all folded at import
    return graph.evaluate()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_folded_mod_follows_fmod(dtype):
    a = np.array([-7, 7, -7, 7, 8, -8], dtype)
    b = np.array([3, -3, -3, 3, 2, 5], dtype)
    kind = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    for fmod in ((1,) if dtype.startswith("float") else (0, 1)):  # a float Mod needs fmod=1 (ONNX)
        model = _constant_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], [("a", a), ("b", b)],
                                [("y", kind)])
        got, = _folded_outputs(model)
        want, = run_ort(model)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), (fmod, got, want)
    model = _constant_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)], [("a", a[:2]), ("b", b[:2])],
                            [("y", kind)])
    assert _folded_outputs(model)[0].tolist() == [-1, 1]  # the sign of the dividend


def test_mod_of_a_computed_value_is_reported_not_guessed():
    """The graph has no remainder op: a Mod that does not fold is an unsupported node, whatever its fmod."""
    for fmod in (0, 1):
        model = helper_model([helper.make_node("Mod", ["x", "d"], ["y"], fmod=fmod, name="rem")], [("x", (4,))],
                             [("y", (4,))], [("d", np.float32([3, -3, 3, -3]))])
        with pytest.warns(UnsupportedOperatorWarning, match="Mod"):
            graph = frontends.from_onnx(model)
        assert [(n.op, n.attrs.get("op_type")) for n in graph.nodes] == [("unsupported", "Mod")]
        with pytest.raises(GraphError):
            graph.evaluate(np.float32([-7, 7, 1, 2]))


def test_folded_ops_follow_their_attributes():
    """Every folded op whose attributes or types numpy does not follow by itself, against onnxruntime."""
    T = TensorProto
    ints = np.array([[5, -3, 2], [-7, 4, 1]], np.int32)
    big = np.array([2**62 + 1, -(2**62) - 1, -7, 7], np.int64)
    cases = [
        # ReduceSum (opset 13 takes axes as an input): no axes and noop_with_empty_axes=1 is the input itself;
        # int32 stays int32 (np.sum widens it).
        ([helper.make_node("ReduceSum", ["ints"], ["y"], noop_with_empty_axes=1)], T.INT32, 17),
        ([helper.make_node("ReduceSum", ["ints", "empty"], ["y"], noop_with_empty_axes=1)], T.INT32, 17),
        ([helper.make_node("ReduceSum", ["ints", "empty"], ["y"], keepdims=0)], T.INT32, 17),
        ([helper.make_node("ReduceSum", ["ints", "axis1"], ["y"], keepdims=1)], T.INT32, 17),
        ([helper.make_node("ReduceProd", ["ints"], ["y"], axes=[0], keepdims=0)], T.INT32, 17),
        ([helper.make_node("ReduceMax", ["ints", "empty"], ["y"], noop_with_empty_axes=1)], T.INT32, 18),
        ([helper.make_node("ReduceMin", ["ints"], ["y"], keepdims=0)], T.INT32, 18),
        # Pow's output has the base's type.
        ([helper.make_node("Pow", ["ints", "half"], ["y"])], T.INT32, 17),
        ([helper.make_node("Pow", ["floats", "two64"], ["y"])], T.FLOAT, 17),
        # Integer Div truncates, exactly beyond 2**53.
        ([helper.make_node("Div", ["big", "three"], ["y"])], T.INT64, 17),
        # Slice clamps as ONNX does: a start below -dim with a negative step is the first element.
        ([helper.make_node("Slice", ["floats", "s_lo", "e_lo", "ax1", "minus1"], ["y"])], T.FLOAT, 17),
        ([helper.make_node("Slice", ["floats", "s_hi", "e_hi", "ax1", "minus2"], ["y"])], T.FLOAT, 17),
        ([helper.make_node("Slice", ["floats", "s_mid", "e_hi", "ax1", "minus1"], ["y"])], T.FLOAT, 17),
        # Shape's start and end; Dropout's mask in inference.
        ([helper.make_node("Shape", ["floats"], ["y"], start=-1)], T.INT64, 17),
        ([helper.make_node("Dropout", ["floats"], ["d", "y"])], T.BOOL, 17),
    ]
    inits = [("ints", ints), ("empty", np.zeros(0, np.int64)), ("axis1", np.array([1], np.int64)),
             ("half", np.float32(0.5)), ("floats", np.arange(6, dtype=np.float32).reshape(2, 3)),
             ("two64", np.int64(2)), ("big", big), ("three", np.int64(3)), ("ax1", np.array([1], np.int64)),
             ("minus1", np.array([-1], np.int64)), ("minus2", np.array([-2], np.int64)),
             ("s_lo", np.array([-10], np.int64)), ("e_lo", np.array([-10], np.int64)),
             ("s_hi", np.array([10], np.int64)), ("e_hi", np.array([-10], np.int64)),
             ("s_mid", np.array([1], np.int64))]
    for nodes, kind, opset in cases:
        used = {i for n in nodes for i in n.input}
        model = _constant_model(nodes, [(n, a) for n, a in inits if n in used], [("y", kind)], opset)
        got, = _folded_outputs(model)
        want, = run_ort(model)
        where = helper.printable_node(nodes[0])
        assert got.dtype == want.dtype and got.shape == want.shape, (where, got, want)
        assert got.tolist() == want.tolist(), (where, got, want)


# ---- bad input ---------------------------------------------------------------------------------------------
def test_bad_input_gets_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        frontends.from_onnx(tmp_path / "missing.onnx")
    text = tmp_path / "notes.onnx"
    text.write_text("this is not a model\n")
    with pytest.raises(ValueError, match="not an ONNX model"):
        frontends.from_onnx(text)
    with pytest.raises(TypeError, match="ModelProto"):
        frontends.from_onnx(42)
    old = helper_model([helper.make_node("Relu", ["x"], ["y"])], [("x", (1, 4))], [("y", (1, 4))], opset=11)
    with pytest.raises(ValueError, match="opset 11"):
        frontends.from_onnx(old)
    relu = helper_model([helper.make_node("Relu", ["x"], ["y"])], [("x", ("n", 4))], [("y", ("n", 4))])
    with pytest.raises(ValueError, match="shape_dict key 'nope'"):
        frontends.from_onnx(relu, shape_dict={"nope": 1})
    with pytest.raises(ValueError, match="rank"):
        frontends.from_onnx(relu, shape_dict={"x": (1, 2, 3)})
    with open(tmp_path / "relu.onnx", "wb") as f:  # a path and bytes work
        f.write(relu.SerializeToString())
    for source in (tmp_path / "relu.onnx", str(tmp_path / "relu.onnx"), relu.SerializeToString()):
        assert [n.op for n in frontends.from_onnx(source, shape_dict={"n": 2}).nodes] == ["relu"]
    pytest.importorskip("torch")
    with pytest.raises(TypeError, match="torch.nn.Module"):
        frontends.from_torch("not a module", ())


def test_missing_packages_give_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    with pytest.raises(ImportError, match="pip install onnx"):
        frontends.from_onnx("model.onnx")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match="pip install torch"):
        frontends.from_torch(object(), ())


def test_zero_dimensional_tensors_keep_their_rank():
    """A 0-d input plus a 0-d weight, and a reciprocal (whose 1 the importer adds as a constant), give 0-d
    outputs, as in onnxruntime."""
    nodes = [helper.make_node("Add", ["x", "w"], ["y"]), helper.make_node("Reciprocal", ["y"], ["z"])]
    model = helper_model(nodes, [("x", [])], [("z", [])], [("w", np.float32(2.5))])
    graph = frontends.from_onnx(model)
    assert graph.shape(graph.outputs[0]) == ()
    x = np.array(1.5, dtype="float32")
    want = run_ort(model, x)[0]
    got = graph.evaluate(x)[0]
    assert got.shape == want.shape == () and np.allclose(got, want)
    from autosched.graph import build
    assert np.allclose(build(graph, "llvm")(x)[0], want)
