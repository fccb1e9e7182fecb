"""Correctness of the operator library: every operator's DAG, run by the reference evaluator, equals a numpy
reference computed in float64 on random inputs; FLOP counts equal their formulas."""
import numpy as np
import pytest

import autosched as ans
from autosched import ops, te

RNG = np.random.default_rng(7)
TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float16": dict(rtol=5e-3, atol=5e-3),
       "int32": dict(rtol=0, atol=0)}


def random_array(shape, dtype, low=-4, high=5):
    if dtype.startswith("int"):
        return RNG.integers(low, high, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def run(inputs, output, arrays):
    """Evaluate DAG(inputs + [output]) on `arrays`; the output as float64."""
    dag = ans.ComputeDAG(list(inputs) + [output])
    (result,) = ans.evaluate(dag, arrays)
    assert result.dtype == np.dtype(output.dtype)
    assert result.shape == output.shape
    return result.astype(np.float64)


def check(inputs, output, arrays, expected, dtype=None, scale=1.0):
    dtype = dtype or output.dtype
    got = run(inputs, output, arrays)
    tol = TOL[dtype]
    np.testing.assert_allclose(got, np.asarray(expected, np.float64), rtol=tol["rtol"],
                               atol=tol["atol"] * scale)


def placeholders(shapes, dtype):
    tensors = [te.placeholder(s, dtype=dtype, name=f"in{k}") for k, s in enumerate(shapes)]
    return tensors, [random_array(s, dtype) for s in shapes]


# ---------------- numpy references ----------------

def conv2d_nchw_ref(data, kernel, stride, pads, dilation, groups):
    """data (N, C, H, W), kernel (CO, C / groups, KH, KW); pads (top, left, bottom, right)."""
    data, kernel = data.astype(np.float64), kernel.astype(np.float64)
    top, left, bottom, right = pads
    data = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, h, w = data.shape
    co, cig, kh, kw = kernel.shape
    sh, sw = stride
    dh, dw = dilation
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (w - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, co, oh, ow))
    cog = co // groups
    for g in range(groups):
        d = data[:, g * cig:(g + 1) * cig]
        k = kernel[g * cog:(g + 1) * cog]
        for y in range(kh):
            for x in range(kw):
                window = d[:, :, y * dh:y * dh + (oh - 1) * sh + 1:sh, x * dw:x * dw + (ow - 1) * sw + 1:sw]
                out[:, g * cog:(g + 1) * cog] += np.einsum("nchw,oc->nohw", window, k[:, :, y, x])
    return out


