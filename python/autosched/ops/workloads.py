"""Standard workloads, registered by name for tasks, benchmarks and demos.

Each function takes plain arguments and returns the argument list of a task (inputs first, outputs last), e.g.
    ans.SearchTask(func="conv2d_nhwc", args=(1, 56, 56, 64, 64, 3, 3, 1, 1), target=...)
Importing autosched.ops registers them.
"""
from ..core import te
from ..core.workload import register_workload
from . import elemwise, nn, reduction
from .quantized import DOT_GROUP, conv2d_nchwc_dot, dot_group, matmul_dot_packed


def _register(name):
    return register_workload(name)


@_register("matmul_add")
def matmul_add(N, L, M, dtype="float32"):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    C = te.placeholder((N, M), name="C", dtype=dtype)
    out = elemwise.add(nn.matmul(A, B), C, name="out")
    return [A, B, C, out]


@_register("dense_bias_relu")
def dense_bias_relu(M, N, K, dtype="float32"):
    data = te.placeholder((M, K), name="data", dtype=dtype)
    weight = te.placeholder((N, K), name="weight", dtype=dtype)
    bias = te.placeholder((N,), name="bias", dtype=dtype)
    out = elemwise.relu(nn.dense(data, weight, bias))
    return [data, weight, bias, out]


@_register("batch_matmul")
def batch_matmul_workload(B, M, N, K, dtype="float32"):
    x = te.placeholder((B, M, K), name="x", dtype=dtype)
    y = te.placeholder((B, N, K), name="y", dtype=dtype)
    return [x, y, nn.batch_matmul(x, y)]


@_register("conv2d_nhwc")
def conv2d_nhwc_workload(N, H, W, CI, CO, KH, KW, stride, padding, dilation=1, groups=1, dtype="float32"):
    data = te.placeholder((N, H, W, CI), name="data", dtype=dtype)
    kernel = te.placeholder((KH, KW, CI // groups, CO), name="kernel", dtype=dtype)
    return [data, kernel, nn.conv2d_nhwc(data, kernel, stride, padding, dilation, groups)]


@_register("conv2d_nchw")
def conv2d_nchw_workload(N, CI, H, W, CO, KH, KW, stride, padding, dilation=1, groups=1, dtype="float32"):
    data = te.placeholder((N, CI, H, W), name="data", dtype=dtype)
    kernel = te.placeholder((CO, CI // groups, KH, KW), name="kernel", dtype=dtype)
    return [data, kernel, nn.conv2d_nchw(data, kernel, stride, padding, dilation, groups)]


@_register("conv2d_nchw_bias_relu")
def conv2d_nchw_bias_relu(N, CI, H, W, CO, KH, KW, stride, padding, dtype="float32"):
    data = te.placeholder((N, CI, H, W), name="data", dtype=dtype)
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel", dtype=dtype)
    bias = te.placeholder((CO,), name="bias", dtype=dtype)
    out = elemwise.relu(nn.bias_add(nn.conv2d_nchw(data, kernel, stride, padding), bias, axis=1))
    return [data, kernel, bias, out]


@_register("conv2d_nchw_spatial_pack")
def conv2d_nchw_spatial_pack_workload(N, CI, H, W, CO, KH, KW, stride, padding, tile=(2, 2, 4),
                                      dtype="float32"):
    data = te.placeholder((N, CI, H, W), name="data", dtype=dtype)
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel", dtype=dtype)
    return [data, kernel, nn.conv2d_nchw_spatial_pack(data, kernel, stride, padding, tile=tuple(tile))]


@_register("depthwise_conv2d_nhwc")
def depthwise_conv2d_nhwc_workload(N, H, W, C, KH, KW, stride, padding, multiplier=1, dtype="float32"):
    data = te.placeholder((N, H, W, C), name="data", dtype=dtype)
    kernel = te.placeholder((KH, KW, C, multiplier), name="kernel", dtype=dtype)
    return [data, kernel, nn.depthwise_conv2d_nhwc(data, kernel, stride, padding)]


@_register("softmax")
def softmax_workload(M, N, dtype="float32"):
    x = te.placeholder((M, N), name="x", dtype=dtype)
    return [x, reduction.softmax(x)]


@_register("layer_norm")
def layer_norm_workload(M, N, dtype="float32"):
    x = te.placeholder((M, N), name="x", dtype=dtype)
    gamma = te.placeholder((N,), name="gamma", dtype=dtype)
    beta = te.placeholder((N,), name="beta", dtype=dtype)
    return [x, gamma, beta, nn.layer_norm(x, gamma, beta, axis=-1)]


@_register("matmul_u8s8_packed")
def matmul_u8s8_packed(M, N, K, n_block=16):
    """uint8 [M, K] times an int8 [K, N] weight packed for dot-product instructions (panels of n_block
    columns), into int32 [M, ceil(N/n_block), n_block]."""
    a = te.placeholder((M, K), name="A", dtype="uint8")
    packed = te.placeholder((-(-N // n_block), -(-K // DOT_GROUP), n_block, DOT_GROUP), name="W_packed",
                            dtype="int8")
    return [a, packed, matmul_dot_packed(a, packed)]


@_register("matmul_bf16_packed")
def matmul_bf16_packed(M, N, K, n_block=16):
    """bfloat16 [M, K] times a bfloat16 [K, N] weight packed for AVX512-BF16's dot product (pairs of rows per
    lane), into float32 [M, ceil(N/n_block), n_block]."""
    group = dot_group("bfloat16")
    a = te.placeholder((M, K), name="A", dtype="bfloat16")
    packed = te.placeholder((-(-N // n_block), -(-K // group), n_block, group), name="W_packed", dtype="bfloat16")
    return [a, packed, matmul_dot_packed(a, packed)]


@_register("conv2d_nchwc_u8s8_dot")
def conv2d_nchwc_u8s8_dot(N, CI, H, W, CO, KH, KW, stride, padding, in_block=16, out_block=16):
    """uint8 NCHW[x]c data convolved with an int8 kernel packed for dot-product instructions, into int32."""
    data = te.placeholder((N, -(-CI // in_block), H, W, in_block), name="data", dtype="uint8")
    kernel = te.placeholder((-(-CO // out_block), -(-CI // in_block), KH, KW, in_block // DOT_GROUP, out_block,
                             DOT_GROUP), name="kernel", dtype="int8")
    return [data, kernel, conv2d_nchwc_dot(data, kernel, stride, padding)]


@_register("conv2d_nchwc_bf16_dot")
def conv2d_nchwc_bf16_dot(N, CI, H, W, CO, KH, KW, stride, padding, in_block=16, out_block=16):
    """bfloat16 NCHW[x]c data convolved with a bfloat16 kernel packed in pairs of input channels (AVX512-BF16's
    dot product), into float32."""
    group = dot_group("bfloat16")
    data = te.placeholder((N, -(-CI // in_block), H, W, in_block), name="data", dtype="bfloat16")
    kernel = te.placeholder((-(-CO // out_block), -(-CI // in_block), KH, KW, in_block // group, out_block, group),
                            name="kernel", dtype="bfloat16")
    return [data, kernel, conv2d_nchwc_dot(data, kernel, stride, padding)]
