"""Golden tests of code generation: the lowered loop nests of fixed, hand-written schedules of a matmul, a
conv2d and a softmax are kept in tests/golden/<name>.txt, so that a change to lowering shows up as a diff
to review. After an intended change, rewrite them with

    AUTOSCHED_UPDATE_GOLDEN=1 python3 -m pytest tests/python/test_golden.py

and commit the new files with it. Beside the loop nests, the generated code of chosen kernels is kept too, so
that a change to code generation shows in review: the assembly of a register-blocked matmul for two named
CPUs (built with -no-host-check, so the text does not depend on the CPU running the test) and the OpenCL C
of a GPU matmul with shared-memory tiles. For the host's own CPU the vectorized loops are checked to use the
vector width of the target instead.
"""
import difflib
import os
import platform
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import autosched as ans
from autosched import _core, ops, te

from schedule_helpers import (assert_close, cache_write_matmul, check, cooperative_fetch, gpu_matmul_state,
                              matmul, register_block_matmul)

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("AUTOSCHED_UPDATE_GOLDEN") == "1"


# ---- the schedules (fixed: changing one means rewriting its golden file) ----

def matmul_schedule():
    """A 64x48x32 matmul through a local cache computed at the tile of its copy; rows in parallel."""
    dag, c = matmul(64, 48, 32)
    s = dag.get_init_state()
    _, io, _ = cache_write_matmul(s, c)
    s.parallel(c, io)
    return dag, s


def conv2d_schedule():
    """A 3x3 conv2d (NCHW, padding 1) with the padding inlined, computed through a local cache at each
    tile of 4 output channels x 8 columns; reductions outside the vectorized columns."""
    data = te.placeholder((1, 8, 16, 16), name="data")
    kernel = te.placeholder((16, 8, 3, 3), name="kernel")
    out = ops.conv2d_nchw(data, kernel, stride=1, padding=1)
    dag = ans.ComputeDAG([data, kernel, out])
    s = dag.get_init_state()
    local = s.cache_write(out, "local")
    s.compute_inline("PaddedInput")
    n, f, y, x = s[out].iters
    fo, fi = s.split(out, f, [4])
    xo, xi = s.split(out, x, [8])
    s.reorder(out, [n, fo, y, xo, fi, xi])
    s.parallel(out, fo)
    s.vectorize(out, xi)
    s.compute_at(local, out, xo)
    ln, lf, ly, lx, rc, ry, rx = s[local].iters
    s.reorder(local, [ln, ly, rc, ry, rx, lf, lx])
    s.vectorize(local, lx)
    return dag, s


def softmax_schedule():
    """A row softmax: the max, exp and sum stages computed per row of the output, rows in parallel, the
    element-wise loops split by 16 and vectorized."""
    x = te.placeholder((8, 64), name="x")
    out = ops.softmax(x)
    dag = ans.ComputeDAG([x, out])
    s = dag.get_init_state()
    i, j = s[out].iters
    s.parallel(out, i)
    jo, ji = s.split(out, j, [16])
    s.vectorize(out, ji)
    for producer in ["T_softmax_expsum", "T_softmax_exp", "T_softmax_maxelem"]:
        s.compute_at(producer, out, i)
    _, exp_j = s["T_softmax_exp"].iters
    _, exp_ji = s.split("T_softmax_exp", exp_j, [16])
    s.vectorize("T_softmax_exp", exp_ji)
    return dag, s


SCHEDULES = {"matmul": matmul_schedule, "conv2d": conv2d_schedule, "softmax": softmax_schedule}


# ---- the golden comparison ----

def check_golden(name, text, directory=GOLDEN_DIR, update=UPDATE, suffix=".txt"):
    path = directory / f"{name}{suffix}"
    if update:
        directory.mkdir(exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"no golden file {path}: write it with AUTOSCHED_UPDATE_GOLDEN=1", pytrace=False)
    want = path.read_text()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(keepends=True), text.splitlines(keepends=True),
                                            fromfile=f"tests/golden/{name}{suffix}", tofile="generated now"))
        pytest.fail(f"the generated code of '{name}' differs from its golden file (review the diff; "
                    f"AUTOSCHED_UPDATE_GOLDEN=1 rewrites the file):\n{diff}", pytrace=False)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_lowered_ir_matches_golden(name):
    dag, s = SCHEDULES[name]()
    check_golden(name, str(_core.lower(s)))


