"""Semantics of the IR that built code must share with the reference evaluator: reduce axes that do not start
at 0, the accumulation type of reductions (float16 accumulates in float32), int64 and other non-int32 indices,
and the depth limit of expressions and of JSON read from users.

Every correctness test builds the default state and a few scheduled ones (non-dividing splits, rfactor,
cache_write) and compares them with ans.evaluate and with numpy. The tests that could crash the process run in
a child process."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import autosched as ans
from autosched import _core, ops, te


RNG = np.random.default_rng(2024)


def run(dag, state, inputs):
    """Builds `state` (None: the default), runs it; returns (built outputs, evaluator outputs)."""
    arrays, outs = [], []
    given = list(inputs)
    for t in dag.tensors:
        if t.op_kind == "placeholder":
            arrays.append(given.pop(0))
        else:
            arrays.append(np.zeros(t.shape, dtype=t.dtype))
            outs.append(arrays[-1])
    ans.build(dag, state)(*arrays)
    return outs, ans.evaluate(dag, list(inputs))


def check(dag, state, inputs, want, rtol=1e-5, atol=1e-5):
    """Built code and the evaluator both match `want` (numpy) and each other."""
    (got,), (ref,) = run(dag, state, inputs)
    np.testing.assert_allclose(ref.astype("float64"), want, rtol=rtol, atol=atol)
    np.testing.assert_allclose(got.astype("float64"), want, rtol=rtol, atol=atol)
    return got, ref


# ---- 1. reduce axes that do not start at 0 ----

def offset_sum(n, lo, hi, combiner=te.sum, where=None):
    a = te.placeholder((n, hi + 2), name="A")
    k = te.reduce_axis((lo, hi), name="k")
    cond = None if where is None else where(k)
    b = te.compute((n,), lambda i: combiner(a[i, k], axis=k, where=cond), name="B")
    return ans.ComputeDAG([a, b]), a, b


@pytest.mark.needs_llvm
@pytest.mark.parametrize("n,lo,hi", [(5, 2, 6), (7, 1, 12), (1, 3, 4), (2, 6, 19)])
def test_offset_reduce_axis_sum(n, lo, hi):
    dag, _, b = offset_sum(n, lo, hi)
    a = RNG.standard_normal((n, hi + 2)).astype("float32")
    want = a[:, lo:hi].astype("float64").sum(1)
    check(dag, None, [a], want)
    # Schedules: a split that does not divide, rfactor of its inner part, and a cache_write.
    ext = hi - lo
    s = dag.get_init_state()
    s.split(b, s[b].iters[1], [3])
    check(dag, s, [a], want)
    s = dag.get_init_state()
    ko, ki = s.split(b, s[b].iters[1], [2])
    s.rfactor(b, ki, 1)
    check(dag, s, [a], want)
    s = dag.get_init_state()
    s.cache_write(b, "local")
    check(dag, s, [a], want)
    assert ext == b.reduce_axis[0].dom.extent


def test_offset_reduce_axis_prints_its_true_range():
    dag, _, b = offset_sum(5, 2, 6)
    assert tuple(b.reduce_axis[0].dom) == (0, 4)
    assert "for k (0,4)" in str(dag.get_init_state())
    # The body reads k + 2: what the state loops over is what the op computes.
    assert "k + 2" in str(b)


@pytest.mark.needs_llvm
def test_offset_reduce_axis_max_and_where():
    dag, _, b = offset_sum(7, 1, 6, te.max)
    a = RNG.standard_normal((7, 8)).astype("float32")
    check(dag, None, [a], a[:, 1:6].max(1))
    s = dag.get_init_state()
    s.split(b, s[b].iters[1], [4])
    check(dag, s, [a], a[:, 1:6].max(1))
    # where= sees the original values of k: only k in {4, 5} count.
    dag, _, b = offset_sum(3, 2, 6, te.sum, where=lambda k: k >= 4)
    a = RNG.standard_normal((3, 8)).astype("float32")
    check(dag, None, [a], a[:, 4:6].astype("float64").sum(1))


@pytest.mark.needs_llvm
def test_two_offset_reduce_axes_with_a_negative_start():
    x = te.placeholder((5, 7), name="X")
    r = te.reduce_axis((1, 4), name="r")
    c = te.reduce_axis((-2, 1), name="c")
    y = te.compute((2, 4), lambda i, j: te.sum(x[i + r, j + c + 2], axis=[r, c]), name="Y")
    dag = ans.ComputeDAG([x, y])
    a = RNG.standard_normal((5, 7)).astype("float32")
    want = np.array([[a[i + 1:i + 4, j:j + 3].sum() for j in range(4)] for i in range(2)])
    check(dag, None, [a], want)
    s = dag.get_init_state()
    s.split(y, s[y].iters[2], [2])
    check(dag, s, [a], want)
    # The normalised DAG survives JSON.
    back = ans.ComputeDAG.from_json(dag.to_json())
    assert back.workload_key() == dag.workload_key()
    np.testing.assert_allclose(ans.evaluate(back, [a])[0], want, rtol=1e-5)


def test_spatial_axes_start_at_zero():
    a = te.placeholder((4,), name="A")
    i = _core.IterVar("i", 1, 3, "spatial")
    with pytest.raises(ValueError, match="must start at 0"):
        _core.compute("B", [i], a[i.var], "", {})


# ---- 2. the accumulation type of reductions ----

def f16(shape, low=0.5, high=1.5):
    return RNG.uniform(low, high, size=shape).astype("float16")


@pytest.mark.needs_llvm
def test_float16_sum_and_mean_accumulate_in_float32():
    x = te.placeholder((8192,), name="x", dtype="float16")
    a = np.ones(8192, "float16")
    for op, want in ((ops.sum, 8192.0), (ops.mean, 1.0)):
        dag = ans.ComputeDAG([x, op(x)])
        (got,), (ref,) = run(dag, None, [a])
        assert float(got) == want and float(ref) == want  # float16 accumulation stalls at 2048
    a = f16(8192)
    want = a.astype("float64").sum()
    dag = ans.ComputeDAG([x, ops.sum(x)])
    (got,), (ref,) = run(dag, None, [a])
    np.testing.assert_allclose([float(got), float(ref)], [want, want], rtol=1e-3)  # one float16 rounding


@pytest.mark.needs_llvm
def test_float16_softmax_rows_sum_to_one():
    x = te.placeholder((3, 4096), name="x", dtype="float16")
    dag = ans.ComputeDAG([x, ops.softmax(x)])
    a = f16((3, 4096), -2, 2)
    (got,), (ref,) = run(dag, None, [a])
    np.testing.assert_allclose(got.astype("float64").sum(1), 1.0, rtol=5e-3)
    np.testing.assert_allclose(ref.astype("float64").sum(1), 1.0, rtol=5e-3)


def f16_matmul(n, m, k, acc_dtype=None):
    a = te.placeholder((n, k), name="A", dtype="float16")
    b = te.placeholder((k, m), name="B", dtype="float16")
    r = te.reduce_axis((0, k), name="r")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r, acc_dtype=acc_dtype), name="C")
    return ans.ComputeDAG([a, b, c]), c


@pytest.mark.needs_llvm
def test_float16_matmul_k4096_default_and_scheduled():
    n, m, k = 3, 5, 4096
    dag, c = f16_matmul(n, m, k)
    a, b = f16((n, k)), f16((k, m))
    want = a.astype("float64") @ b.astype("float64")
    tol = dict(rtol=2e-3, atol=0)  # one float16 rounding of the result, float32 accumulation
    check(dag, None, [a, b], want, **tol)
    s = dag.get_init_state()  # non-dividing splits of a spatial and the reduce axis
    s.split(c, s[c].iters[1], [2])
    s.split(c, s[c].iters[2], [7])
    check(dag, s, [a, b], want, **tol)
    s = dag.get_init_state()  # rfactor: the partial sums stay in float32
    ko, ki = s.split(c, s[c].iters[2], [64])
    rf = s.rfactor(c, ki, 2)
    assert rf.dtype == "float32"
    check(dag, s, [a, b], want, **tol)
    s = dag.get_init_state()  # rfactor of a reduction that keeps a reduce axis in the rf stage
    ko, ki = s.split(c, s[c].iters[2], [64])
    s.rfactor(c, ko, 2)
    check(dag, s, [a, b], want, **tol)
    s = dag.get_init_state()  # cache_write: the local stage accumulates in float32 too
    s.cache_write(c, "local")
    check(dag, s, [a, b], want, **tol)
    s = dag.get_init_state()  # cache_write attached inside a loop of the output, spatial loops in the reduction
    cl = s.cache_write(c, "local")
    i, j = s[c].iters
    s.compute_at(cl, c, i)
    ci, cj, cr = s[cl].iters
    s.reorder(cl, [ci, cr, cj])
    check(dag, s, [a, b], want, **tol)


@pytest.mark.needs_llvm
def test_explicit_float16_accumulation_is_followed_by_both():
    x = te.placeholder((1, 4096), name="x", dtype="float16")
    r = te.reduce_axis((0, 4096), name="r")
    y = te.compute((1,), lambda i: te.sum(x[i, r], axis=r, acc_dtype="float16"), name="y")
    dag = ans.ComputeDAG([x, y])
    a = np.ones((1, 4096), "float16")
    (got,), (ref,) = run(dag, None, [a])
    assert got[0] == ref[0] == 2048.0  # what float16 accumulation gives, asked for
    assert "acc_dtype=float16" in str(y.body)
    s = dag.get_init_state()
    ro, ri = s.split(y, s[y].iters[1], [100])
    rf = s.rfactor(y, ri, 1)
    assert rf.dtype == "float16"  # rfactor keeps the accumulation type asked for (another order: other sums)
    (got,), _ = run(dag, s, [a])
    assert 2048.0 <= got[0] <= 4096.0
    # The type belongs to the reduction: kept by JSON, part of the workload key.
    back = ans.ComputeDAG.from_json(dag.to_json())
    assert "acc_dtype=float16" in str(back.ops[-1].body)
    assert back.workload_key() == dag.workload_key()
    default, _ = f16_matmul(2, 2, 8)
    explicit, _ = f16_matmul(2, 2, 8, acc_dtype="float16")
    assert default.workload_key() != explicit.workload_key()
    assert f16_matmul(2, 2, 8, acc_dtype="float32")[0].workload_key() == default.workload_key()


@pytest.mark.needs_llvm
def test_wider_accumulation_of_float32_and_integer_sums():
    x = te.placeholder((4, 1000), name="x")
    r = te.reduce_axis((0, 1000), name="r")
    y = te.compute((4,), lambda i: te.sum(x[i, r], axis=r, acc_dtype="float64"), name="y")
    dag = ans.ComputeDAG([x, y])
    a = RNG.standard_normal((4, 1000)).astype("float32")
    check(dag, None, [a], a.astype("float64").sum(1), rtol=1e-6, atol=1e-5)
    # Integer sums keep accumulating in their own type (and wrap there).
    xi = te.placeholder((2, 300), name="xi", dtype="int8")
    ri = te.reduce_axis((0, 300), name="ri")
    yi = te.compute((2,), lambda i: te.sum(xi[i, ri], axis=ri), name="yi")
    dag = ans.ComputeDAG([xi, yi])
    ai = RNG.integers(-100, 100, size=(2, 300)).astype("int8")
    (got,), (ref,) = run(dag, None, [ai])
    want = ai.astype("int64").sum(1).astype("int8")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ref, want)


def test_accumulation_type_is_checked():
    x = te.placeholder((4,), name="x")
    xi = te.placeholder((4,), name="xi", dtype="int32")
    r = te.reduce_axis((0, 4), name="r")
    with pytest.raises(TypeError, match="cannot accumulate in float16"):
        te.sum(x[r], axis=r, acc_dtype="float16")
    with pytest.raises(TypeError, match="cannot accumulate in float32"):
        te.sum(xi[r], axis=r, acc_dtype="float32")
    with pytest.raises(TypeError, match="element-wise"):
        te.max(x[0], x[1], acc_dtype="float32")


# ---- 13. indices of other integer types ----

@pytest.mark.needs_llvm
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_index_tensor_of_any_integer_type(dtype):
    rows = 128 if dtype == "int8" else 200
    a_ph = te.placeholder((rows, 7), name="A")
    i_ph = te.placeholder((5,), name="I", dtype=dtype)
    g = te.compute((5, 7), lambda r, j: a_ph[i_ph[r], j], name="G")
    dag = ans.ComputeDAG([a_ph, i_ph, g])
    a = RNG.standard_normal((rows, 7)).astype("float32")
    idx = np.array([rows - 1, 0, 3, rows // 2, 127], dtype=dtype)  # uint8: values past 127
    want = a[idx.astype("int64")]
    check(dag, None, [a, idx], want)
    s = dag.get_init_state()
    s.split(g, s[g].iters[1], [3])
    check(dag, s, [a, idx], want)
    s = dag.get_init_state()
    s.cache_write(g, "local")
    check(dag, s, [a, idx], want)


@pytest.mark.needs_llvm
def test_int64_index_arithmetic_and_cast():
    a_ph = te.placeholder((11, 3), name="A")
    i_ph = te.placeholder((4,), name="I", dtype="int64")
    b = te.compute((11, 3), lambda i, j: a_ph[te.cast(i, "int64"), j], name="B")
    c = te.compute((4, 3), lambda r, j: a_ph[i_ph[r] + 1, te.cast(j, "int64")], name="C")
    a = RNG.standard_normal((11, 3)).astype("float32")
    idx = np.array([9, 0, 4, 2], "int64")
    dag = ans.ComputeDAG([a_ph, b])
    check(dag, None, [a], a)
    for attach in (None, 0, 1):  # a cache of A read through the int64 index, at every level
        s = dag.get_init_state()
        cache = s.cache_read(a_ph, "local", [b])
        bo, bi = s.split(b, s[b].iters[0], [4])
        if attach is not None:
            s.compute_at(cache, b, (bo, bi)[attach])
        check(dag, s, [a], a)
    dag = ans.ComputeDAG([a_ph, i_ph, c])
    check(dag, None, [a, idx], a[idx + 1])
    s = dag.get_init_state()
    s.split(c, s[c].iters[0], [3])
    check(dag, s, [a, idx], a[idx + 1])
    # A reduction over an int64-indexed read, with rfactor.
    r = te.reduce_axis((0, 4), name="r")
    d = te.compute((3,), lambda j: te.sum(a_ph[i_ph[r], j], axis=r), name="D")
    dag = ans.ComputeDAG([a_ph, i_ph, d])
    s = dag.get_init_state()
    ro, ri = s.split(d, s[d].iters[1], [3])
    s.rfactor(d, ri, 1)
    check(dag, s, [a, idx], a[idx].sum(0))


def test_int64_index_past_int32_is_out_of_bounds_in_the_evaluator():
    a_ph = te.placeholder((4, 3), name="A")
    i_ph = te.placeholder((2,), name="I", dtype="int64")
    g = te.compute((2, 3), lambda r, j: a_ph[i_ph[r], j], name="G")
    dag = ans.ComputeDAG([a_ph, i_ph, g])
    with pytest.raises(ValueError, match="out-of-bounds load of tensor 'A' at index \\[4294967297, 0\\]"):
        ans.evaluate(dag, [np.zeros((4, 3), "float32"), np.array([0, 2 ** 32 + 1], "int64")])


# ---- 10. deep input: a clear error, never a crash ----

def run_child(code, timeout=240):
    """Runs code in a fresh interpreter; returns its stdout (the test fails on a crash)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, f"child failed with {out.returncode}: {out.stderr[-2000:]}"
    return out.stdout