def pool_ref(data, kind, size, stride, pads, dilation, count_include_pad=True):
    """NCHW pooling in float64."""
    data = data.astype(np.float64)
    top, left, bottom, right = pads
    n, c, h, w = data.shape
    fill = -np.inf if kind == "max" else 0.0
    padded = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    valid = np.pad(np.ones((h, w)), ((top, bottom), (left, right)))
    kh, kw = size
    oh = (padded.shape[2] - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (padded.shape[3] - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs = slice(i * stride[0], i * stride[0] + (kh - 1) * dilation[0] + 1, dilation[0])
            ws = slice(j * stride[1], j * stride[1] + (kw - 1) * dilation[1] + 1, dilation[1])
            window = padded[:, :, hs, ws]
            if kind == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                count = kh * kw if count_include_pad else valid[hs, ws].sum()
                out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out


def erf(x):
    import math
    return np.vectorize(math.erf)(x)


# ---------------- convolutions ----------------

CONV_CASES = [  # N, C, H, W, CO, K, stride, padding, dilation, groups
    (1, 3, 7, 7, 4, 3, 1, 1, 1, 1),
    (2, 4, 8, 5, 6, 3, 2, (1, 0, 2, 1), 1, 2),
    (1, 2, 13, 7, 1, 1, 1, 0, 1, 1),
    (1, 4, 9, 9, 4, 3, (2, 1), 2, 2, 4),
    (1, 1, 5, 5, 2, 5, 1, "VALID", 1, 1),
    (1, 2, 6, 7, 3, 3, 1, "SAME", 1, 1),
]


def _pads(padding, k, dilation):
    from autosched.ops._utils import padding_2d
    d = (dilation, dilation) if isinstance(dilation, int) else dilation
    return padding_2d(padding, (k, k), d, "test")


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_conv2d_nchw(case, dtype):
    n, c, h, w, co, k, stride, padding, dilation, groups = case
    data = te.placeholder((n, c, h, w), dtype=dtype, name="data")
    kernel = te.placeholder((co, c // groups, k, k), dtype=dtype, name="kernel")
    out = ops.conv2d_nchw(data, kernel, stride, padding, dilation, groups)
    assert out.name == "Conv2dOutput"
    a, b = random_array(data.shape, dtype), random_array(kernel.shape, dtype)
    expected = conv2d_nchw_ref(a, b, _pair(stride), _pads(padding, k, dilation), _pair(dilation), groups)
    check([data, kernel], out, [a, b], expected, scale=k * k * c)


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_conv2d_nhwc(case, dtype):
    n, c, h, w, co, k, stride, padding, dilation, groups = case
    data = te.placeholder((n, h, w, c), dtype=dtype, name="data")
    kernel = te.placeholder((k, k, c // groups, co), dtype=dtype, name="kernel")
    out = ops.conv2d_nhwc(data, kernel, stride, padding, dilation, groups)
    a, b = random_array(data.shape, dtype), random_array(kernel.shape, dtype)
    expected = conv2d_nchw_ref(a.transpose(0, 3, 1, 2), b.transpose(3, 2, 0, 1), _pair(stride),
                               _pads(padding, k, dilation), _pair(dilation), groups).transpose(0, 2, 3, 1)
    check([data, kernel], out, [a, b], expected)


def test_conv2d_int8_to_int32_out_dtype():
    data = te.placeholder((1, 3, 5, 5), dtype="int8", name="data")
    kernel = te.placeholder((2, 3, 3, 3), dtype="int8", name="kernel")
    out = ops.conv2d_nchw(data, kernel, 1, 1, out_dtype="int32")
    assert out.dtype == "int32"
    a = RNG.integers(-100, 100, size=data.shape).astype(np.int8)
    b = RNG.integers(-100, 100, size=kernel.shape).astype(np.int8)
    check([data, kernel], out, [a, b], conv2d_nchw_ref(a, b, (1, 1), (1, 1, 1, 1), (1, 1), 1))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mult,stride,padding,dilation", [(1, 1, 1, 1), (2, 2, (0, 1), 1), (1, 1, 2, 2)])
def test_depthwise_conv2d(layout, mult, stride, padding, dilation):
    n, c, h, w, k = 1, 3, 7, 6, 3
    a = random_array((n, c, h, w), "float32")
    kern = random_array((c, mult, k, k), "float32")
    # A depthwise conv is a grouped conv with groups = C and kernel (C * M, 1, KH, KW).
    expected = conv2d_nchw_ref(a, kern.reshape(c * mult, 1, k, k), _pair(stride), _pads(padding, k, dilation),
                               _pair(dilation), c)
    if layout == "NCHW":
        data = te.placeholder(a.shape, name="data")
        kernel = te.placeholder(kern.shape, name="kernel")
        out = ops.depthwise_conv2d_nchw(data, kernel, stride, padding, dilation)
        check([data, kernel], out, [a, kern], expected)
    else:
        a_nhwc, k_hwcm = a.transpose(0, 2, 3, 1), kern.transpose(2, 3, 0, 1)
        data = te.placeholder(a_nhwc.shape, name="data")
        kernel = te.placeholder(k_hwcm.shape, name="kernel")
        out = ops.depthwise_conv2d_nhwc(data, kernel, stride, padding, dilation)
        check([data, kernel], out, [a_nhwc, k_hwcm], expected.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("shape,co,k,stride,padding,dilation,tile", [
    ((1, 3, 8, 8), 8, 3, 1, 1, 1, (2, 2, 4)),
    ((1, 2, 7, 9), 6, 3, 2, (1, 0), 1, (2, 3, 4)),  # tiles do not divide; VC falls back to 3
    ((2, 1, 6, 6), 2, 2, 1, 0, 2, (4, 4, 2)),
])
def test_conv2d_nchw_spatial_pack(shape, co, k, stride, padding, dilation, tile):
    data = te.placeholder(shape, name="data")
    kernel = te.placeholder((co, shape[1], k, k), name="kernel")
    out = ops.conv2d_nchw_spatial_pack(data, kernel, stride, padding, dilation, tile=tile)
    dag = ans.ComputeDAG([data, kernel, out])
    names = {t.name for t in dag.ops}
    assert {"data_vec", "kernel_vec", "conv", "output_unpack"} <= names
    a, b = random_array(data.shape, "float32"), random_array(kernel.shape, "float32")
    expected = conv2d_nchw_ref(a, b, _pair(stride), _pads(padding, k, dilation), _pair(dilation), 1)
    check([data, kernel], out, [a, b], expected)


# ---------------- dense / matmul ----------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 13, 5), (4, 1, 13)])
def test_dense(dtype, m, n, k):
    (x, wt, bias), (a, b, c) = placeholders([(m, k), (n, k), (n,)], dtype)
    out = ops.dense(x, wt)
    check([x, wt], out, [a, b], a.astype(np.float64) @ b.astype(np.float64).T, scale=k)
    out_b = ops.dense(x, wt, bias)
    check([x, wt, bias], out_b, [a, b, c], a.astype(np.float64) @ b.astype(np.float64).T + c, scale=k)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matmul(ta, tb, dtype):
    m, n, k = 7, 3, 5
    a = random_array((k, m) if ta else (m, k), dtype)
    b = random_array((n, k) if tb else (k, n), dtype)
    A, B = te.placeholder(a.shape, dtype, "A"), te.placeholder(b.shape, dtype, "B")
    out = ops.matmul(A, B, ta, tb)
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    check([A, B], out, [a, b], ref)


@pytest.mark.parametrize("bx,by,tb", [(3, 3, True), (1, 2, False), (2, 1, True)])
def test_batch_matmul(bx, by, tb):
    m, n, k = 5, 7, 3
    a = random_array((bx, m, k), "float32")
    b = random_array((by, n, k) if tb else (by, k, n), "float32")
    X, Y = te.placeholder(a.shape, name="X"), te.placeholder(b.shape, name="Y")
    out = ops.batch_matmul(X, Y, transpose_b=tb)
    ref = np.matmul(a.astype(np.float64), (b.transpose(0, 2, 1) if tb else b).astype(np.float64))
    check([X, Y], out, [a, b], ref)


def test_batch_matmul_transpose_a_float16():
    a = random_array((2, 4, 3), "float16")
    b = random_array((2, 4, 5), "float16")
    X, Y = te.placeholder(a.shape, "float16", "X"), te.placeholder(b.shape, "float16", "Y")
    out = ops.batch_matmul(X, Y, transpose_a=True, transpose_b=False)
    check([X, Y], out, [a, b], np.matmul(a.transpose(0, 2, 1).astype(np.float64), b.astype(np.float64)),
          scale=4)


# ---------------- pooling ----------------

@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("size,stride,padding,dilation", [
    (2, 2, 0, 1), (3, 2, 1, 1), ((3, 2), (1, 2), (1, 0, 2, 1), 1), (2, 1, 1, 2)])
def test_pool2d(layout, size, stride, padding, dilation):
    a = random_array((2, 3, 7, 6), "float32")
    size_p, stride_p, dil_p = _pair(size), _pair(stride), _pair(dilation)
    from autosched.ops._utils import padding_2d
    pads = padding_2d(padding, size_p, dil_p, "test")
    arr = a if layout == "NCHW" else a.transpose(0, 2, 3, 1)
    x = te.placeholder(arr.shape, name="x")

    def to_layout(ref):
        return ref if layout == "NCHW" else ref.transpose(0, 2, 3, 1)

    out = ops.max_pool2d(x, size, stride, padding, dilation, layout=layout)
    check([x], out, [arr], to_layout(pool_ref(a, "max", size_p, stride_p, pads, dil_p)))
    for include in (True, False):
        out = ops.avg_pool2d(x, size, stride, padding, dilation, layout=layout, count_include_pad=include)
        check([x], out, [arr], to_layout(pool_ref(a, "avg", size_p, stride_p, pads, dil_p, include)))


def test_max_pool_int32_pads_with_lowest_value():
    a = -np.abs(random_array((1, 1, 3, 3), "int32")) - 1  # all negative: padding must not win
    x = te.placeholder(a.shape, "int32", "x")
    out = ops.max_pool2d(x, 3, 1, 1)
    check([x], out, [a], pool_ref(a, "max", (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)))


@pytest.mark.parametrize("layout,dtype", [("NCHW", "float32"), ("NHWC", "float32"), ("NCHW", "float16")])
def test_global_pool(layout, dtype):
    a = random_array((2, 5, 3, 7) if layout == "NCHW" else (2, 3, 7, 5), dtype)
    axes = (2, 3) if layout == "NCHW" else (1, 2)
    x = te.placeholder(a.shape, dtype, "x")
    check([x], ops.global_avg_pool2d(x, layout), [a], a.astype(np.float64).mean(axis=axes, keepdims=True))
    check([x], ops.global_max_pool2d(x, layout), [a], a.max(axis=axes, keepdims=True))


# ---------------- reductions, softmax, layer_norm ----------------

@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (-1, True), ((0, 2), False),
                                           ((0, 2), True)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reductions(kind, axis, keepdims, dtype):
    a = random_array((3, 1, 5), dtype, low=-2, high=3)
    if kind == "prod" and dtype == "float32":
        a = a.astype(np.float32) * 0.5
    x = te.placeholder(a.shape, dtype, "x")
    out = getattr(ops, kind)(x, axis=axis, keepdims=keepdims)
    ref = getattr(np, kind)(a.astype(np.float64), axis=axis, keepdims=keepdims)
    check([x], out, [a], ref)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, True), ((1, 2), False), (-2, False)])
def test_mean_variance(axis, keepdims):
    a = random_array((2, 7, 3), "float32")
    x = te.placeholder(a.shape, name="x")
    a64 = a.astype(np.float64)
    check([x], ops.mean(x, axis, keepdims), [a], a64.mean(axis=axis, keepdims=keepdims))
    check([x], ops.variance(x, axis, keepdims), [a], a64.var(axis=axis, keepdims=keepdims))
    check([x], ops.variance(x, axis, keepdims, unbiased=True), [a],
          a64.var(axis=axis, keepdims=keepdims, ddof=1))


def softmax_ref(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape,axis", [((3, 7), -1), ((2, 5, 3), 1), ((1, 13), 0), ((4,), 0)])
def test_softmax(dtype, shape, axis):
    a = random_array(shape, dtype) * 3
    x = te.placeholder(a.shape, dtype, "x")
    a64 = a.astype(np.float64)
    check([x], ops.softmax(x, axis), [a], softmax_ref(a64, axis))
    check([x], ops.log_softmax(x, axis), [a], np.log(softmax_ref(a64, axis)), scale=2)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape,axis", [((3, 7), -1), ((2, 3, 5), (1, 2)), ((5, 2), 0)])
def test_layer_norm(dtype, shape, axis):
    axes = [axis] if isinstance(axis, int) else list(axis)
    axes = sorted(a % len(shape) for a in axes)
    pshape = tuple(shape[d] for d in axes)
    a = random_array(shape, dtype)
    g, b = random_array(pshape, dtype), random_array(pshape, dtype)
    x, gamma, beta = (te.placeholder(s, dtype, n) for s, n in ((shape, "x"), (pshape, "g"), (pshape, "b")))
    out = ops.layer_norm(x, gamma, beta, axis=axis, epsilon=1e-5)
    a64 = a.astype(np.float64)
    mean = a64.mean(axis=tuple(axes), keepdims=True)
    var = a64.var(axis=tuple(axes), keepdims=True)
    bshape = [shape[d] if d in axes else 1 for d in range(len(shape))]
    ref = (a64 - mean) / np.sqrt(var + 1e-5) * g.reshape(bshape) + b.reshape(bshape)
    check([x, gamma, beta], out, [a, g, b], ref, scale=4)


# ---------------- element-wise ----------------

BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum}


@pytest.mark.parametrize("name", list(BINARY) + ["divide"])
@pytest.mark.parametrize("shape_a,shape_b", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 5), (5,)),
                                             ((7,), (13, 1)), ((1,), (2, 3))])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_binary_broadcast(name, shape_a, shape_b, dtype):
    a, b = random_array(shape_a, dtype), random_array(shape_b, dtype)
    if name == "divide":
        b = np.where(b == 0, 3, b).astype(dtype)
    A, B = te.placeholder(shape_a, dtype, "A"), te.placeholder(shape_b, dtype, "B")
    out = getattr(ops, name)(A, B)
    assert out.shape == np.broadcast_shapes(shape_a, shape_b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if name == "divide":
        ref = np.trunc(a64 / b64) if dtype == "int32" else a64 / b64
    else:
        ref = BINARY[name](a64, b64)
    check([A, B], out, [a, b], ref)


def test_binary_with_scalars():
    a = random_array((3, 5), "float32")
    A = te.placeholder(a.shape, name="A")
    check([A], ops.add(A, 2), [a], a + 2.0)
    check([A], ops.subtract(1.5, A), [a], 1.5 - a.astype(np.float64))
    check([A], ops.multiply(A, 0.5), [a], a * 0.5)
    check([A], ops.divide(3.0, ops.add(ops.multiply(A, A), 1.0)), [a], 3.0 / (a.astype(np.float64) ** 2 + 1))
    i = random_array((4,), "int32")
    I = te.placeholder(i.shape, "int32", "I")
    check([I], ops.multiply(I, 3), [i], i * 3)


UNARY = {
    "relu": lambda a: np.maximum(a, 0),
    "negative": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "tanh": np.tanh,
    "gelu": lambda a: 0.5 * a * (1 + erf(a / np.sqrt(2))),
}
FLOAT_ONLY = {"exp", "sigmoid", "tanh", "gelu"}


@pytest.mark.parametrize("name,dtype", [(n, d) for n in UNARY for d in ("float32", "float16", "int32")
                                        if d != "int32" or n not in FLOAT_ONLY])
def test_unary(name, dtype):
    a = random_array((2, 7), dtype)
    x = te.placeholder(a.shape, dtype, "x")
    check([x], getattr(ops, name)(x), [a], UNARY[name](a.astype(np.float64)))


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_clip(dtype):
    a = random_array((13,), dtype)
    x = te.placeholder(a.shape, dtype, "x")
    check([x], ops.clip(x, -2, 3), [a], np.clip(a, -2, 3))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"), ("float32", "float16"),
                                     ("float16", "float32")])
