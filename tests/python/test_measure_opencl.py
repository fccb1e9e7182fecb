"""Measuring OpenCL candidates in the worker processes (PoCL on the CPU in CI): hand-written GPU schedules and
default GPU schedules verify and get plausible times; a failed launch, a wrong result, zero and near-zero times,
a kernel beyond the device's (or the task's) work-group and local-memory limits and a crashing worker are each
recorded under their error code and never become the best; records keep the OpenCL target."""
import os
import time

import pytest

import autosched as ans
from autosched import measure as am
from autosched import te

from schedule_helpers import gpu_matmul_state, matmul

pytestmark = pytest.mark.skipif(not ans.opencl.available(),
                                reason="no OpenCL platform on this machine (install pocl-opencl-icd)")

# PoCL by default; on a GPU machine e.g. AUTOSCHED_TEST_OPENCL_MEASURE_TARGET="opencl -device=nvidia".
TARGET = os.environ.get("AUTOSCHED_TEST_OPENCL_MEASURE_TARGET", "opencl -device=pocl")


def _matmul(n, m, k):
    return matmul(n, m, k)[0]


def _task(dag, target=TARGET, **hardware):
    params = ans.HardwareParams(target=target, **hardware) if hardware else None
    return ans.SearchTask(compute_dag=dag, target=ans.Target(target), hardware_params=params)


@pytest.fixture(scope="module")
def builder():
    return am.LocalBuilder(timeout=60, n_parallel=2)


@pytest.fixture(scope="module")
def runner():
    r = am.LocalRunner(timeout=30, min_repeat_ms=1)
    yield r
    r.close()


def _assert_valid(results, task):
    flop = task.compute_dag.flop_ct
    for r in results:
        assert r.error == "none", r.error_msg
        assert r.costs and all(c > 0 for c in r.costs)
        assert flop / r.costs[0] < 1e15  # below any device's peak
        assert r.all_cost > 0


def test_gpu_schedules_and_default_schedules_measure_valid(builder, runner):
    matmul = _task(_matmul(32, 24, 16))
    dag = matmul.compute_dag
    states = [dag.get_init_state(), gpu_matmul_state(dag), gpu_matmul_state(dag, shared=True)]
    _assert_valid(am.measure(matmul, states, builder, runner), matmul)
    started = runner._measurer.processes_started

    x = te.placeholder((1000,), name="x")
    y = te.compute((1000,), lambda i: te.max(x[i] * 2 + 1, te.const(0.0, "float32")), name="y")
    r = te.reduce_axis((0, 300), name="r")
    rows = te.placeholder((23, 300), name="rows")
    total = te.compute((23,), lambda i: te.sum(rows[i, r], axis=r), name="total")
    for dag in (ans.ComputeDAG([x, y]), ans.ComputeDAG([rows, total])):
        task = _task(dag)
        _assert_valid(am.measure(task, [dag.get_init_state()], builder, runner), task)
    # The workers (and their OpenCL contexts) are kept across batches and tasks.
    assert runner._measurer.processes_started == started


def test_every_opencl_fault_is_recorded_and_never_the_best(builder):
    task = _task(_matmul(16, 16, 8))
    faults = {"wrong_result": 0.15, "zero_time": 0.1, "near_zero_time": 0.15, "launch_error": 0.15,
              "crash": 0.1}
    runner = am.LocalRunner(timeout=30, min_repeat_ms=1, inject_faults=faults, fault_seed=3)
    try:
        states = [gpu_matmul_state(task.compute_dag, tile) for tile in (4, 8)] * 5
        results = am.measure(task, states, builder, runner)
    finally:
        runner.close()
    kinds = [r.error for r in results]
    for kind in ("none", "wrong_answer", "implausible", "runtime"):
        assert kind in kinds, kinds
    launch = [r for r in results if "OpenCL error CL_INVALID_WORK" in r.error_msg]
    crashed = [r for r in results if "SIGSEGV" in r.error_msg]
    assert launch and crashed, [r.error_msg for r in results]
    for r in results:
        if r.error == "runtime":
            assert r in launch or r in crashed, r.error_msg
            assert not r.costs
        if r.error == "wrong_answer":
            assert "differs from the reference" in r.error_msg and not r.costs
        if r.error == "implausible":
            assert "not a positive finite" in r.error_msg or "faster than the hardware allows" in r.error_msg
    assert any("faster than the hardware allows" in r.error_msg for r in results)
    best = min(results, key=lambda r: r.mean_cost)
    assert best.error == "none" and best.mean_cost > 0


def test_a_crash_mid_opencl_run_is_replaced_and_the_next_candidate_measures(builder):
    task = _task(_matmul(16, 16, 8))
    runner = am.LocalRunner(timeout=30, min_repeat_ms=1, inject_faults={"crash": 0.5}, fault_seed=0)
    try:
        states = [gpu_matmul_state(task.compute_dag)] * 4
        results = am.measure(task, states, builder, runner)
        started = runner._measurer.processes_started
    finally:
        runner.close()
    kinds = [r.error for r in results]
    assert "runtime" in kinds and "none" in kinds, kinds
    assert all("SIGSEGV" in r.error_msg for r in results if r.error == "runtime")
    after_crash = [results[i + 1] for i in range(len(results) - 1) if results[i].error == "runtime"]
    assert any(r.error == "none" for r in after_crash), kinds
    assert started > 2  # the crashed workers were replaced


