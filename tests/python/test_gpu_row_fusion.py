"""Row reductions fused into the stage that reads them (the cross-thread-reduction sketch rule,
gpu_sketch_rules.cc): softmax, layer norm and a mean over two axes become one kernel, a group a row that
computes the row's sums into shared memory and then its outputs; the partial sums of each row are folded as a
tree over the group's work items (codegen/opencl/tree_fold.h). Each kernel equals numpy on PoCL on awkward
shapes (prime rows, a warp and a part, one row, counts of work items that are not powers of two)."""
import re

import numpy as np
import pytest

import autosched as ans
from autosched import ops, search, te

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")
NVIDIA = "opencl -device=nvidia"  # its parameters (warps of 32, groups up to 1024), built and run on PoCL


def _softmax(shape):
    x = te.placeholder(shape, name="x")

    def reference(a):
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return [x, ops.softmax(x)], reference


def _layer_norm(rows, width):
    x, g, b = te.placeholder((rows, width), name="x"), te.placeholder((width,), name="g"), \
        te.placeholder((width,), name="b")

    def reference(a, gamma, beta):
        return (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * gamma + beta
    return [x, g, b, ops.layer_norm(x, g, b)], reference


def _centred_over_two_axes(n, c, h, w):
    """x minus its mean over (h, w) (an instance norm's first half): the rows are n x c, a row h x w long."""
    x = te.placeholder((n, c, h, w), name="x")
    rh, rw = te.reduce_axis((0, h), name="rh"), te.reduce_axis((0, w), name="rw")
    total = te.compute((n, c), lambda i, j: te.sum(x[i, j, rh, rw], axis=[rh, rw]), name="total")
    out = te.compute((n, c, h, w), lambda i, j, y, z: x[i, j, y, z] - total[i, j] * (1.0 / (h * w)), name="out")
    return [x, out], lambda a: a - a.mean(axis=(2, 3), keepdims=True)


def _run(tensors, reference, state, seed=0):
    dag = ans.ComputeDAG(tensors)
    module = ans.build(dag, state, target="opencl")
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-3, 3, [int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    out = np.zeros([int(d) for d in tensors[-1].shape], "float32")
    module(*inputs, out)
    want = reference(*[a.astype(np.float64) for a in inputs])
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    return module.get_source()


CASES = {
    "softmax 1536 x 128 (BERT's scores)": lambda: _softmax((1536, 128)),
    "softmax 2 x 3 x 5 x 129": lambda: _softmax((2, 3, 5, 129)),
    "softmax 37 x 131 (prime rows)": lambda: _softmax((37, 131)),
    "softmax 4 x 40 (a warp and a part)": lambda: _softmax((4, 40)),
    "layer_norm 7 x 768": lambda: _layer_norm(7, 768),
    "layer_norm 5 x 37": lambda: _layer_norm(5, 37),
    "mean over 2 axes 2 x 3 x 7 x 9": lambda: _centred_over_two_axes(2, 3, 7, 9),
}


@needs_opencl
@pytest.mark.parametrize("case", list(CASES))
def test_the_expert_computes_a_row_s_sums_and_outputs_in_one_kernel(case):
    tensors, reference = CASES[case]()
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target=NVIDIA)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert "cross-thread reduction over" in note, note
    printed = str(state)
    assert ".rf.shared" in printed and ".shared" in printed.replace(".rf.shared", ""), printed
    source = _run(tensors, reference, state)
    assert source.count("__kernel") == 1, source


@needs_opencl
def test_a_row_of_one_element_or_a_single_row_keeps_its_own_kernels():
    """Nothing to share across work items (rows of 1), or a single row (one group would do all the work):
    no fusion, and still equal to numpy."""
    for tensors, reference in (_softmax((3, 1)), _softmax((1, 129))):
        task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target=NVIDIA)
        state, reason, _ = search.expert_schedule_info(task)
        assert state is not None, reason
        assert _run(tensors, reference, state).count("__kernel") == 3


@needs_opencl
def test_a_reader_that_takes_another_row_s_sum_is_not_fused():
    """out[i, j] = x[i, j] / s[j] reads the sum of row j in row i: a group would need every row's sum, so the
    sketches keep the reduction in a kernel of its own (the rows' extents alone would have matched)."""
    x = te.placeholder((33, 33), name="x")
    k = te.reduce_axis((0, 33), name="k")
    s = te.compute((33,), lambda i: te.sum(x[i, k], axis=k), name="s")
    out = te.compute((33, 33), lambda i, j: x[i, j] / s[j], name="out")
    tensors = [x, out]
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target=NVIDIA)
    for sketch in search.generate_sketches(task):
        assert "s.shared" not in [st.name for st in sketch.stages], sketch
    state, reason, _ = search.expert_schedule_info(task)
    assert state is not None, reason
    source = _run(tensors, lambda a: a / a.sum(-1)[None, :], state)
    assert source.count("__kernel") == 2


def _softmax_state_with_items(dag, items):
    """softmax fused by hand with `items` work items a row (the steps the sketch rule and thread-bind take)."""
    s = dag.get_init_state()
    s.compute_inline("T_softmax_exp")
    for name in ("T_softmax_expsum", "T_softmax_maxelem"):
        ns = len(s[name].iters) - 1
        s.split(name, s[name].iters[-1], [items])
        s.rfactor(name, s[name].iters[-1], ns)
        s.cache_write(name + ".rf", "shared")
        s.compute_inline(name + ".rf")
        s.cache_write(name, "shared")
        s.compute_inline(name)
        s.compute_at(name + ".rf.shared", name + ".shared", s[name + ".shared"].iters[-2])
        s.bind(name + ".rf.shared", s[name + ".rf.shared"].iters[-2], "threadIdx.x")
    norm = "T_softmax_norm"
    rows, elements = s[norm].iters
    outer, inner = s.split(norm, elements, [items])
    s.reorder(norm, [rows, inner, outer])
    s.bind(norm, rows, "blockIdx.x")
    s.bind(norm, inner, "threadIdx.x")
    s.compute_at("T_softmax_expsum.shared", norm, rows)
    s.compute_at("T_softmax_maxelem.shared", norm, rows)
    return s


@needs_opencl
@pytest.mark.parametrize("items", [2, 3, 5, 8, 24])
def test_the_partial_sums_fold_as_a_tree_for_any_number_of_work_items(items):
    tensors, reference = _softmax((6, 37))
    dag = ans.ComputeDAG(tensors)
    source = _run(tensors, reference, _softmax_state_with_items(dag, items))
    assert source.count("__kernel") == 1
    # Two folds (the maximum, then the sum), each a first step past the largest power of two below the count.
    assert len(re.findall(r"tree_item\w* = \(int\)get_local_id\(0\)", source)) == 2, source
    assert "for (int k1_1_v" not in source, source


@needs_opencl
def test_sampled_states_of_the_fused_sketch_equal_numpy():
    tensors, reference = _layer_norm(6, 100)
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target=NVIDIA)
    fused = [s for s in search.generate_sketches(task) if "T_layer_norm_mean_sum.shared" in [st.name for st in s.stages]]
    assert fused, "no fused sketch"
    states, _ = search.sample_init_population(task, 6, seed=3, sketches=fused)
    assert states
    for state in states:
        assert _run(tensors, reference, state).count("__kernel") == 1
