"""The graph IR: building graphs, attr normalisation, shape / dtype inference (static and dynamic dims), errors
that name node and op, bind(), problems(), str()."""
import numpy as np
import pytest

from autosched.graph import Graph, GraphError, Node


def conv_graph(batch=1):
    g = Graph("net")
    x = g.add_input("data", (batch, 3, 32, 32), "float32")
    w = g.add_constant("conv1.weight", np.zeros((8, 3, 3, 3), np.float32))
    y = g.add_node("conv2d", [x, w], attrs=dict(strides=(2, 2), pads=(1, 1, 1, 1)), name="conv1")
    r = g.add_node("relu", [y])
    g.set_outputs([r])
    return g


def test_build_and_read():
    g = conv_graph()
    assert g.name == "net"
    assert g.inputs == ["data"] and g.outputs == ["relu_0"]
    assert list(g.constants) == ["conv1.weight"]
    assert [n.name for n in g.nodes] == ["conv1", "relu_0"]
    conv = g.node("conv1")
    assert isinstance(conv, Node) and conv.op == "conv2d" and conv.inputs == ["data", "conv1.weight"]
    assert conv.attrs == dict(strides=(2, 2), pads=(1, 1, 1, 1), dilations=(1, 1), groups=1)
    assert conv.shape == (1, 8, 16, 16) and conv.dtype == "float32"
    assert g.shape("conv1.weight") == (8, 3, 3, 3) and g.dtype("data") == "float32"
    assert g.producer("conv1") is conv and g.producer("data") is None
    assert [n.name for n in g.consumers("conv1")] == ["relu_0"]
    assert g.consumers("relu_0") == [] and g.problems() == []


def test_constant_is_kept_not_copied():
    g = Graph()
    w = np.ones((4, 4), np.float32)
    g.add_constant("w", w)
    assert g.constants["w"] is w


def test_fresh_names_are_unique():
    g = Graph()
    x = g.add_input("x", (4,))
    g.add_input("relu_0", (4,))  # a user name that the generator must skip
    names = [g.add_node("relu", [x]) for _ in range(3)]
    assert names == ["relu_1", "relu_2", "relu_3"]


@pytest.mark.parametrize("op, shapes, attrs, expected", [
    ("conv2d", [(2, 4, 7, 9), (6, 2, 3, 3)], dict(groups=2, pads=1), (2, 6, 7, 9)),
    ("conv2d", [(1, 8, 11, 11), (8, 1, 3, 3), (8,)], dict(groups=8, strides=2, dilations=2), (1, 8, 4, 4)),
    ("conv2d", [(1, 3, 224, 224), (64, 3, 7, 7)], dict(strides=(2, 2), pads=(3, 3, 3, 3)), (1, 64, 112, 112)),
    ("dense", [(5, 7), (3, 7), (3,)], {}, (5, 3)),
    ("dense", [(2, 5, 7), (3, 7)], {}, (2, 5, 3)),
    ("matmul", [(2, 1, 4, 5), (3, 5, 6)], {}, (2, 3, 4, 6)),
    ("matmul", [(5,), (2, 5, 6)], {}, (2, 6)),
    ("matmul", [(4, 5), (5,)], {}, (4,)),
    ("add", [(3, 1, 5), (4, 1)], {}, (3, 4, 5)),
    ("power", [(3,), ()], {}, (3,)),
    ("max_pool2d", [(1, 2, 7, 7)], dict(kernel=3, strides=2, pads=1), (1, 2, 4, 4)),
    ("max_pool2d", [(1, 2, 8, 8)], dict(kernel=(3, 3), strides=(2, 2), ceil_mode=True), (1, 2, 4, 4)),
    ("avg_pool2d", [(1, 2, 5, 6)], dict(kernel=2), (1, 2, 2, 3)),
    ("global_avg_pool2d", [(2, 3, 5, 6)], {}, (2, 3, 1, 1)),
    ("reshape", [(2, 3, 4)], dict(shape=(4, -1)), (4, 6)),
    ("flatten", [(2, 3, 4, 5)], dict(axis=2), (6, 20)),
    ("flatten", [(2, 3)], dict(axis=0), (1, 6)),
    ("transpose", [(2, 3, 4)], {}, (4, 3, 2)),
    ("transpose", [(2, 3, 4)], dict(perm=(0, 2, 1)), (2, 4, 3)),
    ("concat", [(2, 3), (2, 5), (2, 1)], dict(axis=-1), (2, 9)),
    ("reduce_mean", [(2, 3, 4)], dict(axes=(-1, 0)), (1, 3, 1)),
    ("reduce_sum", [(2, 3, 4)], dict(axes=1, keepdims=False), (2, 4)),
    ("softmax", [(2, 3)], {}, (2, 3)),
    ("layer_norm", [(2, 3, 4), (3, 4), (3, 4)], dict(axis=1), (2, 3, 4)),
    ("batch_norm", [(2, 3, 4, 4)] + [(3,)] * 4, {}, (2, 3, 4, 4)),
    ("clip", [(3,)], dict(min=0, max=6), (3,)),
    ("gelu", [(3,)], dict(approximate="tanh"), (3,)),
    ("cast", [(3,)], dict(dtype=np.float16), (3,)),
])
def test_shape_inference(op, shapes, attrs, expected):
    g = Graph()
    names = [g.add_input(f"in{i}", s) for i, s in enumerate(shapes)]
    y = g.add_node(op, names, attrs=attrs, name="y")
    assert g.shape(y) == expected


