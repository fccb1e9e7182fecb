"""The OpenCL backend on the machine's OpenCL device (PoCL on the CPU in CI): every operator of the library
with its default schedule, hand-written GPU schedules (blocks, threads, shared memory) and the CPU-style
schedules of the schedule tests equal the reference evaluator; integer division and NaN semantics match the
LLVM backend; a bad device, an oversized work group and a machine without OpenCL are clear errors."""
import os
import subprocess
import sys

import numpy as np
import pytest

import autosched as ans
from autosched import te

from op_cases import CASES
from schedule_helpers import TARGETED, assert_close, gpu_matmul_state, matmul, random_inputs

pytestmark = pytest.mark.skipif(not ans.opencl.available(),
                                reason="no OpenCL platform on this machine (install pocl-opencl-icd)")

# The device the tests run on: the first one by default (PoCL here and in CI); on a GPU machine, e.g.
# AUTOSCHED_TEST_OPENCL_TARGET="opencl -device=nvidia".
TARGET = os.environ.get("AUTOSCHED_TEST_OPENCL_TARGET", "opencl")


def check(dag, state=None, target=TARGET, seed=0, positive=False):
    """Builds `state` for OpenCL, runs it on random inputs and compares every output with ans.evaluate.
    Returns the module."""
    rng = np.random.default_rng(seed)
    arrays = random_inputs(dag, rng, positive)
    is_input = [t.op_kind == "placeholder" for t in dag.tensors]
    expected = ans.evaluate(dag, [x for x, inp in zip(arrays, is_input) if inp])
    mod = ans.build(dag, state, target=target)
    mod(*arrays)
    outputs = [x for x, inp in zip(arrays, is_input) if not inp]
    for got, want in zip(outputs, expected):
        assert_close(got, want, got.dtype, message=mod.get_source())
    return mod


# Every case in float32; float16 (stored as half, computed in float) and int32 (wrapping, division helpers)
# on the cases that exercise them most, to keep the test time (one PoCL compile each) down.
OTHER_DTYPES = {"matmul", "conv2d_nchw_bias_relu", "depthwise_nchw", "softmax", "layer_norm", "sum_all",
                "max_min", "broadcast_arith", "unary_float", "abs_relu_cast", "take", "pad"}


def _op_params():
    for case, (_, dtypes, _, _) in CASES.items():
        for dtype in dtypes:
            if dtype == "float32" or case in OTHER_DTYPES:
                yield pytest.param(case, dtype, id=f"{case}-{dtype}")


@pytest.mark.parametrize("case, dtype", list(_op_params()))
def test_every_operator_default_schedule_matches_reference(case, dtype):
    builder, _, positive, _ = CASES[case]
    check(ans.ComputeDAG(builder(dtype)), positive=positive)


@pytest.mark.parametrize("case, schedule", [("matmul", "ssrsrs_cache_write"), ("softmax", "attach_all"),
                                            ("pad", "fuse_flat"), ("conv2d_nchw_bias_relu", "ssrsrs")])
def test_cpu_style_schedules_run_correctly(case, schedule):
    """Parallel, vectorized (float32 in OpenCL vector types) and unrolled loops, compute_at, cache_write: the default
    GPU binding applies to what is left, the rest runs serially in each work item."""
    builder, _, positive, _ = CASES[case]
    dag = ans.ComputeDAG(builder("float32"))
    s = dag.get_init_state()
    TARGETED[schedule](s)
    check(dag, s, positive=positive)


def _matmul(n, m, k, dtype="float32"):
    return matmul(n, m, k, dtype)[0]


