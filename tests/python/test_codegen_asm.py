"""The generated CPU code at the instruction level: multiply-adds contract to FMA (unless -fp-contract=off),
and a register block of accumulators stays in registers across the reduction loop.

The register-block schedules take their shape from the host's vector width (LLVM's features): 16-float zmm
vectors with AVX-512 (32 registers), 8-float ymm with AVX2 (16 registers). The hot loop is the basic block
of the assembly with the most FMAs; it must be a loop (it branches back to itself), hold one full-width
vector FMA per accumulator and reduction step, broadcast the other operand, and touch the stack or store to
memory not at all: accumulators neither spilled nor written back inside the reduction.
"""
import re

import numpy as np
import pytest

import autosched as ans
from autosched import measure as am
from autosched import ops, te
from schedule_helpers import check, matmul, register_block_matmul

pytestmark = pytest.mark.needs_llvm

HOST = ans.Target("llvm")
VECTOR_BYTES = ans._core.default_hardware_params(HOST).vector_unit_bytes
LANES = VECTOR_BYTES // 4
REGISTER = {64: "zmm", 32: "ymm", 16: "xmm"}[VECTOR_BYTES]
# Rows x vectors of accumulators: 24 of 32 registers with AVX-512, 12 of 16 with AVX2 and SSE.
ROWS, VECTORS = (6, 4) if VECTOR_BYTES == 64 else (6, 2)
# The convolution's block leaves registers for the padding guards: 24 of 32 with AVX-512, 8 of 16 with AVX2.
CONV_ROWS = ROWS if VECTOR_BYTES == 64 else 4


def blocks(asm):
    """The assembly's basic blocks: (label, instruction lines). A block ends at a label or after a jump; the
    code after a conditional jump (its fall-through) starts an unlabelled block."""
    out, label, body = [], "entry", []
    for line in asm.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ".p2align", ".cfi")):
            continue
        if re.match(r"^[.\w$]+:", line):
            out.append((label, body))
            label, body = stripped.split(":")[0], []
        elif not stripped.startswith("."):
            body.append(stripped.split("#")[0].strip())
            if re.match(r"^j[a-z]+\s", body[-1]):
                out.append((label, body))
                label, body = "", []
    out.append((label, body))
    return out


def hot_loop(asm):
    """The instructions of the innermost loop around the block with the most FMAs: from the FMA block on, the
    blocks up to the first jump back to a block at or before it (with AVX2, guarded loads of padded inputs
    can branch inside the loop, so the loop may span several blocks); checked to be a loop."""
    found = blocks(asm)
    hot = max(range(len(found)), key=lambda k: sum(i.startswith("vfmadd") for i in found[k][1]))
    index_of = {label: k for k, (label, _) in enumerate(found) if label}
    body = []
    for label, lines in found[hot:]:
        body += lines
        if lines and re.match(r"^j[a-z]+\s", lines[-1]) and index_of.get(lines[-1].split()[-1], hot + 1) <= hot:
            return body
    raise AssertionError(("no loop around the FMA block", found[hot]))


def stores_to_memory(body):
    """Instructions whose destination (AT&T: the last operand) is memory."""
    return [i for i in body if re.search(r",\s*-?\w*\(%\w+(,%\w+)?(,\d)?\)$", i) and not i.startswith(("cmp", "j"))]


def check_register_block(asm, fmas_per_iteration):
    body = hot_loop(asm)
    fmas = [i for i in body if i.startswith("vfmadd")]
    assert len(fmas) >= fmas_per_iteration, body
    assert len(fmas) % fmas_per_iteration == 0, fmas
    # Full width, packed: no scalar FMAs (vfmadd...ss) and no narrower registers in the block.
    assert all(re.match(r"vfmadd\d+ps\s", i) for i in fmas), fmas
    assert all(f"%{REGISTER}" in i and not re.search(r"%[xy]mm" if REGISTER == "zmm" else r"%xmm", i)
               for i in fmas), fmas
    assert any("vbroadcastss" in i for i in body) or any("{1to" in i for i in fmas), body
    assert not [i for i in body if "(%rsp" in i], body  # no spill, no accumulator on the stack
    assert not stores_to_memory(body), stores_to_memory(body)


