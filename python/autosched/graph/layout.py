"""The layout pass: convolutions and what follows them in the channel-blocked layout NCHW[x]c.

    blocked = convert_layout(graph, block=16)      # a new graph; `graph` itself when nothing converts

On a CPU a convolution vectorizes best along its output channels when they are the innermost, contiguous axis:
(N, C/x, H, W, x) with x the vector lanes (16 fp32 lanes with AVX-512, 8 with AVX2). The pass runs every
convolution (groups = 1, depthwise, and grouped ones whose groups are whole blocks, or become so by merging a
few adjacent groups: conv2d's converter in graph/ops/nn.py) in that layout, and with it the ops that follow:
bias and residual adds, activations, pooling, global average pooling and concat along channel blocks. Values
stay blocked from one such op to the next; a layout_transform appears only at the graph's boundaries (its inputs
and outputs keep their NCHW shapes and names) and before an op that cannot take the blocked layout (flatten,
dense, ...). What the pass does with an op is its OpDef's layout facet (opdef.LAYOUT_KINDS, asked of the
registry): an element-wise op ("elementwise", "elementwise-unpadded") runs blocked on a blocked operand; an op
with a converter function (conv2d, the pools, concat: in their families' modules of graph/ops/) is rewritten by
it through this pass's _Rewriter; an "nchw" op gets its inputs back in NCHW. Each value is transformed at most
once per layout, always from where it was computed, so no transform ever reads another. Weights and constant
operands are rearranged here, once, in numpy: the graph holds them blocked. Which block a value gets depends
only on its channel count C (x = `block`, or C itself when C < block), so the two operands of a residual add
always agree.

Channels are padded with zeros up to a whole block (24 channels in NCHW16c are two blocks, the last half
padding); padded weights and biases are zero, so padded channels of a convolution's output are zero, and
the "elementwise" ops, which may run on padded values, keep them finite (relu, clip, sigmoid, tanh, gelu, abs,
negative, erf, add, subtract, multiply, maximum, minimum); the "elementwise-unpadded" ones (exp, log, sqrt,
divide, power) run blocked only on values without padding. A padded channel never reaches a real one: the
weights that read it are zero.

Winograd: with `winograd` on, a 3x3 convolution of stride 1 (groups = 1, no dilation) becomes
conv2d_winograd_nchwc (autosched/ops/winograd.py), its weights transformed here once. True converts every
such convolution to F(2 x 2, 3 x 3). "auto" (the default of extract_tasks and graph.build) chooses per
convolution (winograd_tile): F(4 x 4, 3 x 3) where the block is at least WINOGRAD4_MIN_BLOCK lanes (AVX-512),
both channel counts are at least WINOGRAD4_MIN_CHANNELS and the output has at least WINOGRAD_MIN_TILES tiles
of 4 x 4; else F(2 x 2, 3 x 3) where both are at least WINOGRAD_MIN_CHANNELS and it has that many tiles of
2 x 2; else the direct convolution. Below the channel
minimums the transforms cost more than the fewer multiply-adds save; below the tile minimum the kernel waits
on its transformed weights (alpha^2 / 9 the size of the direct ones, each serving one use per tile), which
in a network come from memory. docs/graph.md has the figures.

bfloat16 convolutions: with `bf16_dot` on (lower_graph: CPUs with AVX512-BF16 or AMX-BF16), a direct one whose
input block is even becomes conv2d_nchwc_bf16_dot, its kernel packed in pairs of input channels for vdpbf16ps
(graph/ops/bf16_dot.py).

Quantized convolutions: with `integer_convs` on, a uint8 x int8 conv2d_integer (groups = 1, constant weight) becomes
conv2d_integer_nchwc (graph/ops/quant_blocked.py) on its input blocked for the dot-product instruction (VNNI's
vpdpbusd, or its widening form vpmaddwd on AVX2); its output stays NCHW. layout="auto" turns it on for targets
with either (has_integer_dot_product_block), layout="NCHWc" always.

extract_tasks and graph.build run the pass after folding batch norms (layout="NCHWc", and by default,
layout="auto", on CPU targets), with the block from the target's vector width (block_for_target).
"""
import numbers