def test_default_schedule_binds_blocks_and_threads():
    dag = _matmul(13, 7, 5)
    mod = check(dag)
    # LLVM 19 (ours) and PoCL's own LLVM live in one process: an LLVM build after a PoCL one works.
    if ans._core.has_llvm():
        arrays = random_inputs(dag, np.random.default_rng(3))
        ans.build(dag, target="llvm")(*arrays)
        assert_close(arrays[2], ans.evaluate(dag, arrays[:2])[0], "float32")
    source = mod.get_source()
    assert mod.get_source("cl") == source and "__kernel" in source
    assert "get_group_id(0)" in source and "get_local_id(0)" in source, source
    assert set(mod.source_formats) == {"cl", "lowered", "binary"}


def test_matmul_with_blocks_threads_and_non_dividing_splits():
    dag = _matmul(37, 29, 11)
    s = dag.get_init_state()
    i, j, k = s["C"].iters
    bi, ti = s.split("C", i, [8])      # 37 = 4 x 8 + 5: guarded
    bj, tj = s.split("C", j, [4])
    ko, ki = s.split("C", k, [3])
    s.reorder("C", [bi, bj, ti, tj, ko, ki])
    s.bind("C", bi, "blockIdx.y")
    s.bind("C", bj, "blockIdx.x")
    s.bind("C", ti, "threadIdx.y")
    s.bind("C", tj, "threadIdx.x")
    source = check(dag, s).get_source()
    assert "reqd_work_group_size(4, 8, 1)" in source, source


def test_matmul_with_shared_memory_tiles():
    dag = _matmul(19, 21, 10)
    mod = check(dag, gpu_matmul_state(dag, shared=True))
    source = mod.get_source()
    assert "__local float" in source and "barrier(CLK_LOCAL_MEM_FENCE)" in source, source
    # The time evaluator times the kernels with the device's profiling events.
    arrays = random_inputs(dag, np.random.default_rng(1))
    result = mod.time_evaluator(number=2, repeat=2)(*arrays)
    assert len(result.results) == 2 and all(t > 0 for t in result.results)


def test_row_reduction_with_threads_and_local_accumulator():
    x = te.placeholder((23, 300), name="x")
    r = te.reduce_axis((0, 300), name="r")
    out = te.compute((23,), lambda i: te.max(x[i, r], axis=r), name="rowmax")
    dag = ans.ComputeDAG([x, out])
    s = dag.get_init_state()
    local = s.cache_write("rowmax", "local")
    (i,) = s["rowmax"].iters
    bi, ti = s.split("rowmax", i, [16])
    s.bind("rowmax", bi, "blockIdx.x")
    s.bind("rowmax", ti, "threadIdx.x")
    s.compute_at(local, "rowmax", ti)
    check(dag, s)


def test_integer_division_and_nan_semantics_match_the_evaluator():
    a = te.placeholder((64,), name="a", dtype="int32")
    b = te.placeholder((64,), name="b", dtype="int32")
    out = te.compute((64,), lambda i: te.floordiv(a[i], b[i]) * 7 + te.floormod(a[i], b[i]) * 3
                     + a[i] / b[i], name="out")
    dag = ans.ComputeDAG([a, b, out])
    av = np.array([7, -7, 7, -7, 0, -2**31, -2**31, 5] * 8, "int32")
    bv = np.array([2, 2, -2, -2, 0, -1, 0, 0] * 8, "int32")
    got = np.zeros(64, "int32")
    ans.build(dag, target=TARGET)(av, bv, got)
    np.testing.assert_array_equal(got, ans.evaluate(dag, [av, bv])[0])

    x = te.placeholder((8,), name="x")
    y = te.compute((8,), lambda i: te.max(x[i], te.const(0.0, "float32")) + te.min(x[i], te.const(1.0, "float32")), name="y")
    dag = ans.ComputeDAG([x, y])
    xv = np.array([np.nan, 1, -1, 2, np.nan, 0, -3, 0.5], "float32")
    yv = np.zeros(8, "float32")
    ans.build(dag, target=TARGET)(xv, yv)
    np.testing.assert_array_equal(yv, ans.evaluate(dag, [xv])[0])
    assert np.isnan(yv[0]) and np.isnan(yv[4])


