"""Checks of the schedule layer and the Python API at their edges: split lengths past 32 bits, a state built
for another DAG, the benchmarks' OpenBLAS setting, task JSON from older logs, printed steps that replay with
duplicate stage names, argument types of split / te.sum / evaluate, and rfactor of fused reduce axes."""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import te
from autosched.state import lower_state_text
from schedule_helpers import assert_close, check, random_inputs

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX = 2**31 - 1


def vector_double(n=16):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * 2, name="B")
    return ans.ComputeDAG([a, b]), b


# ---- split lengths are 32-bit, like shapes ----

@pytest.mark.parametrize("length", [2**31, 2**32 + 4, 2**63, 2**70])
def test_split_lengths_past_32_bits_are_refused(length):
    dag, b = vector_double()
    s = dag.get_init_state()
    with pytest.raises(ValueError) as info:
        s.split(b, 0, [length])
    message = str(info.value)
    assert "step 0 (split)" in message and str(length) in message and str(MAX) in message
    assert "32-bit" in message and "incompatible function arguments" not in message
    assert s.core.num_steps == 0


@pytest.mark.parametrize("length, words", [(0, "bad factor 0"), (-3, "bad factor -3"), (-2**70, "bad factor -")])
def test_split_lengths_below_one_are_refused(length, words):
    dag, b = vector_double()
    with pytest.raises(ValueError, match=words):
        dag.get_init_state().split(b, 0, [length])


def test_split_lengths_past_32_bits_are_refused_from_json():
    dag, b = vector_double()
    record = json.dumps([["SP", 1, 0, 16, [2**32 + 4], True]])
    with pytest.raises(ValueError, match="length 4294967300, more than 2147483647"):
        ans.State.from_json(dag, record)


def test_split_and_fuse_ranges_past_32_bits_are_refused():
    dag, b = vector_double()
    with pytest.raises(ValueError, match="multiply to more than 2147483647"):
        dag.get_init_state().split(b, 0, [2**16, 2**16])
    big = te.placeholder((MAX,), name="Big")
    twice = te.compute((MAX,), lambda i: big[i] * 2, name="T")
    big_dag = ans.ComputeDAG([big, twice])
    with pytest.raises(ValueError, match="covers 2147483650 iterations"):  # 2 parts of 2^30 + 1
        big_dag.get_init_state().split(twice, 0, [2**30 + 1])
    x = te.placeholder((2**20,), name="X")
    y = te.placeholder((2**20,), name="Y")
    k, l = te.reduce_axis((0, 2**20), name="k"), te.reduce_axis((0, 2**20), name="l")
    outer = te.compute((1,), lambda i: te.sum(x[k] * y[l], axis=[k, l]), name="O")
    s = ans.ComputeDAG([x, y, outer]).get_init_state()
    with pytest.raises(ValueError, match="fuse of \\[1, 2\\].*more than 2147483647"):
        s.fuse(outer, [1, 2])


def test_largest_split_length_is_accepted():
    dag, b = vector_double()
    s = dag.get_init_state()
    outer, inner = s.split(b, 0, [MAX])
    assert (outer.extent, inner.extent) == (1, MAX)


# ---- a state builds only for its own DAG ----

def test_build_refuses_a_state_of_another_dag():
    dag1, b1 = vector_double()
    a2 = te.placeholder((16,), name="A")
    dag2 = ans.ComputeDAG([a2, te.compute((16,), lambda i: a2[i] * 3, name="B")])
    s = dag1.get_init_state()
    s.split(b1, 0, [4])
    with pytest.raises(ValueError, match="state was made from a different DAG"):
        ans.build(dag2, s)
    with pytest.raises(ValueError, match="different DAG"):
        ans.build(ans.SearchTask(compute_dag=dag2, target="llvm"), s)
    # A DAG built again the same way is the same DAG: the state builds for it, with dag1's results.
    same, _ = vector_double()
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    ans.build(same, s)(a, out)
    np.testing.assert_array_equal(out, a * 2)


# ---- the benchmarks set OPENBLAS_CORETYPE only on AVX-512 CPUs ----