def test_attrs_are_normalised():
    g = Graph()
    x = g.add_input("x", (1, 2, 6, 6))
    p = g.add_node("max_pool2d", [x], attrs=dict(kernel=[2, 2]))
    assert g.node(p).attrs == dict(kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0), dilations=(1, 1),
                                   ceil_mode=False)
    a = g.add_node("avg_pool2d", [x], attrs=dict(kernel=3, strides=1, pads=(1, 2)))
    assert g.node(a).attrs["pads"] == (1, 2, 1, 2) and g.node(a).attrs["count_include_pad"] is False
    s = g.add_node("softmax", [x], attrs=dict(axis=-3))
    assert g.node(s).attrs == dict(axis=1)
    r = g.add_node("reduce_max", [x], attrs=dict(axes=[-1, -2]))
    assert g.node(r).attrs == dict(axes=(2, 3), keepdims=True)
    c = g.add_node("clip", [x], attrs=dict(min=0))
    assert g.node(c).attrs == {"min": 0.0, "max": None}
    assert g.node(g.add_node("cast", [x], attrs=dict(dtype=np.float16))).dtype == "float16"


@pytest.mark.parametrize("op, shapes, attrs, match", [
    ("conv2d", [(1, 4, 8, 8), (8, 3, 3, 3)], {}, "channel mismatch"),
    ("conv2d", [(1, 4, 8, 8), (6, 1, 3, 3)], dict(groups=4), "does not divide the 6 output"),
    ("conv2d", [(1, 4, 2, 2), (8, 4, 3, 3)], {}, "does not fit"),
    ("conv2d", [(1, 4, 8), (8, 4, 3, 3)], {}, "rank 4"),
    ("conv2d", [(1, 4, 8, 8), (8, 4, 3, 3)], dict(stride=2), "unknown attr stride"),
    ("conv2d", [(1, 4, 8, 8), (8, 4, 3, 3)], dict(pads=(1, 1, 1)), "pads"),
    ("conv2d", [(1, 4, 8, 8)], {}, "takes 2 to 3 inputs, got 1"),
    ("dense", [(2, 5), (3, 4)], {}, "features"),
    ("matmul", [(2, 5), (4, 3)], {}, "inner dimensions"),
    ("add", [(2, 3), (4,)], {}, "cannot be broadcast"),
    ("reshape", [(2, 3)], dict(shape=(4, 2)), "cannot reshape"),
    ("reshape", [(2, 3)], dict(shape=(-1, -1)), "more than one -1"),
    ("reshape", [(2, 3)], dict(shape=(0, 6)), "0 is an extent"),
    ("reshape", [(2, 3)], {}, "attr 'shape' is required"),
    ("transpose", [(2, 3)], dict(perm=(0, 0)), "not a permutation"),
    ("softmax", [(2, 3)], dict(axis=2), "out of range"),
    ("reduce_sum", [(2, 3)], dict(axes=(0, -2)), "repeats"),
    ("concat", [(2, 3), (3, 3)], dict(axis=1), "differ outside axis 1"),
    ("clip", [(2,)], dict(min=2, max=1), "greater than max"),
    ("gelu", [(2,)], dict(approximate="fast"), "approximate"),
    ("layer_norm", [(2, 3), (2,), (2,)], {}, "gamma has shape"),
    ("batch_norm", [(2, 3, 4)] + [(4,)] * 4, {}, "gamma has shape"),
    ("max_pool2d", [(1, 1, 4, 4)], dict(kernel=2, pads=2), "reads only padding"),
    ("max_pool2d", [(1, 1, 4, 4)], {}, "attr 'kernel' is required"),
    ("frobnicate", [(1,)], {}, "unknown op 'frobnicate'"),
])
def test_errors_name_node_and_op(op, shapes, attrs, match):
    g = Graph()
    names = [g.add_input(f"in{i}", s) for i, s in enumerate(shapes)]
    with pytest.raises(GraphError, match=match) as info:
        g.add_node(op, names, attrs=attrs, name="bad")
    assert f"node 'bad' ({op})" in str(info.value)
    assert "bad" not in [n.name for n in g.nodes]