def test_kernels_beyond_the_device_limits_are_refused_before_building(builder, runner):
    device = ans.opencl.devices()[0]
    target = "opencl -device=0"
    # More work items per group than the device allows.
    n = device["max_work_group_size"] * 2
    x = te.placeholder((n,), name="x")
    y = te.compute((n,), lambda i: x[i] + 1, name="y")
    wide = ans.ComputeDAG([x, y])
    s = wide.get_init_state()
    s.bind("y", s["y"].iters[0], "threadIdx.x")
    (r,) = am.measure(_task(wide, target), [s], builder, runner)
    assert r.error == "compile" and not r.costs
    assert "exceeds the device's limits" in r.error_msg and f"work groups of {n} work items" in r.error_msg

    # More __local memory than the device has: A (rows x 64 float32) staged whole per block.
    rows = device["local_memory_bytes"] // (4 * 64) + 1
    big = _matmul(rows, 8, 64)
    s = big.get_init_state()
    shared = s.cache_read("A", "shared", ["C"])
    i, j, k = s["C"].iters
    s.reorder("C", [j, i, k])
    s.bind("C", j, "blockIdx.x")
    s.compute_at(shared, "C", j)
    (r,) = am.measure(_task(big, target), [s], builder, runner)
    assert r.error == "compile" and "exceeds the device's limits" in r.error_msg
    assert "bytes of __local (shared) memory, more than" in r.error_msg


def test_kernels_beyond_the_task_hardware_params_are_refused(builder, runner):
    """Tuning for smaller hardware than the device it is measured on: the task's max_threads_per_block and
    max_shared_memory_per_block are limits too."""
    task = _task(_matmul(16, 16, 8), max_threads_per_block=32, max_shared_memory_per_block=64)
    dag = task.compute_dag
    results = am.measure(task, [gpu_matmul_state(dag, 4), gpu_matmul_state(dag, 8),
                                gpu_matmul_state(dag, 4, shared=True)], builder, runner)
    assert [r.error for r in results] == ["none", "compile", "compile"], [r.error_msg for r in results]
    assert "max_threads_per_block 32" in results[1].error_msg
    assert "max_shared_memory_per_block 64" in results[2].error_msg


def test_near_zero_times_are_checked_against_the_peaks_of_the_hardware_params(builder):
    """A near-zero time is impossible by the peaks derived from the device, or by those the task's
    HardwareParams give (peak_gflops / peak_bandwidth_gbs), which the message names."""
    dag = _matmul(16, 16, 8)
    runner = am.LocalRunner(timeout=30, min_repeat_ms=1, inject_faults={"near_zero_time": 1.0})
    try:
        (derived,) = am.measure(_task(dag), [gpu_matmul_state(dag)], builder, runner)
        given = _task(dag, peak_gflops=2000, peak_bandwidth_gbs=300)
        (r,) = am.measure(given, [gpu_matmul_state(dag)], builder, runner)
    finally:
        runner.close()
    assert derived.error == "implausible" and "derived for" in derived.error_msg, derived.error_msg
    assert r.error == "implausible" and "faster than the hardware allows" in r.error_msg
    assert "2e+12 FLOP/s" in r.error_msg and "3e+11 bytes/s" in r.error_msg, r.error_msg
    assert "task's hardware parameters" in r.error_msg
    assert r.costs and r.mean_cost == float("inf")  # kept for inspection, never the best


def test_repeats_on_a_device_are_capped(builder):
    task = _task(_matmul(16, 16, 8))
    runner = am.LocalRunner(timeout=60, number=50, repeat=10, min_repeat_ms=1000, max_device_runs=4)
    start = time.time()
    try:
        (r,) = am.measure(task, [gpu_matmul_state(task.compute_dag)], builder, runner)
    finally:
        runner.close()
    assert r.error == "none", r.error_msg
    assert len(r.costs) == 4  # repeat capped at max_device_runs, one run each
    assert time.time() - start < 60


def test_launch_error_faults_need_an_opencl_target(builder):
    task = ans.SearchTask(compute_dag=_matmul(4, 4, 4), target=ans.Target("llvm"))
    runner = am.LocalRunner(inject_faults={"launch_error": 0.5})
    with pytest.raises(ValueError, match="launch_error needs an OpenCL target"):
        am.measure(task, [task.compute_dag.get_init_state()], builder, runner)
    with pytest.raises(ValueError, match="max_device_runs must be"):
        am.LocalRunner(max_device_runs=0)


def test_opencl_records_save_and_load_with_their_target(builder, runner, tmp_path):
    task = _task(_matmul(16, 16, 8))
    states = [gpu_matmul_state(task.compute_dag, 4), gpu_matmul_state(task.compute_dag, 8)]
    results = am.measure(task, states, builder, runner)
    path = tmp_path / "opencl.json"
    ans.records.save_records(path, [am.MeasureInput(task, s) for s in states], results)
    loaded = ans.records.load_records(path)
    assert len(loaded) == 2
    for (inp, res), want in zip(loaded, results):
        assert inp.task.target.text == task.target.text and inp.task.target.text.startswith("opencl")
        assert inp.task.hardware_params == task.hardware_params
        assert res.error == want.error and res.costs == pytest.approx(want.costs)
    inp, res = ans.records.load_best_record(path, target=task.target)
    assert res.error == "none" and res.mean_cost == min(r.mean_cost for r in results)
    assert ans.records.load_best_record(path, target="llvm") == (None, None)
    # The best record builds and runs on the device.
    mod = ans.build(inp.task, inp.state)
    assert "__kernel" in mod.get_source()
