"""Built modules against the reference evaluator: the default schedule of every operator of autosched.ops,
hand-written schedules, argument checking, sources and the time evaluator."""
import re

import numpy as np
import pytest

import autosched as ans
from autosched import _core, ops, te

from schedule_helpers import assert_close, cache_write_matmul, matmul_tensors, tile_matmul, vector_double

pytestmark = pytest.mark.needs_llvm

RNG = np.random.default_rng(11)


def random_array(shape, dtype):
    if dtype.startswith("int"):
        return RNG.integers(-4, 5, size=shape).astype(dtype)
    return RNG.uniform(0.5, 1.5, size=shape).astype(dtype) if dtype == "float16" else \
        RNG.standard_normal(shape).astype(dtype)


def arrays_for(dag, inputs, input_arrays=None):
    """One array per tensor of dag.tensors: inputs random, outputs zero."""
    input_names = [t.name for t in inputs]
    arrays, given = [], list(input_arrays or [])
    for t in dag.tensors:
        if t.name in input_names:
            arrays.append(given.pop(0) if given else random_array(t.shape, t.dtype))
        else:
            arrays.append(np.zeros(t.shape, dtype=t.dtype))
    return arrays


def check_state(dag, inputs, state=None, target=None, input_arrays=None):
    """Builds `state` (default schedule when None), runs it and compares every output with ans.evaluate;
    returns the module."""
    arrays = arrays_for(dag, inputs, input_arrays)
    input_names = {t.name for t in inputs}
    mod = ans.build(dag, state, target)
    mod(*arrays)
    expected = ans.evaluate(dag, [a for t, a in zip(dag.tensors, arrays) if t.name in input_names])
    outputs = [a for t, a in zip(dag.tensors, arrays) if t.name not in input_names]
    for got, want in zip(outputs, expected):
        assert_close(got, want, want.dtype)
    return mod


def ph(shape, dtype, name):
    return te.placeholder(shape, dtype=dtype, name=name)


# Every operator of the library on small shapes: name -> builder(dtype) -> (inputs, output).
def _unary(fn):
    return lambda d: (lambda x: ([x], fn(x)))(ph((3, 7), d, "x"))


def _binary(fn):
    return lambda d: (lambda x, y: ([x, y], fn(x, y)))(ph((3, 7), d, "x"), ph((7,), d, "y"))


def _conv(fn, data_shape, kernel_shape, *args, **kw):
    return lambda d: (lambda x, k: ([x, k], fn(x, k, *args, **kw)))(ph(data_shape, d, "data"),
                                                                    ph(kernel_shape, d, "kernel"))