DEEP_PRELUDE = """
    import json, threading
    import numpy as np
    import autosched as ans
    from autosched import _core, te

    def chain(depth, kind):
        # A compute whose body is exactly `depth` levels deep.
        A = te.placeholder((2, 4), name="A")
        def body(i):
            x = A[i, 0]                                    # 2 levels
            for t in range(depth - 2):
                x = {"add": lambda x: x + A[i, 1], "exp": lambda x: te.sigmoid(x),
                     "select": lambda x: te.select(i > 0, x, 0.5)}[kind](x)
            return x
        return A, te.compute((2,), body, name="B")

    def everything(depth, kind):
        A, B = chain(depth, kind)
        dag = ans.ComputeDAG([A, B])
        a = np.random.rand(2, 4).astype("float32")
        str(B); str(dag); str(dag.get_init_state())
        back = ans.ComputeDAG.from_json(dag.to_json())
        assert back.workload_key() == dag.workload_key()
        ref = ans.evaluate(dag, [a])[0]
        assert np.allclose(ans.evaluate_points(dag, [a], 0, [[1]]), ref[1])
        if _core.has_llvm():
            out = np.zeros(2, "float32")
            ans.build(dag)(a, out)
            assert np.allclose(out, ref, rtol=1e-4)
        task = ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))
        assert ans.SearchTask.from_json(task.to_json()).compute_dag.workload_key() == dag.workload_key()

    def on_small_thread(fn, *args):
        # 1 MiB: smaller than any thread stack Python or the C++ runtime gives by default on Linux.
        errors = []
        def target():
            try:
                fn(*args)
            except BaseException as e:
                errors.append(e)
        threading.stack_size(1 << 20)
        t = threading.Thread(target=target)
        t.start(); t.join()
        if errors:
            raise errors[0]
"""


