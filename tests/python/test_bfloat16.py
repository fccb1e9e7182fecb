"""bfloat16 kernels. Tensors of dtype "bfloat16" take numpy arrays of ml_dtypes.bfloat16. Casts round as
PyTorch's ``tensor.to(torch.bfloat16)`` does, bit for bit on a hand-made set (ties, infinities, -0, subnormals,
the largest finite value and what overflows; NaN stays NaN), in the reference evaluator and in generated code,
scalar and vector loops, for AVX2 and AVX-512 code (run where this CPU has it, else built with -no-host-check
and read: vector instructions, no library call). A matmul and a convolution of bfloat16 inputs accumulate in
float32 and agree with the evaluator and with torch on awkward shapes."""
import re

import numpy as np
import pytest

import autosched as ans
from autosched import measure as am
from autosched import ops, te
from schedule_helpers import tile_matmul

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

pytestmark = pytest.mark.needs_llvm

BF16 = ml_dtypes.bfloat16
with open("/proc/cpuinfo") as _f:
    CPU_FLAGS = set(next((line.split(":", 1)[1].split() for line in _f if line.startswith("flags")), []))

# float32 bit patterns: ties to even both ways (normal and subnormal), just above / below a tie, -0, infinities,
# NaNs (quiet, signalling, negative), subnormals, the largest bfloat16, the largest float32 and the tie past the
# largest bfloat16 (both overflow to inf), a carry into the exponent.
CASES = np.array([
    0x3f800000, 0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0xbf808000, 0x00000000, 0x80000000,
    0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc00001, 0x7fffffff, 0x00000001, 0x00008000,
    0x00018000, 0x00012345, 0x007fffff, 0x00800000, 0x80408000, 0x7f7f0000, 0x7f7fffff, 0x7f7f8000,
    0x7f7f7fff, 0xff7f8000, 0x40490fdb, 0x3fffffff, 0x3dcccccd, 0xc2f6e979, 0x33800001, 0x4b800001,
], dtype=np.uint32).view(np.float32)


def torch_bfloat16(x):
    """float32 array -> the bfloat16 array torch makes of it (same bits)."""
    return torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(BF16)


def assert_same_bits(got, want):
    """Equal bits, except that NaN only has to be NaN (torch's own NaN bits differ between its scalar and vector
    paths: 0x7fc0 and 0xffff)."""
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


def ulps_apart(got, want):
    """How many bfloat16 steps lie between two bfloat16 arrays (0 where equal)."""
    def ordered(a):  # bit patterns as a monotonic integer line (negatives mirrored below zero)
        bits = np.asarray(a).view(np.uint16).astype(np.int32)
        return np.where(bits & 0x8000, -(bits & 0x7fff), bits)
    return np.abs(ordered(got) - ordered(want))


def cast_dag(n):
    x = te.placeholder((n,), "float32", "x")
    y = te.compute((n,), lambda i: te.cast(x[i], "bfloat16"), name="y")
    z = te.compute((n,), lambda i: te.cast(y[i], "float32"), name="z")
    return ans.ComputeDAG([x, y, z])


def cast_state(dag, lanes):
    s = dag.get_init_state()
    if lanes > 1:
        for name in ("y", "z"):
            _, inner = s.split(name, s[name].iters[0], [lanes])
            s.vectorize(name, inner)
    return s


# ---- the type ----

def test_tensors_take_bfloat16_by_name_and_by_type():
    a = te.placeholder((4,), "bfloat16", "a")
    b = te.placeholder((4,), BF16, "b")
    assert a.dtype == b.dtype == "bfloat16"
    c = te.compute((4,), lambda i: a[i] * b[i] + 1, name="c")  # a Python number takes the tensor's dtype
    assert c.dtype == "bfloat16"
    assert "1bf" in str(c.op.body)
    k = te.reduce_axis((0, 4), "k")
    s = te.compute((1,), lambda i: te.sum(a[k], axis=k), name="s")
    assert s.dtype == "bfloat16"
    with pytest.raises(TypeError, match="float16"):
        te.sum(a[k], axis=k, acc_dtype="float16")
    dag = ans.ComputeDAG([a, b, c])
    assert ans.ComputeDAG.from_json(dag.to_json()).workload_key() == dag.workload_key()
    with pytest.raises(TypeError, match="must have dtype bfloat16"):
        ans.evaluate(dag, [np.ones(4, np.float32), np.ones(4, BF16)])