OPERATORS = {
    "add": _binary(ops.add), "subtract": _binary(ops.subtract), "multiply": _binary(ops.multiply),
    "maximum": _binary(ops.maximum), "minimum": _binary(ops.minimum),
    "divide": lambda d: (lambda x: ([x], ops.divide(x, 2.0 if d != "int32" else 2)))(ph((3, 7), d, "x")),
    "negative": _unary(ops.negative), "relu": _unary(ops.relu), "abs": _unary(ops.abs),
    "clip": _unary(lambda x: ops.clip(x, -1, 1)),
    "exp": _unary(ops.exp), "sigmoid": _unary(ops.sigmoid), "tanh": _unary(ops.tanh), "gelu": _unary(ops.gelu),
    "sqrt": lambda d: (lambda x: ([x], ops.sqrt(ops.abs(x))))(ph((3, 7), d, "x")),
    "log": lambda d: (lambda x: ([x], ops.log(ops.add(ops.abs(x), 1.0))))(ph((3, 7), d, "x")),
    "power": lambda d: (lambda x: ([x], ops.power(ops.abs(x), 2.0)))(ph((3, 7), d, "x")),
    "cast": _unary(lambda x: ops.cast(x, "float32" if x.dtype != "float32" else "int32")),
    "reshape": _unary(lambda x: ops.reshape(x, (7, 3))), "transpose": _unary(lambda x: ops.transpose(x, (1, 0))),
    "concatenate": lambda d: (lambda x, y: ([x, y], ops.concatenate([x, y], 0)))(ph((3, 7), d, "x"),
                                                                                ph((2, 7), d, "y")),
    "pad": _unary(lambda x: ops.pad(x, (1, 0), (2, 3), pad_value=7)),
    "take": lambda d: (lambda x, i: ([x, i], ops.take(x, i, axis=1)))(ph((3, 7), d, "x"), ph((4,), "int32", "ind")),
    "strided_slice": _unary(lambda x: ops.strided_slice(x, [0, 1], [3, 7], [2, 3])),
    "expand_dims": _unary(lambda x: ops.expand_dims(x, 1)),
    "bias_add": lambda d: (lambda x, b: ([x, b], ops.bias_add(x, b, 1)))(ph((2, 5, 3), d, "x"), ph((5,), d, "b")),
    "dense": lambda d: (lambda x, w: ([x, w], ops.dense(x, w)))(ph((5, 9), d, "x"), ph((6, 9), d, "w")),
    "matmul": lambda d: (lambda a, b: ([a, b], ops.matmul(a, b)))(ph((5, 9), d, "A"), ph((9, 6), d, "B")),
    "batch_matmul": lambda d: (lambda a, b: ([a, b], ops.batch_matmul(a, b)))(ph((2, 5, 9), d, "X"),
                                                                             ph((2, 6, 9), d, "Y")),
    "conv2d_nchw": _conv(ops.conv2d_nchw, (1, 3, 7, 7), (4, 3, 3, 3), 1, 1),
    "conv2d_nhwc": _conv(ops.conv2d_nhwc, (1, 7, 7, 3), (3, 3, 3, 4), 2, 1),
    "depthwise_conv2d_nchw": _conv(ops.depthwise_conv2d_nchw, (1, 3, 6, 6), (3, 1, 3, 3), 1, 1),
    "depthwise_conv2d_nhwc": _conv(ops.depthwise_conv2d_nhwc, (1, 6, 6, 3), (3, 3, 3, 1), 1, 1),
    "conv2d_nchw_spatial_pack": _conv(ops.conv2d_nchw_spatial_pack, (1, 3, 6, 6), (4, 3, 3, 3), 1, 1),
    "max_pool2d": lambda d: (lambda x: ([x], ops.max_pool2d(x, 3, 2, 1)))(ph((1, 2, 7, 7), d, "x")),
    "avg_pool2d": lambda d: (lambda x: ([x], ops.avg_pool2d(x, 2, 2, 0)))(ph((1, 2, 6, 6), d, "x")),
    "global_avg_pool2d": lambda d: (lambda x: ([x], ops.global_avg_pool2d(x)))(ph((1, 2, 5, 5), d, "x")),
    "global_max_pool2d": lambda d: (lambda x: ([x], ops.global_max_pool2d(x)))(ph((1, 2, 5, 5), d, "x")),
    "sum": _unary(lambda x: ops.sum(x, axis=1)), "max": _unary(lambda x: ops.max(x, axis=0)),
    "min": _unary(lambda x: ops.min(x, axis=1)), "prod": _unary(lambda x: ops.prod(x, axis=1)),
    "mean": _unary(lambda x: ops.mean(x, axis=1)), "variance": _unary(lambda x: ops.variance(x, axis=1)),
    "softmax": _unary(ops.softmax), "log_softmax": _unary(ops.log_softmax),
    "layer_norm": lambda d: (lambda x, g, b: ([x, g, b], ops.layer_norm(x, g, b, axis=-1)))(
        ph((4, 6), d, "x"), ph((6,), d, "gamma"), ph((6,), d, "beta")),
}
FLOAT_ONLY = {"exp", "sigmoid", "tanh", "gelu", "sqrt", "log", "power", "mean", "variance", "softmax",
              "log_softmax", "layer_norm", "avg_pool2d", "global_avg_pool2d"}
