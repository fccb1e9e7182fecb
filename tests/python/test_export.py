"""Deployable artifacts (autosched/deploy/runtime.py, graph/export.py): a built kernel or network written as one file
and loaded in a fresh process that compiles nothing (its JIT count stays 0), giving the same outputs; a file
whose code uses CPU features this host lacks is refused, naming them; pickling goes through the same file;
OpenCL modules load from the driver's binary; files that are not artifacts are refused clearly."""
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
import zipfile

import numpy as np
import pytest

import autosched as ans
from autosched import te
from autosched.graph import zoo
from autosched.deploy.runtime import ArtifactError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Children import the autosched this process imported: the tree's python/ in development, the installed
# package in CI (the tree's python/ holds no compiled extension there).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(ans.__file__))

needs_llvm = pytest.mark.skipif(not ans._core.has_llvm(), reason="needs the LLVM backend")


def _child(code, timeout=120):
    """Runs `code` in a fresh interpreter importing this tree; returns its stdout (fails on a non-zero exit)."""
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _matmul(target="llvm", n=48):
    a = te.placeholder((n, 32), name="a")
    b = te.placeholder((32, n), name="b")
    k = te.reduce_axis((0, 32), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    dag = ans.ComputeDAG([a, b, c])
    state = dag.get_init_state()
    state.parallel(c, state[c].iters[0])
    return ans.build(dag, state, target=target)


def _foreign_target():
    """A target text with -no-host-check whose CPU has features this host lacks (AMX on an AMD host, SSE4a on
    an Intel one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cpu in ("sapphirerapids", "znver3"):
            text = f"llvm -mcpu={cpu} -no-host-check"
            missing = ans.Target(text).missing_features
            if missing:
                return text, missing
    raise AssertionError("this host has every feature of both sapphirerapids and znver3")


@needs_llvm
def test_exported_kernel_loads_in_a_fresh_process_without_compiling(tmp_path):
    mod = _matmul()
    rng = np.random.default_rng(0)
    a, b = rng.random((48, 32), np.float32), rng.random((32, 48), np.float32)
    c = np.zeros((48, 48), np.float32)
    mod(a, b, c)
    path = tmp_path / "mm.so"
    mod.export_library(path)
    np.savez(tmp_path / "io.npz", a=a, b=b, c=c)
    with open(path, "rb") as f:
        assert f.read(4) == b"\x7fELF"  # the file is the shared library, with the archive after it
    assert zipfile.ZipFile(path).namelist()[0] == "autosched.json"
    out = _child(f"""
        import numpy as np, autosched as ans
        mod = ans.runtime.load_module({str(path)!r})
        io = np.load({str(tmp_path / "io.npz")!r})
        c = np.zeros_like(io["c"])
        mod(io["a"], io["b"], c)
        assert np.array_equal(c, io["c"]), np.abs(c - io["c"]).max()
        assert mod.arg_specs == [("a", "float32", (48, 32)), ("b", "float32", (32, 48)), ("c", "float32", (48, 48))]
        assert "lowered" in mod.source_formats and "ll" in mod.source_formats
        mod.time_evaluator(number=2, repeat=2)(io["a"], io["b"], c)
        print("counts", ans.runtime.compile_counts())
    """)
    assert "counts {'llvm_jit': 0, 'opencl_source': 0, 'opencl_binary': 0}" in out, out
    # A loaded kernel checks its arguments as a built one does.
    loaded = ans.runtime.load_module(path)
    with pytest.raises(ValueError, match="argument 0 .'a'. must have shape"):
        loaded(np.zeros((2, 2), np.float32), b, c)


@needs_llvm
def test_exported_kernel_refuses_a_cpu_without_its_features(tmp_path):
    text, missing = _foreign_target()
    mod = _matmul(text)
    assert mod.cannot_run  # built for that CPU, not runnable here
    path = tmp_path / "foreign.so"
    mod.export_library(path)  # the object code is written all the same
    with pytest.raises(ArtifactError) as err:
        ans.runtime.load_module(path)
    message = str(err.value)
    assert all(f in message for f in missing), message
    assert "lacks" in message and text.split()[1].split("=")[1] in message, message


@needs_llvm
def test_exported_resnet18_loads_in_a_fresh_process_and_equals_the_built_one(tmp_path):
    net = ans.graph.build(zoo.get_model("resnet18"), "llvm", verbose=False)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    expected, = net(x)
    path = tmp_path / "r18.so"
    net.export_library(path)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", expected)
    groups = len(net.groups)  # the blocked-layout pass adds the input's transform on CPUs
    out = _child(f"""
        import time, numpy as np, autosched as ans
        start = time.perf_counter()
        net = ans.graph.load_module({str(path)!r})
        print(f"load_module {{time.perf_counter() - start:.3f}} s")
        x, y = np.load({str(tmp_path / "x.npy")!r}), np.load({str(tmp_path / "y.npy")!r})
        out, = net(x)
        np.testing.assert_allclose(out, y, rtol=1e-5, atol=1e-5 * float(np.abs(y).max()))
        assert len(net.groups) == {groups} and len(net.untuned) == {groups} and net.groups[0].record["desc"]
        assert net.input_names == ["data"] and net.graph.shape("data") == (1, 3, 224, 224)
        print("counts", ans.runtime.compile_counts())
    """)
    assert "'llvm_jit': 0" in out, out
    print(out)


@needs_llvm
def test_graph_module_pickles_through_its_artifact():
    rng = np.random.default_rng(0)
    g = ans.graph.Graph("two_dense")
    x = g.add_input("x", (2, 16))
    y = g.add_node("relu", [g.add_node("dense", [x, g.add_constant("w1", rng.random((8, 16), np.float32))])])
    z = g.add_node("dense", [y, g.add_constant("w2", rng.random((4, 8), np.float32))], name="z")
    g.set_outputs([z, y])  # y is an output and an intermediate
    graph = g
    net = ans.graph.build(graph, "llvm", verbose=False)
    x = np.random.default_rng(2).standard_normal(net.graph.shape(net.input_names[0])).astype(np.float32)
    again = pickle.loads(pickle.dumps(net))
    assert [np.array_equal(a, b) for a, b in zip(again(x), net(x))] == [True] * len(net.output_names)
    assert again.memory_plan == net.memory_plan and again.output_labels == net.output_labels
    # A loaded network pickles from the file it came from (no compiler needed).
    assert np.array_equal(pickle.loads(pickle.dumps(again))(x)[0], net(x)[0])


@pytest.mark.skipif(not ans.opencl.available(), reason="needs an OpenCL device (PoCL in CI)")
def test_opencl_module_loads_from_the_driver_binary(tmp_path):
    a = te.placeholder((64, 64), name="a")
    b = te.compute((64, 64), lambda i, j: a[i, j] * 2.0 + 1.0, name="b")
    mod = ans.build(ans.ComputeDAG([a, b]), target="opencl -device=pocl")
    path = tmp_path / "k.so"
    mod.export_library(path)
    names = zipfile.ZipFile(path).namelist()
    assert "opencl/0.bin" in names, names  # PoCL gives its binary
    x = np.random.default_rng(3).random((64, 64), np.float32)
    np.save(tmp_path / "x.npy", x)
    out = _child(f"""
        import numpy as np, autosched as ans
        mod = ans.runtime.load_module({str(path)!r})
        x = np.load({str(tmp_path / "x.npy")!r})
        y = np.zeros_like(x)
        mod(x, y)
        assert np.allclose(y, x * 2 + 1)
        assert "__kernel" in mod.get_source("cl")
        print("counts", ans.runtime.compile_counts())
    """)
    assert "'opencl_source': 0, 'opencl_binary': 1" in out, out


def test_files_that_are_not_artifacts_are_refused(tmp_path):
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"\x7fELF not really")
    with pytest.raises(ArtifactError, match="not an autosched artifact"):
        ans.runtime.load_module(junk)
    with pytest.raises(FileNotFoundError, match="no artifact"):
        ans.graph.load_module(tmp_path / "missing.so")
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("autosched.json", '{"format": "autosched-artifact", "version": 99, "kind": "graph"}')
    with pytest.raises(ArtifactError, match="version 99"):
        ans.graph.load_module(other)


@needs_llvm
def test_a_kernel_artifact_is_not_a_network(tmp_path):
    path = tmp_path / "mm.so"
    _matmul().export_library(path)
    with pytest.raises(ArtifactError, match="holds a kernel; load it with autosched.runtime.load_module"):
        ans.graph.load_module(path)
