"""int8 dot products: the packed matmul against numpy on awkward shapes, the dot-product instruction (VNNI's
vpdpbusd) in code built for CPUs that have it, and ordinary vector code computing the same sums on CPUs without.

Code for a CPU this host lacks is compiled (-no-host-check) and read, not run; where this host has VNNI, the
instruction's results are checked too."""
import re

import numpy as np
import pytest

import autosched as ans
from autosched import search, te
from autosched.ops.quantized import conv2d_nchwc_dot, matmul_dot_packed, pack_dot_conv_weight, pack_dot_weight

# 512-bit vpdpbusd; AMX off (its tile multiply takes these blocks where the CPU has it: test_amx.py)
AVX512_VNNI = "llvm -mcpu=sapphirerapids -mattr=-amx-tile -no-host-check"
AVX_VNNI = "llvm -mcpu=alderlake -no-host-check"  # 256-bit (VEX) vpdpbusd, no AVX-512
NO_VNNI = "llvm -mcpu=sapphirerapids -mattr=-avx512vnni,-avxvnni,-amx-tile -no-host-check"
AVX2 = "llvm -mcpu=znver3 -no-host-check"  # no VNNI, no AVX-512


def _host_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return set(next(line for line in f if line.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        return set()


HOST_HAS_VNNI = bool(_host_flags() & {"avx512_vnni", "avx_vnni"})
HOST_HAS_AMX = {"amx_tile", "amx_int8", "amx_bf16"} <= _host_flags()


def _task(m, n, k, target="llvm"):
    return ans.SearchTask(func="matmul_u8s8_packed", args=(m, n, k), target=target)


def _inputs(m, n, k, seed=0, a_dtype="uint8", w_dtype="int8"):
    rng = np.random.default_rng(seed)
    a = rng.integers(np.iinfo(a_dtype).min, np.iinfo(a_dtype).max + 1, (m, k)).astype(a_dtype)
    w = rng.integers(np.iinfo(w_dtype).min, np.iinfo(w_dtype).max + 1, (k, n)).astype(w_dtype)
    return a, w, a.astype(np.int64) @ w.astype(np.int64)


def _run(mod, m, n, a, w, n_block=16):
    """The [M, N] product a built packed matmul computes."""
    out = np.zeros((m, -(-n // n_block), n_block), np.int32)
    mod(a, pack_dot_weight(w, n_block), out)
    return out.reshape(m, -1)[:, :n]


def _asm_count(module, instruction):
    return len(re.findall(rf"\b{instruction}\b", module.get_source("asm")))


def test_pack_dot_weight_groups_four_rows_per_lane_and_pads_with_zeros():
    w = np.arange(7 * 5, dtype=np.int8).reshape(7, 5)
    packed = pack_dot_weight(w, n_block=2)
    assert packed.shape == (3, 2, 2, 4)  # column panels, groups of rows, columns of a panel, rows of a group
    assert packed[1, 0, 0].tolist() == w[0:4, 2].tolist()
    assert packed[0, 1, 1].tolist() == w[4:7, 1].tolist() + [0]
    assert packed[2, 1, 1].tolist() == [0, 0, 0, 0]  # column 5 is padding
    with pytest.raises(ValueError, match="K, N"):
        pack_dot_weight(np.zeros(4, np.int8))


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 17, 13), (13, 33, 64), (16, 48, 4), (5, 16, 131)])
def test_reference_evaluator_matches_numpy(m, n, k):
    task = _task(m, n, k)
    a, w, want = _inputs(m, n, k)
    (got,) = ans.evaluate(task.compute_dag, [a, pack_dot_weight(w)])
    np.testing.assert_array_equal(got.reshape(m, -1)[:, :n], want)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 17, 13), (13, 33, 64), (16, 48, 4), (64, 64, 128), (5, 16, 131)])
def test_expert_schedule_built_for_this_host_matches_numpy(m, n, k):
    task = _task(m, n, k)
    state = search.expert_schedule(task)
    assert state is not None
    a, w, want = _inputs(m, n, k, seed=1)
    np.testing.assert_array_equal(_run(ans.build(task.compute_dag, state, "llvm"), m, n, a, w), want)