@pytest.mark.needs_llvm
@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_golden_schedules_compute_the_reference(name):
    dag, s = SCHEDULES[name]()
    check(dag, s)


def test_a_changed_lowering_fails_with_a_readable_diff(tmp_path):
    (tmp_path / "x.txt").write_text("for (i, 0, 4) {\n  A[i] = 0f\n}\n")
    with pytest.raises(pytest.fail.Exception) as failure:
        check_golden("x", "for (i, 0, 8) {\n  A[i] = 0f\n}\n", tmp_path, update=False)
    message = str(failure.value)
    assert "--- tests/golden/x.txt" in message and "+++ generated now" in message
    assert "-for (i, 0, 4) {" in message and "+for (i, 0, 8) {" in message


# ---- generated code: assembly for named CPUs, OpenCL C ----

ASM_TARGETS = {"skylake-avx512": ("llvm -mcpu=skylake-avx512 -no-host-check -num-cores=2", 16, 4),
               "haswell": ("llvm -mcpu=haswell -no-host-check -num-cores=2", 8, 2)}


@pytest.mark.skipif(not _core.has_llvm() or platform.machine() not in ("x86_64", "AMD64"),
                    reason="x86 assembly from the LLVM backend")
@pytest.mark.parametrize("cpu", sorted(ASM_TARGETS))
def test_register_block_assembly_matches_golden(cpu):
    target, lanes, vectors = ASM_TARGETS[cpu]
    dag, s = register_block_matmul(6 * 8, vectors * lanes * 2, 64, rows=6, vectors=vectors, lanes=lanes)
    check_golden(f"matmul_register_block.{cpu}", ans.build(dag, s, target).get_source("asm"), suffix=".s")


@pytest.mark.skipif(not ans.opencl.available(), reason="needs an OpenCL device (PoCL runs on the CPU)")
def test_gpu_matmul_opencl_source_matches_golden():
    dag, _ = matmul(64, 64, 32)
    s = gpu_matmul_state(dag, tile=8, shared=True)
    # Unrolled loops print as `#pragma unroll` loops, for the device's compiler to unroll.
    s.pragma("C", s["C"].iters[0], "auto_unroll_max_step$64")
    source = ans.build(dag, s, "opencl").get_source("cl")
    assert source.count("#pragma unroll") >= 2, source
    check_golden("gpu_matmul_shared", source, suffix=".cl")
    check(dag, s, target="opencl")


def vector_fetch_matmul(n, m, k, double_buffer=False):
    """A shared-memory matmul with the GPU rules' fetch parameters: 8 x 8 tiles, the reduction in tiles of
    4, rows of the shared buffers padded to 4 modulo 32 banks (storage_align), each work item fetching float4
    vectors (vload4 from global memory, an aligned float4 store into shared memory); with `double_buffer`,
    both shared stages double-buffered."""
    dag, _ = matmul(n, m, k)
    s = dag.get_init_state()
    caches = [s.cache_read("A", "shared", ["C"]), s.cache_read("B", "shared", ["C"])]
    i, j, kk = s["C"].iters
    bi, ti = s.split("C", i, [8])
    bj, tj = s.split("C", j, [8])
    ko, ki = s.split("C", kk, [4])
    s.reorder("C", [bi, bj, ko, ti, tj, ki])
    for it, binding in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"), (tj, "threadIdx.x")):
        s.bind("C", it, binding)
    for cache in caches:
        cooperative_fetch(s, cache, "C", ko, threads=8, lanes=4, pad_axis=0, pad=4, double_buffer=double_buffer)
    return dag, s


