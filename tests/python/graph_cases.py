"""Small awkward cases of every op of the graph op table: (op, input shapes, attrs)."""
import numpy as np

from autosched.graph import Graph

RNG = np.random.default_rng(3)

# Inputs that must be positive: (op, input index).
POSITIVE = {("log", 0), ("sqrt", 0), ("power", 0), ("batch_norm", 4), ("divide", 1)}
# Index inputs: (op, input index) -> dtype; their values are in [-3, 3) (the cases' gathered axes are >= 3).
INDICES = {("take", 1): "int64", ("gather_elements", 1): "int32"}
# Truth-value inputs: (op, input index), random bools.
BOOLS = {(op, i) for op in ("logical_and", "logical_or", "logical_xor") for i in (0, 1)} | {
    ("logical_not", 0), ("where", 0)}
# Inputs with NaN, +inf and -inf among their values.
SPECIAL = {("isnan", 0), ("isinf", 0)}
# The quantized ops' inputs: (op, input index) -> (dtype, low, high), values uniform in [low, high] (integers:
# int8 operands in [-64, 63], so that onnxruntime's u8 x s8 kernels, whose int16 pairs saturate on CPUs without
# VNNI, stay exact; floats: scales and multipliers).
QUANTIZED = {
    ("quantize_linear", 1): ("float32", 0.02, 0.1), ("quantize_linear", 2): ("uint8", 0, 255),
    ("dequantize_linear", 0): ("int8", -128, 127), ("dequantize_linear", 1): ("float32", 0.02, 0.1),
    ("dequantize_linear", 2): ("int8", -128, 127),
    ("requantize", 0): ("int32", -3000, 3000), ("requantize", 1): ("float32", 0.02, 0.1),
    ("requantize", 2): ("int8", -128, 127), ("requantize", 3): ("int32", -300, 300),
    ("matmul_integer", 0): ("uint8", 0, 255), ("matmul_integer", 1): ("int8", -64, 63),
    ("matmul_integer", 2): ("uint8", 0, 255), ("matmul_integer", 3): ("int8", -64, 63),
    ("conv2d_integer", 0): ("uint8", 0, 255), ("conv2d_integer", 1): ("int8", -64, 63),
    ("conv2d_integer", 2): ("uint8", 0, 255), ("conv2d_integer", 3): ("int8", -64, 63),
    ("conv2d_integer_nchwc", 0): ("uint8", 0, 255), ("conv2d_integer_nchwc", 1): ("int8", -64, 63),
    ("conv2d_integer_nchwc", 2): ("uint8", 0, 255), ("conv2d_integer_nchwc", 3): ("int8", -64, 63),
    # bfloat16 dot products: small integers, whose float32 sums are exact whatever their order
    ("dense_bf16_dot", 0): ("bfloat16", -4, 4), ("dense_bf16_dot", 1): ("bfloat16", -4, 4),
    ("dense_bf16_dot", 2): ("bfloat16", -4, 4), ("conv2d_nchwc_bf16_dot", 0): ("bfloat16", -4, 4),
    ("conv2d_nchwc_bf16_dot", 1): ("bfloat16", -4, 4), ("conv2d_nchwc_bf16_dot", 2): ("bfloat16", -4, 4),
}
COMPARISONS = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")