def test_signed_activations_with_unsigned_weights():
    a_t = te.placeholder((9, 20), name="A", dtype="int8")
    w_t = te.placeholder((2, 5, 16, 4), name="W", dtype="uint8")
    dag = ans.ComputeDAG([a_t, w_t, matmul_dot_packed(a_t, w_t)])
    a, w, want = _inputs(9, 32, 20, seed=2, a_dtype="int8", w_dtype="uint8")
    np.testing.assert_array_equal(_run(ans.build(dag, _dot_schedule(dag), "llvm"), 9, 32, a, w), want)
    assert _asm_count(ans.build(dag, _dot_schedule(dag), AVX512_VNNI), "vpdpbusd") == 3


def _dot_schedule(dag, rows=3, split_group=False):
    """A register block of `rows` x one panel (16 lanes) with the group of 4 right outside it (or split 2 x 2
    around the rows)."""
    s = dag.get_init_state()
    out = s.stages[-1].name
    local = s.cache_write(out, "local")
    i, jo, ji = s[out].iters
    io, ii = s.split(out, i, [rows])
    s.reorder(out, [io, jo, ii, ji])
    s.compute_at(local, out, jo)
    ci, cjo, cji, cko, cki = s[local].iters
    if split_group:
        kio, kii = s.split(local, cki, [2])
        s.reorder(local, [cjo, cko, kio, ci, kii, cji])
    else:
        s.reorder(local, [cjo, cko, ci, cki, cji])
    s.vectorize(local, cji)
    s.unroll(local, ci)
    return s


@pytest.mark.parametrize("target,instructions", [(AVX512_VNNI, 16), (AVX_VNNI, 8 * 2), (NO_VNNI, 0), (AVX2, 0)])
def test_expert_schedule_uses_vpdpbusd_where_the_cpu_has_it(target, instructions):
    task = _task(64, 64, 128, target)
    mod = ans.build(task.compute_dag, search.expert_schedule(task), target)
    if instructions:
        assert _asm_count(mod, "vpdpbusd") >= 1
        assert _asm_count(mod, "vpmulld") == 0
    else:
        assert _asm_count(mod, "vpdpbusd") == 0


@pytest.mark.parametrize("target,register", [(NO_VNNI, "zmm"), (AVX2, "ymm")])
def test_without_vnni_the_block_is_pairs_of_widened_bytes_into_vpmaddwd(target, register):
    """Without VNNI, the dot-product block's 4 bytes per lane become two pairs of 16-bit values, each pair's
    products added into the lane by one vpmaddwd (AVX-512BW: 16 lanes, AVX2: 8): no byte-by-byte gather of the
    packed weight (vpinsrb, the ordinary vector code's), no 32-bit multiply."""
    task = _task(64, 64, 128, target)
    asm = ans.build(task.compute_dag, search.expert_schedule(task), target).get_source("asm")
    madds = re.findall(r"\bvpmaddwd\b[^\n]*", asm)
    assert madds and all(f"%{register}" in line for line in madds), madds[:4]
    assert not re.search(r"\bvpinsrb\b", asm) and not re.search(r"\bvpmulld\b", asm)


def test_the_expert_plans_a_larger_block_for_the_widening_form():
    """Two vpmaddwd and two adds per accumulator register, and the widening of each row's bytes and each packed
    register's, bound the widening block, not the registers (register_block.cc, WideningThroughput): the expert
    takes at least 8 rows x 2 registers of lanes, though they spill, where the model of an instruction per
    register would stop at the register file."""
    asm = ans.build(_task(128, 3072, 768, AVX2).compute_dag, search.expert_schedule(_task(128, 3072, 768, AVX2)),
                    AVX2).get_source("asm")
    assert len(re.findall(r"\bvpmaddwd\b", asm)) >= 8 * 2 * 2


