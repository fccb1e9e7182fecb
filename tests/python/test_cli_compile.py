"""The command line's deploy path: `autosched compile model.onnx -o model.so` (untuned without a log), then
`autosched run model.so` with given inputs, outputs named as the ONNX model names them, a per-group profile and
a comparison with onnxruntime; `--version`; durations for --time-budget; a target that no device here runs
refused at once (exit status 2) with a message saying where to run the command."""
import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autosched as ans  # noqa: E402
from autosched.cli import main  # noqa: E402
from autosched.torch_backend import parse_duration  # noqa: E402

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
    assert "names no OpenCL device of this machine" in err and "on a machine that has it" in err, err
    assert not log.exists()  # nothing was tuned
    assert main(["run", model, "--target", "opencl -device=no-such-gpu"]) == 2
