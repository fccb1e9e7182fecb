"""The model zoo: every model builds with the expected shapes and ops, is seeded, keeps activations O(1), and
Graph.evaluate equals onnxruntime on to_onnx(); ResNet-18 and the BERT layer also equal the same network
written with torch.nn.functional from the graph's weights."""
import math

import numpy as np
import pytest

from autosched.graph import zoo

EXPECTED = {  # name, options -> input shapes, output shapes, ops that must appear
    ("resnet18", ()): ([(1, 3, 224, 224)], [(1, 1000)], {"conv2d", "batch_norm", "relu", "add", "max_pool2d",
                                                         "global_avg_pool2d", "flatten", "dense"}),
    ("resnet50", (("image_size", 64),)): ([(1, 3, 64, 64)], [(1, 1000)], {"conv2d", "batch_norm", "add"}),
    ("mobilenet_v2", ()): ([(1, 3, 224, 224)], [(1, 1000)], {"conv2d", "batch_norm", "clip", "add",
                                                             "global_avg_pool2d", "dense"}),
    ("bert_layer", ()): ([(1, 128, 768)], [(1, 128, 768)], {"dense", "matmul", "softmax", "gelu", "layer_norm",
                                                            "reshape", "transpose", "add", "multiply"}),
    ("lightglue_block", ()): ([(1, 512, 256)] * 2, [(1, 512, 256)] * 2, {"dense", "matmul", "softmax", "concat",
                                                                        "layer_norm", "gelu"}),
}


def inputs_for(g, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(g.shape(v)).astype(np.float32) for v in g.inputs]


def assert_close(got, want):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name, options", list(EXPECTED), ids=[k[0] for k in EXPECTED])
def test_model_against_onnxruntime(name, options):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    in_shapes, out_shapes, ops = EXPECTED[(name, options)]
    g = zoo.get_model(name, **dict(options))
    assert g.name == name and [g.shape(v) for v in g.inputs] == in_shapes
    assert [g.shape(v) for v in g.outputs] == out_shapes
    assert ops <= {n.op for n in g.nodes} and g.problems() == []
    arrays = inputs_for(g)
    outputs = g.evaluate(*arrays)
    session = ort.InferenceSession(g.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    for got, want in zip(session.run(None, dict(zip(g.inputs, arrays))), outputs):
        assert np.isfinite(want).all() and 0.1 < float(np.sqrt((want ** 2).mean())) < 20  # O(1) activations
        assert_close(got, want)


def test_resnet_structure():
    g = zoo.get_model("resnet18", image_size=32)
    assert sum(a.size for k, a in g.constants.items() if "running" not in k) == 11689512  # as torchvision's
    g = zoo.get_model("resnet50", image_size=32)
    convs = [n for n in g.nodes if n.op == "conv2d"]
    assert len(convs) == 53 and sum(n.op == "batch_norm" for n in g.nodes) == 53
    assert g.shape("layer4.2.relu") == (1, 2048, 1, 1)
    assert g.node("layer2.0.conv2").attrs["strides"] == (2, 2)  # v1.5: the stride sits on the 3x3 conv
    assert sum(a.size for k, a in g.constants.items() if "running" not in k) == 25557032  # as torchvision's


def test_mobilenet_v2_structure():
    g = zoo.get_model("mobilenet_v2", image_size=96, num_classes=10)
    depthwise = [n for n in g.nodes if n.op == "conv2d" and n.attrs["groups"] > 1]
    assert len(depthwise) == 17 and all(n.attrs["groups"] == n.shape[1] for n in depthwise)
    assert sum(n.op == "add" for n in g.nodes) == 10
    assert g.shape(g.outputs[0]) == (1, 10)
    assert sum(a.size for k, a in g.constants.items() if "running" not in k) == 3504872 - 990 * 1281


def test_seeds_batch_and_options():
    a, b = zoo.get_model("bert_layer", seq_len=16), zoo.get_model("bert_layer", seq_len=16)
    c = zoo.get_model("bert_layer", seed=1, seq_len=16)
    for k in a.constants:
        np.testing.assert_array_equal(a.constants[k], b.constants[k])
    assert any(not np.array_equal(a.constants[k], c.constants[k]) for k in a.constants)
    g = zoo.get_model("resnet18", batch_size=2, image_size=32, num_classes=7)
    assert g.shape("data") == (2, 3, 32, 32) and g.shape(g.outputs[0]) == (2, 7)
    g = zoo.get_model("lightglue_block", num_keypoints=33, num_keypoints1=17)
    assert [g.shape(v) for v in g.outputs] == [(1, 33, 256), (1, 17, 256)]
    assert g.shape("cross0.attn.scores") == (1, 2, 33, 17)
    # the two sets share the attention and MLP weights
    assert g.node("self1.attn.query").inputs[1] == "self0.attn.query.weight"
    assert sorted(zoo.MODELS) == ["bert_layer", "lightglue_block", "mobilenet_v2", "resnet18", "resnet50"]
    with pytest.raises(ValueError, match="unknown model 'vgg16'.*resnet18"):
        zoo.get_model("vgg16")
    with pytest.raises(TypeError, match="does not take option"):
        zoo.get_model("resnet18", seq_len=3)
    with pytest.raises(ValueError, match="batch_size"):
        zoo.get_model("resnet18", batch_size=0)


# ---------------- the same networks in torch ----------------


def torch_resnet18(torch, g, x):
    import torch.nn.functional as F
    p = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in g.constants.items()}

    def bn(t, n):
        return F.batch_norm(t, p[n + ".running_mean"], p[n + ".running_var"], p[n + ".weight"], p[n + ".bias"],
                            training=False, eps=1e-5)

    def conv(t, n, stride=1, pad=0):
        return F.conv2d(t, p[n + ".weight"], stride=stride, padding=pad)

    t = F.max_pool2d(F.relu(bn(conv(x, "conv1", 2, 3), "bn1")), 3, 2, 1)
    for stage in range(4):
        for i in range(2):
            n, stride = f"layer{stage + 1}.{i}", 2 if stage > 0 and i == 0 else 1
            out = bn(conv(F.relu(bn(conv(t, n + ".conv1", stride, 1), n + ".bn1")), n + ".conv2", 1, 1), n + ".bn2")
            if n + ".downsample.0.weight" in p:
                t = bn(conv(t, n + ".downsample.0", stride), n + ".downsample.1")
            t = F.relu(out + t)
    return F.linear(F.adaptive_avg_pool2d(t, 1).flatten(1), p["fc.weight"], p["fc.bias"])


