"""The registry of graph ops: op name -> OpDef (opdef.py). The op families of graph/ops/ define the ops; this
module registers them, and every user of an op looks it up here: Graph.add_node (infer), Graph.evaluate
(reference), task extraction (te_builder), fusion (fusion_kind, bias_input), the layout pass (layout_kind),
to_onnx and TorchGraph (get), and the importers (by_onnx, by_aten) for foreign ops that are a graph op as
they are.

    registry.register(OpDef("softsign", 1, infer, fusion="injective", layout="elementwise", reference=...,
                            te=..., onnx="Softsign", torch=...))

is all it takes to add an op (docs/graph_ops.md).
"""
from typing import Dict

from .errors import OpError
from .opdef import REQUIRED, OpDef
from .ops import (activation, bf16_dot, conv3d, elementwise, layout, logic, nn, pad, pool, pool3d, quant, quant_blocked,
                  reduce, resize, shape, winograd)

__all__ = ["OPS", "OpDef", "OpError", "register", "unregister", "get", "infer", "reference", "te_builder",
           "fusion_kind", "layout_kind", "bias_input", "ops_of_layout", "by_onnx", "by_aten"]

OPS: Dict[str, OpDef] = {}  # name -> OpDef, in order of registration
_BY_ONNX: Dict[str, OpDef] = {}  # ONNX op type -> OpDef whose `onnx` is that type
_BY_ATEN: Dict[str, OpDef] = {}  # ATen op name -> OpDef that lists it in `aten`


def register(op_def):
    """Adds an op; returns it. A name, an ONNX type or an ATen name already taken is refused (ValueError)."""
    if not isinstance(op_def, OpDef):
        raise TypeError(f"register: expected an OpDef, got {type(op_def).__name__}")
    if op_def.name in OPS:
        raise ValueError(f"register: op '{op_def.name}' is already registered")
    onnx = op_def.onnx if isinstance(op_def.onnx, str) else None
    if onnx is not None and onnx in _BY_ONNX:
        raise ValueError(f"register: op '{op_def.name}': ONNX op '{onnx}' already is op '{_BY_ONNX[onnx].name}'")
    for name in op_def.aten:
        if name in _BY_ATEN:
            raise ValueError(f"register: op '{op_def.name}': ATen op '{name}' already is op '{_BY_ATEN[name].name}'")
    OPS[op_def.name] = op_def
    if onnx is not None:
        _BY_ONNX[onnx] = op_def
    _BY_ATEN.update((name, op_def) for name in op_def.aten)
    return op_def


def unregister(name):
    """Removes op `name` (an op registered for a test, say); returns its OpDef."""
    op_def = get(name)
    del OPS[name]
    for table in (_BY_ONNX, _BY_ATEN):
        for key in [k for k, v in table.items() if v is op_def]:
            del table[key]
    return op_def


def get(op):
    """The OpDef of `op`; OpError for an unknown op."""
    if not isinstance(op, str) or op not in OPS:
        raise OpError(f"unknown op {op!r} (known: {', '.join(sorted(OPS))})")
    return OPS[op]


def infer(op, attrs, shapes, dtypes):
    """(normalised attrs, output shape, output dtype) of `op` on inputs of these shapes and dtypes; OpError
    says what is wrong."""
    return get(op).infer(attrs, shapes, dtypes)


def reference(op):
    """The numpy reference of `op`: f(node, *arrays) -> array."""
    fn = get(op).reference
    if fn is None:
        raise OpError(f"op '{op}' has no numpy reference")
    return fn


def te_builder(op):
    """The te builder of `op`: f(node, *te_tensors) -> te.Tensor, built on autosched.ops."""
    fn = get(op).te
    if fn is None:
        raise OpError(f"op '{op}' has no te builder" + (" (it is not compilable)" if op == "unsupported" else ""))
    return fn


def fusion_kind(op):
    """How fusion treats `op`: "anchor", "reduce" or "injective" (opdef.FUSION_KINDS)."""
    return get(op).fusion


def layout_kind(op):
    """How the layout pass treats `op` in the channel-blocked layout: "elementwise", "elementwise-unpadded",
    "nchw", "blocked" (opdef.LAYOUT_KINDS) or its converter function to_blocked(rewriter, node)."""
    return get(op).layout


def bias_input(op):
    """The index of `op`'s optional bias input that fused-group names show ('conv2d_bias'), or None."""
    return get(op).bias_input


def ops_of_layout(kind):
    """The registered ops whose layout facet is `kind` (one of opdef.LAYOUT_KINDS), now."""
    return frozenset(name for name, op_def in OPS.items() if op_def.layout == kind)


def by_onnx(op_type):
    """The OpDef that ONNX op `op_type` is as it is (same inputs, no attributes), or None."""
    return _BY_ONNX.get(op_type)


def by_aten(name):
    """The OpDef that ATen op `name` is with the node's tensor inputs and no other arguments, or None."""
    return _BY_ATEN.get(name)


for _family in (nn, conv3d, pool, pool3d, elementwise, activation, logic, shape, pad, resize, reduce, layout,
                winograd, quant, quant_blocked, bf16_dot):
    for _op_def in _family.DEFS:
        register(_op_def)

# A node the compiler cannot handle, kept so the graph is whole (Graph.add_unsupported); it has no inference,
# reference, te, export or PyTorch evaluation. It is never compiled (fusion leaves it out) and stays NCHW.
register(OpDef("unsupported", (0, None), None, {"op_type": (REQUIRED, str), "reason": ("", str)},
               fusion="injective", layout="nchw"))