def test_expressions_at_the_depth_limit_work_everywhere():
    out = run_child(DEEP_PRELUDE + """
    limit = 256
    for kind in ("add", "exp", "select"):
        everything(limit, kind)
        on_small_thread(everything, limit, kind)
    print("done")
    """)
    assert "done" in out


def test_expressions_past_the_depth_limit_are_refused():
    out = run_child(DEEP_PRELUDE + """
    for kind in ("add", "exp", "select"):
        try:
            chain(257, kind)
        except ValueError as e:
            assert "257 levels deep" in str(e) and "limit of 256" in str(e), str(e)
        else:
            raise AssertionError("depth 257 was accepted")
    # The 10,000-term sum of the report: refused at the limit, on both threads.
    def long_sum():
        A = te.placeholder((2, 10001), name="A")
        try:
            te.compute((2,), lambda i: __import__("functools").reduce(
                lambda x, t: x + A[i, t], range(1, 10001), A[i, 0]), name="B")
        except ValueError as e:
            assert "limit of 256" in str(e) and "reduce axis" in str(e), str(e)
        else:
            raise AssertionError("a 10,000-term chain was accepted")
    long_sum()
    on_small_thread(long_sum)
    print("done")
    """)
    assert "done" in out


def test_op_chains_are_held_to_the_limit_and_inline_at_it():
    out = run_child(DEEP_PRELUDE + """
    def op_chain(n):
        A = te.placeholder((3,), name="A")
        ts = [A]
        for j in range(n):
            p = ts[-1]
            ts.append(te.compute((3,), lambda i: p[i] * 1.5 + 0.5, name="T%d" % j))
        return ts
    try:
        op_chain(90)
    except ValueError as e:
        assert "levels deep" in str(e) and "limit of 256" in str(e) and "T85" in str(e), str(e)
    else:
        raise AssertionError("a 90-op chain past the limit was accepted")
    def inline_all():
        ts = op_chain(85)
        dag = ans.ComputeDAG([ts[0], ts[-1]])
        a = np.random.rand(3).astype("float32")
        ref = ans.evaluate(dag, [a])[0]
        assert np.allclose(ans.evaluate_points(dag, [a], 0, [[2]]), ref[2])
        if _core.has_llvm():
            s = dag.get_init_state()
            for t in ts[1:-1]:
                s.compute_inline(t)
            out = np.zeros(3, "float32")
            ans.build(dag, s)(a, out)
            assert np.allclose(out, ref, rtol=1e-4)
    inline_all()
    on_small_thread(inline_all)
    print("done")
    """)
    assert "done" in out