def run_check(dag, state):
    """Built for the host and checked against the reference evaluator on random inputs; the module."""
    return check(dag, state)


# ---- FMA contraction ----

def _axpy_dag(n=256):
    a = te.placeholder((n,), name="a")
    b = te.placeholder((n,), name="b")
    c = te.placeholder((n,), name="c")
    out = te.compute((n,), lambda i: a[i] * b[i] + c[i], name="out")
    return ans.ComputeDAG([a, b, c, out])


@pytest.mark.parametrize("target, fused", [("llvm", True), ("llvm -fp-contract=on", True),
                                           ("llvm -fp-contract=off", False)])
def test_multiply_adds_contract_to_fma_unless_turned_off(target, fused):
    dag = _axpy_dag()
    s = dag.get_init_state()
    s.vectorize("out", s.split("out", s["out"].iters[0], [LANES])[1])
    mod = ans.build(dag, s, target)
    asm = mod.get_source("asm")
    assert ("vfmadd" in asm) == fused, asm[:2000]
    assert (" contract " in mod.get_source("ll")) == fused
    a, b, c = (np.random.default_rng(i).standard_normal(256).astype("float32") for i in range(3))
    out = np.zeros(256, "float32")
    mod(a, b, c, out)
    # One rounding of a*b+c (FMA) or two: both within an ulp or so of the exact value.
    exact = a.astype(np.float64) * b + c
    np.testing.assert_allclose(out, exact, rtol=1e-6, atol=1e-6)


def test_fp_contract_option_is_checked():
    with pytest.raises(ValueError, match="fp-contract needs on or off, got 'maybe'"):
        ans.Target("llvm -fp-contract=maybe")
    with pytest.raises(ValueError, match="unknown target option '-fp-contract' for opencl"):
        ans.Target("opencl -fp-contract=on")


def test_float16_fma_stays_within_the_verifier_tolerance():
    """float16 multiply-adds computed in float32 and contracted: measurement still verifies them."""
    dag, _ = matmul(33, 17, 65, "float16")
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    s = dag.get_init_state()
    s.vectorize("C", s["C"].iters[1])
    runner = am.LocalRunner(timeout=30, min_repeat_ms=1)
    try:
        results = am.measure(task, [dag.get_init_state(), s], am.LocalBuilder(n_parallel=1), runner)
    finally:
        runner.close()
    assert all(r.ok for r in results), results


# ---- register blocks ----

def test_matmul_register_block_keeps_accumulators_in_registers_with_fma():
    dag, s = register_block_matmul(ROWS * 4, VECTORS * LANES * 3, 64, ROWS, VECTORS, LANES)
    mod = run_check(dag, s)
    check_register_block(mod.get_source("asm"), ROWS * VECTORS)


def test_pragma_unrolled_reduction_keeps_accumulators_in_registers():
    """A reduction split, its inner part unrolled by auto_unroll_max_step (a vectorised loop counting as one
    step) between loads and stores of the cache-write buffer: the copies forward to each other."""
    dag, _ = matmul(64, 2 * LANES * 4, 64)
    s = dag.get_init_state()
    cc = s.cache_write("C", "local")
    i, j = s["C"].iters
    i0, i1 = s.split("C", i, [2])
    j0, j1 = s.split("C", j, [4 * LANES])
    s.reorder("C", [i0, j0, i1, j1])
    s.compute_at(cc, "C", j0)
    ci, cj, ck = s[cc].iters
    ck0, ck1 = s.split(cc, ck, [8])
    s.reorder(cc, [ck0, ck1, ci, cj])
    s.vectorize(cc, cj)
    s.pragma(cc, ck0, "auto_unroll_max_step$16")
    mod = run_check(dag, s)
    assert "unrolled for (k.1" in mod.get_source("lowered"), mod.get_source("lowered")
    body = hot_loop(mod.get_source("asm"))
    fmas = [i for i in body if i.startswith("vfmadd")]
    # 2 rows x 4 vectors x 8 unrolled steps; the accumulators loaded and stored once per 8 steps.
    assert len(fmas) == 2 * 4 * 8, body
    assert len(stores_to_memory(body)) <= 2 * 4, stores_to_memory(body)