import numpy as np

from .._core import Target
from ..core.checks import check_type
from ..core.dtypes import is_float, numpy_dtype
from . import registry
from .ir import Graph
from .ops import layout as L

__all__ = ["convert_layout", "has_integer_dot_product_block", "block_for_target", "resolve_block", "resolve_winograd", "winograd_tile", "LAYOUTS",
           "BLOCKED_OPS", "WINOGRAD_MIN_CHANNELS", "WINOGRAD4_MIN_CHANNELS", "WINOGRAD4_MIN_BLOCK",
           "WINOGRAD_MIN_TILES", "WINOGRAD_TILE"]

LAYOUTS = ("auto", "NCHW", "NCHWc")

# winograd="auto": the least input and output channels of a convolution run by F(2x2, 3x3), and by F(4x4, 3x3).
# Tuned alone on an AVX-512 Xeon for 300 trials each: at 64 channels (56x56) the direct blocked convolution
# 0.700 ms, F(4) 0.513 ms; at 128 (28x28) F(2) 0.450 ms, F(4) 0.380 ms. With 150 trials and the transforms of
# the dense matrices, F(2) was 0.93x the direct convolution at 64 channels, 1.30x at 128 (28x28), 1.32x at 256
# (14x14) and 1.16x at 512 (7x7).
WINOGRAD_MIN_CHANNELS = 128
WINOGRAD4_MIN_CHANNELS = 64
# winograd="auto": the least block (vector lanes) for F(4x4, 3x3). In AVX2 code (blocks of 8, 16 vector
# registers; `llvm -mattr=-avx512f` on the same Xeon, 300 trials each) F(4) lost: 1.86 ms against the direct
# convolution's 1.14 ms at 64 channels (56x56), 1.69 ms against F(2)'s 0.685 ms at 128 (28x28).
WINOGRAD4_MIN_BLOCK = 16
# winograd="auto": the least output tiles (per image). ResNet-18's 512-channel 7x7 convolutions (16 tiles of 2,
# 16 MB of transformed weights each) ran 0.53-0.59 ms alone but 1.0-1.5 ms inside the network; its 14x14 ones
# (49 tiles, 4 MB) 1.2-1.3x their time alone, the direct strided convolution beside them 1.34x.
WINOGRAD_MIN_TILES = 32
# winograd=True: the tile of every convolution converted.
WINOGRAD_TILE = 2
# The integer ops whose converters the pass asks (a uint8 x int8 convolution for the dot-product instruction,
# graph/ops/quant.py); the element-wise facets and the other converters are for floats.
INTEGER_CONVERTED = frozenset({"conv2d_integer"})

def __getattr__(name):
    # BLOCKED_OPS: the ops the pass writes (layout facet "blocked"), read from the registry on each access.
    if name == "BLOCKED_OPS":
        return registry.ops_of_layout("blocked")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Blocked:
    """The layout of a blocked value: block x and its real channel count."""

    __slots__ = ("block", "channels")

    def __init__(self, block, channels):
        self.block, self.channels = block, channels

    @property
    def padded(self):
        return self.channels % self.block != 0

    @property
    def name(self):
        return L.layout_name(self.block)

    def __eq__(self, other):
        return isinstance(other, _Blocked) and (self.block, self.channels) == (other.block, other.channels)

    def __hash__(self):
        return hash((self.block, self.channels))


def _static(shape):
    return shape is not None and all(isinstance(d, int) for d in shape)


