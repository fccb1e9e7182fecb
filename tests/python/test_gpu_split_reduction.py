"""A reduction split across GPU groups (the split-reduction sketch rule, gpu_sketch_rules.cc): a dense layer with
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


def test_convolutions_keep_their_reduction_whole():
    """Only stages with one reduce axis are split: a convolution with few outputs against the device (ResNet-50's
    56 x 56 convolutions of 64 channels, with NVIDIA's parameters) keeps its reduction whole. Split across its
    input channels with the expert's tiles, ResNet-50's build on an H200 took 39 ms instead of 4.4 ms."""
    data, weight = te.placeholder((1, 64, 56, 56), name="data"), te.placeholder((64, 64, 3, 3), name="weight")
    dag = ans.ComputeDAG([data, weight, ops.conv2d_nchw(data, weight, 1, 1)])
    task = ans.SearchTask(compute_dag=dag, target=NVIDIA)
    assert not any(_has_split(s) for s in search.generate_sketches(task))
