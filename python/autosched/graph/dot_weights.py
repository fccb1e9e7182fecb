"""bfloat16 matrix products over weights packed for the CPU's bfloat16 dot product.

    graph = pack_bfloat16_weights(graph)   # dense / matmul on a constant bfloat16 weight -> dense_bf16_dot

On a CPU with AVX512-BF16 (vdpbf16ps) or AMX-BF16 (tdpbf16ps), a bfloat16 dense layer runs on those
instructions when its weight holds each output unit's input features in adjacent pairs (graph/ops/bf16_dot.py).
lower_graph runs this pass there (has_bfloat16_dot_product): every `dense` with a constant (N, K) weight and
every `matmul` whose second operand is a constant (K, N) matrix, both bfloat16 with K even, becomes
dense_bf16_dot over the weight packed once here (a weight that several nodes share is packed once). The sums
are the same float32 sums in another order (vdpbf16ps adds a pair's two products, then the next pair), rounded
to bfloat16 once, as before. Elsewhere the pair form costs more than it saves: on an AVX2 CPU (Zen 3) the
expert's 128 x 768 x 3072 product took 21 ms over the pairs against 6.2 ms over the plain weight, so the
pass does not run there.
"""
from .._core import Target
from ..ops.quantized import pack_dot_weight
from .ops.bf16_dot import DOT_PAIR, DOT_PANEL
from .rewrite import rebuild, taken_names, unique_name

__all__ = ["pack_bfloat16_weights", "has_bfloat16_dot_product"]


def has_bfloat16_dot_product(target):
    """Whether this CPU target has a bfloat16 pair dot product (AVX512-BF16's vdpbf16ps, or AMX-BF16's tiles)."""
    target = Target(target) if isinstance(target, str) else target
    return not target.is_gpu and bool({"avx512bf16", "amx-bf16"} & set(target.features))


def _packable_weight(graph, node):
    """(data, weight value, the (N, K) weight as an array, bias or None) of a node this pass rewrites, else
    None."""
    if node.op == "dense":
        data, weight = node.inputs[0], node.inputs[1]
        array = graph.constants.get(weight)
        bias = node.inputs[2] if len(node.inputs) == 3 else None
    elif node.op == "matmul":
        data, weight = node.inputs
        array = graph.constants.get(weight)
        array = array.T if array is not None and array.ndim == 2 else None
        bias = None
        if len(graph.shape(data)) < 2:
            return None
    else:
        return None
    if array is None or array.ndim != 2 or node.dtype != "bfloat16" or graph.dtype(data) != "bfloat16":
        return None
    if array.dtype.name != "bfloat16" or array.shape[1] % DOT_PAIR or graph.shape(data)[-1] != array.shape[1]:
        return None
    return data, weight, array, bias


def pack_bfloat16_weights(graph):
    """`graph` with its bfloat16 dense layers and matmuls on constant weights as dense_bf16_dot (see above);
    `graph` itself when there is none."""
    found = {node.name: p for node in graph.nodes if (p := _packable_weight(graph, node)) is not None}
    if not found:
        return graph
    names, packed = taken_names(graph), {}

    def rewrite(out, node):
        if node.name not in found:
            return False
        data, weight, array, bias = found[node.name]
        key = (weight, node.op)  # a matmul's (K, N) and a dense's (N, K) of one constant pack differently
        if key not in packed:
            packed[key] = unique_name(names, f"{weight}.bf16_pairs")
            out.add_constant(packed[key], pack_dot_weight(array.T, DOT_PANEL, DOT_PAIR))
        inputs = [data, packed[key]] + ([bias] if bias is not None else [])
        out.add_node("dense_bf16_dot", inputs, {"units": int(array.shape[0])}, name=node.name)
        return True

    return rebuild(graph, rewrite)
