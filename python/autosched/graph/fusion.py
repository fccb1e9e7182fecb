"""Operator fusion: the graph partitioned into fused groups, each compiled as one kernel (one tuning task).

    folded = fold_batch_norm(graph)     # conv2d + batch_norm (inference) -> one conv2d with folded weights
    groups = partition(folded)          # FusedGroup list in execution order

A group has at most one anchor, a complex op (conv2d, dense, matmul, pools, softmax, layer_norm, reductions),
and the injective ops (elementwise, broadcast, reshape, transpose, strided_slice, take, ...) that follow it; a
group without an anchor is a chain of injective ops. A consumer joins its producer's group when the producer's
value has that single consumer and is not a graph output: conv2d + bias + relu, dense + add + gelu, residual
add + relu, an embedding take + the position add.
A group also takes the diamonds that an importer writes as separate ops: a softmax or layer norm (x - max,
exp, sum, divide) in a group started by a reduction, SiLU (x * sigmoid(x)) and GELU (x * 0.5 * (1 + erf(x /
sqrt 2))) in the epilogue of the convolution or dense layer that computes x: there a value may have several
consumers inside the group, as long as none outside it. Every group computes exactly one value used outside it.
With FUSE_ATTENTION_SCORES on (off by default: see there), attention's scores and their softmax are one group:
a softmax or log_softmax along the last axis joins the group of the matmul whose value it normalises (the
scores, after element-wise scale and mask ops: Mul/Div, Add, Where) when that value has no other consumer and
the fused kernel pays for the scores' shape (_KEY_MULTIPLE, _QUERY_BLOCK), so each block of score rows is
normalised while it is in cache.
Nodes of Graph.problems() (unsupported ops, dynamic dims) belong to no group and are never compiled. Whether
an op is an anchor, a reduction or injective is the `fusion` of its OpDef (registry.py).
"""
import numpy as np

from . import registry
from .rewrite import rebuild, taken_names, unique_name

__all__ = ["FusedGroup", "partition", "fold_batch_norm", "ANCHOR_OPS", "REDUCE_OPS"]


