"""What a graph op is: an OpDef carries everything about one op, and each op is defined once, in its family's
module of graph/ops/ (elementwise.py, nn.py, pool.py, shape.py, reduce.py). graph/registry.py maps names to
OpDefs; everything that handles ops (Graph.add_node, the numpy evaluator, task extraction, fusion, to_onnx,
TorchGraph, the importers, the layout pass) looks the op up there. docs/graph_ops.md says how to add one.
"""
from ..core.dtypes import is_float
from .errors import OpError

__all__ = ["OpDef", "REQUIRED", "FUSION_KINDS", "LAYOUT_KINDS", "same_dtypes"]

# The default of an attr that must be given.
REQUIRED = object()

# How fusion treats an op: an anchor (a complex op) starts a group and takes no producer's group; a reduction
# starts a group or follows an injective one; an injective op joins its producer's group.
FUSION_KINDS = ("anchor", "reduce", "injective")

# How the layout pass (graph/layout.py) treats an op in the channel-blocked layout NCHW[x]c, where channels are
# padded with zeros up to a whole block:
#   "elementwise": each output element is computed from the inputs' elements at the same (broadcast) position,
#       and zeros give finite values (relu, add, sigmoid): the op runs blocked on any blocked value, padded
#       channel blocks included;
#   "elementwise-unpadded": element-wise, but zeros may give inf or NaN (exp, log, sqrt, divide, power): the op
#       runs blocked only on values whose channels fill whole blocks;
#   "nchw": the op runs in NCHW only; the pass transforms its blocked inputs back before it;
#   "blocked": the op is itself in the blocked layout (the ops the pass writes: conv2d_nchwc, layout_transform);
# or a converter, a function to_blocked(rewriter, node) -> bool that writes the node's blocked form through the
# pass's rewriter (conv2d -> conv2d_nchwc, max_pool2d -> max_pool2d_nchwc), or returns False to leave it NCHW.
LAYOUT_KINDS = ("elementwise", "elementwise-unpadded", "nchw", "blocked")

# The default of `fusion` and `layout`, which every op must state.
_UNSTATED = object()


def same_dtypes(dtypes, what="inputs"):
    """The one dtype of the inputs (None when none is known); OpError when they differ."""
    known = [d for d in dtypes if d is not None]
    if len(set(known)) > 1:
        raise OpError(f"{what} have different dtypes {tuple(dtypes)}; cast one of them")
    return known[0] if known else None