def test_graph_errors():
    g = conv_graph()
    with pytest.raises(GraphError, match="already used"):
        g.add_input("data", (1,))
    with pytest.raises(GraphError, match="already used"):
        g.add_node("relu", ["data"], name="conv1")
    with pytest.raises(GraphError, match="input 'nope' is not a value"):
        g.add_node("relu", ["nope"])
    with pytest.raises(GraphError, match="dtypes"):
        h = Graph()
        h.add_node("add", [h.add_input("a", (2,), "float32"), h.add_input("b", (2,), "float16")])
    with pytest.raises(GraphError, match="floating-point"):
        h = Graph()
        h.add_node("exp", [h.add_input("i", (2,), "int32")])
    with pytest.raises(GraphError, match="dims must be positive"):
        Graph().add_input("x", (0, 2))
    with pytest.raises(GraphError, match="no node"):
        g.node("data")
    with pytest.raises(GraphError, match="not a value"):
        g.shape("nope")
    assert issubclass(GraphError, ValueError)


def test_dynamic_dims_propagate():
    g = Graph()
    x = g.add_input("x", ("batch", 128, 64))
    w = g.add_constant("w", np.zeros((32, 64), np.float32))
    d = g.add_node("dense", [x, w])
    assert g.shape(d) == ("batch", 128, 32)
    y = g.add_input("y", ("batch", 1, 32))
    assert g.shape(g.add_node("add", [d, y])) == ("batch", 128, 32)
    z = g.add_input("z", ("other", 128, 32))
    assert g.shape(g.add_node("add", [d, z])) == (None, 128, 32)
    assert g.shape(g.add_node("reshape", [d], attrs=dict(shape=(-1, 32)))) == (None, 32)
    img = g.add_input("img", ("n", 3, "h", 8))
    k = g.add_constant("k", np.zeros((4, 3, 3, 3), np.float32))
    assert g.shape(g.add_node("conv2d", [img, k])) == ("n", 4, None, 6)
    assert g.shape(g.add_node("flatten", [g.add_node("global_avg_pool2d", [img])])) == ("n", 3)
    assert g.shape(g.add_node("concat", [x, x], attrs=dict(axis=0))) == (None, 128, 64)
    assert g.shape(g.add_node("concat", [x, x], attrs=dict(axis=2))) == ("batch", 128, 128)


