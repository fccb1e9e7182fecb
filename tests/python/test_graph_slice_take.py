"""The graph ops strided_slice (ONNX Slice) and take (ONNX Gather) of computed tensors: Graph.evaluate and the
network built with graph.build equal numpy on awkward cases; both fuse as injective ops; shape inference keeps
dynamic dims; errors name the node; ONNX Slice / Gather and torch's slice, select, index_select and embedding
import as them (compared with onnxruntime and torch), and to_onnx round-trips them."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import _core
from autosched.graph import Graph, GraphError
from autosched.graph.fusion import partition

RNG = np.random.default_rng(11)
needs_llvm = pytest.mark.skipif(not _core.has_llvm(), reason="built without the LLVM backend")


def _w(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _built(g, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = ans.graph.build(g, "llvm", verbose=False)
    return net(*arrays)


def _check(g, arrays, expected):
    """Graph.evaluate and the built graph (where LLVM is there) both equal `expected`."""
    got = g.evaluate(*arrays)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    if _core.has_llvm():
        for a, b in zip(_built(g, *arrays), expected):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


# ---- strided_slice ----------------------------------------------------------------------------------------
SLICES = [  # (input shape, attrs, the numpy index)
    ((7, 11, 13), dict(begin=(1,), end=(6,), strides=(2,), axes=(1,)), np.s_[:, 1:6:2]),
    ((7, 11, 13), dict(begin=(-5, 2), end=(1000, 12), strides=(3, 3), axes=(-1, 0)), np.s_[2:12:3, :, -5::3]),
    ((13,), dict(begin=(-13,), end=(-1,)), np.s_[-13:-1]),
    ((5, 7), dict(begin=(0, -1), end=(5, 2**63 - 1)), np.s_[0:5, -1:]),
    ((3, 17), dict(begin=(-100,), end=(100,), strides=(5,), axes=(-1,)), np.s_[:, ::5]),
]


@pytest.mark.parametrize("shape, attrs, index", SLICES)
def test_strided_slice_matches_numpy(shape, attrs, index):
    g = Graph("slice")
    x = g.add_input("x", shape)
    s = g.add_node("strided_slice", [x], attrs)
    g.set_outputs([g.add_node("add", [s, s])])  # an injective consumer fused with it
    a = _w(*shape)
    _check(g, [a], [a[index] * 2])


def test_strided_slice_of_an_anchor_output_fuses():
    g = Graph("qkv")
    x = g.add_input("x", (2, 5, 7))
    qkv = g.add_node("dense", [x, g.add_constant("w", _w(9, 7))], name="qkv")
    k = g.add_node("strided_slice", [qkv], dict(begin=(3,), end=(6,), axes=(-1,)), name="k")
    g.set_outputs([g.add_node("relu", [k], name="out")])
    groups = partition(g)
    assert [[n.name for n in grp.nodes] for grp in groups] == [["qkv", "k", "out"]]
    a = _w(2, 5, 7)
    want = np.maximum(np.matmul(a, g.constants["w"].T)[..., 3:6], 0)
    _check(g, [a], [want])


def test_strided_slice_shape_inference_with_dynamic_dims():
    g = Graph("dyn")
    x = g.add_input("x", ("batch", "seq", 8))
    head = g.add_node("strided_slice", [x], dict(begin=(2,), end=(6,), axes=(-1,)))
    rest = g.add_node("strided_slice", [x], dict(begin=(0,), end=(2**63 - 1,), axes=(1,)))
    tail = g.add_node("strided_slice", [x], dict(begin=(1,), end=(2**63 - 1,), axes=(1,)))
    assert g.shape(head) == ("batch", "seq", 4)
    assert g.shape(rest) == ("batch", "seq", 8)  # the whole axis keeps its name
    assert g.shape(tail) == ("batch", None, 8)   # unknown until seq is bound
    g.set_outputs([tail])
    bound = g.bind(batch=2, seq=5)
    assert bound.shape(tail) == (2, 4, 8) and bound.problems() == []


@pytest.mark.parametrize("attrs, match", [
    (dict(begin=(5,), end=(0,), strides=(-1,)), "step -1: only positive steps"),
    (dict(begin=(0,), end=(3,), strides=(0,)), "a step is 0"),
    (dict(begin=(4,), end=(2,)), "axis 0: slice 4:2:1 of an axis of extent 5 is empty"),
    (dict(begin=(0,), end=(2,), axes=(2,)), "axes entry 2 is out of range for rank 2"),
    (dict(begin=(0, 0), end=(2,)), "one entry per sliced axis"),
    (dict(begin=(0, 0), end=(2, 2), axes=(1, -1)), "repeats an axis"),
])
def test_strided_slice_errors_name_the_node(attrs, match):
    g = Graph()
    x = g.add_input("x", (5, 3))
    with pytest.raises(GraphError, match=f"node 'cut' \\(strided_slice\\): .*{match}"):
        g.add_node("strided_slice", [x], attrs, name="cut")


# ---- take -------------------------------------------------------------------------------------------------
def _take_ref(data, indices, axis):
    n = data.shape[axis]
    idx = np.where(indices < 0, indices + n, indices)
    return np.take(data, idx, axis=axis)


TAKES = [  # (data shape, indices, axis)
    ((11, 7), np.array([3, -1, 0, 10, -11], np.int64), 0),
    ((3, 7, 5), np.array([[0, -2], [4, 6], [-7, 1]], np.int32), 1),
    ((3, 7, 5), np.array([2], np.int64), -1),
    ((13, 3), np.array(-4, np.int64), 0),  # a single (0-d) index drops the axis
]


@pytest.mark.parametrize("shape, indices, axis", TAKES)
@pytest.mark.parametrize("indices_kind", ["input", "constant"])
def test_take_matches_numpy(shape, indices, axis, indices_kind):
    g = Graph("take")
    data = g.add_input("data", shape)
    idx = g.add_input("ids", indices.shape, indices.dtype) if indices_kind == "input" else \
        g.add_constant("ids", indices)
    t = g.add_node("take", [data, idx], dict(axis=axis))
    assert g.shape(t) == _take_ref(np.zeros(shape), indices, axis).shape and g.dtype(t) == "float32"
    g.set_outputs([g.add_node("multiply", [t, t])])
    a = _w(*shape)
    arrays = [a, indices] if indices_kind == "input" else [a]
    _check(g, arrays, [_take_ref(a, indices, axis) ** 2])


def test_embedding_lookup_fuses_with_its_consumers():
    g = Graph("embed")
    ids = g.add_input("ids", (2, 5), "int64")
    e = g.add_node("take", [g.add_constant("table", _w(17, 6)), ids], name="embed")
    y = g.add_node("add", [e, g.add_constant("pos", _w(5, 6))], name="pos_add")
    g.set_outputs([g.add_node("layer_norm", [y, g.add_constant("g", _w(6)), g.add_constant("b", _w(6))])])
    names = [[n.name for n in grp.nodes] for grp in partition(g)]
    assert names[0] == ["embed", "pos_add"] and len(names) == 2
    ids_v = RNG.integers(-17, 17, size=(2, 5)).astype(np.int64)
    (want,) = g.evaluate(ids_v)
    if _core.has_llvm():
        np.testing.assert_allclose(_built(g, ids_v)[0], want, rtol=1e-4, atol=1e-4)


def test_take_shape_inference_keeps_dynamic_dims():
    g = Graph()
    ids = g.add_input("ids", ("batch", "seq"), "int32")
    t = g.add_node("take", [g.add_constant("table", _w(10, 4)), ids])
    assert g.shape(t) == ("batch", "seq", 4)
    assert g.bind(batch=1, seq=3).shape(t) == (1, 3, 4)


@pytest.mark.parametrize("axis, indices_dtype, match", [
    (2, "int64", "axis 2 is out of range for rank 2"),
    (-3, "int64", "axis -3 is out of range for rank 2"),
    (0, "float32", "indices must be int32 or int64, got float32"),
])
def test_take_errors_name_the_node(axis, indices_dtype, match):
    g = Graph()
    x, i = g.add_input("x", (5, 3)), g.add_input("i", (2,), indices_dtype)
    with pytest.raises(GraphError, match=f"node 'gather' \\(take\\): {match}"):
        g.add_node("take", [x, i], dict(axis=axis), name="gather")


@needs_llvm
def test_out_of_range_indices_are_clamped_in_the_built_graph():
    """Indices past either end read the first / last row (as the reference does), never out of bounds."""
    code = """if True:
        import warnings, numpy as np, autosched as ans
        from autosched.graph import Graph
        g = Graph()
        ids = g.add_input("ids", (6,), "int64")
        table = np.arange(12, dtype=np.float32).reshape(4, 3)
        g.set_outputs([g.add_node("take", [g.add_constant("table", table), ids])])
        ids_v = np.array([0, 4, -5, 1 << 40, -(1 << 40), 3], np.int64)
        warnings.simplefilter("ignore")
        got = ans.graph.build(g, "llvm", verbose=False)(ids_v)[0]
        assert np.array_equal(got, g.evaluate(ids_v)[0])
        assert np.array_equal(got, table[[0, 3, 0, 3, 0, 3]])
        print("clamped")
    """
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "clamped" in proc.stdout, proc.stderr[-2000:]


# ---- ONNX -------------------------------------------------------------------------------------------------
def _bert_embedding_model(onnx, batch="batch"):
    """ids -> Gather(word embeddings) + Slice(position embeddings) -> LayerNormalization -> MatMul (QKV), then
    Slice of the QKV activation (the keys), Gather of the class token (x[:, 0]) and a strided Slice."""
    from onnx import TensorProto, helper, numpy_helper
    vocab, seq, hidden = 23, 7, 8
    inits = {"word": _w(vocab, hidden), "pos": _w(16, hidden), "gamma": _w(hidden), "beta": _w(hidden),
             "wqkv": _w(hidden, 3 * hidden) * 0.3, "pos_start": np.array([0], np.int64),
             "pos_end": np.array([seq], np.int64), "k_start": np.array([hidden], np.int64),
             "k_end": np.array([2 * hidden], np.int64), "last": np.array([-1], np.int64),
             "zero": np.array(0, np.int64), "s_start": np.array([1, -5], np.int64),
             "s_end": np.array([1 << 62, 1 << 62], np.int64), "s_axes": np.array([1, -1], np.int64),
             "s_steps": np.array([3, 2], np.int64)}
    nodes = [
        helper.make_node("Gather", ["word", "ids"], ["tok"], name="word_embed"),
        helper.make_node("Slice", ["pos", "pos_start", "pos_end"], ["pos_used"]),  # all constant: folded
        helper.make_node("Add", ["tok", "pos_used"], ["emb"]),
        helper.make_node("LayerNormalization", ["emb", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "wqkv"], ["qkv"]),
        helper.make_node("Slice", ["qkv", "k_start", "k_end", "last"], ["keys"], name="keys"),
        helper.make_node("Gather", ["ln", "zero"], ["cls"], axis=1, name="cls"),
        helper.make_node("Slice", ["ln", "s_start", "s_end", "s_axes", "s_steps"], ["strided"], name="strided"),
    ]
    f = TensorProto.FLOAT
    model = helper.make_model(helper.make_graph(
        nodes, "bert_embed", [helper.make_tensor_value_info("ids", TensorProto.INT64, [batch, seq])],
        [helper.make_tensor_value_info("keys", f, [batch, seq, hidden]),
         helper.make_tensor_value_info("cls", f, [batch, hidden]),
         helper.make_tensor_value_info("strided", f, [batch, 2, 3])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()]), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model, vocab, seq


def _torch_available():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _ort_run(ort, model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # torch, on onnx's weights
def test_onnx_embedding_model_matches_onnxruntime_and_builds():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from autosched.frontends import UnsupportedOperatorWarning, from_onnx
    model, vocab, seq = _bert_embedding_model(onnx)
    with pytest.warns(UnsupportedOperatorWarning, match="dynamic dimension 'batch'"):
        graph = from_onnx(model)
    assert not [n for n in graph.nodes if n.op == "unsupported"]
    ops = [n.op for n in graph.nodes]
    assert ops.count("take") == 2 and ops.count("strided_slice") == 2  # the position Slice was folded
    assert graph.shape("keys") == ("batch", seq, 8) and graph.shape("cls") == ("batch", 8)
    assert graph.shape("strided") == ("batch", 2, 3)
    bound = graph.bind(batch=3)
    ids = RNG.integers(-vocab, vocab, size=(3, seq)).astype(np.int64)
    want = _ort_run(ort, model, {"ids": ids})
    _check(bound, [ids], want)
    if _torch_available():
        from autosched.graph.torch_runner import TorchGraph
        for a, b in zip(TorchGraph(bound)(ids), want):  # negative token ids count from the end there too
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    tasks, weights = ans.extract_tasks(bound, "llvm")
    assert len(tasks) >= 2 and sum(weights) >= len(tasks)
    if _core.has_llvm():
        for task in tasks:
            ans.build(task)
    # to_onnx round-trips the ops: onnxruntime runs the exported graph, from_onnx reads it back
    exported = bound.to_onnx()
    assert {"Slice", "Gather"} <= {n.op_type for n in exported.graph.node}
    for a, b in zip(_ort_run(ort, exported, {"ids": ids}), want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    again = from_onnx(exported)
    assert [n.op for n in again.nodes] == [n.op for n in bound.nodes]
    for a, b in zip(again.evaluate(ids), want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_onnx_slice_the_importer_cannot_map_is_an_unsupported_node():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from autosched.frontends import UnsupportedOperatorWarning, from_onnx
    inits = [numpy_helper.from_array(np.array([-1], np.int64), "start"),
             numpy_helper.from_array(np.array([-(1 << 62)], np.int64), "end"),
             numpy_helper.from_array(np.array([1], np.int64), "axis"),
             numpy_helper.from_array(np.array([-1], np.int64), "step")]
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Slice", ["r", "start", "end", "axis", "step"], ["flipped"], name="flip"),
             helper.make_node("Slice", ["r", "start", "stop", "axis"], ["cut"], name="cut")]
    f = TensorProto.FLOAT
    model = helper.make_model(helper.make_graph(
        nodes, "bad_slices", [helper.make_tensor_value_info("x", f, [2, 5]),
                              helper.make_tensor_value_info("stop", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("flipped", f, None), helper.make_tensor_value_info("cut", f, None)],
        inits), opset_imports=[helper.make_opsetid("", 17)])
    with pytest.warns(UnsupportedOperatorWarning, match="unsupported operator Slice \\(node flip\\): .*positive"):
        graph = from_onnx(model)
    reasons = {n.name: n.attrs["reason"] for n in graph.nodes if n.op == "unsupported"}
    assert "steps (-1,): only positive steps are supported" in reasons["flip"]
    assert "ends (stop) is computed at run time" in reasons["cut"]
    assert graph.shape("flip") == (2, 5)  # from ONNX shape inference
    assert [n.op for n in graph.nodes].count("relu") == 1


# ---- torch ------------------------------------------------------------------------------------------------
def test_torch_embedding_and_slices_match_torch_and_build():
    torch = pytest.importorskip("torch")
    from autosched.frontends import from_torch

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(19, 6)
            self.proj = torch.nn.Linear(6, 6)
            self.register_buffer("rows", torch.tensor([4, 0, 2], dtype=torch.int64))

        def forward(self, ids):
            x = self.proj(self.embed(ids))
            window = x[:, 1:5]                    # slice
            cls = x[:, 0]                         # select
            picked = torch.index_select(x, 1, self.rows)
            return torch.relu(window), cls * 2, picked[:, :, ::2]

    torch.manual_seed(0)
    module = Head().eval()
    ids = torch.randint(0, 19, (2, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = from_torch(module, (ids,))
    ops = {n.op for n in graph.nodes}
    assert {"take", "strided_slice"} <= ops and "unsupported" not in ops
    with torch.no_grad():
        want = [t.numpy() for t in module(ids)]
    _check(graph, [ids.numpy()], want)
    from autosched.graph.torch_runner import TorchGraph
    for a, b in zip(TorchGraph(graph)(ids.numpy()), want):  # the graph's ops on torch's kernels
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    tasks, _ = ans.extract_tasks(graph, "llvm")
    if _core.has_llvm():
        for task in tasks:
            ans.build(task)