# ---- casts, bit for bit ----

def test_evaluator_casts_as_torch_does():
    n = len(CASES)
    y, z = ans.evaluate(cast_dag(n), [CASES])
    want = torch_bfloat16(CASES)
    assert y.dtype == BF16
    assert_same_bits(y, want)
    np.testing.assert_array_equal(z, want.astype(np.float32))


@pytest.mark.parametrize("lanes", [1, 8, 16])
def test_generated_casts_match_torch_and_the_evaluator(lanes):
    n = len(CASES) * 3  # several vectors, a partial one when lanes does not divide it
    x = np.tile(CASES, 3)[:n - 5]
    dag = cast_dag(len(x))
    mod = ans.build(dag, cast_state(dag, lanes))
    y, z = np.zeros(len(x), BF16), np.zeros(len(x), np.float32)
    mod(x, y, z)
    assert_same_bits(y, torch_bfloat16(x))
    ref_y, ref_z = ans.evaluate(dag, [x])
    np.testing.assert_array_equal(y.view(np.uint16), ref_y.view(np.uint16))  # NaN bits included
    np.testing.assert_array_equal(z.view(np.uint32), ref_z.view(np.uint32))
    assert "call" not in mod.get_source("asm")


def test_every_bfloat16_widens_exactly():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = te.placeholder((1 << 16,), "bfloat16", "x")
    y = te.compute((1 << 16,), lambda i: te.cast(x[i], "float32"), name="y")
    dag = ans.ComputeDAG([x, y])
    s = dag.get_init_state()
    s.vectorize("y", s.split("y", s["y"].iters[0], [16])[1])
    got = np.zeros(1 << 16, np.float32)
    ans.build(dag, s)(bits.view(BF16), got)
    want = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))  # NaN payloads kept
    ref = ans.evaluate(dag, [bits.view(BF16)])[0]  # computes in double: a signalling NaN comes back quiet
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(ref), nan)
    np.testing.assert_array_equal(ref.view(np.uint32)[~nan], want.view(np.uint32)[~nan])


# AVX2 and AVX-512 (with and without AVX512-BF16, whose vcvtneps2bf16 flushes subnormals: not used).
X86_CPUS = [("haswell", "avx2", "ymm"), ("skylake-avx512", "avx512f", "zmm"), ("sapphirerapids", "avx512f", "zmm")]


@pytest.mark.parametrize("cpu, feature, register", X86_CPUS)
def test_vector_casts_for_avx2_and_avx512(cpu, feature, register):
    if "avx2" not in CPU_FLAGS:
        pytest.skip("needs an x86 CPU with AVX2")
    runs_here = feature in CPU_FLAGS
    x = np.tile(CASES, 4)
    dag = cast_dag(len(x))
    target = f"llvm -mcpu={cpu} -num-cores=2" + ("" if runs_here else " -no-host-check")
    mod = ans.build(dag, cast_state(dag, 16), target)
    asm = mod.get_source("asm")
    assert "call" not in asm and "vcvtneps2bf16" not in asm and "truncsfbf2" not in asm
    # The rounding is vector integer code on the target's widest registers.
    assert re.search(rf"vpaddd\s.*%{register}", asm), asm[:3000]
    assert re.search(rf"vpsrld\s.*%{register}", asm), asm[:3000]
    if runs_here:
        y, z = np.zeros(len(x), BF16), np.zeros(len(x), np.float32)
        mod(x, y, z)
        assert_same_bits(y, torch_bfloat16(x))


# ---- arithmetic ----

