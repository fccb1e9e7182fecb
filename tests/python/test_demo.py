"""The README's first command, `python -m autosched.demo`, with a tiny time budget: it tunes the zoo ResNet-18,
prints the task table and why tuning stopped, builds the network, checks it against onnxruntime and PyTorch
(where installed), prints the latency ratios and leaves the record log; an ONNX file goes the same way.
Runs in child processes with time limits."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

import autosched as ans
from autosched.cli import demo

if not ans._core.has_llvm():
    pytest.skip("built without the LLVM backend", allow_module_level=True)


def _installed(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def run_demo(tmp_path, *args, timeout=240):
    env = dict(os.environ)
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(ans.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_dir] + [p for p in [env.get("PYTHONPATH")] if p])
    run = subprocess.run([sys.executable, "-m", "autosched.demo", "--out-dir", str(tmp_path / "out"),
                          "--timing-s", "0.05", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def check_peers(out):
    for peer, module in (("onnxruntime", "onnxruntime"), ("PyTorch", "torch")):
        if _installed(module):
            assert re.search(rf"output vs {peer}: max \|difference\| = \S+ of the largest magnitude: equal", out), out
            assert re.search(rf"autosched is ([0-9.]+x (faster|slower) than|as fast as) {peer}", out), out
        else:
            assert f"{peer}: skipped, not installed" in out, out


def test_demo_tunes_builds_and_compares_resnet18(tmp_path):
    out = run_demo(tmp_path, "--time-budget", "3")
    # 23 groups and 18 tasks, plus the input's layout transform where the blocked-layout pass runs (CPUs)
    assert re.search(r"resnet18: 69 nodes, 2[34] fused groups, 1[89] distinct tasks", out), out
    assert re.search(r"\|\s+ID \| Task\s+\| Latency \(ms\) \|", out), out
    assert re.search(r"conv2d(_nchwc)?(_bias)?_relu 1x(64x112x112|4x112x112x16|8x112x112x8)", out), out
    assert "tuning stopped after" in out and "time budget of 3.0 s used" in out, out
    assert "built resnet18 in" in out, out
    assert re.search(r"autosched\s+[0-9.]+ ms", out), out
    check_peers(out)
    log = tmp_path / "out" / "resnet18.json"
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert records, "the demo wrote no record"
    assert ("exported the built network to" in out) or ("cannot export a built network" in out), out


def test_demo_takes_an_onnx_file(tmp_path):
    pytest.importorskip("onnx")
    from autosched.graph import zoo

    path = tmp_path / "small.onnx"
    path.write_bytes(zoo.get_model("resnet18", image_size=32, num_classes=10).to_onnx().SerializeToString())
    out = run_demo(tmp_path, "--model", str(path), "--time-budget", "2s")
    assert "small: " in out and "tuning stopped after" in out, out
    assert (tmp_path / "out" / "small.json").exists()
    check_peers(out)


@pytest.mark.parametrize("text,seconds", [("180", 180), ("90s", 90), ("3m", 180), ("2.5m", 150), ("1h", 3600)])
def test_time_budget_units(text, seconds):
    assert demo.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-3", "3 minutes", "m"])
def test_time_budget_refuses_nonsense(text):
    with pytest.raises(Exception, match="time budget"):
        demo.parse_duration(text)


def test_ratios_read_both_ways():
    assert demo.ratio_text(1.0, 1.3, "X") == "autosched is 1.3x faster than X"
    assert demo.ratio_text(2.1, 1.0, "X") == "autosched is 2.1x slower than X"
    assert demo.ratio_text(1.0, 1.01, "X").startswith("autosched is as fast as X")
    assert demo.ratio_text(22.82, 22.31, "X") == "autosched is 1.02x slower than X"  # not "1x slower"
    assert demo.ratio_text(1.0, 1.08, "X") == "autosched is 1.08x faster than X"


def test_unknown_model_is_refused(tmp_path):
    run = subprocess.run([sys.executable, "-m", "autosched.demo", "--model", "resnet7", "--out-dir",
                          str(tmp_path)], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ans.__file__))))
    assert run.returncode != 0 and "unknown model 'resnet7'" in run.stderr, run.stderr


def test_the_peers_are_timed_in_turns_so_a_slow_spell_slows_one_round_not_one_runner():
    """A machine that is slow for the first half of the timing: timed one after the other, the first runner
    would take all of the slow spell; in turns, each runner has a round after it and keeps its fast time."""
    clock = {"calls": 0}
    order = []

    def runner(name, fast_s):
        def run():
            clock["calls"] += 1
            order.append(name)
            slow = clock["calls"] <= 4  # the machine's slow spell: the first two rounds
            time.sleep(fast_s * (3 if slow else 1))
        return run

    best = demo.fastest_in_turns([runner("a", 0.002), runner("b", 0.004)], seconds=0.004, rounds=4)
    assert best[0] < 0.0045 and best[1] < 0.0085, best  # each kept a call outside the slow spell
    assert order == ["a", "b"] * 4, order  # four rounds, each runner once a round (its share is below a call)
