"""Code generation and runtime at their edges, compared with the reference evaluator and numpy: NaN in max / min,
integer division at INT_MIN / -1 and by zero, CPU features of a foreign -mcpu that this host lacks, kernels with
many large temporaries, allocation failure, parallel kernels in a forked child, unrolling of huge loops, and
builds from several Python threads.

Whatever could kill or hang the interpreter (SIGILL, SIGFPE, a stack overflow, a deadlock, a compile of
minutes) runs in a child process with a timeout: the test sees a clear error or a right answer there."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import autosched as ans
from autosched import _core, ops, te

pytestmark = pytest.mark.needs_llvm

CHILD_PRELUDE = """
import os, sys
import numpy as np
import autosched as ans
from autosched import _core, te
"""


def run_child(code, timeout=60):
    """Runs `code` in a fresh interpreter in its own process group and returns what it printed. A child that
    dies (a signal, a non-zero status) or runs past `timeout` seconds fails the test with its output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(code)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the child process hung (killed after {timeout} s)\nstdout:\n{out}\nstderr:\n{err}")
    if proc.returncode != 0:
        how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"status {proc.returncode}"
        pytest.fail(f"the child process ended with {how}\nstdout:\n{out}\nstderr:\n{err}")
    return out


def vectorized(dag, stages, lanes):
    """A state whose stages' innermost loops are split by `lanes` and vectorized."""
    s = dag.get_init_state()
    for name in stages:
        _, inner = s.split(name, s[name].iters[-1], [lanes])
        s.vectorize(name, inner)
    return s


def run(dag, state, inputs, target=None):
    """Builds and runs state on the inputs; returns the outputs (every tensor after the inputs)."""
    outputs = [np.zeros(t.shape, t.dtype) for t in dag.tensors[len(inputs):]]
    ans.build(dag, state, target)(*inputs, *outputs)
    return outputs


# ---- NaN in max / min ----