def test_nhwc_conv_register_block_keeps_accumulators_in_registers_with_fma():
    """A 3x3 NHWC convolution: CONV_ROWS output pixels along W x VECTORS * LANES output channels of accumulators,
    the reduction over (ry, rx, rc) outside the block, the padding inlined."""
    data = te.placeholder((1, 10, CONV_ROWS * 2, 32), name="data")
    kernel = te.placeholder((3, 3, 32, VECTORS * LANES * 2), name="kernel")
    out = ops.conv2d_nhwc(data, kernel, 1, 1)
    dag = ans.ComputeDAG([data, kernel, out])
    s = dag.get_init_state()
    pad = [st.op.name for st in s.stages if st.op.name != out.name and st.op.name not in ("data", "kernel")]
    for name in pad:
        s.compute_inline(name)
    conv = out.name
    cc = s.cache_write(conv, "local")
    n, h, w, f = s[conv].iters
    wo, wi = s.split(conv, w, [CONV_ROWS])
    fo, fi = s.split(conv, f, [VECTORS * LANES])
    s.reorder(conv, [n, h, wo, fo, wi, fi])
    s.parallel(conv, s.fuse(conv, [n, h]))
    s.vectorize(conv, s.split(conv, fi, [LANES])[1])
    s.compute_at(cc, conv, fo)
    cn, ch, cw, cf, ry, rx, rc = s[cc].iters
    cfo, cfv = s.split(cc, cf, [LANES])
    s.reorder(cc, [cn, ch, ry, rx, rc, cw, cfo, cfv])
    s.unroll(cc, cw)
    s.unroll(cc, cfo)
    s.vectorize(cc, cfv)
    mod = run_check(dag, s)
    check_register_block(mod.get_source("asm"), CONV_ROWS * VECTORS)


# ---- vectorization of padded windows and of lane counts that are not powers of two ----

def _depthwise_nhwc(size=9, channels=48):
    data = te.placeholder((1, size, size, channels), name="data")
    kernel = te.placeholder((3, 3, channels, 1), name="kernel")
    out = ops.depthwise_conv2d_nhwc(data, kernel, 1, 1)
    return ans.ComputeDAG([data, kernel, out]), out.name


@pytest.mark.parametrize("channels", [48, 24, 7])
def test_padded_window_vectorizes_across_channels_with_the_padding_inlined(channels):
    """The padding's if_then_else, whose condition is the same for every channel, stays one condition with
    vector branches; 48 channels become 3 unrolled groups of 16 lanes, 24 of 8, 7 one vector of 7."""
    dag, conv = _depthwise_nhwc(channels=channels)
    s = dag.get_init_state()
    s.compute_inline("PaddedInput")
    n, h, w, c = s[conv].iters[:4]
    s.parallel(conv, s.fuse(conv, [n, h]))
    s.vectorize(conv, c)
    lowered = ans.build(dag, s).get_source("lowered")
    group = channels & -channels
    assert "if_then_else" in lowered and "ramp(" in lowered, lowered
    if group not in (1, channels):
        assert f"{c.name}.v, 0, {channels // group})" in lowered and f", 1, {group})]" in lowered, lowered
    check(dag, s)


def test_lanes_that_are_not_a_power_of_two_stay_in_whole_registers():
    dag, _ = matmul(8, 3 * LANES, 16)
    s = dag.get_init_state()
    i, j, k = s["C"].iters
    s.reorder("C", [i, k, j])
    s.vectorize("C", j)
    mod = run_check(dag, s)
    assert f"<{3 * LANES} x float>" not in mod.get_source("ll")
    assert f"<{LANES} x float>" in mod.get_source("ll")