def test_one_operation_rounds_its_float32_result_as_torch():
    rng = np.random.default_rng(1)
    n = 67
    av, bv = (rng.standard_normal(n).astype(BF16) for _ in range(2))
    bv[:4] = [0, -0.0, np.inf, np.nan]
    a, b = te.placeholder((n,), "bfloat16", "a"), te.placeholder((n,), "bfloat16", "b")
    def elementwise(name, f):
        return te.compute((n,), lambda i: f(a[i], b[i]), name=name)
    # A Python number keeps float32 precision, as in torch: x * 0.7071... rounds once, not the constant first.
    outs = [elementwise("add", lambda x, y: x + y), elementwise("mul", lambda x, y: x * y),
            elementwise("div", lambda x, y: x / y), elementwise("max", te.max),
            elementwise("scale", lambda x, y: x * 0.7071067811865476)]
    dag = ans.ComputeDAG([a, b] + outs)
    s = dag.get_init_state()
    for o in outs:
        s.vectorize(o.name, s.split(o.name, s[o.name].iters[0], [8])[1])
    got = [np.zeros(n, BF16) for _ in outs]
    ans.build(dag, s)(av, bv, *got)
    ta, tb = (torch.from_numpy(v.view(np.int16)).view(torch.bfloat16) for v in (av, bv))
    wants = [ta + tb, ta * tb, ta / tb, torch.maximum(ta, tb), ta * 0.7071067811865476]
    for g, ref, want in zip(got, ans.evaluate(dag, [av, bv]), wants):
        assert_same_bits(g, want.view(torch.int16).numpy().view(BF16))
        assert_same_bits(g, ref)


def test_inlined_bfloat16_stage_is_rounded_as_if_stored():
    n = 64
    a = te.placeholder((n,), "bfloat16", "a")
    t = te.compute((n,), lambda i: a[i] * a[i] - te.const(0.1, "bfloat16"), name="t")
    out = te.compute((n,), lambda i: t[i] * 3, name="out")
    dag = ans.ComputeDAG([a, out])
    av = np.random.default_rng(2).standard_normal(n).astype(BF16)
    want = ans.evaluate(dag, [av])[0]
    for inline in (False, True):
        s = dag.get_init_state()
        if inline:
            s.compute_inline("t")
        s.vectorize("out", s.split("out", s["out"].iters[0], [16])[1])
        got = np.zeros(n, BF16)
        ans.build(dag, s)(av, got)
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_exp_of_bfloat16_is_vector_code_within_an_ulp_of_torch():
    n = 256
    x = te.placeholder((n,), "bfloat16", "x")
    y = te.compute((n,), lambda i: te.exp(x[i]), name="y")
    dag = ans.ComputeDAG([x, y])
    s = dag.get_init_state()
    s.vectorize("y", s.split("y", s["y"].iters[0], [8])[1])
    mod = ans.build(dag, s)
    assert "expf" not in mod.get_source("asm")  # the float32 polynomial, not a libm call per lane
    xv = np.linspace(-20, 20, n).astype(BF16)
    got = np.zeros(n, BF16)
    mod(xv, got)
    want = torch.from_numpy(xv.view(np.int16)).view(torch.bfloat16).exp().view(torch.int16).numpy().view(BF16)
    assert ulps_apart(got, want).max() <= 1


# ---- matmul and convolution: float32 accumulation ----

def bf16_matmul(n, m, k):
    a = te.placeholder((n, k), "bfloat16", "A")
    b = te.placeholder((k, m), "bfloat16", "B")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return ans.ComputeDAG([a, b, c]), c


def torch_of(array):
    return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)


def numpy_of(tensor):
    return tensor.contiguous().view(torch.int16).numpy().view(BF16)


def assert_matches_torch(got, want_tensor, reduction):
    """Within one bfloat16 step of torch where the sum is far from cancelling; near zero, within float32
    rounding of the reduction (both accumulate in float32 and round once, in other orders)."""
    want = numpy_of(want_tensor)
    apart = ulps_apart(got, want)
    close = np.abs(got.astype(np.float32) - want.astype(np.float32)) <= 1e-6 * reduction
    assert ((apart <= 1) | close).all(), (apart.max(), got[apart > 1][:5], want[apart > 1][:5])