FLOAT16 = ["add", "relu", "exp", "sum", "matmul", "conv2d_nchw", "max_pool2d", "softmax", "cast"]
CASES = [(n, "float32") for n in OPERATORS] + [(n, "int32") for n in OPERATORS if n not in FLOAT_ONLY] + \
        [(n, "float16") for n in FLOAT16]


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_default_schedule_matches_reference(name, dtype):
    inputs, out = OPERATORS[name](dtype)
    dag = ans.ComputeDAG(list(inputs) + [out])
    arrays = None
    if name == "take":
        arrays = [random_array((3, 7), dtype), RNG.integers(0, 7, size=(4,)).astype("int32")]
    check_state(dag, inputs, input_arrays=arrays)


def matmul_dag(n, l, m, dtype="float32"):
    A, B, C = matmul_tensors(n, m, l, dtype)
    return ans.ComputeDAG([A, B, C]), [A, B], C


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_tiled_parallel_vectorized_matmul(dtype):
    dag, inputs, C = matmul_dag(37, 29, 45, dtype)  # no extent divides the factors
    s = dag.get_init_state()
    tile_matmul(s, C)
    check_state(dag, inputs, s, "llvm -num-cores=2")


def test_cache_write_compute_at_and_pragma():
    dag, inputs, C = matmul_dag(64, 32, 48)
    s = dag.get_init_state()
    _, io, ji = cache_write_matmul(s, C)
    s.vectorize(C, ji)
    s.pragma(C, io, "auto_unroll_max_step$64")
    s.parallel(C, io)
    mod = check_state(dag, inputs, s)
    assert "allocate" in mod.lowered_ir()


def test_inline_fuse_and_rfactor():
    A = ph((33, 20), "float32", "A")
    B = te.compute((33, 20), lambda i, j: A[i, j] * 2.0, name="B")
    k = te.reduce_axis((0, 20), name="k")
    C = te.compute((33,), lambda i: te.sum(B[i, k], axis=k), name="C")
    dag = ans.ComputeDAG([A, C])
    s = dag.get_init_state()
    s.compute_inline(B)
    ko, ki = s.split(C, s[C].iters[1], [8])
    s.rfactor(C, ki, 1)
    check_state(dag, [A], s)
    s2 = dag.get_init_state()
    fused = s2.fuse(B, s2[B].iters)
    s2.parallel(B, fused)
    check_state(dag, [A], s2)


def test_state_from_json_builds_the_same():
    dag, inputs, C = matmul_dag(20, 12, 18)
    s = dag.get_init_state()
    s.split(C, s[C].iters[0], [4])
    s.parallel(C, s[C].iters[0])
    back = _core.LoopState.from_json(dag, s.to_json())
    a = ans.build(dag, s).lowered_ir()
    b = ans.build(dag, back).lowered_ir()
    assert a == b
    check_state(dag, inputs, back)


def test_call_checks_arguments():
    dag, inputs, C = matmul_dag(4, 3, 5)
    mod = ans.build(dag)
    a, b, c = np.zeros((4, 3), "float32"), np.zeros((3, 5), "float32"), np.zeros((4, 5), "float32")
    with pytest.raises(ValueError, match="takes 3 arguments, got 2"):
        mod(a, b)
    with pytest.raises(ValueError, match=r"argument 1 \('B'\) must have shape \(3, 5\)"):
        mod(a, np.zeros((5, 3), "float32"), c)
    with pytest.raises(TypeError, match=r"argument 2 \('C'\) must have dtype float32, got float64"):
        mod(a, b, np.zeros((4, 5)))
    with pytest.raises(ValueError, match="C-contiguous"):
        mod(a, b, np.zeros((5, 4), "float32").T)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        mod(a, [[0.0] * 5] * 3, c)
    # Element types are read from the array's descriptor; other byte orders and kinds are named.
    with pytest.raises(TypeError, match="argument 1 has unsupported dtype >f4"):
        mod(a, np.zeros((3, 5), ">f4"), c)
    with pytest.raises(TypeError, match="argument 1 has unsupported dtype complex64"):
        mod(a, np.zeros((3, 5), "complex64"), c)
    with pytest.raises(TypeError, match=r"argument 1 \('B'\) must have dtype float32, got int32"):
        mod(a, np.zeros((3, 5), "int32"), c)
    with pytest.raises(ValueError, match="no OpenCL (device matches -device=mali|platform)|without OpenCL"):
        ans.build(dag, target="opencl -device=mali")
    with pytest.raises(ValueError, match="unknown target option"):
        ans.build(dag, target="llvm -numcores=2")


