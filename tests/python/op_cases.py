"""The operator library as small test cases: for every operator of autosched.ops a builder of a DAG with
shapes that split factors do not divide (primes, 1), the dtypes it is meaningful in, whether its float
inputs must be positive, and the targeted schedules of schedule_helpers.TARGETED that fit its family.

    builder, dtypes, positive, targeted = CASES["conv2d_nhwc"]
    dag = ans.ComputeDAG(builder("float32"))
"""
from autosched import ops, te

F32, F16, I32 = "float32", "float16", "int32"
ALL = (F32, F16, I32)
FLOATS = (F32, F16)


def _ph(shape, name, dtype):
    return te.placeholder(shape, name=name, dtype=dtype)


# Each case: builder(dtype) -> the tensors of the DAG (inputs first, then the output), the dtypes it is
# checked in, whether float inputs must be positive, and the targeted schedules that fit it.
def _conv_nhwc(dtype):
    data, kernel = _ph((1, 7, 5, 3), "data", dtype), _ph((3, 3, 3, 4), "kernel", dtype)
    return [data, kernel, ops.conv2d_nhwc(data, kernel, stride=2, padding=1)]


def _conv_nhwc_groups(dtype):
    data, kernel = _ph((1, 6, 7, 4), "data", dtype), _ph((3, 2, 2, 6), "kernel", dtype)
    return [data, kernel, ops.conv2d_nhwc(data, kernel, stride=1, padding=(2, 1), dilation=2, groups=2)]


def _conv_nchw_bias_relu(dtype):
    data, kernel = _ph((2, 3, 7, 5), "data", dtype), _ph((5, 3, 3, 2), "kernel", dtype)
    bias = _ph((5,), "bias", dtype)
    conv = ops.conv2d_nchw(data, kernel, stride=(2, 1), padding=(1, 0, 2, 1))
    return [data, kernel, bias, ops.relu(ops.bias_add(conv, bias, axis=1))]


def _conv_nchw_groups(dtype):
    data, kernel = _ph((1, 4, 9, 7), "data", dtype), _ph((6, 2, 3, 2), "kernel", dtype)
    return [data, kernel, ops.conv2d_nchw(data, kernel, stride=1, padding=1, dilation=(2, 1), groups=2)]


def _depthwise_nchw(dtype):
    data, kernel = _ph((1, 3, 7, 6), "data", dtype), _ph((3, 2, 3, 3), "kernel", dtype)
    return [data, kernel, ops.depthwise_conv2d_nchw(data, kernel, stride=2, padding=1)]


def _depthwise_nhwc(dtype):
    data, kernel = _ph((1, 7, 5, 3), "data", dtype), _ph((3, 3, 3, 1), "kernel", dtype)
    return [data, kernel, ops.depthwise_conv2d_nhwc(data, kernel, stride=1, padding="SAME", dilation=2)]


def _spatial_pack(dtype):
    data, kernel = _ph((1, 3, 7, 7), "data", dtype), _ph((4, 3, 3, 3), "kernel", dtype)
    return [data, kernel, ops.conv2d_nchw_spatial_pack(data, kernel, stride=1, padding=1, tile=(2, 3, 4))]


def _dense_bias(dtype):
    data, weight, bias = _ph((7, 11), "data", dtype), _ph((5, 11), "weight", dtype), _ph((5,), "bias", dtype)
    return [data, weight, bias, ops.dense(data, weight, bias)]


def _matmul(dtype):
    a, b = _ph((7, 13), "A", dtype), _ph((13, 5), "B", dtype)
    return [a, b, ops.matmul(a, b)]


def _matmul_transposed(dtype):
    a, b = _ph((13, 7), "A", dtype), _ph((5, 13), "B", dtype)
    return [a, b, ops.matmul(a, b, transpose_a=True, transpose_b=True)]


def _batch_matmul(dtype):
    x, y = _ph((3, 5, 7), "X", dtype), _ph((1, 6, 7), "Y", dtype)  # y's batch of 1 broadcasts
    return [x, y, ops.batch_matmul(x, y)]


def _max_pool(dtype):
    data = _ph((1, 3, 7, 9), "data", dtype)
    return [data, ops.max_pool2d(data, pool_size=3, strides=2, padding=1)]