class _Rewriter:
    """The pass over one graph. An op's layout converter (its OpDef's `layout` function) writes the node's
    blocked form through these methods:

        graph                      the graph being converted (shapes, constants, producers)
        layout_of(value)           the blocked layout `value` is computed in, or None (NCHW)
        layout_for(channels, block=None)   the blocked layout of a value of `channels` channels: the pass's
                                   block (`block` to ask for one), or the channel count itself when smaller
        get(value, layout)         the name of `value` in `layout` (None: NCHW) in the new graph: where it
                                   was computed, or one layout_transform of it
        derived(constant, how, fn) a constant computed once by fn from constant `constant` (blocked weights),
                                   named after `how` and shared by every user
        emit(node, op, inputs, attrs, layout)   adds the node's replacement, computed in `layout`
        winograd_tile(node, channels, out_channels)   the pass's Winograd tile for a convolution, 0 for none

    and returns True, or False (writing nothing) to leave the node in NCHW. The element-wise facets are
    handled here (elementwise, broadcast_operand)."""

    def __init__(self, graph, block, winograd, integer_convs, bf16_dot=False):
        self.graph, self.block, self.winograd_option = graph, block, winograd
        self.bf16_dot = bf16_dot  # bfloat16 convolutions with their kernels in pairs (conv2d_nchwc_bf16_dot)
        self.integer_ops = INTEGER_CONVERTED if integer_convs else frozenset()
        self.out = Graph(graph.name)
        self.taken = set(graph.inputs) | set(graph.constants) | {n.name for n in graph.nodes}
        self.home = {}  # original value -> (value in self.out, _Blocked or None for NCHW)
        self.memo = {}  # (original value, layout) -> value in self.out
        self.const_memo = {}  # (constant, how) -> constant in self.out
        self.outputs = set(graph.outputs)
        self.problem = {name for name, _, _ in graph.problems()}
        self.converted = 0

    # ---------------- names, constants, layouts ----------------

    def fresh(self, base):
        name, i = base, 0
        while name in self.taken:
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        return name

    def layout_for(self, channels, block=None):
        if block is None:
            block = self.block if channels >= self.block else channels
        return _Blocked(block, channels)

    def constant(self, name):
        """The original constant `name` in the new graph (NCHW, as it was)."""
        if name not in self.out.constants:
            self.out.add_constant(name, self.graph.constants[name])
        return name

    def derived(self, name, how, fn):
        """A constant computed once from constant `name` (a blocked weight), shared by every user."""
        key = (name, how)
        if key not in self.const_memo:
            self.const_memo[key] = self.out.add_constant(self.fresh(f"{name}.{how}"),
                                                         fn(self.graph.constants[name]))
        return self.const_memo[key]

    def get(self, value, layout):
        """`value` in `layout` (None: NCHW) in the new graph: where it was computed, or one layout_transform of it."""
        if value in self.graph.constants and value not in self.home:
            self.home[value] = (self.constant(value), None)
        name, have = self.home[value]
        if have == layout:
            return name
        key = (value, layout)
        if key not in self.memo:
            src = have.name if have is not None else "NCHW"
            channels = (have or layout).channels
            dst = layout.name if layout is not None else "NCHW"
            if layout is None and value in self.outputs:
                out_name = value  # the graph output keeps its name and NCHW shape
            else:
                out_name = self.fresh(f"{value}.{dst.lower()}")
            self.memo[key] = self.out.add_node("layout_transform", [name], dict(
                src_layout=src, dst_layout=dst, channels=channels), name=out_name)
        return self.memo[key]

    def layout_of(self, value):
        return self.home[value][1] if value in self.home else None

    def emit(self, node, op, inputs, attrs, layout):
        """Adds the node's replacement; a blocked graph output is computed under another name (the output's
        name is the transform back to NCHW)."""
        name = node.name
        if layout is not None and node.name in self.outputs:
            name = self.fresh(f"{node.name}.{layout.name.lower()}")
        self.out.add_node(op, inputs, attrs, name=name)
        self.home[node.name] = (name, layout)
        if layout is not None or op != node.op:
            self.converted += 1

    def winograd_tile(self, node, channels, out_channels):
        """The Winograd tile of the (groups = 1) convolution `node`, 0 for the direct one: only 3x3 of stride
        1 and no dilation; the option True gives every such one WINOGRAD_TILE, "auto" asks winograd_tile."""
        a, option = node.attrs, self.winograd_option
        if option is False or tuple(self.graph.shape(node.inputs[1])[2:]) != (3, 3):
            return 0
        if tuple(a["strides"]) != (1, 1) or tuple(a["dilations"]) != (1, 1):
            return 0
        if option is True:
            return WINOGRAD_TILE
        return winograd_tile(channels, out_channels, node.shape[2:], self.block)

    # ---------------- the nodes ----------------

    def run(self):
        g = self.graph
        for v in g.inputs:
            self.out.add_input(v, g.shape(v), g.dtype(v))
            self.home[v] = (v, None)
        for node in g.nodes:
            if node.op == "unsupported":
                ins = [self.get(v, None) for v in node.inputs]
                self.out.add_unsupported(node.attrs["op_type"], ins, node.name, node.shape, node.dtype,
                                         node.attrs["reason"])
                self.home[node.name] = (node.name, None)
                continue
            if node.name in self.problem or not self.try_blocked(node):
                self.emit(node, node.op, [self.get(v, None) for v in node.inputs], node.attrs, None)
        if not self.converted:
            return g
        self.out.set_outputs([self.get(v, None) for v in g.outputs])
        return self.out

    def try_blocked(self, node):
        """Writes the node's blocked form as its op's layout facet says; False leaves it to NCHW."""
        g = self.graph
        if not _static(node.shape) or not all(_static(g.shape(v)) for v in node.inputs):
            return False
        if node.dtype is None:
            return False
        kind = registry.layout_kind(node.op)
        if not is_float(node.dtype) and node.op not in self.integer_ops:
            return False
        if callable(kind):
            return bool(kind(self, node))
        if kind in ("elementwise", "elementwise-unpadded"):
            return self.elementwise(node, padding_ok=kind == "elementwise")
        return False  # "nchw", and "blocked" ops already in their layout

    def elementwise(self, node, padding_ok):
        """An element-wise op on a blocked operand of the output's shape runs blocked; the other operands are
        then blocked too (transformed, or constants rearranged) or broadcast over channels. padding_ok: it may
        run on values with padded channels."""
        if len(node.inputs) == 1:  # the output has the input's shape
            layout = self.layout_of(node.inputs[0])
            if layout is None or (layout.padded and not padding_ok):
                return False
            self.emit(node, node.op, [self.get(node.inputs[0], layout)], node.attrs, layout)
            return True
        g, shape = self.graph, node.shape
        if len(shape) != 4:
            return False
        layout = next((self.layout_of(v) for v in node.inputs
                       if self.layout_of(v) is not None and g.shape(v) == shape), None)
        if layout is None or (layout.padded and not padding_ok):
            return False
        ins = []
        for v in node.inputs:
            operand = self.broadcast_operand(v, shape, layout)
            if operand is None:
                return False
            ins.append(operand)
        self.emit(node, node.op, ins, node.attrs, layout)
        return True

    def broadcast_operand(self, value, shape, layout):
        """`value` as an operand of a blocked element-wise op of NCHW output `shape`, or None."""
        g = self.graph
        vshape = g.shape(value)
        if self.layout_of(value) == layout:
            return self.get(value, layout)
        if value in g.constants:
            if len(vshape) > 4:
                return None
            full = (1,) * (4 - len(vshape)) + tuple(vshape)
            if full[1] == 1:  # broadcast over channels: one lane
                return self.derived(value, "lane", lambda arr: arr.reshape(full + (1,)))
            if full[1] == layout.channels:
                return self.derived(value, layout.name.lower(),
                                    lambda arr: L.to_blocked(arr.reshape(full), layout.block))
            return None
        if len(vshape) == 4 and vshape[1] == layout.channels:
            return self.get(value, layout)
        return None


