"""A transformer block like the one of the Mali report (LayerNorm, QKV dense, batch matmul, softmax, GELU;
2 heads x 256 tokens x 64) tunes on OpenCL with HardwareParams set from Python to a Mali-like device (small
work groups, little local memory): every task gets a valid schedule, no measured kernel exceeds the limits,
and the network built from the log computes what the graph's reference does. Runs on PoCL in CI
(AUTOSCHED_TEST_OPENCL_TARGET picks another device)."""
import os
import re

import numpy as np
import pytest

import autosched as ans
from autosched.graph import zoo

TARGET = os.environ.get("AUTOSCHED_TEST_OPENCL_TARGET", "opencl -device=pocl")

pytestmark = pytest.mark.skipif(not ans.opencl.available(), reason="no OpenCL device (or built without OpenCL)")


def _mali_like():
    # The mobile-GPU tutorials' positional form: cores from the target (-1), 16-byte vectors, 64-byte lines,
    # 16 KiB local memory, 32 KiB private memory, 64 work items per group, vthread 2, no lock-step warps.
    return ans.HardwareParams(-1, 16, 64, 16384, 32768, 64, 2, 1)


def _threads_per_group(source):
    """The largest work-group size any kernel of the OpenCL source asks for (reqd_work_group_size)."""
    sizes = [int(x) * int(y) * int(z) for x, y, z in
             re.findall(r"reqd_work_group_size\((\d+),\s*(\d+),\s*(\d+)\)", source)]
    return max(sizes, default=1)


def test_transformer_block_tunes_on_opencl_within_mali_like_limits(tmp_path):
    graph = zoo.get_model("bert_layer", seq_len=256, hidden=128, heads=2, ffn=512)
    tasks, weights = ans.extract_tasks(graph, TARGET, hardware_params=_mali_like())
    kinds = " ".join(t.desc for t in tasks)
    for op in ("layer_norm", "softmax", "matmul", "dense", "gelu"):
        assert op in kinds, f"no {op} task in {kinds}"
    assert all(t.hardware_params.max_threads_per_block == 64 for t in tasks)
    log = str(tmp_path / "block.json")
    # The baselines plus one search round of 3 for every task.
    options = ans.TuningOptions(num_measure_trials=6 * len(tasks), num_measures_per_round=3,
                                measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    result = ans.TaskScheduler(tasks, weights).tune(options)
    without = {t.desc: dict(r.errors) for t, r in zip(tasks, result.task_results) if r.best_cost is None}
    assert not without, f"tasks without a valid schedule: {without}"
    assert result.trials > 3 * len(tasks)  # the search ran too, not only the baselines

    net = ans.graph.build(graph, TARGET, log, verbose=False)
    assert not net.untuned, f"groups built without a record of the log: {net.untuned}"
    # No kernel of the best schedules asks for more work items per group than the Mali-like limit.
    for task in tasks:
        source = task.build_best(log).get_source("cl")
        assert _threads_per_group(source) <= 64, f"{task.desc} launches more than 64 work items per group"
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal(graph.shape(i)).astype(graph.dtype(i)) for i in graph.inputs]
    outputs = net(*inputs)
    expected = graph.evaluate(*inputs)
    for ours, theirs in zip(outputs, expected):
        scale = max(float(np.abs(theirs).max()), 1.0)
        assert float(np.abs(ours - theirs).max()) <= 1e-4 * scale


def test_untuned_network_runs_with_its_weights_and_activations_in_the_devices_memory():
    """A network built for OpenCL keeps its slots in the device's memory: the first run copies the weights in,
    every later run copies only the input in and the output out (no weight, no intermediate buffer), and the
    outputs equal the graph's reference on every run, with other inputs each time."""
    graph = zoo.get_model("resnet18", image_size=32, num_classes=10)
    net = ans.graph.build(graph, TARGET, verbose=False)
    rng = np.random.default_rng(5)
    shape = graph.shape(graph.inputs[0])
    input_bytes = int(np.prod(shape)) * 4
    output_bytes = int(np.prod(graph.shape(graph.outputs[0]))) * 4
    for run in range(3):
        x = rng.standard_normal(shape).astype("float32")
        (out,) = net(x)
        (want,) = graph.evaluate(x)
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(want).max())))
        sequence = net._calls._sequence
        assert sequence.resident
        uploaded, downloaded = sequence.last_run_transfers
        assert downloaded == output_bytes
        if run == 0:
            assert uploaded > 100 * input_bytes  # ResNet-18's 11 M weights
        else:
            assert uploaded == input_bytes, (run, uploaded, input_bytes)


def test_a_kernel_sequence_refuses_to_mix_host_and_device_kernels():
    from autosched import _core, te
    a = te.placeholder((8,), name="a")
    b = te.compute((8,), lambda i: a[i] * 2.0, name="b")
    dag = ans.ComputeDAG([a, b])
    host, device = ans.build(dag, target="llvm"), ans.build(dag, target=TARGET)
    x, y = np.ones(8, "float32"), np.zeros(8, "float32")
    sequence = _core.KernelSequence()
    slots = [sequence.add_slot(x, per_run=True), sequence.add_slot(y, per_run=True)]
    sequence.add_call(device._mod, slots)
    with pytest.raises(Exception, match="runs on the host, the calls before it on a device"):
        sequence.add_call(host._mod, slots)
    sequence.run()
    np.testing.assert_array_equal(y, 2.0)