def test_gpu_matmul_with_vector_fetches_and_padded_rows_matches_golden():
    dag, s = vector_fetch_matmul(64, 64, 32)
    source = ans.build(dag, s, target="opencl").get_source("cl")
    # Rows of 36 floats and fetches at multiples of 4: both stores are aligned float4 stores.
    assert source.count("(*(__local float4*)(") == 2 and source.count(" = vload4(0, ") == 2, source
    assert "* 36)" in source and "__attribute__((aligned(16)))" in source, source
    check_golden("gpu_matmul_vector_fetch", source, suffix=".cl")
    check(dag, s, target="opencl")


@pytest.mark.skipif(not ans.opencl.available(), reason="needs an OpenCL device (PoCL runs on the CPU)")
def test_double_buffered_gpu_matmul_matches_golden():
    """Both shared buffers twice as large (copies of 8 x 4 and 4 x 36 floats), tile 0 fetched before the reduce
    loop, tile k + 1 loaded into registers at the start of iteration k (a float4 of each buffer per work item)
    and stored into copy (k + 1) % 2 after the compute, and one barrier per iteration."""
    dag, s = vector_fetch_matmul(64, 64, 32, double_buffer=True)
    source = ans.build(dag, s, target="opencl").get_source("cl")
    assert "__local float A_shared[64]" in source and "__local float B_shared[260]" in source, source
    loop = source[source.index("for (int k_0 = 0;"):]
    assert loop.count("(k_0 + 1) < 8") == 2, loop  # the loads, then the stores
    assert "float prefetch0[8];" in loop, loop  # a float4 of each buffer per work item
    compute = loop.index("C[")
    for buffer in ("A", "B"):
        assert loop.index(f"vstore4(vload4(0, {buffer} + ") < compute, loop
        assert compute < loop.index(f"(*(__local float4*)({buffer}_shared + "), loop
    assert loop.count("= vload4(0, prefetch0 + prefetch0_at);") == 2, loop
    assert loop.count("barrier(CLK_LOCAL_MEM_FENCE);") == 2, loop  # one in the loop, one after it
    check_golden("gpu_matmul_double_buffer", source, suffix=".cl")
    check(dag, s, target="opencl")


@pytest.mark.skipif(not ans.opencl.available(), reason="needs an OpenCL device (PoCL runs on the CPU)")
@pytest.mark.parametrize("shape", [(13, 7, 11), (1, 9, 5), (17, 3, 1), (9, 16, 6)])
def test_double_buffered_gpu_matmul_equals_the_reference_on_awkward_shapes(shape):
    """Primes, 1 and reductions that 4 does not divide (a partial last tile fetched ahead)."""
    dag, s = vector_fetch_matmul(*shape, double_buffer=True)
    check(dag, s, target="opencl")