def test_cast(src, dst):
    a = random_array((3, 4), src) * (3 if src.startswith("float") else 1)
    x = te.placeholder(a.shape, src, "x")
    out = ops.cast(x, dst)
    assert out.dtype == dst
    check([x], out, [a], a.astype(dst), dtype=dst)


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_bias_add(axis):
    a = random_array((2, 3, 4), "float32")
    b = random_array((a.shape[axis],), "float32")
    x, bias = te.placeholder(a.shape, name="x"), te.placeholder(b.shape, name="bias")
    shape = [1, 1, 1]
    shape[axis] = -1
    check([x, bias], ops.bias_add(x, bias, axis), [a, b], a + b.reshape(shape))


# ---------------- injective ----------------

@pytest.mark.parametrize("shape,newshape", [((2, 3, 4), (4, 6)), ((6,), (1, 2, 3)), ((7, 13), (-1,)),
                                            ((2, 6), (3, -1, 2))])
def test_reshape(shape, newshape):
    a = random_array(shape, "int32")
    x = te.placeholder(shape, "int32", "x")
    check([x], ops.reshape(x, newshape), [a], a.reshape(newshape))


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1)])
def test_transpose(axes):
    a = random_array((2, 3, 5), "float16")
    x = te.placeholder(a.shape, "float16", "x")
    check([x], ops.transpose(x, axes), [a], np.transpose(a, axes))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate(axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for k, s in enumerate(shapes):
        s[axis] = k + 1
    arrays = [random_array(s, "float32") for s in shapes]
    tensors = [te.placeholder(tuple(s), name=f"t{k}") for k, s in enumerate(shapes)]
    check(tensors, ops.concatenate(tensors, axis), arrays, np.concatenate(arrays, axis))


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_pad(dtype):
    a = random_array((3, 4), dtype)
    x = te.placeholder(a.shape, dtype, "x")
    out = ops.pad(x, (1, 0), (2, 3), pad_value=7)
    check([x], out, [a], np.pad(a, ((1, 2), (0, 3)), constant_values=7))


@pytest.mark.parametrize("axis,mode,index_dtype", [(0, "clip", "int32"), (1, "wrap", "int32"),
                                                  (None, "clip", "int32"), (-1, "clip", "int64")])
def test_take(axis, mode, index_dtype):
    a = random_array((4, 5), "float32")
    idx = np.array([[0, 3, -1], [7, 2, 1]], dtype=index_dtype)
    x, ind = te.placeholder(a.shape, name="x"), te.placeholder(idx.shape, index_dtype, "ind")
    check([x, ind], ops.take(x, ind, axis=axis, mode=mode), [a, idx], np.take(a, idx, axis=axis, mode=mode))


@pytest.mark.parametrize("mode,index_dtype", [("clip", "int64"), ("clip", "int32"), ("wrap", "int64")])
def test_take_from_end(mode, index_dtype):
    # negative indices count from the end first; int64 indices past the int32 range are clamped, not truncated
    a = random_array((5, 7), "float32")
    idx = np.array([[-1, -7, 6], [-8, 9, 2**32 + 1]] if index_dtype == "int64" else [[-1, -7, 6], [-8, 9, 3]],
                   dtype=index_dtype)
    x, ind = te.placeholder(a.shape, name="x"), te.placeholder(idx.shape, index_dtype, "ind")
    wide = idx.astype(np.int64)
    wide = np.where(wide < 0, wide + 7, wide)
    expected = np.take(a, wide, axis=1, mode=mode)
    check([x, ind], ops.take(x, ind, axis=1, mode=mode, from_end=True), [a, idx], expected)


@pytest.mark.parametrize("begin,end,strides,axes", [
    ((1, 0), (3, 5), None, None),
    ((0, -1), (4, 0), (2, -2), None),
    ((-3,), (100,), (1,), (2,)),
    ((3,), (-100,), (-1,), (0,)),
])
def test_strided_slice(begin, end, strides, axes):
    a = random_array((4, 5, 7), "int32")
    x = te.placeholder(a.shape, "int32", "x")
    slices = [slice(None)] * 3
    for k, d in enumerate(axes if axes is not None else range(len(begin))):
        slices[d] = slice(begin[k], end[k], strides[k] if strides else 1)
    check([x], ops.strided_slice(x, begin, end, strides, axes), [a], a[tuple(slices)])


def test_expand_dims():
    a = random_array((3, 4), "float32")
    x = te.placeholder(a.shape, name="x")
    check([x], ops.expand_dims(x, 1), [a], a[:, None, :])


# ---------------- FLOP counts, names, tags, workloads ----------------

@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_flops(case):
    n, c, h, w, co, k, stride, padding, dilation, groups = case
    data = te.placeholder((n, c, h, w), name="data")
    kernel = te.placeholder((co, c // groups, k, k), name="kernel")
    out = ops.conv2d_nchw(data, kernel, stride, padding, dilation, groups)
    _, _, oh, ow = out.shape
    assert ans.ComputeDAG([data, kernel, out]).flop_ct == 2 * n * oh * ow * co * k * k * c / groups
    data_nhwc = te.placeholder((n, h, w, c), name="data")
    kernel_hwio = te.placeholder((k, k, c // groups, co), name="kernel")
    out = ops.conv2d_nhwc(data_nhwc, kernel_hwio, stride, padding, dilation, groups)
    assert ans.ComputeDAG([data_nhwc, kernel_hwio, out]).flop_ct == 2 * n * oh * ow * co * k * k * c / groups


def test_other_flops():
    m, n, k, b = 7, 5, 3, 2
    x, wt, bias = te.placeholder((m, k), name="x"), te.placeholder((n, k), name="w"), te.placeholder((n,))
    assert ans.ComputeDAG([x, wt, ops.dense(x, wt)]).flop_ct == 2 * m * n * k
    assert ans.ComputeDAG([x, wt, bias, ops.dense(x, wt, bias)]).flop_ct == 2 * m * n * k + m * n
    X, Y = te.placeholder((b, m, k), name="X"), te.placeholder((b, n, k), name="Y")
    assert ans.ComputeDAG([X, Y, ops.batch_matmul(X, Y)]).flop_ct == 2 * b * m * n * k
    s = te.placeholder((m, n), name="s")
    # softmax: max (1) + exp(x - max) (2) + sum (1) + divide (1) per element; log_softmax: 1 + 3 + 3.
    assert ans.ComputeDAG([s, ops.softmax(s)]).flop_ct == 5 * m * n
    assert ans.ComputeDAG([s, ops.log_softmax(s)]).flop_ct == 7 * m * n
    # mean: sum (1 per element) + scale (1 per output); variance: mean + (x - mean) twice, square, add.
    assert ans.ComputeDAG([s, ops.mean(s, axis=1)]).flop_ct == m * n + m
    assert ans.ComputeDAG([s, ops.variance(s, axis=1)]).flop_ct == 5 * m * n + 2 * m
    data = te.placeholder((1, 4, 8, 8), name="data")
    kernel = te.placeholder((8, 4, 3, 3), name="kernel")
    out = ops.conv2d_nchw_spatial_pack(data, kernel, 1, 1)
    assert ans.ComputeDAG([data, kernel, out]).flop_ct == 2 * 8 * 8 * 8 * 3 * 3 * 4


def test_names_and_tags():
    data = te.placeholder((1, 5, 5, 3), name="data")
    kernel = te.placeholder((3, 3, 3, 4), name="kernel")
    out = ops.conv2d_nhwc(data, kernel, 1, 1)
    dag = ans.ComputeDAG([data, kernel, out])
    assert [t.name for t in dag.ops] == ["data", "PaddedInput", "kernel", "Conv2dOutput"] or \
        [t.name for t in dag.ops] == ["data", "kernel", "PaddedInput", "Conv2dOutput"]
    text = str(dag)
    assert "PaddedInput" in text and "Conv2dOutput" in text
    no_pad = ops.conv2d_nhwc(data, kernel, 1, 0)
    assert "PaddedInput" not in str(ans.ComputeDAG([data, kernel, no_pad]))


def test_tags_and_attrs():
    x = te.placeholder((1, 4, 6, 6), name="x")
    k = te.placeholder((8, 4, 3, 3), name="k")
    assert ops.conv2d_nchw(x, k, 2, 1).tag == "conv2d_nchw"
    assert ops.conv2d_nchw(x, k, 2, 1).attrs["strides"] == "2,2"
    packed = ops.conv2d_nchw_spatial_pack(x, k, 1, 1)
    assert (packed.name, packed.tag) == ("output_unpack", "spatial_conv2d_output")
    assert ops.relu(x).tag == "elemwise" and ops.add(x, x).tag == "broadcast"
    assert ops.reshape(x, (-1,)).tag == "injective" and ops.pad(x, (0, 0, 1, 1)).tag == "injective,pad"
    assert ops.sum(x, axis=1).tag == "comm_reduce"
    assert ops.max_pool2d(x, 2, 2, 0).tag == "pool_max"
    m = te.placeholder((3, 4), name="m")
    assert ops.dense(m, m).tag == "dense" and ops.matmul(m, m, transpose_b=True).tag == "matmul"


def test_registered_workloads():
    task = ans.SearchTask(func="conv2d_nhwc", args=(1, 6, 6, 3, 4, 3, 3, 1, 1), target="llvm")
    assert task.compute_dag.flop_ct == 2 * 6 * 6 * 4 * 3 * 3 * 3
    task = ans.SearchTask(func="matmul_add", args=(4, 5, 6, "float32"), target="llvm")
    assert task.compute_dag.flop_ct == 2 * 4 * 5 * 6 + 4 * 6