def torch_bert_layer(torch, g, x, heads=12):
    import torch.nn.functional as F
    p = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in g.constants.items()}
    batch, seq, hidden = x.shape

    def linear(t, n):
        return F.linear(t, p[n + ".weight"], p[n + ".bias"])

    def heads_of(t):
        return t.view(batch, seq, heads, hidden // heads).transpose(1, 2)

    q, k, v = (heads_of(linear(x, f"attention.self.{n}")) for n in ("query", "key", "value"))
    ctx = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, seq, hidden)
    h = F.layer_norm(linear(ctx, "attention.output.dense") + x, (hidden,), p["attention.output.LayerNorm.weight"],
                     p["attention.output.LayerNorm.bias"], 1e-12)
    out = linear(F.gelu(linear(h, "intermediate.dense")), "output.dense")
    return F.layer_norm(out + h, (hidden,), p["output.LayerNorm.weight"], p["output.LayerNorm.bias"], 1e-12)


@pytest.mark.parametrize("name, options, fn", [("resnet18", dict(image_size=112), torch_resnet18),
                                               ("bert_layer", {}, torch_bert_layer)])
def test_model_against_torch(name, options, fn):
    torch = pytest.importorskip("torch")
    g = zoo.get_model(name, **options)
    (x,) = inputs_for(g, seed=5)
    (want,) = g.evaluate(x)
    with torch.no_grad():
        got = fn(torch, g, torch.from_numpy(x)).numpy()
    assert_close(got, want)
    assert math.isfinite(float(want.std()))


@pytest.mark.parametrize("name, options", [("resnet18", dict(image_size=32)), ("resnet50", dict(image_size=32)),
                                           ("mobilenet_v2", dict(image_size=32)), ("bert_layer", dict(seq_len=8)),
                                           ("lightglue_block", dict(num_keypoints=8, num_keypoints1=5))])
def test_every_node_te_builder_matches_the_reference(name, options):
    """Each distinct layer of the model, built with its te builder and run by the reference evaluator on the
    values the numpy reference computed for its inputs, gives the numpy reference's output."""
    import autosched as ans
    from autosched import te
    from autosched.graph import op_table
    g = zoo.get_model(name, **options)
    outputs = g.outputs
    g.set_outputs([n.name for n in g.nodes])
    values = dict(zip(g.outputs, g.evaluate(*inputs_for(g))))
    g.set_outputs(outputs)
    values.update(g.constants)
    values.update(zip(g.inputs, inputs_for(g)))
    seen = set()
    for node in g.nodes:
        key = (node.op, repr(node.attrs), tuple(g.shape(v) for v in node.inputs))
        if key in seen:
            continue
        seen.add(key)
        placeholders = [te.placeholder(g.shape(v), g.dtype(v), name=f"in{i}") for i, v in enumerate(node.inputs)]
        out = op_table.te_builder(node.op)(node, *placeholders)
        (got,) = ans.evaluate(ans.ComputeDAG(placeholders + [out]), [values[v] for v in node.inputs])
        assert_close(got, values[node.name])