@pytest.mark.parametrize("a_dtype,w_dtype", [("uint8", "int8"), ("int8", "uint8")])
def test_the_widening_block_is_exact_at_the_extremes_of_both_types(a_dtype, w_dtype):
    """255 x -128 and -128 x 255 everywhere: each pair's sum (-65,280) and K of them stay exact in 32 bits
    (vpmaddubsw's 16-bit pair sums would saturate). Built for this host: vpdpbusd, AMX or vpmaddwd."""
    m, n, k = 7, 32, 260
    a_t = te.placeholder((m, k), name="A", dtype=a_dtype)
    w_t = te.placeholder((n // 16, k // 4, 16, 4), name="W", dtype=w_dtype)
    dag = ans.ComputeDAG([a_t, w_t, matmul_dot_packed(a_t, w_t)])
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    extreme = {"uint8": 255, "int8": -128}
    a = np.full((m, k), extreme[a_dtype], a_dtype)
    w = np.full((k, n), extreme[w_dtype], w_dtype)
    w[::3] = 127 if w_dtype == "int8" else 0
    want = a.astype(np.int64) @ w.astype(np.int64)
    for state in (search.expert_schedule(task), _dot_schedule(dag)):
        np.testing.assert_array_equal(_run(ans.build(dag, state, "llvm"), m, n, a, w), want)


def test_a_group_split_in_two_is_left_to_ordinary_code():
    task = _task(16, 32, 64, AVX512_VNNI)
    assert _asm_count(ans.build(task.compute_dag, _dot_schedule(task.compute_dag, 2), AVX512_VNNI), "vpdpbusd") == 2
    # The group split 2 x 2: no loop of 4 over consecutive bytes is left.
    s = _dot_schedule(task.compute_dag, 2, split_group=True)
    assert _asm_count(ans.build(task.compute_dag, s, AVX512_VNNI), "vpdpbusd") == 0
    host = _task(16, 32, 64)
    a, w, want = _inputs(16, 32, 64, seed=6)
    s = _dot_schedule(host.compute_dag, 2, split_group=True)
    np.testing.assert_array_equal(_run(ans.build(host.compute_dag, s, "llvm"), 16, 32, a, w), want)


def test_sampled_states_keep_the_group_whole_and_compute_the_product():
    task = _task(32, 48, 68, AVX512_VNNI)
    states, _ = search.sample_init_population(task, 12, seed=3)
    assert states
    using = sum(_asm_count(ans.build(task.compute_dag, s, AVX512_VNNI), "vpdpbusd") > 0 for s in states)
    assert using >= len(states) // 2, f"only {using} of {len(states)} sampled states use vpdpbusd"
    host = _task(32, 48, 68)
    a, w, want = _inputs(32, 48, 68, seed=4)
    for s in search.sample_init_population(host, 6, seed=3)[0]:
        np.testing.assert_array_equal(_run(ans.build(host.compute_dag, s, "llvm"), 32, 48, a, w), want)


@pytest.mark.skipif(not HOST_HAS_VNNI, reason="this host has no VNNI: the other tests read the instruction")
def test_this_hosts_build_runs_vpdpbusd():
    target = "llvm -mattr=-amx-tile" if HOST_HAS_AMX else "llvm"  # with AMX: tile multiplies (test_amx.py)
    task = _task(64, 64, 128, target)
    mod = ans.build(task.compute_dag, search.expert_schedule(task), target)
    assert _asm_count(mod, "vpdpbusd") > 0
    a, w, want = _inputs(64, 64, 128, seed=9)
    np.testing.assert_array_equal(_run(mod, 64, 64, a, w), want)


def test_operands_of_one_dtype_are_refused_with_a_clear_error():
    a = te.placeholder((4, 8), name="A", dtype="uint8")
    w = te.placeholder((1, 2, 4, 4), name="W", dtype="uint8")
    with pytest.raises(TypeError, match="uint8 and the other int8"):
        matmul_dot_packed(a, w)
    w = te.placeholder((1, 3, 4, 4), name="W", dtype="int8")
    with pytest.raises(ValueError, match="must agree"):
        matmul_dot_packed(a, w)


def _conv_case(n, ci, h, w, co, k, stride, pad, block=16, seed=5):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, ci, h, w)).astype(np.uint8)
    wt = rng.integers(-128, 128, (co, ci, k, k)).astype(np.int8)
    import torch
    want = torch.nn.functional.conv2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(wt.astype(np.float64)),
                                      stride=stride, padding=pad).numpy().astype(np.int64)
    cb = -(-ci // block)
    xp = np.zeros((n, cb * block, h, w), np.uint8)
    xp[:, :ci] = x
    x5 = np.ascontiguousarray(xp.reshape(n, cb, block, h, w).transpose(0, 1, 3, 4, 2))
    return x5, pack_dot_conv_weight(wt, block, block), want


def _nchw(out5, co):
    n, ob, oh, ow, y = out5.shape
    return out5.transpose(0, 1, 4, 2, 3).reshape(n, ob * y, oh, ow)[:, :co]


def _dot_block(task, state):
    """(rows, columns) of the register block of a packed matmul's tiled stage: the unrolled row loop's extent
    and the innermost panel loop's (1 where it is not unrolled); checks that every accumulator is a register."""
    (iters,) = [st.iters for st in task.compute_dag.infer_bound(state).stages
                if any(it.kind == "reduce" for it in st.iters)]
    rows = [it for it in iters if it.name.startswith("i.") and it.annotation == "unroll"]
    panels = [it for it in iters if it.name.startswith("jo.") and it.extent > 1]
    assert rows and iters[-1].annotation == "vectorize", str(state)
    cols = panels[-1] if panels and panels[-1] is iters[-2] else None
    assert cols is None or cols.annotation == "unroll", str(state)  # a rolled panel loop spills its accumulators
    return rows[-1].extent, cols.extent if cols else 1


@pytest.mark.parametrize("func,target,instruction", [
    ("matmul_u8s8_packed", AVX512_VNNI, "vpdpbusd"),
    ("matmul_bf16_packed", AVX512_VNNI, "vdpbf16ps")])
def test_the_experts_dot_product_block_spans_several_panels(func, target, instruction):
    """With 512-bit vectors the packed operand's panel is one vector of lanes (with 256-bit ones, two), so a block
    of one panel needs many rows, each a stream
    of the broadcast operand (16 x 1 ran 1.37x slower than 8 x 2 for bfloat16 on a Zen 4): the expert takes a
    block of several panels, unrolled, as the model ranks it, with as many dot products in its code."""
    task = ans.SearchTask(func=func, args=(256, 1024, 256), target=target)
    state = search.expert_schedule(task)
    rows, cols = _dot_block(task, state)
    assert cols >= 2 and rows >= 2, (rows, cols)
    mod = ans.build(task.compute_dag, state, target)
    assert _asm_count(mod, instruction) >= rows * cols


def test_the_widening_form_keeps_a_block_of_one_panel():
    """Without VNNI the block is bound by the widening operations, not by streams: one panel, as before."""
    task = _task(256, 1024, 256, AVX2)
    assert _dot_block(task, search.expert_schedule(task))[1] == 1


@pytest.mark.parametrize("m,n,k", [(13, 64, 131), (3, 96, 20), (64, 32, 68)])
def test_blocks_of_several_panels_compute_the_exact_product(m, n, k):
    """Built for this host, on row counts that no block divides and panels that do (int8 and bfloat16)."""
    task = _task(m, n, k)
    a, w, want = _inputs(m, n, k, seed=11)
    np.testing.assert_array_equal(_run(ans.build(task.compute_dag, search.expert_schedule(task), "llvm"),
                                       m, n, a, w), want)
    if pytest.importorskip("ml_dtypes"):
        task = ans.SearchTask(func="matmul_bf16_packed", args=(m, n, k), target="llvm")
        a, w, want = _bf16_inputs(m, n, k, seed=12)
        out = np.zeros((m, -(-n // 16), 16), np.float32)
        ans.build(task.compute_dag, search.expert_schedule(task), "llvm")(a, pack_dot_weight(w, 16, 2), out)
        np.testing.assert_allclose(out.reshape(m, -1)[:, :n], want, rtol=1e-5, atol=1e-5 * k)


@pytest.mark.parametrize("n,ci,h,w,co,k,stride,pad", [(1, 16, 7, 7, 16, 3, 1, 1), (1, 3, 9, 11, 20, 3, 2, 1),
                                                      (2, 20, 5, 5, 33, 1, 1, 0)])
def test_blocked_int8_convolution_matches_torch(n, ci, h, w, co, k, stride, pad):
    pytest.importorskip("torch")
    task = ans.SearchTask(func="conv2d_nchwc_u8s8_dot", args=(n, ci, h, w, co, k, k, stride, pad), target="llvm")
    x5, w7, want = _conv_case(n, ci, h, w, co, k, stride, pad)
    (ref,) = ans.evaluate(task.compute_dag, [x5, w7])
    np.testing.assert_array_equal(_nchw(ref, co), want)
    out = np.zeros(ref.shape, np.int32)
    ans.build(task.compute_dag, search.expert_schedule(task), "llvm")(x5, w7, out)
    np.testing.assert_array_equal(_nchw(out, co), want)


def test_blocked_int8_convolution_uses_vpdpbusd():
    task = ans.SearchTask(func="conv2d_nchwc_u8s8_dot", args=(1, 64, 14, 14, 64, 3, 3, 1, 1), target=AVX512_VNNI)
    mod = ans.build(task.compute_dag, search.expert_schedule(task), AVX512_VNNI)
    assert _asm_count(mod, "vpdpbusd") >= 4


def test_measured_int32_outputs_with_negative_sums_pass_the_sampled_check(tmp_path):
    # 128^3 is above whole_output_work, so the measurement compares sampled points with the reference; int32
    # outputs used to be read back as unsigned there, and every negative sum was a wrong answer.
    task = _task(128, 128, 128)
    log = tmp_path / "int8.json"
    task.tune(ans.TuningOptions(num_measure_trials=2, num_measures_per_round=2, verbose=0,
                                measure_callbacks=[ans.RecordToFile(str(log))]))
    results = [res for _, res in ans.load_records(str(log))]
    assert results and all(res.error == "none" for res in results), [res.error_msg for res in results]


def test_an_imported_matmul_integer_reads_its_weight_packed_and_gets_vpdpbusd():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w = rng.integers(-128, 128, (64, 40)).astype(np.int8)  # 40 columns: the last panel is padded
    graph_proto = helper.make_graph(
        [helper.make_node("MatMulInteger", ["x", "w", "x_zp"], ["y"])], "qmm",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [5, 64])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [5, 40])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(131, np.uint8), "x_zp")])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 13)])
    graph = ans.frontends.from_onnx(model)
    x = rng.integers(0, 256, (5, 64)).astype(np.uint8)
    (got,) = ans.graph.build(graph, "llvm", verbose=False)(x)
    np.testing.assert_array_equal(got, (x.astype(np.int64) - 131) @ w.astype(np.int64))
    tasks, _ = ans.graph.extract_tasks(graph, AVX512_VNNI)
    (task,) = [t for t in tasks if "_packed_b" in str(t.compute_dag)]
    mod = ans.build(task.compute_dag, search.expert_schedule(task), AVX512_VNNI)
    assert _asm_count(mod, "vpdpbusd") > 0


