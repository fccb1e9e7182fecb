"""A reduction split across GPU groups (the split-reduction sketch rule, gpu_sketch_rules.cc): a dense layer or a convolution with
too few outputs for full tiles to fill the device (BERT's second feed-forward layer: 128 x 768 outputs over
3072) gets a sketch whose reduction is factored into parts that groups compute apart and a stage that sums them;
the GPU expert takes it, with a number of parts derived from the device, and the kernels equal numpy on awkward
shapes (one row, a reduction of 1000, outputs not multiples of 4) on PoCL."""
import numpy as np
import pytest

import autosched as ans
from autosched import ops, search, te

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")
NVIDIA = "opencl -device=nvidia"  # its parameters (132 compute units, warps of 32), built and run on PoCL


def _dense_bias(rows, reduce, cols):
    x, w, b = te.placeholder((rows, reduce), name="x"), te.placeholder((cols, reduce), name="w"), \
        te.placeholder((cols,), name="b")
    d = ops.dense(x, w)
    out = te.compute((rows, cols), lambda i, j: d[i, j] + b[j], name="biased")
    return ans.ComputeDAG([x, w, b, out])


def _check(dag, state, rows, reduce, cols, seed=0):
    rng = np.random.default_rng(seed)
    x, w, b = (rng.uniform(-1, 1, s).astype("float32") for s in ((rows, reduce), (cols, reduce), (cols,)))
    out = np.zeros((rows, cols), "float32")
    module = ans.build(dag, state, target="opencl")
    module(x, w, b, out)
    want = x.astype(np.float64) @ w.T.astype(np.float64) + b
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
    return module


def _has_split(sketch):
    return any(st.name.endswith(".rf") for st in sketch.stages)


def test_only_stages_with_too_few_outputs_get_a_split_sketch():
    few = ans.SearchTask(compute_dag=_dense_bias(128, 3072, 768), target=NVIDIA)
    sketches = search.generate_sketches(few)
    assert any(_has_split(s) for s in sketches) and not all(_has_split(s) for s in sketches)
    many = ans.SearchTask(compute_dag=_dense_bias(128, 768, 3072), target=NVIDIA)  # a quarter of the device
    assert not any(_has_split(s) for s in search.generate_sketches(many))
    prime = ans.SearchTask(compute_dag=_dense_bias(128, 3067, 768), target=NVIDIA)  # no part divides it
    assert not any(_has_split(s) for s in search.generate_sketches(prime))


@needs_opencl
def test_the_expert_splits_bert_s_second_feed_forward_layer_and_equals_numpy():
    dag = _dense_bias(128, 3072, 768)
    task = ans.SearchTask(compute_dag=dag, target=NVIDIA)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    # Full tiles of 2 x 256 work items of 16 accumulators on each of 132 compute units need 1,081,344 outputs:
    # 128 x 768 fill less than a quarter of them, 8 parts fill them at most.
    assert "split across groups in 8 parts" in note, note
    assert "work items" in note and ".rf" in note
    module = _check(dag, state, 128, 3072, 768)
    assert module.get_source().count("__kernel") == 3  # the parts, their sum, the bias


@needs_opencl
@pytest.mark.parametrize("rows,reduce,cols,parts", [(1, 1000, 33, 4), (4, 1024, 7, 8), (13, 1536, 5, 8)])
def test_split_reductions_of_awkward_shapes_equal_numpy(rows, reduce, cols, parts):
    dag = _dense_bias(rows, reduce, cols)
    task = ans.SearchTask(compute_dag=dag, target="opencl")
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert f"split across groups in {parts} parts" in note, note
    _check(dag, state, rows, reduce, cols)


@needs_opencl
def test_sampled_states_of_the_split_sketch_equal_numpy():
    dag = _dense_bias(4, 1024, 7)
    task = ans.SearchTask(compute_dag=dag, target="opencl")
    split = [s for s in search.generate_sketches(task) if _has_split(s)]
    assert split
    states, dropped = search.sample_init_population(task, 4, seed=3, sketches=split)
    assert states, dropped
    for i, state in enumerate(states):
        assert any(st.name.endswith(".rf") for st in state.stages)
        _check(dag, state, 4, 1024, 7, seed=i)


def _conv_reference(data, weight, layout):
    """A 3x3 convolution, pad 1, in float64: NCHW data with OIHW weights, or NHWC data with HWIO weights."""
    if layout == "NHWC":
        data, weight = data.transpose(0, 3, 1, 2), weight.transpose(3, 2, 0, 1)
    n, c, h, w = data.shape
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, weight.shape[0], h, w))
    for dy in range(3):
        for dx in range(3):
            out += np.einsum("nchw,oc->nohw", padded[:, :, dy:dy + h, dx:dx + w], weight[:, :, dy, dx])
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


@needs_opencl
@pytest.mark.parametrize("layout,channels,size,parts", [("NCHW", 64, 5, 4), ("NHWC", 64, 5, 4), ("NCHW", 48, 7, 2)])
def test_convolutions_with_few_outputs_split_their_input_channels_and_equal_numpy(layout, channels, size, parts):
    """ResNet-50's last stage in small: few outputs against the device, so the longest reduce axis (the input
    channels, not the 3 x 3 window) is split in parts whose reduction (channels / parts x 9) is at least 128."""
    out_channels = 32
    if layout == "NCHW":
        data, weight = te.placeholder((1, channels, size, size), name="data"), \
            te.placeholder((out_channels, channels, 3, 3), name="weight")
        out = ops.conv2d_nchw(data, weight, 1, 1)
    else:
        data, weight = te.placeholder((1, size, size, channels), name="data"), \
            te.placeholder((3, 3, channels, out_channels), name="weight")
        out = ops.conv2d_nhwc(data, weight, 1, 1)
    dag = ans.ComputeDAG([data, weight, out])
    task = ans.SearchTask(compute_dag=dag, target=NVIDIA)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert f"split across groups in {parts} parts" in note, note
    rng = np.random.default_rng(1)
    d = rng.uniform(-1, 1, [int(x) for x in data.shape]).astype("float32")
    w = rng.uniform(-1, 1, [int(x) for x in weight.shape]).astype("float32")
    got = np.zeros([int(x) for x in out.shape], "float32")
    ans.build(dag, state, target="opencl")(d, w, got)
    np.testing.assert_allclose(got, _conv_reference(d, w, layout), rtol=1e-4, atol=1e-4)