def _vectorized_matmul_relu(rows, lanes, dtype="float32", epilogue=None):
    """C = A @ B with its spatial inner loop vectorized (accumulating in place), then D = epilogue(C) (ReLU
    by default) vectorized: lanes x 3 columns, `rows` rows."""
    a = te.placeholder((rows, 7), name="A", dtype=dtype)
    b = te.placeholder((7, lanes * 3), name="B", dtype=dtype)
    r = te.reduce_axis((0, 7), name="k")
    c = te.compute((rows, lanes * 3), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    relu = epilogue or (lambda x: te.max(x, te.const(0, dtype)))
    d = te.compute((rows, lanes * 3), lambda i, j: relu(c[i, j]), name="D")
    dag = ans.ComputeDAG([a, b, d])
    s = dag.get_init_state()
    _, j = s["D"].iters
    s.vectorize("D", s.split("D", j, [lanes])[1])
    i, j, k = s["C"].iters
    jo, ji = s.split("C", j, [lanes])
    s.reorder("C", [i, jo, k, ji])
    s.vectorize("C", ji)
    return dag, s


@pytest.mark.parametrize("lanes", [2, 3, 4, 8, 16])
def test_vectorized_float_loops_use_opencl_vector_types(lanes):
    dag, s = _vectorized_matmul_relu(13, lanes)
    source = check(dag, s).get_source()
    for call in (f"vload{lanes}(0, ", f"vstore{lanes}(", f"as_fmax_float{lanes}("):
        assert call in source, source
    # max keeps NaN per lane, as the scalar code and the evaluator do.
    x = te.placeholder((2, lanes), name="x")
    y = te.compute((2, lanes), lambda i, j: te.max(x[i, j], te.const(0.0, "float32")), name="y")
    dag = ans.ComputeDAG([x, y])
    s = dag.get_init_state()
    s.vectorize("y", s["y"].iters[1])
    xv = np.random.default_rng(0).standard_normal((2, lanes)).astype("float32")
    xv[0, lanes - 1] = xv[1, 0] = np.nan
    yv = np.zeros_like(xv)
    mod = ans.build(dag, s, target=TARGET)
    assert f"vstore{lanes}(" in mod.get_source()
    mod(xv, yv)
    np.testing.assert_array_equal(yv, ans.evaluate(dag, [xv])[0])


@pytest.mark.parametrize("dtype, epilogue", [("int32", None), ("float16", None),
                                             ("float32", lambda x: te.exp(x * te.const(0.01, "float32")))])
def test_vectorized_loops_without_a_vector_form_run_lane_by_lane(dtype, epilogue):
    """Integer arithmetic (wrapping), float16 (stored as half) and calls have no vector form here: those
    stores stay loops over their lanes and still match the reference."""
    dag, s = _vectorized_matmul_relu(5, 4, dtype, epilogue)
    source = check(dag, s).get_source()
    if dtype == "int32":
        assert "vstore4(" not in source, source
    elif dtype == "float16":  # only the float32 accumulator's zeroing has a vector form
        assert "vload4(0, B" not in source and "vstore_half_rte(" in source, source
    else:  # the matmul is vectorized, the exp epilogue is not
        assert source.count("vstore4(") == 2 and "lane" in source, source


def test_float16_is_stored_as_half_without_needing_cl_khr_fp16():
    x = te.placeholder((37,), name="x", dtype="float16")
    y = te.compute((37,), lambda i: x[i] * te.const(3, "float16") + te.const(0.1, "float16"), name="y")
    dag = ans.ComputeDAG([x, y])
    xv = (np.random.default_rng(5).standard_normal(37) * 100).astype("float16")
    yv = np.zeros(37, "float16")
    mod = ans.build(dag, target=TARGET)
    mod(xv, yv)
    np.testing.assert_array_equal(yv, ans.evaluate(dag, [xv])[0])
    source = mod.get_source()
    assert "vload_half" in source and "vstore_half_rte" in source and "cl_khr_fp16" not in source, source


def test_hardware_params_come_from_the_device():
    device = ans.opencl.devices()[0]
    hw = ans.opencl.hardware_params("opencl -device=0")
    assert hw.num_cores == device["compute_units"]
    assert hw.max_threads_per_block == device["max_work_group_size"]
    assert hw.max_shared_memory_per_block == device["local_memory_bytes"]
    assert ans.opencl.hardware_params("opencl -device=0", max_threads_per_block=128).max_threads_per_block == 128
    # A task for a device of this machine takes its parameters; the family names keep their fixed defaults.
    task = ans.SearchTask(compute_dag=_matmul(4, 4, 4), target="opencl -device=0")
    assert task.hardware_params == hw
    assert ans.HardwareParams(target="opencl -device=mali").max_threads_per_block == 256
    with pytest.raises(TypeError, match="no field 'bogus'"):
        ans.opencl.hardware_params("opencl", bogus=1)


def test_device_selection_errors_name_the_devices():
    dag = _matmul(4, 4, 4)
    name = ans.opencl.devices()[0]["name"]
    check(dag, target=f"opencl -device={name[:6].lower()}")
    with pytest.raises(ValueError, match=r"there is no OpenCL device 99 .*\[0\]"):
        ans.build(dag, target="opencl -device=99")
    with pytest.raises(ValueError, match="no OpenCL device matches -device=voodoo"):
        ans.build(dag, target="opencl -device=voodoo")


def test_a_work_group_larger_than_the_device_allows_is_refused():
    limit = ans.opencl.devices()[0]["max_work_group_size"]
    x = te.placeholder((limit * 2,), name="x")
    y = te.compute((limit * 2,), lambda i: x[i] + 1, name="y")
    dag = ans.ComputeDAG([x, y])
    s = dag.get_init_state()
    s.bind("y", s["y"].iters[0], "threadIdx.x")
    with pytest.raises(ValueError, match=f"work groups of {limit * 2} work items.*allows \\({limit}\\)"):
        ans.build(dag, s, target="opencl -device=0")


def test_more_local_memory_than_the_device_has_is_refused():
    limit = ans.opencl.devices()[0]["local_memory_bytes"]
    rows = limit // (4 * 64) + 1  # A (rows x 64 float32) is larger than the local memory
    dag = _matmul(rows, 8, 64)
    s = dag.get_init_state()
    shared = s.cache_read("A", "shared", ["C"])
    i, j, k = s["C"].iters
    s.reorder("C", [j, i, k])
    s.bind("C", j, "blockIdx.x")
    s.compute_at(shared, "C", j)
    with pytest.raises(ValueError, match=r"bytes of __local \(shared\) memory, more than .* has"):
        ans.build(dag, s, target="opencl -device=0")


def test_a_thread_binding_nested_in_the_same_binding_is_refused():
    dag = _matmul(8, 8, 4)
    s = dag.get_init_state()
    i, j, _ = s["C"].iters
    s.bind("C", i, "threadIdx.x")
    s.bind("C", j, "threadIdx.x")
    with pytest.raises(ValueError, match="bound to threadIdx.x inside loop"):
        ans.build(dag, s, target=TARGET)


def test_without_an_opencl_platform_the_error_says_so():
    """The ICD loader finds no driver in an empty vendors folder: a clear error, in a child process."""
    code = ("import autosched as ans\nfrom autosched import te\n"
            "x = te.placeholder((4,), name='x'); y = te.compute((4,), lambda i: x[i] * 2, name='y')\n"
            "try:\n    ans.build(ans.ComputeDAG([x, y]), target='opencl')\n"
            "except ValueError as e:\n    print('ERROR:', e)\n")
    env = dict(os.environ, OCL_ICD_VENDORS="/nonexistent-autosched-test", OPENCL_VENDOR_PATH="/nonexistent")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "no OpenCL platform was found" in out.stdout, out.stdout + out.stderr
