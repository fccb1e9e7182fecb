"""Fewer GPU kernels per group: a reshape or transpose after a reduction folded into it (cpp/dag/fold_remap.h,
applied by graph.lower_graph on GPU targets), every stage without a reduction that is no output inlined on a GPU
(the GPU always-inline rule), and the GPU expert for tasks with nothing to tile. Each is checked against the
reference evaluator or numpy on awkward shapes (sequence 1 and 7, 3 heads of 5), and built for PoCL."""
import numpy as np
import pytest

import autosched as ans
from autosched import _core, frontends, graph, ops, search, te

needs_opencl = pytest.mark.skipif(not ans.opencl.available(),
                                  reason="no OpenCL platform on this machine (install pocl-opencl-icd)")
POCL = "opencl -device=pocl"


def _query_projection(seq, heads, head_dim, scale=0.125):
    """BERT's query projection: dense, bias, reshape to heads, transpose, scale (out: [1, heads, seq, dim])."""
    hidden = heads * head_dim
    x, w, b = te.placeholder((1, seq, hidden), name="x"), te.placeholder((hidden, hidden), name="w"), \
        te.placeholder((hidden,), name="b")
    k = te.reduce_axis((0, hidden), "k")
    dense = te.compute((1, seq, hidden), lambda n, s, o: te.sum(x[n, s, k] * w[o, k], axis=k), name="dense")
    biased = te.compute((1, seq, hidden), lambda n, s, o: dense[n, s, o] + b[o], name="biased")
    flat = seq * hidden
    reshaped = te.compute(
        (1, seq, heads, head_dim),
        lambda n, s, h, d: biased[te.floordiv(n * flat + s * hidden + h * head_dim + d, flat),
                                  te.floormod(te.floordiv(n * flat + s * hidden + h * head_dim + d, hidden), seq),
                                  te.floormod(n * flat + s * hidden + h * head_dim + d, hidden)], name="reshaped")
    transposed = te.compute((1, heads, seq, head_dim), lambda n, h, s, d: reshaped[n, s, h, d], name="transposed")
    out = te.compute((1, heads, seq, head_dim), lambda n, h, s, d: transposed[n, h, s, d] * scale, name="scaled")
    return [x, w, b], out


def _random_inputs(placeholders, rng):
    return [rng.uniform(-1, 1, [int(d) for d in p.shape]).astype("float32") for p in placeholders]


@pytest.mark.parametrize("seq,heads,head_dim", [(7, 3, 5), (1, 3, 5), (13, 1, 4), (4, 12, 2)])
def test_a_transpose_after_a_dense_layer_folds_into_it_and_computes_the_same(seq, heads, head_dim):
    inputs, out = _query_projection(seq, heads, head_dim)
    folded = _core.fold_remap_into_reduction(out)
    assert not folded.same_as(out)
    before, after = ans.ComputeDAG(inputs + [out]), ans.ComputeDAG(inputs + [folded])
    # The folded group is the reduction and its one element-wise consumer, with the output's shape.
    assert len(after.ops) == len(inputs) + 2, after
    assert [int(d) for d in after.ops[-2].shape] == [1, heads, seq, head_dim]
    assert "floordiv" not in str(after) and "floormod" not in str(after)
    arrays = _random_inputs(inputs, np.random.default_rng(seq * heads))
    np.testing.assert_allclose(ans.evaluate(after, arrays)[-1], ans.evaluate(before, arrays)[-1], rtol=1e-6,
                               atol=1e-6)
    x, w, b = arrays
    want = ((x[0] @ w.T + b).reshape(seq, heads, head_dim).transpose(1, 0, 2) * 0.125)[None]
    np.testing.assert_allclose(ans.evaluate(after, arrays)[-1], want, rtol=1e-5, atol=1e-5)