def test_deeply_nested_json_is_refused():
    out = run_child(DEEP_PRELUDE + """
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    dag = ans.ComputeDAG([A, B])
    task = ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))
    deep = "[" * 100000 + "]" * 100000
    task_doc = json.loads(task.to_json())
    nested = json.dumps(task_doc)[:-1] + ', "extra": ' + '{"a": ' * 200000 + "1" + "}" * 200000 + "}"
    cases = [
        lambda: ans.State.from_json(dag, deep),
        lambda: ans.ComputeDAG.from_json(deep),
        lambda: ans.SearchTask.from_json(deep),
        lambda: ans.SearchTask.from_json(nested),
    ]
    for case in cases:
        for runner in (lambda f: f(), lambda f: on_small_thread(f)):
            try:
                runner(case)
            except ValueError as e:
                assert "nested more than 576 levels" in str(e), str(e)
            else:
                raise AssertionError("deep JSON was accepted")
    # Brackets inside strings do not count.
    text = json.dumps({"version": 1, "tensors": [], "outputs": [], "note": "[" * 1000})
    try:
        ans.ComputeDAG.from_json(text)
    except ValueError as e:
        assert "nested" not in str(e), str(e)
    print("done")
    """)
    assert "done" in out


def test_zero_dimensional_inputs_evaluate_and_build():
    import numpy as np
    import autosched as ans
    from autosched import te
    p0 = te.placeholder((), name="p0", dtype="float32")
    t = te.compute((3,), lambda i: p0[()] + 1.0, name="T")
    dag = ans.ComputeDAG([p0, t])
    x = np.array(2.0, dtype="float32")
    (want,) = ans.evaluate(dag, [x])
    out = np.zeros(3, "float32")
    ans.build(dag)(x, out)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(want, np.full(3, 3.0, "float32"))
