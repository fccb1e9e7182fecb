"""Target: the host CPU as LLVM detects it, a foreign -mcpu narrowed to this host (with a warning), code built
for another CPU without running it (-no-host-check), options that cannot be honoured refused, HardwareParams
from the target, pickling."""
import copy
import os
import re
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import _core, te

HOST = ans.Target.host()
HOST_HAS_AVX512 = "avx512f" in HOST.features


def run_child(code, timeout=120):
    """Runs `code` in a fresh interpreter (a fault there must not end the test run); returns its stdout."""
    prelude = "import numpy as np, autosched as ans\nfrom autosched import te, _core\n"
    # Without OPENBLAS_CORETYPE: a value for another CPU (leaked by an earlier test) would fault numpy's BLAS.
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert proc.returncode == 0, f"child ended with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---- the host ----

def test_host_target_prints_the_cpu_and_the_vector_width():
    t = ans.Target("llvm")
    assert t == HOST and t.kind == "llvm" and t.mcpu == ""
    assert t.cpu and t.cpu != "generic" or not _core.has_llvm()
    shown = str(t)
    assert shown.startswith("llvm  # host CPU " + t.cpu), shown
    assert f"vector_unit_bytes={t.hardware_params.vector_unit_bytes}" in shown
    assert f"{t.num_cores} core" in shown
    assert ans.Target(shown) == t  # str() parses back: '#' starts a comment
    assert repr(t).startswith('Target("llvm", host CPU ' + t.cpu) and t.text == "llvm"
    if os.path.exists("/proc/cpuinfo"):
        flags = next((line.split(":")[1].split() for line in open("/proc/cpuinfo") if line.startswith("flags")), [])
        for feature in ("avx2", "avx512f", "fma"):
            if flags:
                assert (feature in t.features) == (feature in flags), feature


def test_vector_width_follows_the_features_kept():
    width = HOST.hardware_params.vector_unit_bytes
    assert width == (64 if HOST_HAS_AVX512 else 32 if {"avx2", "avx"} & set(HOST.features) else 16)
    if _core.has_llvm():
        assert ans.Target("llvm -mcpu=sapphirerapids -no-host-check").hardware_params.vector_unit_bytes == 64
        assert ans.Target("llvm -mcpu=nehalem").hardware_params.vector_unit_bytes == 16


def test_register_file_and_fma_units_follow_the_features_kept():
    params = HOST.hardware_params
    assert params.num_vector_registers == (32 if HOST_HAS_AVX512 else 16)
    assert params.fma_units >= 1
    # Keywords, -1 ("from the target") and JSON know the fields like every other one.
    given = ans.HardwareParams(num_vector_registers=-1, fma_units=-1, target="llvm")
    assert (given.num_vector_registers, given.fma_units) == (params.num_vector_registers, params.fma_units)
    assert ans.HardwareParams(num_vector_registers=8, target="llvm").num_vector_registers == 8
    assert ans.HardwareParams.from_json(params.to_json()) == params
    if _core.has_llvm():
        wide = ans.Target("llvm -mcpu=sapphirerapids -no-host-check").hardware_params
        assert (wide.num_vector_registers, wide.fma_units) == (32, 2)
        narrow = ans.Target("llvm -mcpu=haswell -no-host-check").hardware_params
        assert (narrow.num_vector_registers, narrow.fma_units) == (16, 2)
    with pytest.raises(ValueError, match="num_vector_registers"):
        ans.HardwareParams(num_vector_registers=-3)


def test_num_cores_lives_in_the_target():
    cores = len(os.sched_getaffinity(0))
    assert HOST.num_cores == cores == HOST.hardware_params.num_cores
    assert ans.HardwareParams(target="llvm").num_cores == cores
    two = ans.Target("llvm -num-cores=2")
    assert two.num_cores == 2 == ans.SearchTask(compute_dag=_small_dag(), target=two).hardware_params.num_cores
    params = HOST.hardware_params
    assert params.cache_line_bytes > 0 and params.l1_cache_bytes >= 0 and params.l3_cache_bytes >= 0


