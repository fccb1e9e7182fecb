"""The operator library: common tensor operators written in autosched.te.

Every function builds compute tensors from the tensors it is given and returns the output tensor; pass the
inputs and that output to ans.ComputeDAG to get a task. Names follow TVM's topi, so that code and tuning
logs read the same. Stages carry readable names and tags that schedules rely on:
  "elemwise"       unary element-wise             "broadcast"        binary ops with numpy broadcasting
  "injective"      reshape, transpose, take...    "injective,pad"    padding stages ("PaddedInput")
  "comm_reduce"    reductions over axes            "conv2d_nhwc", "conv2d_nchw", "conv3d_ncdhw", "depthwise_conv2d_*",
  "spatial_conv2d" (+ "_output"), "dense", "matmul", "batch_matmul", "pool_max", "pool_sum", "pool_avg",
  "softmax_output", "log_softmax_output", "layer_norm", "conv2d_nchwc", "depthwise_conv2d_nchwc" (the
  channel-blocked layout NCHW[x]c of nchwc.py), "conv2d_winograd_nchwc" with its stages "winograd_data_pack",
  "winograd_bgemm", "winograd_inverse" and constant matrices "const_matrix" (winograd.py).
Bad arguments raise ValueError / TypeError naming the operator and the problem.
sum, max, min and abs are left out of __all__ (a star import would hide the builtins): call ops.sum(...).
"""
from .elemwise import (abs, add, broadcast_shape, cast, clip, divide, exp, gelu, log, maximum, minimum,
                       multiply, negative, power, relu, sigmoid, sqrt, subtract, tanh)
from .injective import concatenate, expand_dims, pad, reshape, strided_slice, take, transpose
from .nn import (avg_pool2d, batch_matmul, bias_add, conv2d_nchw, conv2d_nchw_spatial_pack, conv2d_nhwc,
                 conv3d_ncdhw, dense, depthwise_conv2d_nchw, depthwise_conv2d_nhwc, global_avg_pool2d,
                 global_max_pool2d, layer_norm, matmul, max_pool2d)
from .nchwc import (avg_pool2d_nchwc, bias_add_nchwc, conv2d_nchwc, depthwise_conv2d_nchwc,
                    global_avg_pool2d_nchwc, layout_transform, max_pool2d_nchwc)
from .winograd import conv2d_winograd_nchwc, winograd_weight
from .reduction import log_softmax, max, mean, min, prod, softmax, sum, variance

from . import workloads  # noqa: E402,F401  (registers the standard workloads)

__all__ = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "negative", "relu", "clip", "exp",
    "log", "sqrt", "sigmoid", "tanh", "gelu", "cast", "broadcast_shape",
    "reshape", "transpose", "concatenate", "pad", "take", "strided_slice", "expand_dims",
    "conv2d_nhwc", "conv2d_nchw", "depthwise_conv2d_nhwc", "depthwise_conv2d_nchw", "conv2d_nchw_spatial_pack",
    "conv3d_ncdhw",
    "dense", "matmul", "batch_matmul", "bias_add", "layer_norm", "max_pool2d", "avg_pool2d",
    "global_avg_pool2d", "global_max_pool2d",
    "layout_transform", "conv2d_nchwc", "depthwise_conv2d_nchwc", "bias_add_nchwc", "max_pool2d_nchwc",
    "avg_pool2d_nchwc", "global_avg_pool2d_nchwc", "conv2d_winograd_nchwc", "winograd_weight",
    "prod", "mean", "variance", "softmax", "log_softmax", "workloads",
]