def dense_layer_gpu_matmul():
    """A transformer's dense layer, 128 x 768 by 768 x 3072, as the GPU search sampled it (its steps as
    print_python_steps gives them): the reduction split 192 x 2 x 2, B's register tile computed at the middle
    reduce loop and double-buffered, its loads vectorized by 2 along rows of 3 (guarded). Loop partitioning
    splits the middle loop into its two iterations, each allocating the register tile."""
    a, b = te.placeholder((128, 768), name="A"), te.placeholder((768, 3072), name="B")
    dag = ans.ComputeDAG([a, b, ops.matmul(a, b)])
    s = dag.get_init_state()
    s.cache_write("T_matmul", "local")
    s.split("T_matmul.local", 0, [1, 1, 1, 8])
    s.split("T_matmul.local", 5, [2, 16, 1, 3])
    s.split("T_matmul.local", 10, [2, 2])
    s.reorder("T_matmul.local", [0, 5, 1, 6, 2, 7, 10, 11, 3, 8, 12, 4, 9])
    s.follow_split("T_matmul", 0, 1, 3)
    s.follow_split("T_matmul", 4, 2, 3)
    s.reorder("T_matmul", [0, 4, 1, 5, 2, 6, 3, 7])
    s.compute_at("T_matmul.local", "T_matmul", 5)
    s.cache_read("B", "shared", ["T_matmul.local"])
    s.cache_read("B.shared", "local", ["T_matmul.local"])
    s.compute_at("B.shared.local", "T_matmul.local", 10)
    s.compute_at("B.shared", "T_matmul.local", 6)
    s.cache_read("A", "shared", ["T_matmul.local"])
    s.cache_read("A.shared", "local", ["T_matmul.local"])
    s.compute_at("A.shared.local", "T_matmul.local", 10)
    s.compute_at("A.shared", "T_matmul.local", 6)
    s.fuse("T_matmul", [0, 1])
    s.bind("T_matmul", 0, "blockIdx.x")
    s.fuse("T_matmul", [1, 2])
    s.bind("T_matmul", 1, "vthread")
    s.fuse("T_matmul", [2, 3])
    s.bind("T_matmul", 2, "threadIdx.x")
    s.pragma("T_matmul", 0, "block_swizzle$4")
    s.compute_inline("A.shared.local")
    s.fuse("B.shared.local", [0, 1])
    s.split("B.shared.local", 0, [2])
    s.unroll("B.shared.local", 0)
    s.vectorize("B.shared.local", 1)
    s.pragma("B.shared.local", 0, "double_buffer")
    s.storage_align("A.shared", 0, 32, 4)
    for cache in ("A.shared", "B.shared"):
        s.fuse(cache, [0, 1])
        s.split(cache, 0, [4])
        s.follow_fused_split(cache, 0, [1, 2], 1, True)
        s.bind(cache, 1, "threadIdx.x")
        s.vectorize(cache, 2)
    s.pragma("T_matmul.local", 0, "auto_unroll_max_step$1024")
    return dag, s


@pytest.mark.skipif(not ans.opencl.available(), reason="needs an OpenCL device (PoCL runs on the CPU)")
def test_dense_layer_gpu_matmul_declares_each_register_tile_once_per_scope_and_matches_golden():
    """B's register tile copies shared rows that the tile's last group (3072 columns in tiles of 48) reads
    past the tensor's edge: its loads stay inside the shared tile, so they are not guarded, the reduce loop is
    not partitioned on them and the tile is allocated once (the guarded loads used to make a partitioned loop
    allocate it twice, each declared in a block of its own); the kernel builds and equals numpy's product."""
    from test_opencl_declarations import repeated_allocations, repeated_declarations
    dag, s = dense_layer_gpu_matmul()
    assert repeated_allocations(s) == []
    mod = ans.build(dag, s, target="opencl")
    source = mod.get_source("cl")
    assert source.count("float B_shared_local[12];") == 1, source
    assert repeated_declarations(source) == [], source
    check_golden("gpu_matmul_dense_layer", source, suffix=".cl")
    rng = np.random.default_rng(0)
    a, b = (rng.random((128, 768)) - 0.5).astype("float32"), (rng.random((768, 3072)) - 0.5).astype("float32")
    out = np.zeros((128, 3072), "float32")
    mod(a, b, out)
    assert_close(out, a.astype("float64") @ b.astype("float64"), out.dtype)


# ---- vector width in the LLVM IR ----

X86_TARGETS = ["llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"]


@pytest.mark.needs_llvm
@pytest.mark.parametrize("target", ["llvm"] + X86_TARGETS)
def test_vectorized_loops_use_the_target_vector_width(target):
    if target in X86_TARGETS and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("an x86 CPU name")
    lanes = _core.default_hardware_params(ans.Target(target)).vector_unit_bytes // 4  # float32 lanes
    dag, c = matmul(8, 4 * lanes, 16)
    s = dag.get_init_state()
    i, j, k = s[c].iters
    jo, ji = s.split(c, j, [lanes])
    s.reorder(c, [i, jo, k, ji])
    s.vectorize(c, ji)
    ll = ans.build(dag, s, target).get_source("ll")
    widths = Counter(int(n) for n in re.findall(r"<(\d+) x float>", ll))
    assert widths[lanes] > 0, f"no <{lanes} x float> in the LLVM IR for {target}: {dict(widths)}"
    assert max(widths) == lanes, f"vectors wider than {lanes} lanes for {target}: {dict(widths)}"
    check(dag, s)