def __getattr__(name):
    # ANCHOR_OPS and REDUCE_OPS: the ops of each fusion kind (the `fusion` of their OpDefs), read from the
    # registry on each access so ops registered later are in them.
    kinds = {"ANCHOR_OPS": "anchor", "REDUCE_OPS": "reduce"}
    if name in kinds:
        return frozenset(op for op, op_def in registry.OPS.items() if op_def.fusion == kinds[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class FusedGroup:
    """Nodes computed by one kernel: `nodes` (graph order), `inputs` (values read from outside the group, in
    order of first use: graph inputs, constants, other groups' outputs), `output` (the one value used outside)."""

    def __init__(self, index, kind):
        self.index, self.kind = index, kind  # kind: "anchor", "reduce" or "injective"
        self.nodes = []
        self.inputs = []
        self.output = None
        self.deps = set()  # indices of the groups this one reads from

    @property
    def anchor(self):
        return next((n for n in self.nodes if _kind(n.op) != "injective"), None)

    @property
    def name(self):
        """The ops joined by '_' (an op given its optional bias input, the OpDef's bias_input, reads
        'conv2d_bias'), e.g. 'conv2d_bias_relu'."""
        parts = []
        for n in self.nodes:
            bias = registry.bias_input(n.op)
            part = n.op + ("_bias" if bias is not None and len(n.inputs) > bias else "")
            if not parts or parts[-1] != part:
                parts.append(part)
        if len(parts) > 6:
            parts = parts[:3] + ["etc"] + parts[-2:]
        return "_".join(parts)

    def __repr__(self):
        return f"FusedGroup({self.name}, nodes={[n.name for n in self.nodes]}, output={self.output!r})"


def _kind(op):
    return registry.fusion_kind(op)


# Whether attention's scores and their softmax fuse (module docstring). Off by default: untuned whole
# transformers on a 2-core Zen 3, built both ways and timed alternately in one process, ran with it on at 0.98x
# (BERT-base), 1.02x (GPT-2) and 0.92x (DistilBERT) the speed with it off (bench/bench_models.py
# --fuse-attention turns it on; tests/python/test_fused_attention.py does too).
FUSE_ATTENTION_SCORES = False
_NORMALISERS = ("softmax", "log_softmax")
# The scores' shapes whose fused kernel (the row-fusion sketch's blocks of rows, docs/search.md) runs at least as
# fast as the matmul and the softmax apart: keys a whole number of vectors (16 floats: one AVX-512 vector, two of
# AVX2) and queries in blocks of 4 rows, or one query. Elsewhere the guarded last vector (or block) of the
# scores reduces the head dimension with scalar code, and with one-row blocks K^T is read from L2 once per row:
# on a 2-core Zen 3, ViT-B/16's 197 x 197 scores took 4.0-4.7 ms fused against 1.8-2.6 ms apart, 129 x 129 (block
# of 3) 1.0-1.3 ms against 0.8-1.0 ms, where BERT's 128 x 128 took 0.52 ms against 0.59 ms.
_KEY_MULTIPLE, _QUERY_BLOCK = 16, 4


def _normalises_scores(graph, node, group):
    """Whether `node` is a softmax (log_softmax) along the last axis of the value of `group`, a matmul followed
    only by element-wise ops of its shape (the scale and mask of attention's scores): each row it normalises
    is then a row of the matmul. Only for shapes whose fused kernel pays (_KEY_MULTIPLE, _QUERY_BLOCK)."""
    if not FUSE_ATTENTION_SCORES:
        return False
    if node.op not in _NORMALISERS or group.kind != "anchor" or group.nodes[0].op != "matmul":
        return False
    shape = tuple(graph.shape(group.nodes[0].name))
    if len(shape) < 2 or node.attrs["axis"] not in (-1, len(shape) - 1):
        return False
    queries, keys = shape[-2:]
    if not all(isinstance(d, (int, np.integer)) for d in (queries, keys)):
        return False  # a dynamic dim
    if keys % _KEY_MULTIPLE or (queries != 1 and queries % _QUERY_BLOCK):
        return False
    return all(registry.layout_kind(n.op) in ("elementwise", "elementwise-unpadded") or n.op == "where"
               for n in group.nodes[1:]) and all(tuple(graph.shape(n.name)) == shape for n in group.nodes[1:])


class _Partitioner:
    def __init__(self, graph, no_multi):
        self.g = graph
        self.no_multi = no_multi  # values through which a join with several consumers is refused (None: all)
        self.outputs = set(graph.outputs)
        self.problem = {name for name, _, _ in graph.problems()}
        self.groups = []
        self.group_of = {}  # node name -> FusedGroup

    def ancestors(self, group):
        seen, todo = set(), list(group.deps)
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                todo.extend(self.groups[i].deps)
        return seen

    def _joinable(self, node, value):
        """The group `node` may join through its input `value`, or None."""
        group = self.group_of.get(value)
        if group is None or value in self.outputs:
            return None
        kind = _kind(node.op)
        if kind == "anchor" and not _normalises_scores(self.g, node, group):
            return None
        if kind == "reduce" and group.kind == "anchor":
            return None
        if [c.name for c in self.g.consumers(value)] != [node.name]:
            if kind == "anchor" or self.no_multi is None or value in self.no_multi:
                return None
        # no cycle: no other input of the node may be computed from this group
        for other in node.inputs:
            og = self.group_of.get(other)
            if og is not None and og is not group and group.index in self.ancestors(og) | {og.index}:
                return None
        return group

    def add(self, node):
        if node.name in self.problem:
            return  # never compiled: its output is an input of the groups that read it
        group = next((grp for grp in (self._joinable(node, v) for v in node.inputs) if grp is not None), None)
        if group is None:
            group = FusedGroup(len(self.groups), _kind(node.op))
            self.groups.append(group)
        group.nodes.append(node)
        self.group_of[node.name] = group
        for v in node.inputs:
            og = self.group_of.get(v)
            if og is not group and v not in group.inputs:
                group.inputs.append(v)
                if og is not None:
                    group.deps.add(og.index)

    def escaping(self, group):
        """The values of the group read outside it (or graph outputs)."""
        names = {n.name for n in group.nodes}
        return [n.name for n in group.nodes
                if n.name in self.outputs or any(c.name not in names for c in self.g.consumers(n.name))]


def _toposort(groups):
    order, done = [], set()
    pending = list(groups)
    while pending:
        ready = [grp for grp in pending if grp.deps <= done]
        for grp in ready:
            done.add(grp.index)
            order.append(grp)
        pending = [grp for grp in pending if grp.index not in done]
    return order


def partition(graph):
    """The fused groups of `graph` in an order that computes every group after the groups it reads. Nodes of
    graph.problems() are left out (no group)."""
    no_multi = set()
    while True:
        p = _Partitioner(graph, no_multi)
        for node in graph.nodes:
            p.add(node)
        bad = set()
        for grp in p.groups:
            out = p.escaping(grp)
            last = grp.nodes[-1].name
            grp.output = last
            # a group must hand out one value, its last: a value with several consumers that was taken in
            # may not also be used outside. The joins to refuse are those of the group's values with several
            # consumers (a value handed out was joined through one of them, perhaps not itself): only this
            # group's; the diamonds of the other groups (a GELU elsewhere) stay.
            if any(v != last for v in out):
                bad.update(v for v in out if v != last)
                bad.update(n.name for n in grp.nodes if len(graph.consumers(n.name)) > 1)
        if not bad:
            break
        if no_multi is None:
            raise RuntimeError(f"fusion: groups hand out several values {sorted(bad)}")
        # joins through single-consumer values only always give one output per group
        no_multi = None if no_multi is None or bad <= no_multi else no_multi | bad
    return _toposort(p.groups)


def _is_const(graph, value):
    return value in graph.constants


# fold_batch_norm is a rewrite of one pattern, conv2d (OIHW weights, an optional bias) followed by batch_norm,
# and names those two ops: what it relies on is how this pattern computes, not a fact of either op alone.
def _foldable(graph, bn):
    if bn.op != "batch_norm" or not all(_is_const(graph, v) for v in bn.inputs[1:]):
        return None
    conv = graph.producer(bn.inputs[0])
    if conv is None or conv.op != "conv2d" or conv.name in graph.outputs:
        return None
    if len(graph.consumers(conv.name)) != 1 or not all(_is_const(graph, v) for v in conv.inputs[1:]):
        return None
    if graph.dtype(conv.name) not in ("float32", "float64"):
        return None
    return conv


def fold_batch_norm(graph):
    """A graph where every conv2d whose only consumer is an inference batch_norm (constant weights and
    statistics) is one conv2d with weight * scale and bias (bias - mean) * scale + beta, named after the
    batch_norm; `graph` itself when there is none. Other nodes are kept as they are."""
    folds = {}
    for node in graph.nodes:
        conv = _foldable(graph, node)
        if conv is not None:
            folds[conv.name] = node
    if not folds:
        return graph
    consts = graph.constants
    names = taken_names(graph)
    skip = {bn.name: conv for conv, bn in ((graph.node(c), bn) for c, bn in folds.items())}

    def rewrite(out, node):
        if node.name in folds:
            return True  # the conv: written with its batch norm
        if node.name not in skip:
            return False
        conv = skip[node.name]
        gamma, beta, mean, var = (consts[v].astype(np.float64) for v in node.inputs[1:])
        scale = gamma / np.sqrt(var + node.attrs["epsilon"])
        weight = consts[conv.inputs[1]]
        bias = consts[conv.inputs[2]].astype(np.float64) if len(conv.inputs) == 3 else 0.0
        w = out.add_constant(unique_name(names, f"{node.name}.folded_weight"),
                             (weight.astype(np.float64) * scale[:, None, None, None]).astype(weight.dtype))
        b = out.add_constant(unique_name(names, f"{node.name}.folded_bias"),
                             ((bias - mean) * scale + beta).astype(weight.dtype))
        out.add_node("conv2d", [conv.inputs[0], w, b], conv.attrs, name=node.name)
        return True
    return rebuild(graph, rewrite)