class OpDef:
    """One graph op.

    name: the op's name in graphs. inputs: how many inputs it takes, a count or (min, max) with max None for
    any number. attrs: attr name -> (default or REQUIRED, converter); a converter checks a given value and
    returns its normal form (tuples of ints, floats, bools), raising OpError naming the attr.
    infer(attrs, shapes, dtypes) -> (shape, dtype): the output of inputs whose ranks are known (dims may be
    str or None); it may finish the normal form of attrs in place (negative axes made non-negative).
    out_dtype(attrs, dtypes): the output dtype when an input's rank is unknown, if it is not the inputs' one
    dtype. float_only: integer inputs are refused.
    fusion (required): one of FUSION_KINDS. layout (required): one of LAYOUT_KINDS, or a converter function
    to_blocked(rewriter, node) -> bool (see LAYOUT_KINDS above and graph/layout.py).
    bias_input: the index of an optional bias input that fused-group names show ('conv2d_bias'), or None.
    reference(node, *arrays) -> numpy array: the numpy reference (Graph.evaluate).
    te(node, *te_tensors) -> te.Tensor: the computation compiled for the node (task extraction, graph.build).
    onnx: the ONNX op type the op is, with the same inputs and no attributes (exported as it is, and the ONNX
    importer maps that type onto the op), or export(writer, node) -> the name of the node's output value,
    adding ONNX nodes through the writer of graph/onnx_export.py (writer.node(type, inputs, output, **attrs),
    writer.const(base, array), writer.scalar(base, value, dtype), writer.fresh(base), writer.graph,
    writer.helper, writer.opset).
    torch(torch, node, *tensors) -> tensor: the op on PyTorch's kernels (TorchGraph).
    aten: ATen op names that are this op with the node's tensor inputs and no other arguments (from_torch maps
    them onto it).
    A node passed to these functions has op, name, inputs, attrs (normalised), shape and dtype.
    """

    def __init__(self, name, inputs, infer, attrs=None, *, fusion=_UNSTATED, layout=_UNSTATED, out_dtype=None,
                 float_only=False, bias_input=None, reference=None, te=None, onnx=None, torch=None, aten=()):
        if not isinstance(name, str) or not name:
            raise ValueError(f"OpDef: a name must be a non-empty str, got {name!r}")
        if fusion is _UNSTATED:
            raise TypeError(f"OpDef '{name}': fusion is required: how fusion treats the op, one of {FUSION_KINDS} "
                            "(docs/graph_ops.md)")
        if fusion not in FUSION_KINDS:
            raise ValueError(f"OpDef '{name}': fusion must be one of {FUSION_KINDS}, got {fusion!r}")
        if layout is _UNSTATED:
            raise TypeError(f"OpDef '{name}': layout is required: how the layout pass treats the op in the "
                            f"channel-blocked layout, one of {LAYOUT_KINDS} or a converter function "
                            "to_blocked(rewriter, node) (docs/graph_ops.md)")
        if not callable(layout) and layout not in LAYOUT_KINDS:
            raise ValueError(f"OpDef '{name}': layout must be one of {LAYOUT_KINDS} or a converter function "
                             f"to_blocked(rewriter, node), got {layout!r}")
        if bias_input is not None and (isinstance(bias_input, bool) or not isinstance(bias_input, int)):
            raise ValueError(f"OpDef '{name}': bias_input must be an input index or None, got {bias_input!r}")
        attrs = dict(attrs or {})
        if isinstance(onnx, str) and attrs:
            raise ValueError(f"OpDef '{name}': an op with attrs exports through a function, not as the bare ONNX "
                             f"op '{onnx}'")
        self.name = name
        self.min_inputs, self.max_inputs = inputs if isinstance(inputs, tuple) else (inputs, inputs)
        self.attrs = attrs
        self.infer_fn, self.out_dtype = infer, out_dtype
        self.float_only, self.fusion, self.layout = bool(float_only), fusion, layout
        self.bias_input = bias_input
        self.reference, self.te, self.onnx, self.torch = reference, te, onnx, torch
        self.aten = (aten,) if isinstance(aten, str) else tuple(aten)

    def __repr__(self):
        return f"OpDef({self.name!r})"

    def _check_count(self, n):
        if n >= self.min_inputs and (self.max_inputs is None or n <= self.max_inputs):
            return
        if self.max_inputs is None:
            expected = f"at least {self.min_inputs}"
        elif self.min_inputs == self.max_inputs:
            expected = str(self.min_inputs)
        else:
            expected = f"{self.min_inputs} to {self.max_inputs}"
        raise OpError(f"takes {expected} inputs, got {n}")

    def normalize_attrs(self, attrs):
        """The attrs with defaults filled in and every given value converted; OpError names a bad one."""
        unknown = sorted(set(attrs) - set(self.attrs))
        if unknown:
            known = ", ".join(self.attrs) or "none"
            raise OpError(f"unknown attr{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (known: {known})")
        out = {}
        for key, (default, convert) in self.attrs.items():
            if key not in attrs:
                if default is REQUIRED:
                    raise OpError(f"attr '{key}' is required")
                out[key] = default
            else:
                out[key] = convert(attrs[key])
        return out

    def infer(self, attrs, shapes, dtypes):
        """(normalised attrs, output shape, output dtype) on inputs of these shapes (None: rank unknown) and
        dtypes; OpError says what is wrong."""
        self._check_count(len(shapes))
        attrs = self.normalize_attrs(attrs)
        if self.float_only:
            for dt in dtypes:
                if dt is not None and not is_float(dt):
                    raise OpError(f"needs floating-point inputs, got {dt}")
        if any(s is None for s in shapes):  # an input of unknown rank: only the dtype can be inferred
            dtype = self.out_dtype(attrs, dtypes) if self.out_dtype is not None else same_dtypes(dtypes)
            return attrs, None, dtype
        shape, dtype = self.infer_fn(attrs, [tuple(s) for s in shapes], list(dtypes))
        return attrs, tuple(shape), dtype