def test_groups_of_other_shapes_are_left_as_they_are():
    x, w = te.placeholder((6, 4), name="x"), te.placeholder((4, 4), name="w")
    k = te.reduce_axis((0, 4), "k")
    r = te.compute((6, 4), lambda i, j: te.sum(x[i, k] * w[j, k], axis=k), name="r")
    cases = {
        "element-wise already": te.compute((6, 4), lambda i, j: r[i, j] + 1.0, name="plus"),
        "read at two places": te.compute((4, 4), lambda i, j: r[i, j] + r[j, i], name="sym"),
        "more elements than the reduction": te.compute((6, 4, 3), lambda i, j, c: r[i, j], name="bcast"),
        "a split index (floordiv)": te.compute((24,), lambda i: r[te.floordiv(i, 4), te.floormod(i, 4)],
                                               name="flat"),
        "the reduction itself": r,
    }
    for why, out in cases.items():
        assert _core.fold_remap_into_reduction(out).same_as(out), why
    # A reduction read by another reduction stops the fold (two reductions in the body).
    k2 = te.reduce_axis((0, 4), "k2")
    s = te.compute((6,), lambda i: te.sum(r[i, k2], axis=k2), name="rowsum")
    both = te.compute((4, 6), lambda j, i: r[i, j] + s[i], name="both")
    assert _core.fold_remap_into_reduction(both).same_as(both)


@needs_opencl
@pytest.mark.parametrize("seq,heads,head_dim", [(7, 3, 5), (1, 2, 8)])
def test_the_folded_projection_is_one_kernel_on_the_gpu_and_equals_numpy(seq, heads, head_dim):
    inputs, out = _query_projection(seq, heads, head_dim)
    dag = ans.ComputeDAG(inputs + [_core.fold_remap_into_reduction(out)])
    task = ans.SearchTask(compute_dag=dag, target=POCL)
    state = search.expert_schedule(task)
    assert state is not None
    module = ans.build(dag, state, target=POCL)
    assert module.get_source().count("__kernel") == 1
    arrays = _random_inputs(inputs, np.random.default_rng(1))
    result = np.zeros((1, heads, seq, head_dim), "float32")
    module(*arrays, result)
    x, w, b = arrays
    want = ((x[0] @ w.T + b).reshape(seq, heads, head_dim).transpose(1, 0, 2) * 0.125)[None]
    np.testing.assert_allclose(result, want, rtol=1e-4, atol=1e-4)