# ---- a foreign -mcpu ----

@pytest.mark.needs_llvm
def test_foreign_cpu_warns_naming_the_dropped_features():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = ans.Target("llvm -mcpu=sapphirerapids")
    dropped = t.dropped_features
    assert t.cpu == "sapphirerapids" and not set(dropped) & set(t.features)
    if HOST_HAS_AVX512 and not dropped:
        assert not caught
        return
    assert "avx512f" in dropped or HOST_HAS_AVX512
    assert len(caught) == 1 and caught[0].category is UserWarning, caught
    message = str(caught[0].message)
    assert all(f in message for f in dropped), message
    assert "-no-host-check" in message
    assert caught[0].filename == __file__  # points at the line that made the target
    assert f"without {len(dropped)} of its features" in str(t)
    # Copies and unpickled targets do not warn again.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pickle.loads(pickle.dumps(t)) == t and copy.deepcopy(t) == t


@pytest.mark.needs_llvm
def test_code_built_for_a_foreign_cpu_runs_right_here():
    # In a child: code using a feature this host lacks would die of SIGILL.
    out = run_child("""
        import warnings
        warnings.simplefilter("ignore")
        n = 256
        a = te.placeholder((n, 64), name="a")
        b = te.placeholder((64, n), name="b")
        k = te.reduce_axis((0, 64), name="k")
        c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
        x8 = te.placeholder((n,), "int8", "x8")
        q = te.compute((n,), lambda i: x8[i] // te.const(4, "int8"), name="q")
        for cpu in ["sapphirerapids", "znver4", "graniterapids", "icelake-server"]:
            target = ans.Target("llvm -mcpu=" + cpu)
            dag = ans.ComputeDAG([a, b, c])
            s = dag.get_init_state()
            i, j, kk = s["c"].iters
            jo, ji = s.split("c", j, [16])
            s.reorder("c", [i, jo, kk, ji])
            s.vectorize("c", ji)
            s.parallel("c", i)
            mod = ans.build(dag, s, target)
            assert "avx512f" in target.features or "zmm" not in mod.get_source("asm"), cpu
            av = np.random.rand(n, 64).astype("float32")
            bv = np.random.rand(64, n).astype("float32")
            cv = np.zeros((n, n), "float32")
            mod(av, bv, cv)
            np.testing.assert_allclose(cv, ans.evaluate(dag, [av, bv])[0], rtol=1e-4)
            dag8 = ans.ComputeDAG([x8, q])
            s8 = dag8.get_init_state()
            s8.vectorize("q", s8.split("q", s8["q"].iters[0], [64])[1])
            m8 = ans.build(dag8, s8, target)
            xv, qv = np.arange(-128, 128, dtype="int8"), np.zeros(n, "int8")
            m8(xv, qv)
            assert (qv == ans.evaluate(dag8, [xv])[0]).all(), cpu
            print(cpu, "ok")
    """)
    assert out.count(" ok") == 4, out


@pytest.mark.needs_llvm
def test_no_host_check_builds_for_another_cpu_without_running_it():
    target = ans.Target("llvm -mcpu=sapphirerapids -no-host-check")
    assert not target.host_check and not target.dropped_features and "avx512f" in target.features
    dag = _small_dag(256)
    s = dag.get_init_state()
    s.vectorize("b", s.split("b", s["b"].iters[0], [16])[1])
    mod = ans.build(dag, s, target)
    assert "zmm" in mod.get_source("asm") and "<16 x float>" in mod.get_source("ll")
    a, b = np.ones(256, "float32"), np.zeros(256, "float32")
    if not target.missing_features:  # this host runs it
        mod(a, b)
        assert (b == 2).all()
        return
    # What this host lacks depends on the host (AVX2-only machines lack avx512f, AVX-512 ones
    # others such as amx-tile or enqcmd): every missing feature is named.
    missing = target.missing_features
    assert missing and all(f in mod.cannot_run for f in missing)
    with pytest.raises(ValueError, match="cannot run on this host.*-no-host-check.*" + re.escape(missing[0])):
        mod(a, b)
    with pytest.raises(ValueError, match="cannot run on this host"):
        mod.time_evaluator()(a, b)
    assert not b.any()


