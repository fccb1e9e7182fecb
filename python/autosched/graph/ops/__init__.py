"""The graph ops, one OpDef each, by family: elementwise.py (arithmetic, activations, clip, cast), logic.py
(comparisons, logical ops, isnan / isinf, where), nn.py (conv2d, dense, matmul, softmax, layer_norm, batch_norm,
group_norm), conv3d.py (conv3d, NCDHW), pool.py (max / avg / global pooling), pool3d.py (max_pool3d,
avg_pool3d), shape.py (reshape, flatten, transpose, concat, strided_slice, take, expand, gather_elements),
reduce.py (reduce_mean / sum / max / min / prod, argmax / argmin, log_softmax, cumsum), activation.py (softplus,
elu, leaky_relu, prelu), pad.py (pad), resize.py (resize), layout.py (the channel-blocked NCHW[x]c ops the
layout pass writes: layout_transform, conv2d_nchwc, ...), winograd.py (conv2d_winograd_nchwc, the layout pass's
Winograd convolution), quant.py (quantize_linear, dequantize_linear, requantize, matmul_integer,
conv2d_integer: ONNX's integer semantics, docs/quantized.md), quant_blocked.py (conv2d_integer_nchwc, the layout
pass's uint8 x int8 convolution for dot-product instructions). Each module lists its OpDefs in DEFS;
graph/registry.py registers them. common.py holds what the families share: attr converters, dim arithmetic,
numpy window helpers."""
