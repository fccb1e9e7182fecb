"""Attention's scores and their softmax as one task (graph/fusion.py, the row-fusion sketch): the fused groups,
their untuned build and tuned records against the reference on awkward shapes and every kind of mask, through
both importers."""
import re
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import ops, te
from autosched.graph import Graph
from autosched.graph import fusion
from autosched.graph.fusion import partition
from autosched.search import sample_init_population
from autosched.search.policy import expert_schedule_info
from import_checks import check_onnx_import, check_torch_import, onnx_model
from schedule_helpers import check

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def fuse_attention_scores(monkeypatch):
    """The fusion is off by default (graph.fusion.FUSE_ATTENTION_SCORES): these tests turn it on."""
    monkeypatch.setattr(fusion, "FUSE_ATTENTION_SCORES", True)
MASKS = ("none", "additive", "padding", "causal")


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _mask_of(kind, seq):
    """The mask of `kind` for seq x seq scores: additive float, boolean padding (the last keys masked, never
    all of them), or the lower triangle (causal)."""
    if kind == "additive":
        return _rand(1, 1, seq, seq)
    if kind == "padding":
        keep = np.ones((1, 1, 1, seq), bool)
        keep[..., seq - seq // 3:] = seq == 1
        return keep
    return np.tril(np.ones((seq, seq), bool))


def attention(heads, seq, head_dim, mask="none", scale_op="multiply", normaliser="softmax"):
    """softmax(q @ k^T * scale + mask) @ v as the importers write it: Mul or Div, Add for a float mask, Where
    against -inf for a boolean one."""
    g = Graph("attention")
    q, kt, v = (g.add_input(n, s) for n, s in (("q", (1, heads, seq, head_dim)), ("kt", (1, heads, head_dim, seq)),
                                                 ("v", (1, heads, seq, head_dim))))
    scores = g.add_node("matmul", [q, kt])
    root = np.float32(np.sqrt(head_dim))
    scale = g.add_constant("scale", 1 / root if scale_op == "multiply" else root)
    scores = g.add_node(scale_op, [scores, scale])
    if mask == "additive":
        scores = g.add_node("add", [scores, g.add_constant("mask", _mask_of(mask, seq))])
    elif mask != "none":
        ninf = g.add_constant("ninf", np.float32(-np.inf))
        scores = g.add_node("where", [g.add_constant("mask", _mask_of(mask, seq)), scores, ninf])
    probs = g.add_node(normaliser, [scores], dict(axis=-1))
    g.set_outputs([g.add_node("matmul", [probs, v])])
    return g


def _check_build(g, net, tol=1e-4):
    arrays = [_rand(*g.shape(name)) for name in g.inputs]
    for got, want in zip(net(*arrays), g.evaluate(*arrays)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _fused(tasks):
    return [t for t in tasks if "softmax" in t.desc]


def test_scores_and_their_softmax_are_one_group():
    assert [grp.name for grp in partition(attention(2, 16, 8, "additive"))] == [
        "matmul_multiply_add_softmax", "matmul"]
    assert [grp.name for grp in partition(attention(2, 32, 8, "causal", "divide", "log_softmax"))] == [
        "matmul_divide_where_log_softmax", "matmul"]
    # only where the fused kernel pays: keys a multiple of 16, queries of 4 (or one query)
    for seq in (1, 7, 129, 197):
        assert [grp.name for grp in partition(attention(2, seq, 8, "additive"))] == [
            "matmul_multiply_add", "softmax", "matmul"], seq
    g = Graph("one_query")
    q, kt = g.add_input("q", (1, 2, 1, 8)), g.add_input("kt", (1, 2, 8, 64))
    g.set_outputs([g.add_node("softmax", [g.add_node("matmul", [q, kt])], dict(axis=-1))])
    assert [grp.name for grp in partition(g)] == ["matmul_softmax"]


def test_a_softmax_whose_input_is_read_elsewhere_or_reordered_stays_apart():
    # scores read by a second op: the softmax keeps its own group
    g = Graph("two")
    q, kt = g.add_input("q", (1, 2, 5, 8)), g.add_input("kt", (1, 2, 8, 5))
    scores = g.add_node("multiply", [g.add_node("matmul", [q, kt]), g.add_constant("s", np.float32(0.3))])
    g.set_outputs([g.add_node("add", [g.add_node("softmax", [scores], dict(axis=-1)), scores])])
    assert [grp.name for grp in partition(g)] == ["matmul_multiply", "softmax_add"]
    # along another axis, or after a transpose (its rows are not the matmul's rows): apart
    for axis, perm in ((2, None), (-1, (0, 1, 3, 2))):
        g = Graph("apart")
        q, kt = g.add_input("q", (1, 2, 5, 8)), g.add_input("kt", (1, 2, 8, 5))
        scores = g.add_node("matmul", [q, kt])
        if perm:
            scores = g.add_node("transpose", [scores], dict(perm=perm))
        g.set_outputs([g.add_node("softmax", [scores], dict(axis=axis))])
        assert len(partition(g)) == 2, (axis, perm)
    # a dense layer's value is no attention score
    g = Graph("dense")
    x = g.add_input("x", (4, 16))
    g.set_outputs([g.add_node("softmax", [g.add_node("dense", [x, g.add_constant("w", _rand(8, 16))])])])
    assert [grp.name for grp in partition(g)] == ["dense", "softmax"]


CASES = [(1, 1, 64, "none"), (12, 7, 64, "additive"), (1, 129, 64, "padding"), (12, 129, 13, "causal"),
         (12, 1, 13, "causal"), (1, 16, 13, "none"), (12, 16, 64, "padding"), (1, 48, 13, "additive"),
         (12, 32, 13, "causal"), (1, 64, 64, "additive")]


@pytest.mark.parametrize("heads,seq,head_dim,mask", CASES)
def test_attention_matches_the_reference_untuned(heads, seq, head_dim, mask):
    g = attention(heads, seq, head_dim, mask, "divide" if seq in (7, 48) else "multiply")
    net = ans.graph.build(g, "llvm", verbose=False)
    assert net.groups[0].name.endswith("_softmax") == (seq % 16 == 0), [info.name for info in net.groups]
    _check_build(g, net)


@pytest.mark.parametrize("heads,seq,head_dim", [(1, 1, 64), (12, 7, 13), (1, 129, 64), (12, 129, 13),
                                                (12, 197, 64), (12, 16, 13)])
def test_the_fused_kernel_matches_the_reference_on_any_shape(heads, seq, head_dim):
    """The scores + softmax task itself (as the fusion writes it, whatever the shape): its expert schedule and
    states sampled from its row-fused sketch (blocks of rows, guarded where they do not divide) against the
    reference."""
    q = te.placeholder((heads, seq, head_dim), name="q")
    kt = te.placeholder((heads, head_dim, seq), name="kt")
    scores = ops.batch_matmul(q, kt, transpose_b=False)
    for normalised in (ops.softmax(scores), ops.log_softmax(scores)):
        dag = ans.ComputeDAG([q, kt, normalised])
        task = ans.SearchTask(compute_dag=dag, target="llvm")
        state, why, _ = expert_schedule_info(task)
        assert state is not None, why
        check(dag, state)
        fused = [sk for sk in ans.search.generate_sketches(task)
                 if all(st.compute_at in ("at", "inlined") for st in sk.stages[2:-1])]
        assert len(fused) == (seq > 1)  # a row of one key has nothing to fuse
        if not fused:
            continue
        states, _ = sample_init_population(task, 2, seed=seq, sketches=fused)
        for sampled in states:
            check(dag, sampled)


def test_the_fused_task_defaults_to_the_per_row_expert():
    """The expert computes every stage per block of rows of the output: the scores' row block and the softmax's
    reductions inside the output's loops, the head dimension reduced inside the row's vectors."""
    tasks, _ = ans.extract_tasks(attention(12, 128, 64, "additive"), "llvm")
    assert [t.desc for t in tasks] == ["matmul_multiply_add_softmax 1x12x128x128", "matmul 1x12x128x64"]
    (task,) = _fused(tasks)
    state, why, _ = expert_schedule_info(task)
    assert state is not None, why
    text = str(ans.search.expert_schedule(task))
    nests = [line for line in text.splitlines() if line.startswith("parallel")]
    assert len(nests) == 1, text  # one loop nest
    lines = text.splitlines()
    matmul = next(i for i, line in enumerate(lines) if line.strip().startswith("matmul") and "=" in line)
    inner = [line.strip() for line in lines[matmul - 3:matmul]]
    assert inner[0].startswith("for k") and inner[1].startswith("unroll") and inner[2].startswith("vectorize"), text


def test_log_softmax_and_tuned_records_of_the_fused_task_replay(tmp_path):
    """A short tuning run of the fused task (log_softmax, an additive mask): its records rebuild the network, which
    matches the reference; a sampled state of every sketch does too."""
    g = attention(2, 16, 13, "additive", normaliser="log_softmax")
    tasks, weights = ans.extract_tasks(g, "llvm")
    (task,) = _fused(tasks)
    states, _ = sample_init_population(task, 4, seed=2)
    assert states
    log = str(tmp_path / "attention.json")
    opts = ans.TuningOptions(num_measure_trials=4, num_measures_per_round=2, verbose=0,
                             measure_callbacks=[ans.RecordToFile(log)])
    ans.TaskScheduler([task], [1]).tune(opts)
    inp, _ = ans.load_best_record(log, workload_key=task.workload_key, target=task.target)
    assert inp is not None
    net = ans.graph.build(g, "llvm", log=log, verbose=False, check_defaults=False)
    (info,) = [i for i in net.groups if i.task.workload_key == task.workload_key]
    assert info.tuned and info.state.to_json() == inp.state.to_json()
    _check_build(g, net)


def _sdpa_module(torch, mask, is_causal):
    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    return Attention()


@pytest.mark.parametrize("heads,seq,head_dim,mask", [(12, 16, 64, "none"), (1, 129, 13, "additive"),
                                                     (12, 32, 13, "padding"), (1, 7, 64, "causal"),
                                                     (12, 1, 64, "is_causal"), (12, 16, 13, "is_causal")])
def test_from_torch_sdpa_fuses_scores_and_softmax(heads, seq, head_dim, mask):
    torch = pytest.importorskip("torch")
    attn_mask = None if mask in ("none", "is_causal") else torch.from_numpy(_mask_of(mask, seq))
    module = _sdpa_module(torch, attn_mask, mask == "is_causal")
    q, k, v = (torch.from_numpy(_rand(1, heads, seq, head_dim)) for _ in range(3))
    graph = check_torch_import(module, q, k, v, tol=1e-4)
    names = [grp.name for grp in partition(graph)]
    assert any(n.startswith("matmul_multiply") and n.endswith("_softmax") for n in names) == (seq % 16 == 0), names


@pytest.mark.parametrize("seq,mask", [(16, "none"), (1, "additive"), (129, "padding"), (32, "causal"),
                                      (48, "additive"), (64, "padding")])
def test_from_onnx_attention_fuses_scores_and_softmax(seq, mask):
    pytest.importorskip("onnx")
    from onnx import helper
    heads, head_dim = 12, 13
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["qk"]),
             helper.make_node("Div", ["qk", "root"], ["scores"])]
    inits = [("root", np.float32(np.sqrt(head_dim)))]
    last = "scores"
    if mask == "additive":
        nodes.append(helper.make_node("Add", ["scores", "mask"], ["masked"]))
        inits.append(("mask", _mask_of(mask, seq)))
        last = "masked"
    elif mask != "none":
        nodes.append(helper.make_node("Where", ["mask", "scores", "ninf"], ["masked"]))
        inits += [("mask", _mask_of(mask, seq)), ("ninf", np.float32(-np.inf))]
        last = "masked"
    nodes += [helper.make_node("Softmax", [last], ["probs"], axis=-1),
              helper.make_node("MatMul", ["probs", "v"], ["out"])]
    feeds = [(n, _rand(1, heads, seq, head_dim)) for n in ("q", "k", "v")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        graph = check_onnx_import(onnx_model(nodes, feeds, ["out"], inits), feeds, tol=1e-4)
    names = [grp.name for grp in partition(graph)]
    assert any(n.startswith("matmul_divide") and n.endswith("_softmax") for n in names) == (seq % 16 == 0), names


def _longest_fadd_chain(ll):
    """The most float additions of LLVM IR `ll` that each use the one before."""
    depth = {}
    for m in re.finditer(r"(%[\w.]+) = fadd [^%]*(%[\w.]+), (%[\w.]+)", ll):
        depth[m[1]] = 1 + max(depth.get(m[2], 0), depth.get(m[3], 0))
    return max(depth.values(), default=0)


@pytest.mark.parametrize("rows,length", [(1536, 128), (128, 768)])
def test_factored_row_reductions_sum_their_lanes_as_a_tree(rows, length):
    """The per-row expert factors each row sum over 4 vectors of lanes (32 with AVX2, 64 with AVX-512); the lanes
    are then summed as a tree (depth 5 or 6), not a chain of 31 or 63 additions (the compiled code's longest chain
    of dependent fadds)."""
    x = te.placeholder((rows, length), name="x")
    gamma, beta = te.placeholder((length,), name="gamma"), te.placeholder((length,), name="beta")
    for outputs in ([x, ops.softmax(x)], [x, gamma, beta, ops.layer_norm(x, gamma, beta)]):
        task = ans.SearchTask(compute_dag=ans.ComputeDAG(outputs), target="llvm")
        factored = 4 * task.hardware_params.vector_unit_bytes // 4  # 4 vectors of float32 lanes
        state, why, _ = expert_schedule_info(task)
        assert state is not None, why
        assert f"unroll k1.1.v (0,{factored})" in str(ans.search.expert_schedule(task))
        module = ans.build(task, state)
        assert _longest_fadd_chain(module.get_source("ll")) <= factored.bit_length()
        arrays = [_rand(*t.shape) for t in outputs[:-1]] + [np.zeros((rows, length), np.float32)]
        module(*arrays)
        np.testing.assert_allclose(arrays[-1], _row_reference(outputs[-1].name, arrays), rtol=1e-4, atol=1e-4)


def _row_reference(name, arrays):
    x = arrays[0].astype(np.float64)
    if "softmax" in name:
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * arrays[1] + arrays[2]


def test_the_fusion_is_off_by_default(monkeypatch):
    monkeypatch.setattr(fusion, "FUSE_ATTENTION_SCORES", False)
    names = [grp.name for grp in partition(attention(2, 16, 8, "additive"))]
    assert not any(name.endswith("softmax") and name.startswith("matmul") for name in names), names
