"""A zoo of networks as graphs, with random weights drawn from a seeded generator.

    g = zoo.get_model("resnet18", batch_size=1, seed=0)      # -> Graph
    zoo.MODELS                                              # the names

Models (keyword options in brackets):
  resnet18, resnet50   ImageNet ResNets (v1.5: the stride sits on the 3x3 conv) [image_size=224, num_classes=1000]
  mobilenet_v2         MobileNet-V2 with relu6 = clip(0, 6) and depthwise convs [image_size=224, num_classes=1000]
  bert_layer           one BERT-base encoder layer: hidden 768, 12 heads, FFN 3072, exact GELU, post-LayerNorm,
                       input (batch, seq_len, 768) [seq_len=128, hidden=768, heads=12, ffn=3072]
  lightglue_block      a LightGlue-like block on two descriptor sets (batch, N, 256): self-attention on each set,
                       then cross-attention between them (2 heads), each followed by an MLP on [x, message]
                       (Linear, LayerNorm, GELU, Linear) and a residual add; attention and MLP weights shared
                       by the two sets [num_keypoints=512, num_keypoints1=None (= num_keypoints), dim=256, heads=2]
CNNs take "data" (batch, 3, H, W) and hold batch_norm nodes (inference) with their own statistics. Weights follow
He initialisation and batch-norm statistics keep activations O(1) (the last batch norm of every residual branch
has small gammas, so the residual sum does not grow block after block). Parameter names follow torchvision /
HuggingFace (e.g. "layer1.0.conv1.weight", "layer1.0.bn1.running_var", "attention.self.query.weight").
"""
import math

import numpy as np

from .ir import Graph

__all__ = ["MODELS", "get_model"]