@pytest.mark.parametrize("extent", [6, 12, 14, 30])
def test_short_vectors_whose_extent_has_a_small_power_of_two_stay_one_vector(extent):
    """14 lanes as 7 groups of 2 took an instruction per group; a vector of up to 32 lanes whose extent's power of
    two is below 8 stays one vector (LLVM widens it to whole registers), and computes what the reference does."""
    dag, _ = matmul(3, extent, 5)
    s = dag.get_init_state()
    i, j, k = s["C"].iters
    s.reorder("C", [i, k, j])
    s.vectorize("C", j)
    mod = run_check(dag, s)
    assert f"<{extent} x float>" in mod.get_source("ll")
    assert ".v, 0," not in mod.get_source("lowered")


@pytest.mark.parametrize("stride,lanes", [(2, 14), (2, 16), (3, 5), (4, 8), (2, 1 + LANES)])
def test_strided_vector_loads_read_one_span_and_pick_its_lanes(stride, lanes):
    """A vector of lanes `stride` elements apart (a stride-2 convolution's input along its output columns) is
    one masked load of the span from the first lane's element to the last one's and a shuffle, not a gather of
    one lane at a time; the last row ends at the buffer's last element, which the span must not pass."""
    rows = 3
    a = te.placeholder((rows, stride * (lanes - 1) + 1), name="A")
    c = te.compute((rows, lanes), lambda i, j: a[i, j * stride] * 2.0 + 1.0, name="C")
    dag = ans.ComputeDAG([a, c])
    s = dag.get_init_state()
    s.vectorize("C", s["C"].iters[1])
    mod = run_check(dag, s)
    ll = mod.get_source("ll")
    assert "llvm.masked.load" in ll and "llvm.masked.gather" not in ll


def _grouped_conv_task(channels, group_width, size, stride):
    """conv2d NCHW with groups of `group_width` input and output channels, 3x3, padding 1."""
    x = te.placeholder((1, channels, size, size), name="X")
    w = te.placeholder((channels, group_width, 3, 3), name="W")
    out_size = (size + 2 - 3) // stride + 1
    padded = te.compute((1, channels, size + 2, size + 2), lambda n, c, h, v: te.if_then_else(
        te.all(h >= 1, h <= size, v >= 1, v <= size), x[n, c, h - 1, v - 1], 0.0), name="Padded")
    rc, ry, rx = te.reduce_axis((0, group_width), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    y = te.compute((1, channels, out_size, out_size), lambda n, f, h, v: te.sum(
        padded[n, f // group_width * group_width + rc, h * stride + ry, v * stride + rx] * w[f, rc, ry, rx],
        axis=[rc, ry, rx]), name="Y")
    dag = ans.ComputeDAG([x, w, y])
    return dag, ans.SearchTask(compute_dag=dag, target="llvm")


@pytest.mark.parametrize("channels,group_width,size,stride", [(104, 8, 28, 2), (30, 5, 9, 1), (12, 3, 7, 2)])
def test_a_grouped_convolutions_rows_are_the_output_channels_of_one_group(channels, group_width, size, stride):
    """A grouped convolution reads the same input for the output channels of one group (its index holds the
    channel as floordiv(f, group_width)): the expert's rows run along them, within one group, so each input
    vector serves every row; the built kernel computes what the reference does."""
    from autosched import search
    dag, task = _grouped_conv_task(channels, group_width, size, stride)
    state, _, note = search.expert_schedule_info(task)
    assert "(f x " in note, note
    rows = [it for st in dag.infer_bound(state).stages if any(it.kind == "reduce" for it in st.iters)
            for it in st.iters if it.annotation == "unroll" and it.name.startswith("f.")]
    assert rows and group_width % rows[0].extent == 0, str(state)
    check(dag, state)