def load_bench_env():
    spec = importlib.util.spec_from_file_location("bench_env", ROOT / "bench" / "_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_env_sets_coretype_only_with_avx512(tmp_path, monkeypatch):
    env = load_bench_env()
    # The helper writes os.environ; a private copy keeps its writes from reaching later tests (a
    # SkylakeX core type left behind kills numpy in children on CPUs without AVX-512).
    monkeypatch.setattr(os, "environ", dict(os.environ))
    without = tmp_path / "cpuinfo_avx2"
    without.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n\n")
    with_512 = tmp_path / "cpuinfo_avx512"
    with_512.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 avx512f avx512bw\n\n")
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    assert not env.cpu_has_avx512f(str(without)) and env.cpu_has_avx512f(str(with_512))
    assert env.set_openblas_coretype(str(without)) is None and "OPENBLAS_CORETYPE" not in os.environ
    assert not env.cpu_has_avx512f(str(tmp_path / "missing"))
    assert env.set_openblas_coretype(str(with_512)) == "SkylakeX"
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")  # a value given by the user is kept
    assert env.set_openblas_coretype(str(with_512)) == "Haswell"


def test_bench_scripts_and_readme_leave_coretype_to_the_helper():
    for script in (ROOT / "bench").glob("bench_*.py"):
        text = script.read_text()
        assert "import _env" in text and "_env.set_openblas_coretype()" in text, script.name
        assert "SkylakeX" not in text, f"{script.name} names a core type itself"
        # numpy loads OpenBLAS, directly or through autosched
        first_numpy = min(text.find(m) for m in ("import numpy", "import autosched") if m in text)
        assert text.index("_env.set_openblas_coretype()") < first_numpy, script.name
    readme = (ROOT / "README.md").read_text()
    assert "OPENBLAS_CORETYPE=SkylakeX python3" not in readme and "avx512f" in readme


def test_bench_prologue_then_numpy_matmul_runs_on_this_cpu():
    """What the scripts do before timing, in a child (SIGILL would kill it): the helper, then a matmul."""
    code = ("import os, sys; sys.path.insert(0, 'bench'); import _env; value = _env.set_openblas_coretype(); "
            "import numpy as np; a = np.ones((64, 64), np.float32); assert (a @ a)[0, 0] == 64; print(value)")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    with open("/proc/cpuinfo") as f:
        avx512 = any(line.startswith("flags") and "avx512f" in line.split() for line in f)
    assert result.stdout.strip() == ("SkylakeX" if avx512 else "None")


# ---- SearchTask.from_json ----

@ans.register_workload("hardening_rowsum")
def rowsum(n, m):
    x = te.placeholder((n, m), name="X")
    k = te.reduce_axis((0, m), name="k")
    return [x, te.compute((n,), lambda i: te.sum(x[i, k], axis=k), name="S")]


def test_task_from_json_falls_back_when_the_function_signature_changed():
    task = ans.SearchTask(func=rowsum, args=(3, 4), target="llvm -num-cores=1")
    text = task.to_json()

    @ans.register_workload("hardening_rowsum")
    def rowsum_now(n):  # noqa: ARG001  (the function now takes one argument fewer)
        raise AssertionError("not reached")

    try:
        with pytest.warns(UserWarning, match="could not be rebuilt.*TypeError"):
            back = ans.SearchTask.from_json(text)
    finally:
        ans.register_workload("hardening_rowsum")(rowsum)
    assert back.workload_key == task.workload_key
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = ans.evaluate(back.compute_dag, [x])
    np.testing.assert_allclose(out, x.sum(axis=1))


def test_task_from_json_without_the_function_is_quiet():
    task = ans.SearchTask(func=rowsum, args=(3, 4), target="llvm -num-cores=1")
    doc = json.loads(task.to_json())
    doc["workload"] = {"name": "not_registered_here", "args": [3, 4], "module": None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = ans.SearchTask.from_json(json.dumps(doc))
    assert back.workload_key == task.workload_key


@pytest.mark.parametrize("workload", [5, "rowsum", [1], {"name": 3, "args": []}, {"name": "x", "args": 2}])
def test_task_from_json_refuses_a_malformed_workload_record(workload):
    doc = json.loads(ans.SearchTask(func=rowsum, args=(3, 4), target="llvm").to_json())
    doc["workload"] = workload
    with pytest.raises(ValueError, match="field 'workload' must be an object"):
        ans.SearchTask.from_json(json.dumps(doc))


@pytest.mark.parametrize("field", ["num_cores", "vector_unit_bytes", "warp_size"])
def test_task_from_json_validates_hardware_params_like_the_constructor(field):
    with pytest.raises(ValueError, match=f"{field} must not be negative"):
        ans.HardwareParams(**{field: -2})
    doc = json.loads(ans.SearchTask(func=rowsum, args=(3, 4), target="llvm").to_json())
    doc["hardware_params"][field] = -4
    with pytest.raises(ValueError, match=f"{field} must not be negative.*got -4"):
        ans.SearchTask.from_json(json.dumps(doc))
    with pytest.raises(ValueError, match=f"{field} must not be negative"):
        ans.HardwareParams.from_json(json.dumps({field: -3}))
    params = ans.HardwareParams()
    with pytest.raises(ValueError, match=f"{field} must not be negative"):
        setattr(params, field, -2)
    with pytest.raises(TypeError, match=f"{field} must be an int"):
        setattr(params, field, 2.5)
    with pytest.raises(ValueError, match=f"{field} is too large"):
        ans.HardwareParams(**{field: 2**70})
    params.num_cores = 3
    assert params.num_cores == 3


def test_task_from_json_validates_field_types():
    doc = json.loads(ans.SearchTask(func=rowsum, args=(3, 4), target="llvm").to_json())
    with pytest.raises(ValueError, match="num_cores must be an integer, got \"2\""):
        ans.SearchTask.from_json(json.dumps(dict(doc, hardware_params={"num_cores": "2"})))
    with pytest.raises(ValueError, match="'desc' must be a string"):
        ans.SearchTask.from_json(json.dumps(dict(doc, desc=7)))
    with pytest.raises(ValueError, match="unknown target kind"):
        ans.SearchTask.from_json(json.dumps(dict(doc, target="cuda")))


# ---- printed steps replay, also with duplicate stage names ----

def dup_names_dag():
    """Two unnamed element-wise stages and two unnamed reductions: every compute is called "compute"."""
    a = te.placeholder((7, 10), name="A")
    x = te.compute((7, 10), lambda i, j: a[i, j] + 1)
    y = te.compute((7, 10), lambda i, j: x[i, j] * 2)
    k = te.reduce_axis((0, 10), name="k")
    r = te.compute((7,), lambda i: te.sum(y[i, k], axis=k))
    k2 = te.reduce_axis((0, 7), name="k")
    total = te.compute((1,), lambda i: te.sum(r[k2] * 0.5, axis=k2))
    return ans.ComputeDAG([a, total])


def replay_printed(dag, s):
    code = dag.print_python_steps(s)
    fresh = dag.get_init_state()
    exec(code, {"s": fresh})  # noqa: S102  (the printed steps are the API's own calls)
    assert fresh == s and str(fresh) == str(s), code
    assert lower_state_text(fresh) == lower_state_text(s), code
    check(dag, fresh)
    return code


def test_printed_steps_replay_with_duplicate_stage_names():
    dag = dup_names_dag()
    assert [st.name for st in dag.get_init_state().stages].count("compute") == 4
    s = dag.get_init_state()
    s.split(2, 0, [3])      # the second element-wise "compute"
    s.split(1, 1, [4])      # the first one
    s.compute_at(1, 2, 0)
    s.cache_write(3, "local")
    rf = s.rfactor(s.stages[-1].index, 1, 0)
    s.split(rf, 0, [2])
    code = replay_printed(dag, s)
    assert 's.cache_write(3, "local")' in code and "s.split(2, 0, [3])" in code
    assert 's.split("compute.rf", 0, [2])' in code  # a unique name is still printed as the name


def test_printed_steps_replay_with_cache_write_and_rfactor_twice():
    dag = dup_names_dag()
    s = dag.get_init_state()
    s.cache_write(3, "local")  # the first reduction: "compute.local" at 3, its copy "compute" at 4
    s.cache_write(5, "local")  # the second: "compute.local" is taken, so "compute.local_1"
    index = {st.name: st.index for st in s.stages}
    s.split(index["compute.local"], 1, [4])
    s.rfactor("compute.local", 2, 0)
    s.split("compute.local_1", 1, [3])
    s.rfactor("compute.local_1", 1, 1)
    names = [st.name for st in s.stages]
    assert names.count("compute") == 4 and "compute.local.rf" in names and "compute.local_1.rf" in names
    code = replay_printed(dag, s)
    assert 's.cache_write(3, "local")' in code and 's.cache_write(5, "local")' in code
    assert 's.rfactor("compute.local_1", 1, 1)' in code


def test_printed_steps_quote_names_as_python():
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + 1, name='B"q\\')
    dag = ans.ComputeDAG([a, b])
    s = dag.get_init_state()
    s.split(b, 0, [2])
    assert "s.split(\"B\\\"q\\\\\", 0, [2])" in replay_printed(dag, s)


# ---- argument types ----

def test_split_takes_one_int_and_refuses_non_integral_lengths():
    dag, b = vector_double()
    s = dag.get_init_state()
    outer, inner = s.split(b, 0, 4)
    assert (outer.extent, inner.extent) == (4, 4)
    s2 = dag.get_init_state()
    s2.split(b, 0, [np.int64(4)])
    assert s2 == s
    for bad in ([2.7], 2.7, [2.0], [True], ["4"], [np.float32(3)]):
        with pytest.raises(TypeError, match="split lengths must be integers"):
            dag.get_init_state().split(b, 0, bad)
    with pytest.raises(TypeError, match="an int or a list of ints"):
        dag.get_init_state().split(b, 0, object())
    check(dag, s)


def test_duplicate_reduce_axes_are_refused():
    a = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    for reduce in (te.sum, te.prod, te.max, te.min):
        with pytest.raises(ValueError, match="reduce axis 'k' is given more than once"):
            reduce(a[k, k], axis=[k, k])
    other = te.reduce_axis((0, 4), name="k")  # same name, another axis: fine
    c = te.compute((1,), lambda i: te.sum(a[k, other], axis=[k, other]), name="C")
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    (out,) = ans.evaluate(ans.ComputeDAG([a, c]), [x])
    np.testing.assert_allclose(out, [x.sum()])


def test_evaluate_refuses_dtypes_a_module_refuses():
    dag, b = vector_double()
    x64 = np.arange(16, dtype=np.float64)
    out = np.zeros(16, np.float32)
    with pytest.raises(TypeError, match="must have dtype float32, got float64"):
        ans.build(dag)(x64, out)
    with pytest.raises(TypeError, match="input 0 \\(tensor 'A'\\) must have dtype float32, got float64"):
        ans.evaluate(dag, [x64])
    with pytest.raises(TypeError, match="must have dtype float32, got int32"):
        ans.evaluate_points(dag, [np.arange(16, dtype=np.int32)], 0, [(0,)])
    with pytest.raises(TypeError, match="must be a numpy.ndarray, got list"):
        ans.evaluate(dag, [list(range(16))])
    (ok,) = ans.evaluate(dag, [x64.astype(np.float32)])
    np.testing.assert_array_equal(ok, x64 * 2)


# ---- rfactor of fused reduce axes ----

def two_axis_sum(n, kk, ll, k_lo=0, combiner=te.sum, where=False):
    """out[i] = reduce over k in [k_lo, kk), l in [0, ll) of A[i, k, l] * (l + 1)."""
    a = te.placeholder((n, kk, ll), name="A")
    k = te.reduce_axis((k_lo, kk), name="k")
    l = te.reduce_axis((0, ll), name="l")
    cond = (k + l) % 3 != 1 if where else None
    out = te.compute((n,), lambda i: combiner(a[i, k, l] * (l + 1).astype("float32"), axis=[k, l], where=cond),
                     name="out")
    return ans.ComputeDAG([a, out]), out


def numpy_two_axis(x, k_lo, where, reduce=np.sum):
    n, kk, ll = x.shape
    vals = x * (np.arange(ll, dtype=np.float32) + 1)
    mask = np.zeros((kk, ll), bool)
    mask[k_lo:, :] = True
    if where:
        kgrid, lgrid = np.meshgrid(np.arange(kk), np.arange(ll), indexing="ij")
        mask &= (kgrid + lgrid) % 3 != 1
    fill = 0 if reduce is np.sum else -np.inf
    return reduce(np.where(mask, vals, fill), axis=(1, 2))


def fused_rfactor(s, out, split, which, pos):
    fused = s.fuse(out, [1, 2])
    if split:
        s.split(out, fused, split)
        fused = s[out].iters[1 + which]
    return s.rfactor(out, fused, pos)


@pytest.mark.parametrize("shape, k_lo, split, which, pos, where", [
    ((3, 7, 5), 0, None, 0, 0, False),      # the fused iterator itself
    ((3, 7, 5), 0, [4], 1, 1, False),       # inner part of a non-dividing split of it
    ((2, 7, 5), 0, [4], 0, 0, False),       # outer part
    ((3, 11, 3), 4, [5], 0, 1, True),       # a reduce axis not starting at 0, with a condition
    ((2, 5, 7), 0, [3, 2], 1, 0, False),    # middle part of a three-way split
    ((1, 13, 1), 0, [6], 1, 0, True),
])
def test_rfactor_of_fused_reduce_axes(shape, k_lo, split, which, pos, where):
    dag, out = two_axis_sum(*shape, k_lo=k_lo, where=where)
    s = dag.get_init_state()
    rf = fused_rfactor(s, out, split, which, pos)
    rf_stage = s[rf]
    assert [it.kind for it in rf_stage.iters].count("spatial") == 2
    x = random_inputs(dag, np.random.default_rng(1))[0]
    (ref,) = ans.evaluate(dag, [x])
    assert_close(ref, numpy_two_axis(x, k_lo, where), "float32")
    got = np.zeros(shape[0], np.float32)
    ans.build(dag, s)(x, got)
    assert_close(got, ref, "float32", message=str(s))
    replay_printed(dag, s)


def test_rfactor_of_a_fuse_across_split_parts_of_two_axes():
    dag, out = two_axis_sum(3, 7, 5)
    s = dag.get_init_state()
    s.split(out, 1, [3])    # i, k.0, k.1, l
    s.split(out, 3, [2])    # i, k.0, k.1, l.0, l.1
    ki_lo = s.fuse(out, [2, 3])
    s.rfactor(out, ki_lo, 1)
    s.parallel(out, 0)
    check(dag, s)


def test_rfactor_of_a_fused_max_reduction_keeps_guarded_values_out():
    dag, out = two_axis_sum(2, 7, 3, combiner=te.max)
    s = dag.get_init_state()
    fused_rfactor(s, out, [4], 1, 0)
    x = random_inputs(dag, np.random.default_rng(2))[0] - 3  # all negative: a stray 0 would win
    got = np.zeros(2, np.float32)
    ans.build(dag, s)(x, got)
    assert_close(got, numpy_two_axis(x, 0, False, reduce=np.max), "float32")


def test_rfactor_of_split_parts_fused_back_without_reduce_left():
    a = te.placeholder((7,), name="A")
    k = te.reduce_axis((0, 7), name="k")
    total = te.compute((1,), lambda i: te.sum(a[k], axis=k), name="T")
    dag = ans.ComputeDAG([a, total])
    s = dag.get_init_state()
    s.split(total, 1, [3])    # 3 x 3 = 9 iterations for 7 values
    s.fuse(total, [1, 2])
    s.rfactor(total, 1, 0)    # nothing left to reduce in the rf stage; 2 of its 9 elements are identities
    x = np.arange(1, 8, dtype=np.float32)
    got = np.zeros(1, np.float32)
    ans.build(dag, s)(x, got)
    assert got[0] == x.sum()


def test_reduce_axis_not_starting_at_zero_lowers_from_its_lower_bound():
    """Loops count from 0; the reduce axis's value adds its lower bound (also in the region a producer
    computed at a loop of the reduction has to cover)."""
    a = te.placeholder((4, 9), name="A")
    sq = te.compute((4, 9), lambda i, j: a[i, j] * a[i, j], name="Sq")
    k = te.reduce_axis((3, 8), name="k")
    out = te.compute((4,), lambda i: te.sum(sq[i, k], axis=k), name="Out")
    dag = ans.ComputeDAG([a, out])
    x = random_inputs(dag, np.random.default_rng(3))[0]
    want = (x[:, 3:8] ** 2).sum(axis=1)
    s_plain = dag.get_init_state()
    s_at = dag.get_init_state()
    s_at.split(out, 1, [2])
    s_at.compute_at(sq, out, 1)  # Sq per k.0: the columns 3 + 2 * k.0 and 4 + 2 * k.0
    for s in (s_plain, s_at):
        (ref,) = ans.evaluate(dag, [x])
        assert_close(ref, want, "float32")
        got = np.zeros(4, np.float32)
        ans.build(dag, s)(x, got)
        assert_close(got, want, "float32", message=str(s))