def assert_outputs_match(got, want, tol):
    """A built graph's outputs against a peer's: same count, shapes and dtypes; truth values equal, numbers within
    tol (relative and absolute)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype == bool:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def one_node_graph(op, shapes, attrs=None, dtype="float32"):
    g = Graph(op)
    names = [g.add_input(f"in{i}", s, QUANTIZED[op, i][0] if (op, i) in QUANTIZED else
                         "bool" if (op, i) in BOOLS else INDICES.get((op, i), dtype))
             for i, s in enumerate(shapes)]
    g.set_outputs([g.add_node(op, names, attrs=attrs, name=f"{op}_out")])
    return g


def random_inputs(op, shapes, dtype="float32"):
    arrays = []
    for i, s in enumerate(shapes):
        if (op, i) in QUANTIZED:
            dt, low, high = QUANTIZED[op, i]
            values = RNG.uniform(low, high, s) if dt == "float32" else RNG.integers(low, high + 1, s)
            arrays.append(np.asarray(values).astype(dt))
            continue
        if (op, i) in INDICES:
            arrays.append(RNG.integers(-3, 3, size=s).astype(INDICES[(op, i)]))
            continue
        if (op, i) in BOOLS:
            arrays.append(RNG.integers(0, 2, size=s).astype(bool))
            continue
        a = RNG.standard_normal(s).astype(dtype)
        if (op, i) in SPECIAL:
            a.reshape(-1)[::3] = np.asarray([np.nan, np.inf, -np.inf] * a.size, dtype)[:len(a.reshape(-1)[::3])]
        if op in COMPARISONS:  # small integers: equal values are frequent
            a = RNG.integers(-2, 3, size=s).astype(dtype)
        if (op, i) in POSITIVE:
            a = np.abs(a) + np.asarray(0.5, dtype)
        arrays.append(a)
    return arrays


CASES = [
    ("conv2d", [(1, 3, 7, 7), (5, 3, 3, 3)], dict(pads=1)),
    ("conv2d", [(2, 4, 11, 13), (6, 2, 3, 2), (6,)], dict(groups=2, strides=(2, 1), pads=(1, 0, 2, 1),
                                                          dilations=(1, 2))),
    ("conv2d", [(1, 6, 9, 9), (6, 1, 3, 3), (6,)], dict(groups=6, strides=2, pads=1)),
    ("conv2d", [(1, 3, 5, 5), (6, 1, 3, 3)], dict(groups=3, pads=(0, 1, 2, 0))),
    ("conv2d", [(1, 1, 1, 1), (1, 1, 1, 1)], {}),
    ("conv2d", [(1, 5, 7, 7), (3, 5, 1, 1)], dict(strides=2)),
    ("conv3d", [(1, 3, 5, 7, 6), (5, 3, 3, 3, 3)], dict(pads=1)),
    ("conv3d", [(2, 4, 5, 7, 3), (6, 2, 3, 2, 1), (6,)], dict(groups=2, strides=(2, 1, 1), pads=(1, 0, 0, 2, 1, 0),
                                                             dilations=(1, 2, 1))),
    ("conv3d", [(1, 2, 1, 5, 5), (3, 2, 1, 3, 3)], dict(strides=2)),
    ("dense", [(5, 7), (3, 7), (3,)], {}),
    ("dense", [(2, 3, 7), (1, 7)], {}),
    ("dense", [(2, 3, 7), (5, 7), (5,)], {}),
    ("dense", [(7,), (3, 7)], {}),
    ("matmul", [(3, 5), (5, 7)], {}),
    ("matmul", [(2, 3, 5), (2, 5, 4)], {}),
    ("matmul", [(1, 3, 5), (4, 5, 2)], {}),
    ("matmul", [(2, 1, 3, 5), (3, 5, 4)], {}),
    ("matmul", [(5,), (2, 5, 3)], {}),
    ("matmul", [(2, 3, 5), (5,)], {}),
    ("matmul", [(5,), (5,)], {}),
    ("add", [(3, 1, 5), (4, 1)], {}),
    ("add", [(), (2, 3)], {}),
    ("subtract", [(1,), (3,)], {}),
    ("multiply", [(2, 3, 5), (5,)], {}),
    ("divide", [(3, 5), (3, 1)], {}),
    ("power", [(3, 5), (5,)], {}),
    ("maximum", [(3, 1), (1, 4)], {}),
    ("minimum", [(3, 4), (3, 4)], {}),
    ("clip", [(3, 7)], dict(min=-0.5, max=0.5)),
    ("clip", [(3, 7)], dict(min=0.0)),
    ("clip", [(3, 7)], dict(max=0.25)),
    ("clip", [(3, 7)], {}),
    ("gelu", [(3, 7)], {}),
    ("gelu", [(3, 7)], dict(approximate="tanh")),
    ("softmax", [(3, 5, 2)], {}),
    ("softmax", [(3, 5, 2)], dict(axis=0)),
    ("layer_norm", [(2, 3, 5), (5,), (5,)], {}),
    ("layer_norm", [(2, 3, 5), (3, 5), (3, 5)], dict(axis=1, epsilon=1e-3)),
    ("batch_norm", [(2, 3, 4, 5)] + [(3,)] * 4, {}),
    ("batch_norm", [(3, 7)] + [(7,)] * 4, dict(epsilon=0.1)),
    ("max_pool2d", [(1, 2, 7, 7)], dict(kernel=3, strides=2, pads=1)),
    ("max_pool2d", [(1, 2, 8, 8)], dict(kernel=3, strides=2, ceil_mode=True)),
    ("max_pool2d", [(2, 1, 9, 10)], dict(kernel=2, strides=(1, 3), dilations=2, pads=(1, 0, 0, 1))),
    ("max_pool2d", [(1, 3, 5, 5)], dict(kernel=2, ceil_mode=True, pads=1)),
    ("max_pool2d", [(1, 1, 4, 4)], dict(kernel=2, strides=3, pads=(0, 0, 2, 2))),
    ("avg_pool2d", [(1, 1, 4, 4)], dict(kernel=2, strides=3, pads=(0, 0, 2, 2), count_include_pad=True)),
    ("avg_pool2d", [(1, 2, 7, 7)], dict(kernel=3, strides=2, pads=1)),
    ("avg_pool2d", [(1, 2, 7, 7)], dict(kernel=3, strides=2, pads=1, count_include_pad=True)),
    ("avg_pool2d", [(1, 2, 8, 9)], dict(kernel=3, strides=2, pads=1, ceil_mode=True)),
    ("avg_pool2d", [(1, 2, 8, 9)], dict(kernel=3, strides=2, pads=1, ceil_mode=True, count_include_pad=True)),
    ("avg_pool2d", [(1, 1, 5, 5)], dict(kernel=2, ceil_mode=True)),
    ("avg_pool2d", [(1, 1, 11, 11)], dict(kernel=3, strides=2, dilations=2, pads=2)),
    ("global_avg_pool2d", [(2, 3, 5, 7)], {}),
    ("max_pool3d", [(1, 2, 5, 7, 6)], dict(kernel=3, strides=2, pads=1)),
    ("max_pool3d", [(2, 1, 4, 7, 5)], dict(kernel=(1, 2, 3), strides=(1, 2, 2), dilations=(1, 2, 1),
                                           pads=(0, 1, 0, 0, 0, 1), ceil_mode=True)),
    ("avg_pool3d", [(1, 2, 5, 7, 6)], dict(kernel=(2, 3, 3), strides=2, pads=(0, 1, 1), ceil_mode=True)),
    ("avg_pool3d", [(1, 2, 5, 7, 6)], dict(kernel=(2, 3, 3), strides=2, pads=(0, 1, 1), ceil_mode=True,
                                           count_include_pad=True)),
    ("avg_pool3d", [(2, 1, 1, 5, 5)], dict(kernel=(1, 2, 2))),
    ("reshape", [(2, 3, 5)], dict(shape=(5, -1))),
    ("flatten", [(2, 3, 4, 5)], dict(axis=2)),
    ("flatten", [(2, 3, 1, 1)], {}),
    ("transpose", [(2, 3, 5)], dict(perm=(2, 0, 1))),
    ("transpose", [(2, 3, 5, 7)], {}),
    ("concat", [(2, 1, 3), (2, 4, 3), (2, 2, 3)], dict(axis=1)),
    ("concat", [(2, 3)], dict(axis=0)),
    ("reduce_mean", [(2, 3, 5)], dict(axes=(0, 2))),
    ("reduce_sum", [(2, 3, 5)], dict(axes=(1,), keepdims=False)),
    ("reduce_max", [(2, 3, 5)], dict(axes=(-1,))),
    ("cast", [(3, 7)], dict(dtype="float16")),
    ("cast", [(3, 7)], dict(dtype="int32")),
    ("strided_slice", [(5, 7, 11)], dict(begin=(-4, 1), end=(100, -1), strides=(2, 3), axes=(0, -1))),
    ("strided_slice", [(13,)], dict(begin=(2,), end=(13,))),
    ("take", [(5, 7), (2, 3)], dict(axis=0)),
    ("take", [(3, 7, 4), (4,)], dict(axis=-1)),
    ("layout_transform", [(2, 6, 3, 5)], dict(src_layout="NCHW", dst_layout="NCHW4c")),
    ("layout_transform", [(1, 2, 3, 3, 4)], dict(src_layout="NCHW4c", dst_layout="NCHW", channels=7)),
    ("layout_transform", [(1, 3, 2, 3, 4)], dict(src_layout="NCHW4c", dst_layout="NCHW5c", channels=10)),
    ("conv2d_nchwc", [(1, 2, 7, 6, 3), (3, 2, 3, 3, 3, 4)], dict(pads=1)),
    ("conv2d_nchwc", [(2, 1, 11, 13, 5), (2, 1, 3, 2, 5, 3), (2, 3)], dict(strides=(2, 1), pads=(1, 0, 2, 1),
                                                                         dilations=(1, 2))),
    ("conv2d_nchwc", [(1, 3, 5, 5, 2), (1, 3, 1, 1, 2, 8)], dict(strides=2)),
    ("conv2d_nchwc", [(1, 4, 7, 6, 3), (6, 2, 3, 3, 3, 2), (6, 2)], dict(pads=1, groups=2)),
    ("conv2d_nchwc", [(2, 6, 9, 8, 2), (3, 2, 3, 2, 2, 4)], dict(strides=2, pads=(1, 0, 2, 1), dilations=(1, 2),
                                                                groups=3)),
    ("conv2d_winograd_nchwc", [(1, 2, 7, 6, 3), (4, 4, 3, 2, 3, 4)], dict(pads=1)),
    ("conv2d_winograd_nchwc", [(2, 1, 5, 11, 5), (6, 6, 2, 1, 5, 3), (2, 3)], dict(tile=4, pads=(1, 0, 2, 1))),
    ("conv2d_winograd_nchwc", [(1, 1, 3, 3, 2), (4, 4, 1, 1, 2, 1)], {}),
    ("depthwise_conv2d_nchwc", [(1, 2, 9, 8, 4), (2, 3, 3, 4), (2, 4)], dict(strides=2, pads=1)),
    ("depthwise_conv2d_nchwc", [(2, 3, 5, 6, 3), (3, 3, 2, 3)], dict(pads=(0, 1, 2, 0), dilations=(2, 1))),
    ("max_pool2d_nchwc", [(1, 2, 8, 8, 3)], dict(kernel=3, strides=2, ceil_mode=True)),
    ("max_pool2d_nchwc", [(1, 2, 7, 7, 4)], dict(kernel=3, strides=2, pads=1)),
    ("avg_pool2d_nchwc", [(1, 2, 8, 9, 4)], dict(kernel=3, strides=2, pads=1, ceil_mode=True)),
    ("avg_pool2d_nchwc", [(1, 1, 8, 9, 3)], dict(kernel=3, strides=2, pads=1, ceil_mode=True,
                                                 count_include_pad=True)),
    ("avg_pool2d_nchwc", [(1, 2, 6, 6, 4)], dict(kernel=2)),
    ("global_avg_pool2d_nchwc", [(2, 3, 5, 7, 4)], {}),
    ("equal", [(3, 1, 5), (4, 1)], {}),
    ("not_equal", [(), (2, 3)], {}),
    ("greater", [(1,), (3,)], {}),
    ("greater_equal", [(2, 3, 5), (5,)], {}),
    ("less", [(3, 1), (1, 4)], {}),
    ("less_equal", [(3, 4), (3, 4)], {}),
    ("logical_and", [(3, 1, 5), (4, 1)], {}),
    ("logical_or", [(2, 3), ()], {}),
    ("logical_xor", [(1, 7), (3, 1)], {}),
    ("logical_not", [(3, 7)], {}),
    ("isnan", [(3, 7)], {}),
    ("isinf", [(2, 1, 5)], {}),
    ("where", [(3, 1, 5), (4, 1), (5,)], {}),
    ("where", [(), (2, 3), ()], {}),
    ("where", [(7, 1), (1,), (1, 3)], {}),
    ("hard_sigmoid", [(3, 7)], {}),
    ("hard_sigmoid", [(2, 11)], dict(alpha=1 / 6, beta=0.5)),
    ("expand", [(3, 1)], dict(shape=(2, 3, 5))),
    ("expand", [(2, 1, 5)], dict(shape=(7, 1))),
    ("expand", [(1,)], dict(shape=(1,))),
    ("gather_elements", [(5, 7), (5, 7)], dict(axis=0)),
    ("gather_elements", [(3, 7, 4), (2, 3, 4)], dict(axis=-2)),
    ("gather_elements", [(3, 5), (1, 2)], dict(axis=1)),
    ("cumsum", [(3, 7)], dict(axis=1)),
    ("cumsum", [(5, 2, 3)], dict(axis=0, exclusive=True)),
    ("cumsum", [(2, 11)], dict(axis=-1, reverse=True)),
    ("cumsum", [(4, 3)], dict(axis=0, exclusive=True, reverse=True)),
    ("group_norm", [(2, 6, 5, 3), (6,), (6,)], dict(num_groups=3)),
    ("group_norm", [(1, 5, 7), (5,), (5,)], dict(num_groups=5, epsilon=1e-3)),
    ("group_norm", [(3, 4), (4,), (4,)], dict(num_groups=1)),
    ("pad", [(2, 3, 5)], dict(pads=(0, 1, -2, 1, 0, 3), value=0.5)),
    ("pad", [(3, 7)], dict(pads=(2, 0, 1, 6), mode="reflect")),
    ("pad", [(1, 5)], dict(pads=(1, 3, 2, 0), mode="edge")),
    ("resize", [(1, 2, 5, 7)], dict(shape=(1, 2, 10, 3), mode="linear")),
    ("resize", [(2, 3, 7)], dict(shape=(2, 3, 10), scales=(1, 1, 1.5), coordinate="asymmetric", nearest="floor")),
    ("resize", [(1, 1, 4, 3)], dict(shape=(1, 1, 7, 1), mode="linear", coordinate="align_corners")),
    ("softplus", [(3, 7)], dict(beta=2.0)),
    ("elu", [(3, 7)], dict(alpha=0.5, scale=1.5)),
    ("leaky_relu", [(3, 7)], dict(alpha=0.2)),
    ("prelu", [(2, 3, 5), (3, 1)], {}),
    ("log_softmax", [(3, 7)], dict(axis=0)),
    ("reduce_min", [(3, 7, 2)], dict(axes=(0, -1))),
    ("reduce_prod", [(3, 5)], dict(axes=1, keepdims=False)),
    ("argmax", [(3, 7)], dict(axis=-1, keepdims=False)),
    ("argmin", [(3, 7, 2)], dict(axis=1, select_last_index=True)),
    ("quantize_linear", [(2, 3, 5), (), ()], {}),
    ("quantize_linear", [(2, 3, 5), (3,), (3,)], dict(axis=1)),
    ("dequantize_linear", [(2, 3, 5), (5,), (5,)], dict(axis=-1)),
    ("dequantize_linear", [(7,), ()], {}),
    ("requantize", [(2, 5, 3, 3), (5,), (), (5,)], dict(axis=1)),
    ("requantize", [(3, 7), (), ()], {}),
    ("matmul_integer", [(5, 37), (37, 11), (), (11,)], dict(zero_points=("a", "b"))),
    ("matmul_integer", [(2, 1, 3, 23), (3, 23, 13)], {}),
    ("matmul_integer", [(1, 7), (7, 1), (1,)], dict(zero_points="a")),
    ("conv2d_integer", [(1, 3, 7, 7), (5, 3, 3, 3), ()], dict(pads=1, zero_points="x")),
    ("conv2d_integer", [(2, 4, 11, 13), (6, 2, 3, 2), (), ()], dict(groups=2, strides=(2, 1), pads=(1, 0, 2, 1),
                                                                  dilations=(1, 2), zero_points=("x", "w"))),
    ("conv2d_integer", [(1, 6, 9, 9), (6, 1, 3, 3), (), ()], dict(groups=6, strides=2, pads=1,
                                                                zero_points=("x", "w"))),
    # the blocked form: input channels fill their blocks (the pass zero-pads both the input's and the packed
    # weight's padded channels; random values there would count), output channels need not
    ("conv2d_integer_nchwc", [(1, 2, 6, 5, 8), (2, 2, 3, 3, 2, 4, 4), (), (7,)],
     dict(pads=1, channels=16, out_channels=7, zero_points=("x", "w"))),
    ("conv2d_integer_nchwc", [(2, 1, 9, 7, 4), (3, 1, 1, 2, 1, 8, 4), ()],
     dict(strides=(2, 1), pads=(0, 1, 1, 0), dilations=(1, 2), channels=4, out_channels=17, zero_points="x")),
    ("conv2d_integer_nchwc", [(1, 1, 1, 1, 4), (1, 1, 1, 1, 1, 1, 4)], dict(channels=4, out_channels=1)),
    ("dense_bf16_dot", [(3, 6), (2, 3, 16, 2), (19,)], dict(units=19)),
    ("dense_bf16_dot", [(2, 1, 4), (1, 2, 16, 2)], dict(units=1)),
    ("conv2d_nchwc_bf16_dot", [(1, 2, 6, 5, 4), (3, 2, 3, 3, 2, 8, 2), (3, 8)], dict(pads=1)),
    ("conv2d_nchwc_bf16_dot", [(2, 1, 9, 7, 2), (2, 1, 1, 2, 1, 8, 2)],
     dict(strides=(2, 1), pads=(0, 1, 1, 0), dilations=(1, 2))),
] + [(op, [(3, 7)], {}) for op in ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "erf", "negative", "abs",
                                   "hard_swish", "silu", "mish", "sin", "cos", "floor", "ceil", "round", "sign")]