def test_bind():
    g = Graph("dyn")
    x = g.add_input("x", ("batch", "seq", 16))
    w = g.add_constant("w", np.zeros((8, 16), np.float32))
    d = g.add_node("dense", [x, w], name="proj")
    r = g.add_node("reshape", [d], attrs=dict(shape=(-1, 8)), name="flat")
    g.set_outputs([r])
    assert {p[0] for p in g.problems()} == {"proj", "flat"}
    assert "dynamic dim 'batch'" in dict((p[0], p[2]) for p in g.problems())["proj"]
    b = g.bind(batch=2, seq=3)
    assert b is not g and b.shape("x") == (2, 3, 16) and b.shape("flat") == (6, 8)
    assert b.problems() == [] and b.outputs == ["flat"] and b.constants["w"] is g.constants["w"]
    assert g.shape("x") == ("batch", "seq", 16)  # the original is unchanged
    partial = g.bind({"batch": 4})
    assert partial.shape("proj") == (4, "seq", 8)
    with pytest.raises(GraphError, match="no dynamic dim 'beam'"):
        g.bind(beam=2)
    with pytest.raises(GraphError, match="positive int"):
        g.bind(batch=0)


def test_bind_checks_shapes_again():
    g = Graph()
    a = g.add_input("a", ("n", 4))
    b = g.add_input("b", (3, 4))
    g.add_node("add", [a, b], name="s")
    assert g.shape("s") == (3, 4)
    with pytest.raises(GraphError, match="node 's' \\(add\\).*cannot be broadcast"):
        g.bind(n=2)


def test_unsupported_nodes_and_problems():
    g = Graph()
    x = g.add_input("x", (2, 3))
    u = g.add_unsupported("NonMaxSuppression", [x], name="nms", reason="data-dependent output shape")
    assert g.node(u).op == "unsupported" and g.shape(u) is None
    assert g.node(u).attrs == {"op_type": "NonMaxSuppression", "reason": "data-dependent output shape"}
    after = g.add_node("relu", [u], name="after")
    assert g.shape(after) is None
    v = g.add_unsupported("Custom", [x], shape=("n", 3), dtype="float32")
    assert g.shape(v) == ("n", 3) and g.dtype(v) == "float32"
    assert g.shape(g.add_node("relu", [v])) == ("n", 3)
    problems = g.problems()
    assert problems[0] == ("nms", "unsupported", "unsupported op 'NonMaxSuppression': data-dependent output shape")
    assert problems[1][0] == "after" and "unknown shape" in problems[1][2]
    assert [p[0] for p in problems] == ["nms", "after", "unsupported_0", "relu_0"]
    bound = g.bind(n=5)
    assert bound.shape("unsupported_0") == (5, 3)
    with pytest.raises(GraphError, match="add_unsupported"):
        g.add_node("unsupported", [x])


def test_str_lists_every_node():
    text = str(conv_graph())
    assert ("%conv1 = conv2d(%data, %conv1.weight) strides=(2, 2) pads=(1, 1, 1, 1) dilations=(1, 1) groups=1 "
            "-> (1, 8, 16, 16) float32") in text
    assert "%relu_0 = relu(%conv1) -> (1, 8, 16, 16) float32" in text



def test_docs_examples_run():
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "graph.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3
    exec(compile("\n".join(blocks), "docs/graph.md", "exec"), {"__name__": "__docs__"})


def test_graph_works_without_onnx_and_torch():
    """autosched.graph, the zoo and evaluate need neither onnx nor torch (blocked here in a child process)."""
    import os
    import subprocess
    import sys
    code = ("import sys\n"
            "for m in ('onnx', 'onnxruntime', 'torch'): sys.modules[m] = None\n"
            "import numpy as np, autosched\n"
            "from autosched.graph import zoo\n"
            "g = zoo.get_model('bert_layer', seq_len=4, hidden=8, heads=2, ffn=16)\n"
            "(y,) = g.evaluate(np.ones((1, 4, 8), np.float32))\n"
            "assert y.shape == (1, 4, 8)\n"
            "try:\n"
            "    g.to_onnx()\n"
            "except ImportError as e:\n"
            "    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "refused: Graph.to_onnx needs the 'onnx' package" in out.stdout