def _bf16_inputs(m, n, k, seed=8):
    import ml_dtypes
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    return a, w, a.astype(np.float64) @ w.astype(np.float64)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 17, 13), (16, 32, 64), (5, 40, 129)])
def test_bfloat16_packed_matmul_matches_the_exact_product(m, n, k):
    pytest.importorskip("ml_dtypes")
    task = ans.SearchTask(func="matmul_bf16_packed", args=(m, n, k), target="llvm")
    a, w, want = _bf16_inputs(m, n, k)
    out = np.zeros((m, -(-n // 16), 16), np.float32)
    ans.build(task.compute_dag, search.expert_schedule(task), "llvm")(a, pack_dot_weight(w, 16, 2), out)
    np.testing.assert_allclose(out.reshape(m, -1)[:, :n], want, rtol=1e-5, atol=1e-5 * k)


def test_bfloat16_packed_matmul_uses_vdpbf16ps_where_the_cpu_has_it():
    task = ans.SearchTask(func="matmul_bf16_packed", args=(64, 64, 128), target=AVX512_VNNI)
    assert _asm_count(ans.build(task.compute_dag, search.expert_schedule(task), AVX512_VNNI), "vdpbf16ps") > 0
    target = "llvm -mcpu=sapphirerapids -mattr=-avx512bf16,-amx-tile -no-host-check"
    task = ans.SearchTask(func="matmul_bf16_packed", args=(64, 64, 128), target=target)
    assert _asm_count(ans.build(task.compute_dag, search.expert_schedule(task), target), "vdpbf16ps") == 0


@pytest.mark.parametrize("n,ci,h,w,co,k,stride,pad", [(1, 16, 7, 7, 16, 3, 1, 1), (1, 3, 9, 11, 20, 3, 2, 1),
                                                      (2, 21, 5, 5, 33, 1, 1, 0), (1, 1, 1, 1, 1, 1, 1, 0)])
def test_blocked_bfloat16_convolution_matches_the_exact_one(n, ci, h, w, co, k, stride, pad):
    """Pairs of input channels per lane (vdpbf16ps where this host has AVX512-BF16, float32 FMAs elsewhere),
    channels not a multiple of the pair or the block, a stride of 2, a 1x1 kernel."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((n, ci, h, w)).astype(ml_dtypes.bfloat16)
    wt = rng.standard_normal((co, ci, k, k)).astype(ml_dtypes.bfloat16)
    want = torch.nn.functional.conv2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(wt.astype(np.float64)),
                                      stride=stride, padding=pad).numpy()
    cb = -(-ci // 16)
    xp = np.zeros((n, cb * 16, h, w), ml_dtypes.bfloat16)
    xp[:, :ci] = x
    x5 = np.ascontiguousarray(xp.reshape(n, cb, 16, h, w).transpose(0, 1, 3, 4, 2))
    w7 = pack_dot_conv_weight(wt, 16, 16, group=2)
    task = ans.SearchTask(func="conv2d_nchwc_bf16_dot", args=(n, ci, h, w, co, k, k, stride, pad), target="llvm")
    (ref,) = ans.evaluate(task.compute_dag, [x5, w7])
    out = np.zeros(ref.shape, np.float32)
    ans.build(task.compute_dag, search.expert_schedule(task), "llvm")(x5, w7, out)
    for got in (ref, out):
        np.testing.assert_allclose(_nchw(got, co), want, rtol=1e-5, atol=1e-5 * ci * k * k)


def test_blocked_bfloat16_convolution_uses_vdpbf16ps_where_the_cpu_has_it():
    task = ans.SearchTask(func="conv2d_nchwc_bf16_dot", args=(1, 64, 14, 14, 64, 3, 3, 1, 1), target=AVX512_VNNI)
    assert _asm_count(ans.build(task.compute_dag, search.expert_schedule(task), AVX512_VNNI), "vdpbf16ps") >= 4
    task = ans.SearchTask(func="conv2d_nchwc_bf16_dot", args=(1, 64, 14, 14, 64, 3, 3, 1, 1), target=AVX2)
    mod = ans.build(task.compute_dag, search.expert_schedule(task), AVX2)
    assert _asm_count(mod, "vdpbf16ps") == 0 and _asm_count(mod, "vfmadd231ps") >= 4


def test_convolution_operands_of_the_wrong_layout_or_dtype_are_refused():
    with pytest.raises(ValueError, match="multiple of 4"):
        pack_dot_conv_weight(np.zeros((8, 6, 3, 3), np.int8), 6, 8)
    with pytest.raises(ValueError, match="OIHW"):
        pack_dot_conv_weight(np.zeros((8, 6, 3), np.int8), 4, 8)
    data = te.placeholder((1, 1, 5, 5, 16), name="data", dtype="uint8")
    kernel = te.placeholder((1, 1, 3, 3, 4, 16, 4), name="kernel", dtype="uint8")
    with pytest.raises(TypeError, match="uint8 and the other int8"):
        conv2d_nchwc_dot(data, kernel, 1, 1)
    kernel = te.placeholder((1, 2, 3, 3, 4, 16, 4), name="kernel", dtype="int8")
    with pytest.raises(ValueError, match="channel mismatch"):
        conv2d_nchwc_dot(data, kernel, 1, 1)
    bf16_data = te.placeholder((1, 1, 5, 5, 16), name="data", dtype="bfloat16")
    with pytest.raises(TypeError, match="or both bfloat16"):  # bfloat16 with int8
        conv2d_nchwc_dot(bf16_data, kernel, 1, 1)
    bf16_kernel = te.placeholder((1, 1, 3, 3, 4, 16, 4), name="kernel", dtype="bfloat16")
    with pytest.raises(ValueError, match=r"x/2, y, 2"):  # bfloat16 groups are pairs
        conv2d_nchwc_dot(bf16_data, bf16_kernel, 1, 1)
