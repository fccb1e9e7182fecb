"""The GPU expert schedule (cpp/search/gpu_expert_schedule.cc): derived from the task's HardwareParams, it gives
every GEMM-like task and direct convolution (NCHW and NHWC) a state that builds for the machine's OpenCL device
(PoCL here) and equals numpy on awkward shapes (primes, 1, 7x7 images, channel counts not multiples of 8); on an
NVIDIA-like device its 8 x 8 register tiles run as two interleaved virtual threads per axis and both register
tiles are read as float4; SearchParams.use_expert_schedule=False keeps it out of a tuning run's records, on
the CPU and on the GPU."""
import os
import re

import numpy as np
import pytest

import autosched as ans
from autosched import _core, ops, search, te
from autosched.core.record_log import read_log

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")

POCL = "opencl -device=pocl"


def _ph(shape, name):
    return te.placeholder(shape, name=name)


def _matmul(n, k, m):
    a, b = _ph((n, k), "A"), _ph((k, m), "B")
    return [a, b, ops.matmul(a, b)], lambda a, b: a @ b


def _dense(n, k, m):
    x, w = _ph((n, k), "X"), _ph((m, k), "W")
    return [x, w, ops.dense(x, w)], lambda x, w: x @ w.T


def _batch_matmul(b, n, k, m):
    x, y = _ph((b, n, k), "X"), _ph((b, m, k), "Y")  # Y transposed, as batch_matmul takes it
    return [x, y, ops.batch_matmul(x, y)], lambda x, y: np.einsum("bik,bjk->bij", x, y)