def _avg_pool_nhwc(dtype):
    data = _ph((2, 7, 5, 3), "data", dtype)
    return [data, ops.avg_pool2d(data, pool_size=(3, 2), strides=(2, 1), padding=1, layout="NHWC",
                                 count_include_pad=False)]


def _global_avg_pool(dtype):
    data = _ph((2, 3, 5, 7), "data", dtype)
    return [data, ops.global_avg_pool2d(data)]


def _global_max_pool_nhwc(dtype):
    data = _ph((2, 5, 7, 3), "data", dtype)
    return [data, ops.global_max_pool2d(data, layout="NHWC")]


def _softmax(dtype):
    x = _ph((5, 13), "x", dtype)
    return [x, ops.softmax(x)]


def _softmax_axis0(dtype):
    x = _ph((7, 3, 5), "x", dtype)
    return [x, ops.softmax(x, axis=0)]


def _log_softmax(dtype):
    x = _ph((7, 11), "x", dtype)
    return [x, ops.log_softmax(x)]


def _layer_norm(dtype):
    x, gamma, beta = _ph((5, 13), "x", dtype), _ph((13,), "gamma", dtype), _ph((13,), "beta", dtype)
    return [x, gamma, beta, ops.layer_norm(x, gamma, beta)]


def _layer_norm_2axes(dtype):
    x = _ph((3, 5, 7), "x", dtype)
    gamma, beta = _ph((5, 7), "gamma", dtype), _ph((5, 7), "beta", dtype)
    return [x, gamma, beta, ops.layer_norm(x, gamma, beta, axis=[1, 2])]


def _mean(dtype):
    x = _ph((5, 7, 3), "x", dtype)
    return [x, ops.mean(x, axis=1)]


def _variance(dtype):
    x = _ph((5, 7, 3), "x", dtype)
    return [x, ops.variance(x, axis=(0, 2), keepdims=True, unbiased=True)]


def _sum_all(dtype):
    x = _ph((5, 7), "x", dtype)
    return [x, ops.sum(x)]


def _max_min(dtype):
    x = _ph((3, 11, 5), "x", dtype)
    return [x, ops.add(ops.max(x, axis=1), ops.min(x, axis=1))]


def _prod(dtype):
    x = _ph((4, 6), "x", dtype)
    return [x, ops.prod(x, axis=1, keepdims=True)]


def _broadcast_arith(dtype):
    x, y = _ph((5, 1, 7), "x", dtype), _ph((3, 7), "y", dtype)
    mixed = ops.subtract(ops.multiply(ops.add(x, y), y), ops.maximum(x, 1))
    return [x, y, ops.minimum(mixed, ops.negative(y))]


def _unary_float(dtype):
    x, y = _ph((5, 7), "x", dtype), _ph((7,), "y", dtype)
    a = ops.add(ops.exp(ops.negative(x)), ops.sigmoid(ops.tanh(x)), name="T_add_a")
    shifted = ops.add(x, 1.0, name="T_add_one")
    b = ops.divide(ops.gelu(a), ops.add(ops.sqrt(ops.log(shifted)), y, name="T_add_y"))
    return [x, y, ops.clip(ops.power(b, y), -2.0, 5.0)]


def _abs_relu_cast(dtype):
    x = _ph((3, 5, 7), "x", dtype)
    return [x, ops.relu(ops.cast(ops.abs(ops.subtract(x, 1)), dtype))]


def _bias_add(dtype):
    x, bias = _ph((2, 5, 3, 3), "x", dtype), _ph((5,), "bias", dtype)
    return [x, bias, ops.bias_add(x, bias, axis=1)]


def _reshape(dtype):
    x = _ph((6, 10), "x", dtype)
    return [x, ops.add(ops.reshape(x, (4, -1)), 1)]


def _transpose(dtype):
    x = _ph((3, 5, 7), "x", dtype)
    return [x, ops.multiply(ops.transpose(x, (2, 0, 1)), 2)]


