"""The command line (`python -m autosched`, installed as `autosched`): tasks, tune and run on a small ONNX model
with a dynamic batch dimension bound by --shape; resuming a log; clear errors (exit status 2) for a missing
file, an unbound dynamic dimension and an operator that cannot be imported; Ctrl-C during tune (exit status
130, the records kept named)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _dense_relu_model(path, op="Relu"):
    """data[N, 8] @ W[8, 16] + b, then `op`: one fused task (dense + bias + relu)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 16)).astype("float32"), "W"),
             numpy_helper.from_array(rng.standard_normal(16).astype("float32"), "b")]
    nodes = [helper.make_node("MatMul", ["data", "W"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "b"], ["biased"], name="bias"),
             helper.make_node(op, ["biased"], ["out"], name="act")]
    graph = helper.make_graph(nodes, "dense_relu",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "autosched", *args], capture_output=True, text=True,
                          timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def test_tune_then_run_a_model_from_the_command_line(tmp_path):
    model = _dense_relu_model(str(tmp_path / "m.onnx"))
    log = str(tmp_path / "m.json")
    code, out = _cli("tasks", model, "--shape", "N=5")
    assert code == 0 and "1 tasks" in out, out
    code, out = _cli("tasks", model, "--shape", "data=5,8")  # the input's whole shape binds N too
    assert code == 0 and "dense_add_relu 5x16" in out, out
    code, out = _cli("tune", model, "--shape", "N=5", "--trials", "6", "--per-round", "3", "--log", log)
    assert code == 0, out
    # The estimate counts the graph runtime's time around the kernel call too (tens of nanoseconds, or 0
    # where that is within the timing noise).
    estimate = re.search(r"estimated network latency ([0-9.]+) (ns|us|ms)", out)
    assert estimate and float(estimate.group(1)) > 0 and "e-" not in out, out
    assert "Records in " + log in out, out
    with open(log) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    assert len(lines) >= 6, out
    # Run again with the same log: it resumes (the records are read, the new ones appended).
    code, out = _cli("tune", model, "--shape", "N=5", "--trials", "9", "--per-round", "3", "--log", log)
    assert code == 0 and "resumed" in out, out
    with open(log) as f:
        assert sum(1 for line in f if line.strip()) > len(lines)
    code, out = _cli("run", model, "--shape", "N=5", "--log", log, "--repeat", "2", "--number", "2")
    assert code == 0, out
    assert "outputs match the reference evaluation" in out and "latency:" in out, out


def test_command_line_errors_name_the_problem(tmp_path):
    code, out = _cli("tasks", str(tmp_path / "missing.onnx"))
    assert code == 2 and "does not exist" in out, out
    model = _dense_relu_model(str(tmp_path / "m.onnx"))
    code, out = _cli("tasks", model)
    assert code == 2 and "--shape N=1" in out, out
    assert len(out.strip().splitlines()) <= 2 and "bind" not in out, out  # one message, the CLI's fix only
    code, out = _cli("tasks", model, "--shape", "N=x")
    assert code == 2 and "expected NAME=D1,D2" in out, out
    code, out = _cli("tasks", model, "--shape", "data=5,9")  # the model fixes the second dim to 8
    assert code == 2 and "data" in out and "8" in out, out
    code, out = _cli("tasks", model, "--shape", "M=2,3")
    assert code == 2 and "'M' is not an input of the model" in out, out
    code, out = _cli("run", model, "--shape", "N=2", "--log", str(tmp_path / "none.json"))
    assert code == 2 and "tune first" in out, out
    code, out = _cli("tune", model, "--shape", "N=2", "--log", str(tmp_path / "t.json"), "--network-timing-s", "-1")
    assert code == 2 and "--network-timing-s must be seconds >= 0, got -1" in out, out
    odd = _dense_relu_model(str(tmp_path / "odd.onnx"), op="Hardmax")
    code, out = _cli("tasks", odd, "--shape", "N=2")
    assert code == 2 and "Hardmax" in out, out


def test_shape_of_an_input_and_of_its_dim_agree_in_either_order(tmp_path):
    """--shape N=... and --shape data=... bind the same dim: agreeing values work in either order, and a
    contradiction is refused naming both options, in either order."""
    model = _dense_relu_model(str(tmp_path / "m.onnx"))
    for shapes in (["N=3", "data=3,8"], ["data=3,8", "N=3"]):
        code, out = _cli("tasks", model, *[a for s in shapes for a in ("--shape", s)])
        assert code == 0 and "dense_add_relu 3x16" in out, (shapes, out)
    for shapes in (["N=3", "data=1,8"], ["data=1,8", "N=3"]):
        code, out = _cli("tasks", model, *[a for s in shapes for a in ("--shape", s)])
        assert code == 2 and "--shape data=1,8" in out and "--shape N=3" in out, (shapes, out)
        assert "Traceback" not in out and "neither" not in out, out


def _records(path):
    with open(path) as f:
        return sum(1 for line in f if line.strip())


def test_ctrl_c_during_tune_ends_with_one_line_and_status_130(tmp_path):
    """SIGINT once the first round's records are in the log: exit status 130 and one line saying how many
    trials were kept, no traceback; the same command then resumes from the log."""
    model = _dense_relu_model(str(tmp_path / "m.onnx"))
    log = tmp_path / "m.json"
    command = [sys.executable, "-m", "autosched", "tune", model, "--shape", "N=5", "--per-round", "2", "--log",
               str(log), "--network-timing-s", "0"]
    proc = subprocess.Popen(command + ["--trials", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 300
        while not (log.exists() and _records(log) > 0) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    kept = _records(log)
    assert lines[-1] == (f"autosched tune: interrupted after {kept} trials; {kept} records in {log}; the same "
                         "command resumes"), err
    code, out = _cli(*command[3:], "--trials", str(kept + 2))
    assert code == 0 and "resumed" in out, out