def nan_inputs(dtype, n=32):
    # NaN against numbers, infinities and zeros of either sign (LLVM's own float16 minimum lost a NaN
    # against -0.0).
    x = [np.nan, 1, -np.inf, np.nan, 2, -0.5, np.inf, 0.25, -0.0, np.nan, 0.0, np.nan, -0.0, 0.0, np.nan, 3]
    y = [1, np.nan, np.nan, -3, np.nan, 0.5, -np.inf, 0.5, np.nan, -0.0, np.nan, 0.0, 0.0, -0.0, 0.0, np.nan]
    return np.array(x * (n // 16), dtype=dtype), np.array(y * (n // 16), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("schedule", ["scalar", "vectorized"])
def test_elementwise_max_min_propagate_nan(dtype, schedule):
    n = 32
    x, y = te.placeholder((n,), dtype, "x"), te.placeholder((n,), dtype, "y")
    one = te.const(1, dtype)
    outs = [te.compute((n,), lambda i: te.max(x[i], y[i]), name="mx"),
            te.compute((n,), lambda i: te.min(x[i], y[i]), name="mn"),
            te.compute((n,), lambda i: te.max(one, x[i]), name="one_first"),
            ops.relu(x, name="relu"), ops.clip(x, -1, 1, name="clip")]
    dag = ans.ComputeDAG([x, y] + outs)
    xv, yv = nan_inputs(dtype, n)
    state = vectorized(dag, [t.name for t in outs], 8) if schedule == "vectorized" else None
    got = run(dag, state, [xv, yv])
    with np.errstate(invalid="ignore"):
        numpy_results = [np.maximum(xv, yv), np.minimum(xv, yv), np.maximum(xv.dtype.type(1), xv),
                         np.maximum(xv, 0), np.clip(xv, -1, 1)]
    for g, want, ref in zip(got, numpy_results, ans.evaluate(dag, [xv, yv])):
        np.testing.assert_array_equal(g, want.astype(dtype))
        np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("schedule", ["plain", "vectorized", "unrolled"])
def test_max_min_reductions_propagate_nan(schedule, dtype):
    rows, cols = 16, 24
    x = te.placeholder((rows, cols), dtype, "x")
    k = te.reduce_axis((0, cols), "k")
    mx = te.compute((rows,), lambda i: te.max(x[i, k], axis=k), name="mx")
    k2 = te.reduce_axis((0, cols), "k2")
    mn = te.compute((rows,), lambda i: te.min(x[i, k2], axis=k2), name="mn")
    dag = ans.ComputeDAG([x, mx, mn])
    s = dag.get_init_state()
    for name in ("mx", "mn"):
        i, r = s[name].iters
        if schedule == "vectorized":  # one accumulator per lane of i
            s.reorder(name, [r.name, i.name])
            s.vectorize(name, i)
        elif schedule == "unrolled":
            s.unroll(name, r)
    xv = np.random.default_rng(4).standard_normal((rows, cols)).astype(dtype)
    xv[3, 0] = xv[5, cols - 1] = xv[9, 7] = np.nan  # first, last and a middle element of a row
    xv[9, 8] = np.inf
    xv[11, :] = -0.0  # a row of signed zeros with one NaN
    xv[11, 5] = np.nan
    got = run(dag, s, [xv])
    want = ans.evaluate(dag, [xv])
    np.testing.assert_array_equal(got[0], np.max(xv, axis=1))
    np.testing.assert_array_equal(got[1], np.min(xv, axis=1))
    for g, ref in zip(got, want):
        np.testing.assert_array_equal(g, ref)


# ---- CPU features of a foreign -mcpu ----

def test_dropped_cpu_features_of_the_host_are_none():
    assert _core.dropped_cpu_features("llvm") == []
    assert isinstance(_core.dropped_cpu_features("llvm -mcpu=sapphirerapids"), list)
    with pytest.raises(ValueError, match="notacpu"):
        _core.dropped_cpu_features("llvm -mcpu=notacpu")


def test_foreign_mcpu_runs_vectorized_int8_division_on_this_host():
    # LLVM shifts int8 vectors with GFNI (vgf2p8affineqb) where the CPU has it: SIGILL on a host without.
    out = run_child("""
        n = 256
        x = te.placeholder((n,), "int8", "x")
        q = te.compute((n,), lambda i: x[i] // te.const(4, "int8"), name="q")
        r = te.compute((n,), lambda i: x[i] % te.const(8, "int8"), name="r")
        dag = ans.ComputeDAG([x, q, r])
        s = dag.get_init_state()
        for name in ("q", "r"):
            _, inner = s.split(name, s[name].iters[0], [64])
            s.vectorize(name, inner)
        xv = np.arange(-128, 128, dtype="int8")
        for cpu in ["sapphirerapids", "alderlake", "icelake-server", "znver4", "graniterapids"]:
            target = "llvm -mcpu=" + cpu
            dropped = _core.dropped_cpu_features(target)
            mod = ans.build(dag, s, target)
            asm = mod.get_source("asm")
            assert "gfni" not in dropped or "gf2p8" not in asm, cpu
            assert "avx512f" not in dropped or "zmm" not in asm, cpu
            qv, rv = np.zeros(n, "int8"), np.zeros(n, "int8")
            mod(xv, qv, rv)
            assert (qv == xv // 4).all() and (rv == xv % 8).all(), cpu
            want = ans.evaluate(dag, [xv])
            assert (qv == want[0]).all() and (rv == want[1]).all(), cpu
            print(cpu, "ok")
    """)
    assert out.count(" ok") == 5, out


# ---- integer division ----

INT_OPS = ["div", "mod", "floordiv", "floormod"]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_int_min_divided_by_minus_one_gives_the_evaluators_result(dtype):
    # In a child: x86 traps on INT_MIN / -1 (SIGFPE).
    run_child(f"""
        dtype = "{dtype}"
        n = 32
        info = np.iinfo(dtype)
        a_, b_ = te.placeholder((n,), dtype, "a"), te.placeholder((n,), dtype, "b")
        def stage(op):
            return te.compute((n,), lambda i: _core.binary(op, a_[i], b_[i]), name=op + "_out")
        outs = [stage(op) for op in {INT_OPS!r}]
        dag = ans.ComputeDAG([a_, b_] + outs)
        av = np.array([info.min, info.max, -7, 7, 0, 5, -5, info.min] * 4, dtype=dtype)
        bv = np.array([-1, -1, 2, -2, -1, 3, -3, 7] * 4, dtype=dtype)
        want = ans.evaluate(dag, [av, bv])
        with np.errstate(over="ignore"):
            assert (want[2] == np.floor_divide(av, bv)).all() and (want[3] == np.mod(av, bv)).all()
        assert want[0][0] == info.min and want[1][0] == 0
        scalar = dag.get_init_state()
        vector = dag.get_init_state()
        for t in outs:
            _, inner = vector.split(t.name, vector[t.name].iters[0], [16])
            vector.vectorize(t.name, inner)
        for state in (scalar, vector):
            got = [np.zeros(n, dtype) for _ in outs]
            ans.build(dag, state)(av, bv, *got)
            for g, w in zip(got, want):
                assert (g == w).all(), (g, w)
        print("ok")
    """)


def test_integer_division_by_zero_gives_zero_as_in_the_evaluator():
    # In a child: x86 traps on a division by zero (SIGFPE); generated code must not.
    out = run_child(f"""
        n = 32
        def dag_of(dtype):
            a, b = te.placeholder((n,), dtype, "a"), te.placeholder((n,), dtype, "b")
            def stage(op):
                return te.compute((n,), lambda i: _core.binary(op, a[i], b[i]), name=op + "_out")
            return ans.ComputeDAG([a, b] + [stage(op) for op in {INT_OPS!r}])
        for dtype in ["int8", "int32", "int64", "uint8"]:
            dag = dag_of(dtype)
            names = [t.name for t in dag.tensors[2:]]
            states = {{"scalar": dag.get_init_state(), "vector": dag.get_init_state(),
                       "parallel": dag.get_init_state()}}
            for name in names:
                _, inner = states["vector"].split(name, states["vector"][name].iters[0], [16])
                states["vector"].vectorize(name, inner)
                states["parallel"].parallel(name, states["parallel"][name].iters[0])
            av = np.arange(n).astype(dtype)
            bv = np.full(n, 3, dtype)
            bv[n - 5] = 0
            want = ans.evaluate(dag, [av, bv])
            assert all(w[n - 5] == 0 for w in want), want
            for kind, state in states.items():
                mod = ans.build(dag, state, "llvm -num-cores=2")
                outs = [np.zeros(n, dtype) for _ in names]
                mod(av, bv, *outs)
                assert all((o == w).all() for o, w in zip(outs, want)), (dtype, kind)
                print(dtype, kind, "ok")
    """)
    assert out.count(" ok") == 12, out


# ---- temporaries on the stack and on the heap ----

def test_many_large_intermediate_buffers():
    # 40 stages of 240 KiB each: all on the stack at once overflowed it (a segfault).
    out = run_child("""
        n = 240 * 1024 // 4
        x = te.placeholder((n,), "float32", "x")
        def stage(prev, k):
            return te.compute((n,), lambda i: prev[i] * te.const(2, "float32") - te.const(1, "float32"),
                              name=f"s{k}")
        t = x
        for k in range(40):
            t = stage(t, k)
        dag = ans.ComputeDAG([x, t])
        xv = np.ones(n, "float32")  # stays 1 through every stage
        for state in (dag.get_init_state(), None):
            o = np.zeros(n, "float32")
            ans.build(dag, state)(xv, o)
            assert (o == 1).all() and (o == ans.evaluate(dag, [xv])[0]).all()
        print("ok")
    """)
    assert "ok" in out


def test_allocation_failure_is_an_error_and_frees_what_was_allocated():
    # The address space is limited to 500 MiB more than the process uses: of two heap temporaries of 200
    # and 400 MiB the second cannot be had, so the call raises; and the first was freed each time, else
    # a module needing 300 MiB could not run afterwards (malloc may reserve 64 MiB for a new arena when
    # the first attempt fails).
    out = run_child("""
        import resource
        cols = 1024
        x = te.placeholder((cols,), "float32", "x")
        def chain(rows_a, rows_b):
            a = te.compute((rows_a, cols), lambda i, j: x[j] + te.const(1, "float32"), name="a")
            b = te.compute((rows_b, cols), lambda i, j: a[i % rows_a, j] * te.const(2, "float32"), name="b")
            k = te.reduce_axis((0, rows_b), "k")
            out = te.compute((cols,), lambda j: te.max(b[k, j], axis=k), name="out")
            return ans.ComputeDAG([x, out])
        mib = 1 << 20
        failing = ans.build(chain(200 * mib // 4096, 400 * mib // 4096))  # 200 MiB, then 400 MiB
        fitting = ans.build(chain(1, 300 * mib // 4096))                    # 4 KiB, then 300 MiB
        xv = np.ones(cols, "float32")
        o = np.zeros(cols, "float32")
        def vm_bytes():
            with open("/proc/self/status") as f:
                line = next(l for l in f if l.startswith("VmSize:"))
            return int(line.split()[1]) * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + 500 * mib, hard))
        for _ in range(3):
            try:
                failing(xv, o)
                raise AssertionError("no error when a temporary cannot be allocated")
            except ValueError as e:
                assert "could not allocate" in str(e), str(e)
        fitting(xv, o)
        assert (o == 4).all()
        print("ok")
    """)
    assert "ok" in out


# ---- fork ----

def test_parallel_kernel_in_a_forked_child():
    out = run_child("""
        n = 64
        x = te.placeholder((n, n), "float32", "x")
        y = te.compute((n, n), lambda i, j: x[i, j] * te.const(2, "float32"), name="y")
        dag = ans.ComputeDAG([x, y])
        s = dag.get_init_state()
        s.parallel("y", s["y"].iters[0])
        mod = ans.build(dag, s, "llvm -num-cores=2")
        xv = np.random.default_rng(0).random((n, n)).astype("float32")
        o = np.zeros((n, n), "float32")
        mod(xv, o)  # the parent's pool starts
        pid = os.fork()
        if pid == 0:
            o2 = np.zeros((n, n), "float32")
            mod(xv, o2)
            child_mod = ans.build(dag, s, "llvm -num-cores=2")  # a build and a second kernel in the child
            o3 = np.zeros((n, n), "float32")
            child_mod(xv, o3)
            os._exit(0 if (o2 == 2 * xv).all() and (o3 == ans.evaluate(dag, [xv])[0]).all() else 3)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        mod(xv, o)  # and the parent's pool still works
        assert (o == 2 * xv).all()
        print("ok")
    """)
    assert "ok" in out


# ---- unrolling ----

@pytest.mark.parametrize("n, how", [(256, "unroll both"), (256, "auto_unroll_max_step$1000000"),
                                    (1024, "unroll both")])
def test_unrolling_huge_loops_compiles_quickly(n, how):
    # A whole 256x256 nest unrolled took LLVM close to a minute; the child's timeout guards a compile of
    # that kind (the budget keeps it well under a second).
    out = run_child(f"""
        n = {n}
        a = te.placeholder((n, n), "float32", "a")
        k = te.reduce_axis((0, n), "k")
        c = te.compute((n,), lambda i: te.sum(a[i, k] * a[k, i], axis=k), name="c")
        dag = ans.ComputeDAG([a, c])
        s = dag.get_init_state()
        i, r = s["c"].iters
        if {how!r} == "unroll both":
            s.unroll("c", i)
            s.unroll("c", r)
        else:
            s.pragma("c", i, {how!r})
        mod = ans.build(dag, s)
        av = np.random.default_rng(1).random((n, n)).astype("float32")
        o = np.zeros(n, "float32")
        mod(av, o)
        np.testing.assert_allclose(o, np.einsum("ik,ki->i", av, av), rtol=1e-4)
        np.testing.assert_allclose(o, ans.evaluate(dag, [av])[0], rtol=1e-4)
        print("ok")
    """, timeout=30)
    assert "ok" in out


def test_unrolling_within_the_budget_still_unrolls():
    n = 8
    a = te.placeholder((n, n), "float32", "a")
    c = te.compute((n, n), lambda i, j: a[i, j] + te.const(1, "float32"), name="c")
    dag = ans.ComputeDAG([a, c])
    s = dag.get_init_state()
    for it in s["c"].iters:
        s.unroll("c", it)
    mod = ans.build(dag, s)
    assert "br " not in mod.get_source("ll")  # straight-line code: no loop left
    av = np.random.default_rng(2).random((n, n)).astype("float32")
    np.testing.assert_array_equal(run(dag, s, [av])[0], av + 1)


# ---- builds from several Python threads ----

def matmul_case(n, lanes):
    a, b = te.placeholder((n, n), "float32", "A"), te.placeholder((n, n), "float32", "B")
    k = te.reduce_axis((0, n), "k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    dag = ans.ComputeDAG([a, b, c])
    s = dag.get_init_state()
    i, j, r = s["C"].iters
    jo, ji = s.split("C", j, [lanes])
    ro, ri = s.split("C", r, [4])
    s.reorder("C", [i, jo, ro, ri, ji])
    s.unroll("C", ri)
    s.vectorize("C", ji)
    return dag, s


def test_other_python_threads_run_while_a_build_compiles():
    dag, s = matmul_case(64, 16)
    ticks = [0]
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    # With a long switch interval the ticker only runs when the building thread lets go of the GIL itself.
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(100)
    thread = threading.Thread(target=ticker)
    try:
        thread.start()
        before = ticks[0]
        for _ in range(3):
            ans.build(dag, s)
        during = ticks[0] - before
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old_interval)
    assert during > 0


def test_concurrent_builds_give_correct_modules():
    cases = [matmul_case(n, lanes) for n, lanes in [(24, 8), (32, 16), (40, 4), (16, 16)]]
    results, errors = {}, []

    def build_and_run(index):
        try:
            rng = np.random.default_rng(index)
            dag, s = cases[index % len(cases)]
            n = dag.tensors[0].shape[0]
            a = rng.random((n, n)).astype("float32")
            b = rng.random((n, n)).astype("float32")
            c = np.zeros((n, n), "float32")
            ans.build(dag, s)(a, b, c)
            results[index] = (a, b, c)
        except Exception as e:  # reported below, with the thread's case
            errors.append((index, e))

    threads = [threading.Thread(target=build_and_run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for a, b, c in results.values():
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)


# ---- float16 stages inlined into their readers ----

@pytest.mark.parametrize("reader", ["sum", "elementwise"])
def test_inlined_float16_stage_is_rounded_as_if_stored(reader):
    """A float16 stage holds float16 values; inlined into its reader it must give the same values, rounded
    where the stage would have stored them (generated code computes float16 in float32)."""
    n, m = 6, 16
    a = te.placeholder((n, m), "float16", "a")
    b = te.placeholder((n, m), "float16", "b")
    t = te.compute((n, m), lambda i, j: a[i, j] * b[i, j] - te.const(0.1, "float16"), name="t")
    if reader == "sum":
        k = te.reduce_axis((0, m), "k")
        out = te.compute((n,), lambda i: te.sum(t[i, k], axis=k), name="out")
    else:
        out = te.compute((n, m), lambda i, j: te.cast(t[i, j], "float32") * 3.0, name="out")
    dag = ans.ComputeDAG([a, b, out])
    rng = np.random.default_rng(7)
    av, bv = (rng.standard_normal((n, m)).astype("float16") for _ in range(2))
    s = dag.get_init_state()
    s.compute_inline("t")
    want = ans.evaluate(dag, [av, bv])[0]
    materialized = run(dag, None, [av, bv])[0]
    inlined = run(dag, s, [av, bv])[0]
    np.testing.assert_array_equal(inlined, materialized)
    np.testing.assert_allclose(inlined.astype("float64"), want.astype("float64"), rtol=1e-3, atol=1e-3)