@pytest.mark.parametrize("n, m, k", [(1, 1, 1), (7, 13, 3), (17, 31, 67), (5, 40, 129)])
def test_matmul_accumulates_in_float32(n, m, k):
    dag, c = bf16_matmul(n, m, k)
    rng = np.random.default_rng(n * m * k)
    av, bv = rng.standard_normal((n, k)).astype(BF16), rng.standard_normal((k, m)).astype(BF16)
    ref = ans.evaluate(dag, [av, bv])[0]
    # The exact sums (float64) rounded once: the evaluator's result.
    exact = av.astype(np.float64) @ bv.astype(np.float64)
    assert ulps_apart(ref, exact.astype(np.float32).astype(BF16)).max() <= 1
    for schedule in ("plain", "tiled"):
        s = dag.get_init_state()
        if schedule == "tiled":
            tile_matmul(s, c)
        got = np.zeros((n, m), BF16)
        ans.build(dag, s)(av, bv, got)
        assert ulps_apart(got, ref).max() <= 1, schedule
        assert_matches_torch(got, torch_of(av) @ torch_of(bv), k)


def test_bfloat16_products_accumulate_as_float32_products():
    """sum(A * B) over bfloat16 lowers to float32(A) * float32(B) accumulated in float32: the dot-product form."""
    dag, c = bf16_matmul(3, 5, 7)
    text = ans.build(dag, dag.get_init_state()).lowered_ir()
    assert re.search(r"C\.acc\[.*\] = \(C\.acc\[.*\] \+ \(float32\(A\[.*\]\)\*float32\(B\[.*\]\)\)\)", text), text
    assert re.search(r"C\[.*\] = bfloat16\(C\.acc\[", text), text


@pytest.mark.parametrize("shape", [(1, 3, 7, 7, 5, 3, 1), (2, 5, 11, 9, 13, 3, 2)])
def test_conv2d_accumulates_in_float32(shape):
    n, ci, h, w, co, kernel, stride = shape
    data = te.placeholder((n, ci, h, w), "bfloat16", "data")
    weight = te.placeholder((co, ci, kernel, kernel), "bfloat16", "weight")
    out = ops.conv2d_nchw(data, weight, stride, 1)
    dag = ans.ComputeDAG([data, weight, out])
    rng = np.random.default_rng(sum(shape))
    dv = rng.standard_normal((n, ci, h, w)).astype(BF16)
    wv = rng.standard_normal((co, ci, kernel, kernel)).astype(BF16)
    ref = ans.evaluate(dag, [dv, wv])[0]
    s = dag.get_init_state()
    s.compute_inline("PaddedInput")
    ow = s[out.name].iters[3]
    s.vectorize(out.name, s.split(out.name, ow, [8])[1])
    got = np.zeros(ref.shape, BF16)
    ans.build(dag, s)(dv, wv, got)
    assert ulps_apart(got, ref).max() <= 1
    want = torch.nn.functional.conv2d(torch_of(dv), torch_of(wv), stride=stride, padding=1)
    assert_matches_torch(got, want, ci * kernel * kernel)


def test_measurement_verifies_bfloat16_kernels_and_records_keep_them(tmp_path):
    dag, c = bf16_matmul(33, 17, 65)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    s = dag.get_init_state()
    tile_matmul(s, c)
    states = [dag.get_init_state(), s]
    runner = am.LocalRunner(timeout=30, min_repeat_ms=1)
    try:
        results = am.measure(task, states, am.LocalBuilder(n_parallel=1), runner)
    finally:
        runner.close()
    assert all(r.ok for r in results), results
    log = str(tmp_path / "bf16.json")
    ans.records.save_records(log, [am.MeasureInput(task, state) for state in states], results)
    (inp, _), _ = ans.records.load_records(log)
    assert inp.task.compute_dag.tensors[0].dtype == "bfloat16"
    assert inp.task.workload_key == task.workload_key
    sch, args = task.apply_best(log)
    av, bv = np.ones((33, 65), BF16), np.full((65, 17), 0.5, BF16)
    out = np.zeros((33, 17), BF16)
    ans.build(sch, args)(av, bv, out)
    np.testing.assert_array_equal(out.astype(np.float32), 32.5)


@pytest.mark.skipif(not ans.opencl.available(), reason="no OpenCL device")
def test_opencl_refuses_bfloat16():
    dag, c = bf16_matmul(4, 4, 4)
    s = dag.get_init_state()
    i, j, _ = s[c].iters
    s.bind(c, i, "blockIdx.x")
    s.bind(c, j, "threadIdx.x")
    with pytest.raises(ValueError, match="bfloat16, which OpenCL targets do not support"):
        ans.build(dag, s, "opencl")