# ---- options that cannot be honoured ----

@pytest.mark.parametrize("text, message", [
    ("llvm -mtriple=nosucharch-linux-gnu", "names no architecture that LLVM knows"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=znver3", "unknown -mcpu 'znver3' for aarch64"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=native", "means this host's CPU"),
    ("llvm -opt-level=4", "-opt-level needs 0, 1, 2 or 3, got '4'"),
    ("llvm -mattr=avx2", "must be \\+feature or -feature"),
    ("llvm -mcpu=notacpu", "unknown -mcpu 'notacpu'"),
    ("llvm -no-host-check=1", "flag"),
])
def test_options_that_cannot_be_honoured_are_refused(text, message):
    if "aarch64" in text and os.uname().machine != "x86_64":
        pytest.skip("checks a foreign architecture from x86_64")
    if ("mcpu" in text or "mattr" in text or "mtriple" in text) and not _core.has_llvm():
        pytest.skip("built without LLVM")
    with pytest.raises(ValueError, match=message):
        ans.Target(text)


@pytest.mark.needs_llvm
def test_unknown_mattr_feature_is_refused_and_same_host_triple_accepted():
    with pytest.raises(ValueError, match="unknown CPU feature 'avx9000'"):
        ans.Target("llvm -mattr=+avx9000")
    if os.uname().machine == "x86_64":
        assert ans.Target("llvm -mtriple=x86_64-linux-gnu").cpu == HOST.cpu


@pytest.mark.needs_llvm
@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_opt_level_is_honoured(level):
    dag = _small_dag(100)
    mod = ans.build(dag, target=f"llvm -opt-level={level}")
    a, b = np.random.rand(100).astype("float32"), np.zeros(100, "float32")
    mod(a, b)
    np.testing.assert_array_equal(b, ans.evaluate(dag, [a])[0])
    vectorized = "x float>" in mod.get_source("ll")  # LLVM's loop vectorizer runs from O2 on
    assert vectorized == (level == 3) or level in (1, 2)


def test_opencl_targets_build_where_there_is_a_device():
    """tests/python/test_opencl.py checks the backend; here only the dispatch on the target's kind."""
    if not ans.opencl.available():
        with pytest.raises(ValueError, match="no OpenCL platform|without OpenCL"):
            ans.build(_small_dag(), target="opencl -device=pocl")
        return
    mod = ans.build(_small_dag(), target="opencl -device=pocl")
    assert "__kernel" in mod.get_source() and "cl" in mod.source_formats


# ---- pickling ----

def test_target_and_hardware_params_pickle_and_deep_copy():
    for t in [HOST, ans.Target("llvm -num-cores=3 -fast-math -opt-level=2"), ans.Target("opencl -device=mali")]:
        for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
            assert back == t and back.text == t.text and back.num_cores == t.num_cores
    for p in [HOST.hardware_params, ans.HardwareParams(num_cores=3, warp_size=2, l2_cache_bytes=1 << 20),
              ans.HardwareParams(target="opencl -device=nvidia")]:
        for back in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p)):
            assert back == p and repr(back) == repr(p)


def test_hardware_params_json_without_cache_fields_still_loads():
    old = '{"num_cores": 4, "vector_unit_bytes": 32, "cache_line_bytes": 64, "max_shared_memory_per_block": 0, ' \
          '"max_local_memory_per_block": 0, "max_threads_per_block": 0, "max_vthread_extent": 0, "warp_size": 0}'
    p = ans.HardwareParams.from_json(old)
    assert (p.num_cores, p.vector_unit_bytes, p.l1_cache_bytes) == (4, 32, 0)