def _projection(seq, heads, head_dim):
    """A torch module (Linear, split into heads, transposed, scaled: an attention's query) and an input."""
    torch = pytest.importorskip("torch")

    class Projection(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(heads * head_dim, heads * head_dim)

        def forward(self, x):
            return self.linear(x).view(1, seq, heads, head_dim).transpose(1, 2) * 0.5

    torch.manual_seed(0)
    return Projection().eval(), torch.randn(1, seq, heads * head_dim)


@needs_opencl
def test_a_gpu_network_runs_a_projection_and_its_transpose_as_one_kernel():
    torch = pytest.importorskip("torch")
    module, example = _projection(7, 3, 5)
    g = frontends.from_torch(module, (example,))
    net = graph.build(g, POCL, verbose=False)
    kernels = sum(info.module.get_source().count("__kernel") for info in net.groups)
    assert kernels == len(net.groups) == 1, [info.task.desc for info in net.groups]
    with torch.no_grad():
        want = module(example).numpy()
    (got,) = net(example.numpy())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # The CPU keeps the group as it is (its register-block expert reads the dense layer's own shape).
    cpu = graph.extract.lower_graph(g, ans.Target("llvm"))
    assert len([t for t in cpu.tasks[-1].compute_dag.ops if t.op_kind == "compute"]) > 2


def test_on_a_gpu_every_stage_without_a_reduction_is_inlined():
    """softmax's exp, read by its sum and its quotient: inlined in every GPU sketch; the CPU keeps it as a stage
    of its own in some (exp is expensive, and read twice)."""
    x = te.placeholder((4, 33), name="x")
    sm = ops.softmax(x)
    for target, kept in ((POCL, False), ("llvm", True)):
        task = ans.SearchTask(compute_dag=ans.ComputeDAG([x, sm]), target=target)
        sketches = search.generate_sketches(task)
        assert sketches
        has_exp_stage = [any(st.name.endswith("exp") and st.compute_at == "root" for st in s.stages)
                         for s in sketches]
        assert any(has_exp_stage) == kept, (target, has_exp_stage)


@needs_opencl
@pytest.mark.parametrize("shape", [(1, 7, 3, 5), (2, 13, 1, 1)])
def test_the_gpu_expert_gives_a_task_with_nothing_to_tile_one_kernel(shape):
    """An element-wise chain (a transpose, a bias, a tanh): the expert inlines it into one stage."""
    n, s, h, d = shape
    x, b = te.placeholder(shape, name="x"), te.placeholder((d,), name="b")
    t = te.compute((n, h, s, d), lambda i, j, k, l: x[i, k, j, l], name="t")
    out = te.compute((n, h, s, d), lambda i, j, k, l: te.tanh(t[i, j, k, l] + b[l]), name="out")
    dag = ans.ComputeDAG([x, b, out])
    task = ans.SearchTask(compute_dag=dag, target=POCL)
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    assert "no stage to tile" in note
    module = ans.build(dag, state, target=POCL)
    assert module.get_source().count("__kernel") == 1
    rng = np.random.default_rng(2)
    xs, bs = rng.uniform(-1, 1, shape).astype("float32"), rng.uniform(-1, 1, (d,)).astype("float32")
    result = np.zeros((n, h, s, d), "float32")
    module(xs, bs, result)
    np.testing.assert_allclose(result, np.tanh(xs.transpose(0, 2, 1, 3) + bs), rtol=1e-5, atol=1e-5)


@needs_opencl
@pytest.mark.parametrize("seq,heads,head_dim", [(128, 12, 64), (7, 3, 5)])
def test_the_expert_leaves_the_folded_heads_to_the_groups_and_equals_numpy(seq, heads, head_dim):
    """W[h * head_dim + d, k]: work items along the heads would make a group's shared tile of W span the rows
    between its heads; with NVIDIA's parameters they go round d and s only, and the state equals numpy on PoCL."""
    inputs, out = _query_projection(seq, heads, head_dim)
    dag = ans.ComputeDAG(inputs + [_core.fold_remap_into_reduction(out)])
    state, reason, note = search.expert_schedule_info(ans.SearchTask(compute_dag=dag, target="opencl -device=nvidia"))
    assert state is not None, reason
    plan = note.splitlines()[0]
    assert "work items" in plan and " h)" not in plan and "(h " not in plan and " h " not in plan, plan
    arrays = _random_inputs(inputs, np.random.default_rng(4))
    result = np.zeros((1, heads, seq, head_dim), "float32")
    ans.build(dag, state, target="opencl")(*arrays, result)
    x, w, b = arrays
    want = ((x[0] @ w.T + b).reshape(seq, heads, head_dim).transpose(1, 0, 2) * 0.125)[None]
    np.testing.assert_allclose(result, want, rtol=1e-4, atol=1e-4)


@needs_opencl
def test_a_gpu_network_computes_no_constant_stage_ahead_and_a_cpu_network_does():
    """A GPU group's constant stages are tiles of a weight in shared or private memory that only its kernel
    fills (tuning measures the kernel so): graph.build keeps them in the kernel there, and still computes a
    CPU schedule's packed weight once."""
    pytest.importorskip("torch")
    module, example = _projection(7, 3, 5)
    g = frontends.from_torch(module, (example,))
    gpu = graph.build(g, POCL, verbose=False)
    assert all(not info.prepacked for info in gpu.groups)
    assert all(len(info.module.arg_specs) == len(info.inputs) + 1 for info in gpu.groups)
    module, example = _projection(64, 4, 16)  # rows enough for the CPU's register blocks to pack W
    cpu = graph.build(frontends.from_torch(module, (example,)), "llvm", verbose=False)
    assert any(info.prepacked for info in cpu.groups)
