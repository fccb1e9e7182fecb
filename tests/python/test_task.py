"""Target, HardwareParams, the workload registry and SearchTask (JSON round trips across processes)."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import _core, te


# ---- Target and HardwareParams ----

def test_target_parsing():
    t = ans.Target("llvm -mcpu=sapphirerapids -num-cores=2 -fast-math")
    assert (t.kind, t.mcpu, t.num_cores) == ("llvm", "sapphirerapids", 2)
    assert t.has_option("fast-math") and str(ans.Target(str(t))) == str(t)
    g = ans.Target("opencl -device=mali")
    assert (g.kind, g.device) == ("opencl", "mali")


@pytest.mark.parametrize("text, message", [
    ("cuda", "unknown target kind 'cuda'"),
    ("llvm -numcores=2", "unknown target option '-numcores'"),
    ("llvm -num-cores=x", "positive integer, got 'x'"),
    ("llvm mcpu=skylake", "malformed target option 'mcpu=skylake'"),
])
def test_target_errors(text, message):
    with pytest.raises(ValueError, match=message):
        ans.Target(text)


def test_hardware_params_keywords_and_defaults():
    p = ans.HardwareParams(num_cores=3, warp_size=2)
    assert (p.num_cores, p.warp_size, p.cache_line_bytes) == (3, 2, 64)
    mali = ans.HardwareParams(target="opencl -device=mali", max_threads_per_block=128)
    assert (mali.max_threads_per_block, mali.warp_size, mali.max_shared_memory_per_block) == (128, 1, 32768)
    with pytest.raises(TypeError, match="unknown keyword 'numcores'"):
        ans.HardwareParams(numcores=2)
    with pytest.raises(TypeError, match="num_cores must be an int"):
        ans.HardwareParams(num_cores=2.5)
    assert ans.HardwareParams.from_json(p.to_json()) == p


# ---- SearchTask ----

@ans.register_workload
def matmul_add(n, l, m, dtype):
    a = te.placeholder((n, l), name="A", dtype=dtype)
    b = te.placeholder((l, m), name="B", dtype=dtype)
    c = te.placeholder((n, m), name="C", dtype=dtype)
    k = te.reduce_axis((0, l), name="k")
    mm = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul")
    out = te.compute((n, m), lambda i, j: mm[i, j] + c[i, j], name="out")
    return [a, b, c, out]


def test_search_task_from_function_and_name():
    # -no-host-check: Sapphire Rapids with all its features (AVX-512) on any host.
    target = "llvm -mcpu=sapphirerapids -no-host-check -num-cores=2"
    task = ans.SearchTask(func=matmul_add, args=(8, 4, 6, "float32"), target=target)
    assert task.workload_key == task.compute_dag.workload_key()
    assert task.hardware_params.num_cores == 2
    assert task.hardware_params.vector_unit_bytes == (64 if _core.has_llvm() else
                                                      ans.Target(target).hardware_params.vector_unit_bytes)
    assert task.target.text == target and task.desc == "matmul_add"
    by_name = ans.SearchTask(func="matmul_add", args=(8, 4, 6, "float32"), target=ans.Target(target))
    assert by_name.workload_key == task.workload_key
    other = ans.SearchTask(func=matmul_add, args=(8, 4, 6, "float64"), target=target)
    assert other.workload_key != task.workload_key
    custom = ans.SearchTask(compute_dag=task.compute_dag, target=target,
                            hardware_params=ans.HardwareParams(num_cores=7))
    assert custom.hardware_params.num_cores == 7


def test_search_task_errors():
    with pytest.raises(ValueError, match="no workload registered as 'nope'"):
        ans.SearchTask(func="nope", args=(), target="llvm")
    with pytest.raises(TypeError, match="target="):
        ans.SearchTask(func=matmul_add, args=(2, 2, 2, "float32"))
    with pytest.raises(TypeError, match="cannot be recorded"):
        ans.SearchTask(func=matmul_add, args=(2, 2, 2, object()), target="llvm")


def test_search_task_json_in_process():
    task = ans.SearchTask(func=matmul_add, args=(8, 4, 6, "float32"), target="opencl -device=mali")
    doc = json.loads(task.to_json())
    assert doc["version"] == 1 and doc["workload"]["name"] == "matmul_add"
    assert doc["hardware_params"]["max_threads_per_block"] == 256
    back = ans.SearchTask.from_json(task.to_json())
    assert back.workload_key == task.workload_key and back.target.text == "opencl -device=mali"
    assert back.hardware_params == task.hardware_params
    with pytest.raises(ValueError, match="version"):
        ans.SearchTask.from_json(json.dumps(dict(doc, version=42)))


WORKLOAD_MODULE = textwrap.dedent("""
    import autosched as ans
    from autosched import te

    @ans.register_workload
    def scaled_rowsum(n, m, scale):
        x = te.placeholder((n, m), name="x")
        k = te.reduce_axis((0, m), name="k")
        s = te.compute((n,), lambda i: te.sum(x[i, k] * scale, axis=k), name="s")
        return [x, s]
""")

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import autosched as ans
    task = ans.SearchTask.from_json(open(sys.argv[1]).read())
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = ans.evaluate(task.compute_dag, [x])
    print(json.dumps({"key": task.workload_key, "out": out.tolist(), "imported": "wl_module" in sys.modules}))
""")


def run_child(task_file, extra_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [extra_path, env.get("PYTHONPATH", "")] if p)
    result = subprocess.run([sys.executable, "-c", CHILD, str(task_file)], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_search_task_json_in_fresh_process(tmp_path, monkeypatch):
    (tmp_path / "wl_module.py").write_text(WORKLOAD_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import wl_module
    task = ans.SearchTask(func=wl_module.scaled_rowsum, args=(3, 4, 0.5), target="llvm -num-cores=1")
    task_file = tmp_path / "task.json"
    task_file.write_text(task.to_json())
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (expect,) = ans.evaluate(task.compute_dag, [x])

    with_function = run_child(task_file, str(tmp_path))  # the module is importable: rebuilt from it
    assert with_function["imported"]
    without_function = run_child(task_file, "")  # only the DAG stored in the JSON
    assert not without_function["imported"]
    for child in (with_function, without_function):
        assert child["key"] == task.workload_key
        np.testing.assert_array_equal(np.array(child["out"], dtype=np.float32), expect)


# ---- SearchTask.from_json ----

@ans.register_workload("task_json_rowsum")
def rowsum(n, m):
    x = te.placeholder((n, m), name="X")
    k = te.reduce_axis((0, m), name="k")
    return [x, te.compute((n,), lambda i: te.sum(x[i, k], axis=k), name="S")]


def test_task_from_json_falls_back_when_the_function_signature_changed():
    task = ans.SearchTask(func=rowsum, args=(3, 4), target="llvm -num-cores=1")
    text = task.to_json()

    @ans.register_workload("task_json_rowsum")
    def rowsum_now(n):  # noqa: ARG001  (the function now takes one argument fewer)
        raise AssertionError("not reached")

    try:
        with pytest.warns(UserWarning, match="could not be rebuilt.*TypeError"):
            back = ans.SearchTask.from_json(text)
    finally:
        ans.register_workload("task_json_rowsum")(rowsum)
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