class _Builder:
    """Adds layers with seeded random weights to a graph."""

    def __init__(self, name, seed):
        self.g = Graph(name)
        self.rng = np.random.default_rng(seed)

    def param(self, name, array):
        return self.g.add_constant(name, np.ascontiguousarray(array, dtype=np.float32))

    def conv(self, x, name, out_c, kernel, stride=1, pad=0, groups=1, gain=2.0):
        in_c = self.g.shape(x)[1]
        fan_in = in_c // groups * kernel * kernel
        w = self.rng.standard_normal((out_c, in_c // groups, kernel, kernel)) * math.sqrt(gain / fan_in)
        return self.g.add_node("conv2d", [x, self.param(f"{name}.weight", w)], name=name,
                               attrs=dict(strides=(stride, stride), pads=(pad,) * 4, groups=groups))

    def batch_norm(self, x, name, gamma=1.0):
        c = self.g.shape(x)[1]
        params = [self.param(f"{name}.weight", gamma * self.rng.uniform(0.8, 1.2, c)),
                  self.param(f"{name}.bias", self.rng.normal(0.0, 0.1, c)),
                  self.param(f"{name}.running_mean", self.rng.normal(0.0, 0.1, c)),
                  self.param(f"{name}.running_var", self.rng.uniform(0.8, 1.2, c))]
        return self.g.add_node("batch_norm", [x] + params, name=name)

    def dense(self, x, name, units, std=None, bias=True, weight=None):
        """x @ W.T + b; `weight` names an existing layer whose parameters are reused."""
        if weight is not None:
            inputs = [x, f"{weight}.weight"] + ([f"{weight}.bias"] if bias else [])
            return self.g.add_node("dense", inputs, name=name)
        k = self.g.shape(x)[-1]
        std = math.sqrt(1.0 / k) if std is None else std
        inputs = [x, self.param(f"{name}.weight", self.rng.standard_normal((units, k)) * std)]
        if bias:
            inputs.append(self.param(f"{name}.bias", self.rng.normal(0.0, 0.02, units)))
        return self.g.add_node("dense", inputs, name=name)

    def layer_norm(self, x, name, epsilon=1e-5, weight=None):
        if weight is None:
            d = self.g.shape(x)[-1]
            self.param(f"{name}.weight", self.rng.uniform(0.9, 1.1, d))
            self.param(f"{name}.bias", self.rng.normal(0.0, 0.02, d))
            weight = name
        return self.g.add_node("layer_norm", [x, f"{weight}.weight", f"{weight}.bias"], name=name,
                               attrs=dict(epsilon=epsilon))

    def node(self, op, inputs, name, **attrs):
        return self.g.add_node(op, inputs, attrs=attrs, name=name)


# ---------------- CNNs ----------------


def _classifier(b, x, num_classes, name="fc"):
    pooled = b.node("global_avg_pool2d", [x], "avgpool")
    flat = b.node("flatten", [pooled], "flatten", axis=1)
    return b.dense(flat, name, num_classes)


def _basic_block(b, x, name, width, stride):
    out = b.node("relu", [b.batch_norm(b.conv(x, f"{name}.conv1", width, 3, stride, 1), f"{name}.bn1")],
                 f"{name}.relu1")
    out = b.batch_norm(b.conv(out, f"{name}.conv2", width, 3, 1, 1), f"{name}.bn2", gamma=0.3)
    return out, width


def _bottleneck(b, x, name, width, stride):
    out = b.node("relu", [b.batch_norm(b.conv(x, f"{name}.conv1", width, 1), f"{name}.bn1")], f"{name}.relu1")
    out = b.node("relu", [b.batch_norm(b.conv(out, f"{name}.conv2", width, 3, stride, 1), f"{name}.bn2")],
                 f"{name}.relu2")
    out = b.batch_norm(b.conv(out, f"{name}.conv3", width * 4, 1), f"{name}.bn3", gamma=0.3)
    return out, width * 4


def _resnet(name, layers, block, batch_size, seed, image_size=224, num_classes=1000):
    b = _Builder(name, seed)
    x = b.g.add_input("data", (batch_size, 3, image_size, image_size), "float32")
    x = b.node("relu", [b.batch_norm(b.conv(x, "conv1", 64, 7, 2, 3), "bn1")], "relu")
    x = b.node("max_pool2d", [x], "maxpool", kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    for stage, (count, width) in enumerate(zip(layers, (64, 128, 256, 512))):
        for i in range(count):
            prefix = f"layer{stage + 1}.{i}"
            stride = 2 if stage > 0 and i == 0 else 1
            out, out_c = block(b, x, prefix, width, stride)
            if stride != 1 or b.g.shape(x)[1] != out_c:
                shortcut = b.conv(x, f"{prefix}.downsample.0", out_c, 1, stride, gain=1.0)
                x = b.batch_norm(shortcut, f"{prefix}.downsample.1")
            x = b.node("relu", [b.node("add", [out, x], f"{prefix}.add")], f"{prefix}.relu")
    b.g.set_outputs([_classifier(b, x, num_classes)])
    return b.g


def _conv_bn_relu6(b, x, name, out_c, kernel, stride=1, groups=1):
    y = b.batch_norm(b.conv(x, f"{name}.0", out_c, kernel, stride, (kernel - 1) // 2, groups), f"{name}.1")
    return b.node("clip", [y], f"{name}.2", min=0.0, max=6.0)


def _mobilenet_v2(batch_size, seed, image_size=224, num_classes=1000):
    b = _Builder("mobilenet_v2", seed)
    x = b.g.add_input("data", (batch_size, 3, image_size, image_size), "float32")
    x = _conv_bn_relu6(b, x, "features.0", 32, 3, 2)
    index = 1
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            name = f"features.{index}.conv"
            in_c = b.g.shape(x)[1]
            hidden, stride, k = in_c * t, (s if i == 0 else 1), 0
            y = x
            if t != 1:
                y, k = _conv_bn_relu6(b, y, f"{name}.0", hidden, 1), 1
            y = _conv_bn_relu6(b, y, f"{name}.{k}", hidden, 3, stride, groups=hidden)
            y = b.batch_norm(b.conv(y, f"{name}.{k + 1}", c, 1), f"{name}.{k + 2}",
                             gamma=0.3 if stride == 1 and in_c == c else 1.0)
            x = b.node("add", [x, y], f"features.{index}.add") if stride == 1 and in_c == c else y
            index += 1
    x = _conv_bn_relu6(b, x, f"features.{index}", 1280, 1)
    b.g.set_outputs([_classifier(b, x, num_classes, "classifier.1")])
    return b.g


# ---------------- transformers ----------------


def _split_heads(b, x, name, heads, keys=False):
    """(B, S, H * D) -> (B, H, S, D), or (B, H, D, S) for keys."""
    batch, seq, hidden = b.g.shape(x)
    y = b.node("reshape", [x], f"{name}.split", shape=(batch, seq, heads, hidden // heads))
    return b.node("transpose", [y], f"{name}.heads", perm=(0, 2, 3, 1) if keys else (0, 2, 1, 3))


def _attention(b, xq, xkv, name, heads, weights=None):
    """Multi-head attention of queries from xq over keys / values from xkv: (B, S, D) -> (B, S, D) context (before
    the output projection). `weights` reuses the q / k / v projections of another layer prefix."""
    w = weights or name
    dim = b.g.shape(xq)[-1]
    q = b.dense(xq, f"{name}.query", dim, weight=None if weights is None else f"{w}.query")
    k = b.dense(xkv, f"{name}.key", dim, weight=None if weights is None else f"{w}.key")
    v = b.dense(xkv, f"{name}.value", dim, weight=None if weights is None else f"{w}.value")
    scores = b.node("matmul", [_split_heads(b, q, f"{name}.query", heads),
                               _split_heads(b, k, f"{name}.key", heads, keys=True)], f"{name}.scores")
    scale = f"{w}.scale"
    if scale not in b.g.constants:
        b.param(scale, np.asarray(1.0 / math.sqrt(dim // heads)))
    probs = b.node("softmax", [b.node("multiply", [scores, scale], f"{name}.scaled")], f"{name}.probs", axis=-1)
    ctx = b.node("matmul", [probs, _split_heads(b, v, f"{name}.value", heads)], f"{name}.context")
    merged = b.node("transpose", [ctx], f"{name}.merge", perm=(0, 2, 1, 3))
    batch, seq = b.g.shape(xq)[:2]
    return b.node("reshape", [merged], f"{name}.merged", shape=(batch, seq, dim))


def _bert_layer(batch_size, seed, seq_len=128, hidden=768, heads=12, ffn=3072):
    if hidden % heads:
        raise ValueError(f"bert_layer: hidden={hidden} is not a multiple of heads={heads}")
    b = _Builder("bert_layer", seed)
    x = b.g.add_input("input", (batch_size, seq_len, hidden), "float32")
    ctx = _attention(b, x, x, "attention.self", heads)
    out = b.dense(ctx, "attention.output.dense", hidden)
    h = b.layer_norm(b.node("add", [out, x], "attention.output.add"), "attention.output.LayerNorm", 1e-12)
    inter = b.node("gelu", [b.dense(h, "intermediate.dense", ffn)], "intermediate.gelu")
    out = b.dense(inter, "output.dense", hidden)
    y = b.layer_norm(b.node("add", [out, h], "output.add"), "output.LayerNorm", 1e-12)
    b.g.set_outputs([y])
    return b.g


def _lightglue_update(b, x, message, name, weights):
    """x + MLP([x, message]) with MLP = Linear(2D, 2D), LayerNorm, GELU, Linear(2D, D)."""
    dim = b.g.shape(x)[-1]
    cat = b.node("concat", [x, message], f"{name}.cat", axis=-1)
    shared = name != weights
    h = b.dense(cat, f"{name}.ffn.0", 2 * dim, weight=f"{weights}.ffn.0" if shared else None)
    h = b.layer_norm(h, f"{name}.ffn.1", weight=f"{weights}.ffn.1" if shared else None)
    h = b.node("gelu", [h], f"{name}.ffn.2")
    h = b.dense(h, f"{name}.ffn.3", dim, weight=f"{weights}.ffn.3" if shared else None)
    return b.node("add", [x, h], f"{name}.residual")


def _lightglue_block(batch_size, seed, num_keypoints=512, num_keypoints1=None, dim=256, heads=2):
    if dim % heads:
        raise ValueError(f"lightglue_block: dim={dim} is not a multiple of heads={heads}")
    b = _Builder("lightglue_block", seed)
    n1 = num_keypoints if num_keypoints1 is None else num_keypoints1
    x0 = b.g.add_input("desc0", (batch_size, num_keypoints, dim), "float32")
    x1 = b.g.add_input("desc1", (batch_size, n1, dim), "float32")
    for kind, pairs in (("self", ((x0, x0), (x1, x1))), ("cross", ((x0, x1), (x1, x0)))):
        updated = []
        for i, (xq, xkv) in enumerate(pairs):
            name, weights = f"{kind}{i}", f"{kind}0"
            ctx = _attention(b, xq, xkv, f"{name}.attn", heads, weights=None if i == 0 else f"{weights}.attn")
            message = b.dense(ctx, f"{name}.attn.out_proj", dim,
                              weight=None if i == 0 else f"{weights}.attn.out_proj")
            updated.append(_lightglue_update(b, xq, message, name, weights))
        x0, x1 = updated
    b.g.set_outputs([x0, x1])
    return b.g


MODELS = {
    "resnet18": lambda batch_size, seed, **kw: _resnet("resnet18", (2, 2, 2, 2), _basic_block, batch_size, seed,
                                                       **kw),
    "resnet50": lambda batch_size, seed, **kw: _resnet("resnet50", (3, 4, 6, 3), _bottleneck, batch_size, seed,
                                                       **kw),
    "mobilenet_v2": _mobilenet_v2,
    "bert_layer": _bert_layer,
    "lightglue_block": _lightglue_block,
}


def get_model(name, batch_size=1, seed=0, **options):
    """The graph of model `name` (one of MODELS) with random weights from `seed`; options per model (see the
    module docstring), e.g. image_size=64 for a smaller input."""
    if name not in MODELS:
        raise ValueError(f"zoo: unknown model {name!r} (models: {', '.join(MODELS)})")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"zoo: batch_size must be a positive int, got {batch_size!r}")
    try:
        return MODELS[name](batch_size, seed, **options)
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise TypeError(f"zoo: model {name!r} does not take option(s) {sorted(options)}") from None
        raise