def test_sources_and_time_evaluator():
    dag, inputs, C = matmul_dag(32, 16, 64)
    s = dag.get_init_state()
    s.vectorize(C, s[C].iters[1])  # j: 64 lanes, contiguous in B and C
    s.reorder(C, [s[C].iters[0], s[C].iters[2], s[C].iters[1]])  # i, k, j
    mod = check_state(dag, inputs, s)
    assert "define" in mod.get_source("ll")
    assert re.search(r"v\w+ps\s", mod.get_source("asm"))
    arrays = arrays_for(dag, inputs)
    times = mod.time_evaluator(number=2, repeat=3, min_repeat_ms=1, flush_cache=True)(*arrays)
    assert len(times) == 3 and all(t > 0 for t in times)
    assert mod.compile_seconds > 0
    assert "after vectorization" in ans.core.build.lower(s, log_passes=True)


def test_outputs_must_be_writeable_and_must_not_alias_inputs():
    import numpy as np

    a = te.placeholder((6, 4), name="a")
    b = te.compute((6, 4), lambda i, j: a[i, j] * 2.0, name="b")
    mod = ans.build(ans.ComputeDAG([a, b]))
    x = np.ones((6, 4), "float32")
    with pytest.raises(ValueError, match="shares memory"):
        mod(x, x)
    big = np.ones((12, 4), "float32")
    with pytest.raises(ValueError, match="shares memory"):
        mod(big[:6], big[3:9])
    readonly = np.zeros((6, 4), "float32")
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        mod(x, readonly)
    out = np.zeros((6, 4), "float32")
    mod(big[:6], big[6:])  # disjoint views of one buffer are fine
    np.testing.assert_array_equal(big[6:], 2 * big[:6])
    mod(x, out)
    np.testing.assert_array_equal(out, 2 * x)


def test_vectorized_loops_become_avx512_code_where_the_cpu_has_it():
    dag, inputs, C = matmul_dag(8, 16, 32)
    s = dag.get_init_state()
    i, j, k = s[C].iters
    jo, ji = s.split(C, j, [16])
    s.reorder(C, [i, jo, k, ji])
    s.vectorize(C, ji)
    mod = ans.build(dag, s, "llvm -mcpu=sapphirerapids -num-cores=2")
    assert "<16 x float>" in mod.get_source("ll")
    with open("/proc/cpuinfo") as f:
        has_avx512 = "avx512f" in f.read()
    register = "zmm" if has_avx512 else "ymm"
    assert re.search(r"vfmadd\w*ps\s.*" + register + r"|vmulps\s.*" + register, mod.get_source("asm"))
    check_state(dag, inputs, s)


# ---- a state builds only for its own DAG ----

def test_build_refuses_a_state_of_another_dag():
    dag1, b1 = vector_double()
    a2 = te.placeholder((16,), name="A")
    dag2 = ans.ComputeDAG([a2, te.compute((16,), lambda i: a2[i] * 3, name="B")])
    s = dag1.get_init_state()
    s.split(b1, 0, [4])
    with pytest.raises(ValueError, match="state was made from a different DAG"):
        ans.build(dag2, s)
    with pytest.raises(ValueError, match="different DAG"):
        ans.build(ans.SearchTask(compute_dag=dag2, target="llvm"), s)
    # A DAG built again the same way is the same DAG: the state builds for it, with dag1's results.
    same, _ = vector_double()
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    ans.build(same, s)(a, out)
    np.testing.assert_array_equal(out, a * 2)
