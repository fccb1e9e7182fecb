"""The command line's deploy path: `autosched compile model.onnx -o model.so` (untuned without a log), then
`autosched run model.so` with given inputs, outputs named as the ONNX model names them, a per-group profile and
a comparison with onnxruntime; `--version`; durations for --time-budget; a target that no device here runs
refused at once (exit status 2) with a message saying where to run the command; inputs converted only where no
value changes; files that do not fit, a log of other tasks and a missing optional package, each named in one
line."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autosched as ans  # noqa: E402
from autosched.cli import main  # noqa: E402
from autosched.frontends.torch_compile import parse_duration  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Children import the autosched this process imported: the tree's python/ in development, the installed
# package in CI (the tree's python/ holds no compiled extension there).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(ans.__file__))


def _two_output_model(path):
    """data[4, 8] -> dense + bias + relu ("hidden", whose node is named otherwise), then a second dense
    ("logits"): the graph's values are named after nodes, the outputs after the model's output names."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 16)).astype("float32"), "W1"),
             numpy_helper.from_array(rng.standard_normal(16).astype("float32"), "b1"),
             numpy_helper.from_array(rng.standard_normal((16, 5)).astype("float32"), "W2")]
    nodes = [helper.make_node("MatMul", ["data", "W1"], ["mm"], name="/fc1/MatMul"),
             helper.make_node("Add", ["mm", "b1"], ["biased"], name="/fc1/Add"),
             helper.make_node("Relu", ["biased"], ["hidden"], name="/act/Relu"),
             helper.make_node("MatMul", ["hidden", "W2"], ["logits"], name="/fc2/MatMul")]
    graph = helper.make_graph(nodes, "two_outputs",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 5]),
                               helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [4, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    proc = subprocess.run([sys.executable, "-m", "autosched", *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr


def test_compile_then_run_the_artifact(tmp_path):
    model = _two_output_model(str(tmp_path / "m.onnx"))
    code, out = _cli("compile", model, "-o", "m.so", cwd=tmp_path)  # a bare file name, in the working folder
    assert code == 0 and "0 tuned (no --log: default schedules)" in out, out
    x = np.random.default_rng(1).standard_normal((4, 8)).astype("float32")
    np.savez(tmp_path / "x.npz", data=x)
    code, out = _cli("run", "m.so", "--inputs", "x.npz", "--outputs", "y.npz", "--profile", "--compare",
                     "onnxruntime", "--number", "2", "--repeat", "2", cwd=tmp_path)
    assert code == 0, out
    assert "output logits: float32 (4, 5)" in out and "output hidden: float32 (4, 16)" in out, out
    assert "sum of groups" in out and "dense_add_relu" in out, out  # the profile table
    assert "onnxruntime: outputs match" in out, out
    import onnxruntime
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["logits", "hidden"],
                                                                                       {"data": x})
    with np.load(tmp_path / "y.npz") as got:
        assert sorted(got.files) == ["hidden", "logits"]
        np.testing.assert_allclose(got["logits"], want[0], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got["hidden"], want[1], rtol=1e-4, atol=1e-4)
    # The ONNX model runs directly too (built here, checked against the reference evaluation).
    code, out = _cli("run", model, "--number", "2", "--repeat", "2")
    assert code == 0 and "outputs match the reference evaluation (logits, hidden)" in out, out


def test_run_refuses_inputs_that_do_not_fit(tmp_path):
    model = _two_output_model(str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "bad.npz", data=np.zeros((4, 7), np.float32))
    assert main(["run", model, "--inputs", str(tmp_path / "bad.npz")]) == 2
    np.savez(tmp_path / "other.npz", x=np.zeros((4, 8), np.float32))
    assert main(["run", model, "--inputs", str(tmp_path / "other.npz")]) == 2


def test_version_and_durations(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("autosched ")
    assert [parse_duration(t) for t in ("90s", "30m", "1h", "1.5h", "45")] == [90, 1800, 3600, 5400, 45]
    for bad in ("3x", "", "-5m", "0"):
        with pytest.raises(ValueError, match="time budget"):
            parse_duration(bad)


def test_a_target_no_device_here_runs_fails_at_once(tmp_path, capsys):
    model = _two_output_model(str(tmp_path / "m.onnx"))
    log = tmp_path / "log.json"
    assert main(["tune", model, "--target", "opencl -device=no-such-gpu", "--log", str(log),
                 "--time-budget", "30m"]) == 2
    err = capsys.readouterr().err
    assert "names no opencl device of this machine" in err and "on a machine that has it" in err, err
    assert not log.exists()  # nothing was tuned
    assert main(["run", model, "--target", "opencl -device=no-such-gpu"]) == 2


def _error_line(capsys, command):
    """The one line a refused command writes to stderr."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"autosched {command}: error: "), lines
    return lines[0]


def _gather_model(path):
    """out[3, 4] = W[idx] with idx an int64 input: an input that is no float."""
    weight = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "W")
    graph = helper.make_graph([helper.make_node("Gather", ["W", "idx"], ["out"], name="take", axis=0)], "gather",
                              [helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3, 4])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_run_converts_inputs_only_where_no_value_changes(tmp_path, capsys):
    """--inputs arrays of another dtype: a complex array for a float32 input, floats with fractions or any float
    for an int64 input, and floats beyond float32's range are refused, naming the input, both dtypes and shapes;
    float64 -> float32 (rounding) and int32 -> int64 (safe) are taken."""
    model, gather = _two_output_model(str(tmp_path / "m.onnx")), _gather_model(str(tmp_path / "g.onnx"))
    x = np.random.default_rng(0).standard_normal((4, 8))
    refused = [(model, {"data": x + 1j}, "'data' is complex128 (4, 8); the model takes float32 (4, 8)",
                "imaginary part"),
               (model, {"data": x * 1e300}, "'data' is float64 (4, 8)", "beyond float32's range"),
               (gather, {"idx": np.array([1.5, 2.0, 3.7])}, "'idx' is float64 (3,); the model takes int64 (3,)",
                "fractions would be truncated"),
               (gather, {"idx": np.array([1.0, 2.0, 3.0])}, "'idx' is float64 (3,)", "save 'idx' as int64")]
    for path, arrays, names, why in refused:
        np.savez(tmp_path / "x.npz", **arrays)
        assert main(["run", path, "--inputs", str(tmp_path / "x.npz"), "--number", "1", "--repeat", "1"]) == 2
        line = _error_line(capsys, "run")
        assert names in line and why in line, line
    for path, arrays in ((model, {"data": x}), (gather, {"idx": np.array([9, 0, 4], np.int32)})):
        np.savez(tmp_path / "x.npz", **arrays)
        assert main(["run", path, "--inputs", str(tmp_path / "x.npz"), "--outputs", str(tmp_path / "y.npz"),
                     "--number", "1", "--repeat", "1"]) == 0
    with np.load(tmp_path / "y.npz") as got:  # the int32 indices, taken as int64
        np.testing.assert_array_equal(got["out"], np.arange(40, dtype=np.float32).reshape(10, 4)[[9, 0, 4]])


def test_files_that_do_not_fit_end_with_one_line(tmp_path, capsys):
    """A folder given as the artifact, -o into a missing folder or onto a folder, --inputs that is a .npy, a
    torn zip or no numpy file at all, --outputs or tune's --log into a missing folder: exit status 2 and one line,
    before any build."""
    model = _two_output_model(str(tmp_path / "m.onnx"))
    (tmp_path / "folder").mkdir()
    assert main(["run", str(tmp_path / "folder")]) == 2
    assert "is a directory, not a file" in _error_line(capsys, "run")
    assert main(["compile", model, "-o", str(tmp_path / "missing" / "m.so")]) == 2
    assert "the directory" in _error_line(capsys, "compile") and not (tmp_path / "missing").exists()
    assert main(["compile", model, "-o", str(tmp_path / "folder")]) == 2
    assert "is a directory; give the file to write" in _error_line(capsys, "compile")
    np.save(tmp_path / "x.npy", np.zeros((4, 8), np.float32))
    assert main(["run", model, "--inputs", str(tmp_path / "x.npy")]) == 2
    assert "is a .npy file" in _error_line(capsys, "run")
    (tmp_path / "x.txt").write_text("data 1 2 3\n")
    assert main(["run", model, "--inputs", str(tmp_path / "x.txt")]) == 2
    assert "is not a .npz file" in _error_line(capsys, "run")
    (tmp_path / "torn.npz").write_bytes(b"PK\x03\x04 not a whole zip")
    assert main(["run", model, "--inputs", str(tmp_path / "torn.npz")]) == 2
    assert "is not a readable .npz file" in _error_line(capsys, "run")
    assert main(["run", model, "--inputs", str(tmp_path / "folder")]) == 2
    assert "is a directory" in _error_line(capsys, "run")
    assert main(["run", model, "--outputs", str(tmp_path / "missing" / "y.npz")]) == 2
    assert "--outputs" in _error_line(capsys, "run")
    assert main(["tune", model, "--log", str(tmp_path / "missing" / "log.json")]) == 2
    assert "--log" in _error_line(capsys, "tune") and not (tmp_path / "missing").exists()


def test_a_log_of_other_tasks_is_named_by_run_and_compile(tmp_path, capsys):
    """run and compile with --log say which groups run untuned, and that the log's records did not apply when
    none of them is of the model's tasks."""
    model = _two_output_model(str(tmp_path / "m.onnx"))
    tasks, _ = ans.extract_tasks(ans.frontends.from_onnx(model), "llvm")
    a = ans.te.placeholder((16, 16), name="A")
    other = ans.SearchTask(compute_dag=ans.ComputeDAG([a, ans.ops.relu(a)]), target="llvm")
    other_log, partial_log = str(tmp_path / "other.json"), str(tmp_path / "partial.json")
    for log, task in ((other_log, other), (partial_log, tasks[0])):
        ans.records.save_records(log, [ans.MeasureInput(task, task.compute_dag.get_init_state())],
                                 [ans.MeasureResult(costs=[1e-3])])
    for command in (["run", model, "--number", "1", "--repeat", "1"], ["compile", model, "-o", str(tmp_path / "m.so")]):
        assert main(command + ["--log", other_log]) == 0
        out = capsys.readouterr().out
        assert f"the records of {other_log} did not apply (1 record, none of" in out, out
        assert "all 2 groups run untuned" in out and f"  {tasks[1].desc} x1" in out, out
        assert main(command + ["--log", partial_log]) == 0
        out = capsys.readouterr().out
        assert "did not apply" not in out and "1 of 2 groups run untuned" in out, out
        assert f"  {tasks[1].desc} x1" in out and f"  {tasks[0].desc} x1" not in out, out
        assert main(command) == 0  # without a log, nothing to say about one
        assert "untuned (their" not in capsys.readouterr().out


def test_a_missing_optional_package_names_its_extra(tmp_path, monkeypatch, capsys):
    model = _two_output_model(str(tmp_path / "m.onnx"))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    assert main(["run", model, "--compare", "onnxruntime", "--number", "1", "--repeat", "1"]) == 2
    assert "pip install 'autosched[onnx]'" in _error_line(capsys, "run")
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert main(["tasks", model]) == 2
    assert "needs the 'onnx' package, which is not installed: pip install 'autosched[onnx]'" in \
        _error_line(capsys, "tasks")


def test_every_extra_an_error_message_names_exists():
    """pip install 'autosched[X]' in a message names an extra of pyproject.toml; 'all' holds every other."""
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    named = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "python", "autosched")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name)) as f:
                    named.update(re.findall(r"autosched\[(\w+)\]", f.read()))
    assert {"onnx", "torch", "ray"} <= named and named <= set(extras), (named, sorted(extras))
    assert extras["all"] == [f"autosched[{','.join(e for e in extras if e not in ('all', 'test'))}]"]