def winograd_tile(channels, out_channels, out_hw, block):
    """winograd="auto"'s choice for a 3x3 convolution of stride 1 with these channels and output (height, width)
    in blocks of `block` channels: 4 (F(4x4, 3x3)), 2 (F(2x2, 3x3)) or 0 (the direct convolution). The
    minimums are above."""
    def tiles(m):
        return -(-out_hw[0] // m) * -(-out_hw[1] // m)

    narrowest = min(channels, out_channels)
    if block >= WINOGRAD4_MIN_BLOCK and narrowest >= WINOGRAD4_MIN_CHANNELS and tiles(4) >= WINOGRAD_MIN_TILES:
        return 4
    if narrowest >= WINOGRAD_MIN_CHANNELS and tiles(2) >= WINOGRAD_MIN_TILES:
        return 2
    return 0


def convert_layout(graph, block, winograd=False, integer_convs=False, bf16_dot=False):
    """`graph` with its convolutions and what follows them in NCHW[block]c (see the module docstring): a new
    graph with the same inputs and outputs, or `graph` itself when it has nothing to convert. Run it after
    fold_batch_norm, so a convolution's batch norm is its bias. winograd: False, True (every 3x3 convolution
    of stride 1, by F(2x2, 3x3)) or "auto" (the tile of winograd_tile for each, or none). integer_convs: also
    the uint8 x int8 convolutions, for the dot-product instruction (conv2d_integer_nchwc). bf16_dot: a direct
    bfloat16 convolution (groups = 1, an even input block) becomes conv2d_nchwc_bf16_dot, its kernel in pairs of
    input channels for the bfloat16 dot product (graph/ops/bf16_dot.py)."""
    if isinstance(block, bool) or not isinstance(block, numbers.Integral) or block < 1:
        raise ValueError(f"convert_layout: block must be a positive int (the vector lanes), got {block!r}")
    check_type("convert_layout", "integer_convs", integer_convs, bool, "True or False")
    check_type("convert_layout", "bf16_dot", bf16_dot, bool, "True or False")
    return _Rewriter(graph, int(block), _check_winograd("convert_layout", winograd), integer_convs, bf16_dot).run()


def has_integer_dot_product_block(target):
    """Whether the code generator computes a uint8 x int8 dot-product block on this CPU target fast: with VNNI's
    instruction (avx512vnni, avxvnni: one vpdpbusd per lane group) or its widening form (avx2, avx512bw: two
    vpmaddwd on the group's bytes as 16-bit pairs, exact as vpdpbusd). There a uint8 x int8 convolution runs
    faster blocked (layout="auto"): ResNet-50 quantized static on a 2-core Zen 3 (AVX2), untuned, ran 75.8 ms
    blocked against 210 ms with NCHW integer convolutions (docs/notes/quantized_figures.md)."""
    target = Target(target) if isinstance(target, str) else target  # the rule of CpuSpec::ByteDotProductForm
    return not target.is_gpu and bool({"avx512vnni", "avxvnni", "avx512bw", "avx2"} & set(target.features))


def _check_winograd(where, winograd):
    if winograd is True or winograd is False or (isinstance(winograd, str) and winograd == "auto"):
        return winograd
    raise ValueError(f"{where}: winograd must be True, False or 'auto', got {winograd!r}")


def resolve_winograd(winograd, block, where="lower_graph"):
    """The winograd option for convert_layout given the pass's block (None: the pass does not run): True
    needs the blocked layout (a ValueError says so), "auto" is off without it."""
    _check_winograd(where, winograd)
    if block is None:
        if winograd is True:
            raise ValueError(f"{where}: winograd=True needs the channel-blocked layout (layout='NCHWc', or "
                             "'auto' on a CPU target)")
        return False
    return winograd


def block_for_target(target, hardware_params=None, dtype="float32"):
    """The vector lanes of `dtype` on the target: vector_unit_bytes / itemsize (16 fp32 with AVX-512, 8 with
    AVX2), from hardware_params when it gives vector_unit_bytes, else from the target's own."""
    vector = 0
    if hardware_params is not None:
        vector = getattr(hardware_params, "vector_unit_bytes", 0) or 0
    if vector <= 0:
        vector = (Target(target) if isinstance(target, str) else target).hardware_params.vector_unit_bytes
    return max(1, vector // numpy_dtype(dtype).itemsize)


def resolve_block(layout, target, hardware_params=None):
    """The block the pass runs with for option `layout`, or None where it does not run: "NCHW" never,
    "NCHWc" always (the target's lanes), "auto" on CPU targets (llvm), where the blocked convolutions are
    several times faster, tuned or not (docs/graph.md), and not on GPU targets. A ValueError names the
    choices."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(repr(v) for v in LAYOUTS)}, got {layout!r}")
    if layout == "NCHW":
        return None
    target = Target(target) if isinstance(target, str) else target
    if layout == "auto" and target.is_gpu:
        return None
    return block_for_target(target, hardware_params)