def _small_dag(n=8):
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="b")
    return ans.ComputeDAG([a, b])


# ---- the mobile-GPU tutorials' positional HardwareParams, with -1 for "take it from the target" ----

def test_hardware_params_positional_as_the_mobile_gpu_tutorials_write_them():
    p = ans.HardwareParams(-1, 16, 64, 32768, 65536, 256, 4, 1)
    assert (p.num_cores, p.vector_unit_bytes, p.cache_line_bytes, p.max_shared_memory_per_block,
            p.max_local_memory_per_block, p.max_threads_per_block, p.max_vthread_extent,
            p.warp_size) == (-1, 16, 64, 32768, 65536, 256, 4, 1)
    # A task resolves -1 from its target: the Mali family default has 4 compute units.
    mali = ans.Target("opencl -device=mali")
    task = ans.SearchTask(compute_dag=_small_dag(), target=mali, hardware_params=p)
    assert task.hardware_params.num_cores == ans.HardwareParams(target=mali).num_cores == 4
    assert task.hardware_params.max_threads_per_block == 256
    # With a target given, -1 is resolved at once; keywords mix with positions.
    q = ans.HardwareParams(-1, 16, target="opencl -device=mali", max_threads_per_block=64)
    assert (q.num_cores, q.vector_unit_bytes, q.max_threads_per_block) == (4, 16, 64)
    # A CPU task resolves -1 cores to the target's.
    cpu = ans.SearchTask(compute_dag=_small_dag(), target="llvm -num-cores=3",
                         hardware_params=ans.HardwareParams(-1, 32, 64))
    assert cpu.hardware_params.num_cores == 3
    # The resolved task survives JSON.
    assert ans.SearchTask.from_json(task.to_json()).hardware_params == task.hardware_params


def test_hardware_params_positional_errors_name_the_problem():
    with pytest.raises(TypeError, match="at most 8 positional arguments"):
        ans.HardwareParams(-1, 16, 64, 32768, 65536, 256, 4, 1, 5)
    with pytest.raises(TypeError, match="num_cores both by position and by keyword"):
        ans.HardwareParams(4, num_cores=2)
    with pytest.raises(ValueError, match="vector_unit_bytes must not be negative"):
        ans.HardwareParams(-1, -2)
    with pytest.raises(TypeError, match="cache_line_bytes must be an int"):
        ans.HardwareParams(-1, 16, "64")


def test_a_target_exposes_its_kinds_capabilities():
    assert _core.target_kinds()[:2] == ["llvm", "opencl"]
    cpu, gpu, pocl = ans.Target("llvm"), ans.Target("opencl -device=mali"), ans.Target("opencl -device=pocl")
    assert cpu.kind == "llvm" and cpu.kind.name == "llvm" and gpu.kind.name == "opencl"
    assert (cpu.is_gpu, cpu.runs_in_host_process, cpu.runs_on_host_cpu, cpu.timed_by_device) == (False, True, True,
                                                                                                 False)
    assert not cpu.fault_restarts_worker and cpu.has_backend == _core.has_llvm()
    assert (gpu.is_gpu, gpu.runs_in_host_process, gpu.runs_on_host_cpu, gpu.timed_by_device) == (True, False, False,
                                                                                                 True)
    assert gpu.fault_restarts_worker and gpu.has_backend == _core.has_opencl()
    assert pocl.is_gpu and pocl.runs_on_host_cpu  # OpenCL on the CPU: GPU rules, CPU peaks
    with pytest.raises(ValueError, match="has no device of this machine to query"):
        cpu.device_hardware_params()
    with pytest.raises(ValueError, match="unknown target kind 'cuda'.*expected one of llvm, opencl"):
        ans.Target("cuda")