def _conv_reference(data, kernel, pad):
    """NCHW data, OIHW kernel, stride 1."""
    padded = np.pad(data, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    co, _, kh, kw = kernel.shape
    oh, ow = padded.shape[2] - kh + 1, padded.shape[3] - kw + 1
    out = np.zeros((data.shape[0], co, oh, ow), np.float64)
    for y in range(kh):
        for x in range(kw):
            out += np.einsum("nchw,oc->nohw", padded[:, :, y:y + oh, x:x + ow], kernel[:, :, y, x])
    return out


def _conv_nchw(ci, co, size, window):
    data, kernel = _ph((1, ci, size, size), "data"), _ph((co, ci, window, window), "kernel")
    out = ops.conv2d_nchw(data, kernel, stride=1, padding=window // 2)
    return [data, kernel, out], lambda d, k: _conv_reference(d, k, window // 2)


def _conv_strided(ci, co, size, stride):
    """3x3 NCHW, padding 1: the stride-1 result's every stride-th row and column."""
    data, kernel = _ph((1, ci, size, size), "data"), _ph((co, ci, 3, 3), "kernel")
    out = ops.conv2d_nchw(data, kernel, stride=stride, padding=1)
    return [data, kernel, out], lambda d, k: _conv_reference(d, k, 1)[:, :, ::stride, ::stride]


def _conv_nhwc(ci, co, size, window):
    data, kernel = _ph((1, size, size, ci), "data"), _ph((window, window, ci, co), "kernel")
    out = ops.conv2d_nhwc(data, kernel, stride=1, padding=window // 2)

    def reference(d, k):  # HWIO kernel
        nchw = _conv_reference(d.transpose(0, 3, 1, 2), k.transpose(3, 2, 0, 1), window // 2)
        return nchw.transpose(0, 2, 3, 1)
    return [data, kernel, out], reference


CASES = {
    "matmul 97x101x89": lambda: _matmul(97, 101, 89),
    "matmul 1x37x131": lambda: _matmul(1, 37, 131),
    "matmul 129x1x3": lambda: _matmul(129, 1, 3),
    "dense 3x67x130": lambda: _dense(3, 67, 130),
    "batch_matmul 3x17x9x23": lambda: _batch_matmul(3, 17, 9, 23),
    "conv nchw 7x7 3->13": lambda: _conv_nchw(3, 13, 7, 3),
    "conv nchw 14x14 12->20 5x5": lambda: _conv_nchw(12, 20, 14, 5),
    "conv nhwc 7x7 5->12": lambda: _conv_nhwc(5, 12, 7, 3),
    "conv nhwc 11x11 8->7 1x1": lambda: _conv_nhwc(8, 7, 11, 1),
}


def _run(dag, state, target, reference, rng):
    inputs = [rng.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32") for t in dag.tensors[:2]]
    out = np.zeros([int(d) for d in dag.tensors[-1].shape], "float32")
    ans.build(dag, state, target=target)(*inputs, out)
    want = reference(*[x.astype(np.float64) for x in inputs])
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))


@needs_opencl
@pytest.mark.parametrize("case", list(CASES))
def test_gpu_expert_equals_numpy_on_awkward_shapes(case):
    tensors, reference = CASES[case]()
    dag = ans.ComputeDAG(tensors)
    task = ans.SearchTask(compute_dag=dag, target=POCL)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    # Each number's origin is in the note.
    for origin in ("warp_size", "max_threads_per_block", "max_registers_per_thread", "vector_unit_bytes"):
        assert origin in note, note
    _run(dag, state, POCL, reference, np.random.default_rng(0))


def _vthread_extent(dag, state):
    return max([it.extent for st in dag.infer_bound(state).stages for it in st.iters
                if it.annotation == "vthread"], default=1)


@needs_opencl
def test_gpu_expert_on_an_nvidia_like_device_interleaves_runs_and_reads_float4():
    """NVIDIA's parameters on a 2304 x 64 x 2048 matmul (288 groups of 128 x 128 outputs, more than 2 on each of
    132 compute units): 16 x 16 work items (8 warps of 32) of 8 x 8 accumulators (255 registers), each axis two
    virtual threads of 4 (float4 runs: vector_unit_bytes 16), so a warp's reads of B's register tile lie 64
    columns apart; A's shared copy transposed so its tile is read as float4 too; the kernel equals numpy where
    PoCL runs it."""
    tensors, reference = _matmul(2304, 64, 2048)
    dag = ans.ComputeDAG(tensors)
    task = ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia")
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert "work items 16 x 16" in note and "register tile 8 x 8 in 2 x 2 virtual threads" in note, note
    assert _vthread_extent(dag, state) == 4
    source = ans.build(dag, state, target="opencl").get_source("cl")
    assert re.search(r"\(\*\(__local float4\*\)\(B_shared \+ \(+\(\w+ % 2\) \* 64\)", source), source
    assert "(*(__local float4*)(A_shared + " in source, source
    _run(dag, state, "opencl", reference, np.random.default_rng(1))


@needs_opencl
@pytest.mark.parametrize("case", ["matmul 1023x77x771", "dense 130x96x300", "conv nchw 27x27 9->15"])
def test_gpu_expert_edges_that_no_tile_divides_keep_the_register_tile_unguarded(case):
    """NVIDIA's parameters on extents no tile divides: only the fetches from global memory and the final
    stores are guarded; the register tile multiplies and adds without a branch, past the edge, and its
    loads of the shared rows stay float4. The kernel equals numpy where PoCL runs it."""
    tensors, reference = {"matmul 1023x77x771": lambda: _matmul(1023, 77, 771),
                          "dense 130x96x300": lambda: _dense(130, 96, 300),
                          "conv nchw 27x27 9->15": lambda: _conv_nchw(9, 15, 27, 3)}[case]()
    dag = ans.ComputeDAG(tensors)
    state, reason, note = search.expert_schedule_info(ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia"))
    assert state is not None, reason
    assert "guarded edges" in note, note
    source = ans.build(dag, state, target="opencl").get_source("cl")
    lines = source.splitlines()
    updates = [i for i, line in enumerate(lines) if re.search(r"(\w+_local)\[[^=]*\] = \(\1\[", line)]
    assert updates, source
    for i in updates:
        assert not lines[i - 1].strip().startswith("if ("), "\n".join(lines[i - 3:i + 1])
    if case.startswith("matmul"):  # 4 x 8 tiles (the others shrink to fill the device)
        assert "float4" in source, source
    _run(dag, state, "opencl", reference, np.random.default_rng(4))


def _groups(dag, state):
    return max(it.extent for st in dag.infer_bound(state).stages for it in st.iters
               if it.annotation == "blockIdx.x")


@pytest.mark.parametrize("shape", [(256, 64, 256), (1000, 1000, 1000), (96, 50, 7)])
def test_gpu_expert_makes_enough_groups_to_fill_the_device(shape):
    """Where 8 x 8 tiles of 256 work items would leave most of an H100's 132 compute units idle (4 groups for a
    256 x 256 output, 64 for 1000 x 1000), the group and then the register tile shrink in turn until the tiles
    make 2 groups a compute unit, or to 64 work items of one accumulator."""
    tensors, _ = _matmul(*shape)
    dag = ans.ComputeDAG(tensors)
    task = ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia")
    assert task.hardware_params.num_cores == 132
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert "at least 264 groups" in note, note
    outputs = shape[0] * shape[2]
    if outputs >= 264 * 64:
        assert _groups(dag, state) >= 264, note
    else:  # too few outputs: the smallest group and tile
        assert "= 64;" in note and "register tile 1 x 1" in note, note


@needs_opencl
@pytest.mark.parametrize("case", ["softmax 37x129", "layer_norm 7x768", "row sum 5x3x100"])
def test_gpu_expert_reduces_rows_across_the_work_items_of_a_group(case):
    """Row reductions (softmax, layer norm, a sum): one group a row, its work items reading the row together
    (a warp's reads contiguous), their partial sums combined in shared memory; equal to numpy on PoCL."""
    rows, width = {"softmax 37x129": (37, 129), "layer_norm 7x768": (7, 768), "row sum 5x3x100": (15, 100)}[case]
    x = _ph((rows, width), "x")
    if case.startswith("softmax"):
        tensors = [x, ops.softmax(x)]

        def reference(a):
            e = np.exp(a - a.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)
    elif case.startswith("layer_norm"):
        gamma, beta = _ph((width,), "gamma"), _ph((width,), "beta")
        tensors = [x, gamma, beta, ops.layer_norm(x, gamma, beta)]

        def reference(a, g, b):
            mean = a.mean(-1, keepdims=True)
            return (a - mean) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * g + b
    else:
        tensors = [x, ops.sum(x, axis=1, keepdims=True)]

        def reference(a):
            return a.sum(-1, keepdims=True)
    dag = ans.ComputeDAG(tensors)
    task = ans.SearchTask(compute_dag=dag, target=POCL)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert "cross-thread reduction over" in note, note
    printed = str(state)
    assert ".rf.shared" in printed and "threadIdx.x" in printed, printed
    rng = np.random.default_rng(2)
    inputs = [rng.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    out = np.zeros([int(d) for d in tensors[-1].shape], "float32")
    ans.build(dag, state, target=POCL)(*inputs, out)
    want = reference(*[a.astype(np.float64) for a in inputs])
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def _records_hold(log, state):
    key = _core.state_key(state)
    return any(_core.state_key(rec.state) == key for rec in read_log(log).records)


def _tune(task, params, log):
    policy = search.SketchPolicy(task, search.make_cost_model("random"), params, seed=0)
    options = ans.TuningOptions(num_measure_trials=6, num_measures_per_round=3, verbose=0,
                                measure_callbacks=[ans.RecordToFile(log)])
    return task.tune(options, search_policy=policy)


@pytest.mark.parametrize("target", ["llvm", POCL])
def test_use_expert_schedule_switches_the_expert_off(target, tmp_path):
    """With use_expert_schedule=False no expert is made, listed among the start states, measured or seeded: the
    records of a short tuning run never hold it; with the default they do (tuning measures it first)."""
    if target != "llvm" and not ans.opencl.available():
        pytest.skip("no OpenCL platform on this machine")
    tensors, _ = _matmul(32, 24, 40)
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target=target)
    expert = search.expert_schedule(task)
    assert expert is not None
    off = search.SearchParams(use_expert_schedule=False)
    state, reason, _ = search.expert_schedule_info(task, off)
    assert state is None and "use_expert_schedule" in reason
    policy = search.SketchPolicy(task, off)
    assert policy.expert_schedule() is None
    assert search.EXPERT not in [name for name, _ in search.tuning_start_states(policy)]
    logs = {on: os.path.join(tmp_path, f"{on}.json") for on in (True, False)}
    for on, log in logs.items():
        result = _tune(task, search.SearchParams(use_expert_schedule=on), log)
        assert result.trials > 0
        assert (result.expert_cost is not None) == on
    assert _records_hold(logs[True], expert)
    assert not _records_hold(logs[False], expert)


@pytest.mark.parametrize("case", ["layer_norm", "dense_transpose"])
def test_gpu_expert_gives_stages_it_does_not_tile_groups_of_its_own_size(case):
    """A stage the expert does not tile (a layer norm's element-wise output, a transposed copy after a dense
    layer) gets groups of the expert's 256 work items on an NVIDIA-like device, not a sampled size up to
    max_threads_per_block's 1024, which the driver may refuse for a kernel of many registers."""
    x = _ph((128, 768), "x")
    if case == "layer_norm":
        gamma, beta = _ph((768,), "gamma"), _ph((768,), "beta")
        tensors = [x, gamma, beta, ops.layer_norm(x, gamma, beta)]
    else:
        w = _ph((768, 768), "w")
        tensors = [x, w, ops.transpose(ops.dense(x, w), (1, 0))]
    dag = ans.ComputeDAG(tensors)
    task = ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia")
    assert task.hardware_params.max_threads_per_block == 1024
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    source = ans.build(dag, state, target="opencl").get_source("cl")
    sizes = [int(x) * int(y) * int(z) for x, y, z in
             re.findall(r"reqd_work_group_size\((\d+),\s*(\d+),\s*(\d+)\)", source)]
    assert sizes and max(sizes) <= 256, sizes


def _work_items(dag, state, stage_prefix):
    """{annotation: extent} of the blockIdx.x and threadIdx.x loops of the first stage named stage_prefix..."""
    for st in dag.infer_bound(state).stages:
        if st.name.startswith(stage_prefix):
            found = {it.annotation: it.extent for it in st.iters if it.annotation in ("blockIdx.x", "threadIdx.x")}
            if found:
                return found
    raise AssertionError(f"no bound loops on {stage_prefix}")


@needs_opencl
@pytest.mark.parametrize("case", ["conv nchw 7x7 32->48", "matmul 300x40x200", "conv nchw 13x13/2 16->40"])
def test_gpu_expert_alternatives_plan_larger_groups_or_cover_short_axes_exactly(case):
    """On an NVIDIA-like device the expert's plan fixes choices that no setting wins everywhere: it shrinks its
    group and tiles until there are 2 groups per compute unit, and gives every axis a power of two of work
    items (4 for 7 columns, the last 1 guarded). Its alternatives make them the other way: at least 1 group per
    compute unit (larger tiles), one work item per tile of a short axis (7 x 7 for a 7 x 7 image), and the
    planned group doubled along its rows. Each builds for PoCL and equals numpy; tuning measures them beside
    the expert (start states), on GPU targets only."""
    tensors, reference = {"conv nchw 7x7 32->48": lambda: _conv_nchw(32, 48, 7, 3),
                          "matmul 300x40x200": lambda: _matmul(300, 40, 200),
                          "conv nchw 13x13/2 16->40": lambda: _conv_strided(16, 40, 13, 2)}[case]()
    dag = ans.ComputeDAG(tensors)
    task = ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia")
    expert = search.expert_schedule(task)
    alternatives = dict(search.expert_alternatives(task))
    stage = "T_matmul" if case.startswith("matmul") else "Conv2dOutput"
    expert_items = _work_items(dag, expert, stage)
    if case.startswith("matmul"):
        larger = alternatives["expert, one group a compute unit"]
        groups = _work_items(dag, larger, stage)["blockIdx.x"]
        assert 132 <= groups < expert_items["blockIdx.x"], (groups, expert_items)
    else:
        exact = alternatives["expert, short axes covered exactly"]
        items = _work_items(dag, exact, stage)["threadIdx.x"]
        assert expert_items["threadIdx.x"] == 64 and items % 7 == 0 and items <= 1024, items
    doubled = _work_items(dag, alternatives["expert, groups of twice the work items"], stage)
    assert doubled["threadIdx.x"] == 2 * expert_items["threadIdx.x"], (doubled, expert_items)
    for name, state in alternatives.items():
        assert not state.same_steps(expert), name
        _run(dag, state, "opencl", reference, np.random.default_rng(5))
    policy = search.SketchPolicy(task)
    names = [name for name, _ in search.tuning_start_states(policy)]
    assert set(alternatives) <= set(names), names
    cpu_task = ans.SearchTask(compute_dag=dag, target="llvm")
    assert search.expert_alternatives(cpu_task) == []
    assert search.expert_alternatives(task, search.SearchParams(use_expert_schedule=False)) == []