def _concatenate(dtype):
    a, b, c = _ph((3, 5), "a", dtype), _ph((3, 2), "b", dtype), _ph((3, 4), "c", dtype)
    return [a, b, c, ops.relu(ops.concatenate([a, b, c], axis=1))]


def _pad(dtype):
    x = _ph((5, 7), "x", dtype)
    return [x, ops.add(ops.pad(x, (1, 2), (2, 0), pad_value=3), 1)]


def _take(dtype):
    a, idx = _ph((7, 5), "a", dtype), _ph((3, 4), "indices", I32)
    flat = ops.expand_dims(ops.take(a, idx, mode="clip", name="T_take_flat"), 2)  # (3, 4, 1) broadcasts
    return [a, idx, ops.add(ops.take(a, idx, axis=0, mode="wrap", name="T_take_rows"), flat)]


def _strided_slice(dtype):
    x = _ph((9, 11), "x", dtype)
    return [x, ops.multiply(ops.strided_slice(x, [1, -1], [8, 0], [2, -3]), 3)]


def _expand_dims(dtype):
    x = _ph((5, 7), "x", dtype)
    return [x, ops.expand_dims(x, 1)]


CONV = ("ssrsrs", "ssrsrs_cache_write", "attach_all")
REDUCE = ("attach_all",)
INJECTIVE = ("fuse_flat", "attach_all")

CASES = {
    "conv2d_nhwc": (_conv_nhwc, ALL, False, CONV),
    "conv2d_nhwc_groups_dilation": (_conv_nhwc_groups, (F32,), False, CONV),
    "conv2d_nchw_bias_relu": (_conv_nchw_bias_relu, ALL, False, CONV),
    "conv2d_nchw_groups_dilation": (_conv_nchw_groups, (F32, I32), False, CONV),
    "depthwise_nchw": (_depthwise_nchw, ALL, False, CONV),
    "depthwise_nhwc": (_depthwise_nhwc, (F32, F16), False, CONV),
    "spatial_pack": (_spatial_pack, (F32, I32), False, CONV),
    "dense_bias": (_dense_bias, ALL, False, CONV),
    "matmul": (_matmul, ALL, False, CONV),
    "matmul_transposed": (_matmul_transposed, (F32,), False, CONV),
    "batch_matmul": (_batch_matmul, ALL, False, CONV),
    "max_pool2d": (_max_pool, ALL, False, REDUCE),
    "avg_pool2d_nhwc": (_avg_pool_nhwc, FLOATS, False, REDUCE),
    "global_avg_pool2d": (_global_avg_pool, FLOATS, False, REDUCE),
    "global_max_pool2d_nhwc": (_global_max_pool_nhwc, (F32, I32), False, REDUCE),
    "softmax": (_softmax, FLOATS, False, REDUCE),
    "softmax_axis0": (_softmax_axis0, (F32,), False, REDUCE),
    "log_softmax": (_log_softmax, FLOATS, False, REDUCE),
    "layer_norm": (_layer_norm, FLOATS, False, REDUCE),
    "layer_norm_2axes": (_layer_norm_2axes, (F32,), False, REDUCE),
    "mean": (_mean, FLOATS, False, REDUCE),
    "variance": (_variance, (F32,), False, REDUCE),
    "sum_all": (_sum_all, ALL, False, REDUCE),
    "max_min": (_max_min, ALL, False, REDUCE),
    "prod": (_prod, (F32, I32), True, REDUCE),
    "broadcast_arith": (_broadcast_arith, ALL, False, INJECTIVE),
    "unary_float": (_unary_float, FLOATS, True, INJECTIVE),
    "abs_relu_cast": (_abs_relu_cast, ALL, False, INJECTIVE),
    "bias_add": (_bias_add, ALL, False, INJECTIVE),
    "reshape": (_reshape, ALL, False, INJECTIVE),
    "transpose": (_transpose, ALL, False, INJECTIVE),
    "concatenate": (_concatenate, ALL, False, INJECTIVE),
    "pad": (_pad, ALL, False, INJECTIVE),
    "take": (_take, ALL, False, INJECTIVE),
    "strided_slice": (_strided_slice, ALL, False, INJECTIVE),
    "expand_dims": (_expand_dims, (F32,), False, INJECTIVE),
}
