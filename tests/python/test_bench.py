"""The benchmarks: every script runs at its smallest size (SMOKE_ARGS) and finishes without an error, or is
listed with the reason it cannot run here; bench/_env.py sets OPENBLAS_CORETYPE only on AVX-512 CPUs (OpenBLAS
may misread them; on AVX2 the setting dies with SIGILL), and the scripts leave it to that helper; the network
bench gives onnxruntime's profiled nodes to the tasks of its table and times networks and peers in alternating
rounds; the model suite bench prints the same table for imported models (--ort-table)."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Each script's smallest run: a check that it works (seconds each), never a figure. Missing peers (halide,
# torch, onnxruntime, ray) are reported by the scripts and skipped.
SMOKE_ARGS = {
    "bench_bf16_models.py": ["--tiny", "--models", "bert_base", "--rounds", "1", "--number", "1"],
    "bench_busy_core.py": ["--models", "bert_layer", "--tiny", "--seconds", "0.02", "--rounds", "1"],
    "bench_conv_layout.py": ["--tiny", "--trials", "0", "--layers", "layer1.0.conv1"],
    "bench_conv_weight_layout.py": ["--trials", "2", "--shapes", "8x6x3x1"],
    "bench_cost_model.py": ["--states", "12", "--seeds", "1", "--population", "16", "--data", ""],
    "bench_expert_shapes.py": ["--tiny", "--only", "1x1,small", "--no-torch"],
    "bench_gpu_expert_groups.py": ["--tiny", "--target", "opencl"],
    "bench_gpu_networks.py": ["--tiny", "--target", "opencl -device=pocl", "--models", "bert_base", "--rounds",
                              "1", "--number", "1", "--time-budget", "6", "--profile", "3"],
    "bench_int8.py": ["--tiny"],
    "bench_matmul.py": ["--n", "128", "--repeat", "1"],
    "bench_models.py": ["--tiny", "--models", "squeezenet1_1,gpt2", "--rounds", "1"],
    "bench_networks.py": ["--models", "bert_layer", "--tiny", "--trials-per-task", "1", "--per-round", "1",
                          "--rounds", "1", "--round-gap-s", "0", "--checkpoints-s", "", "--network-timing-s", "0",
                          "--threads", "1"],
    "bench_nondividing.py": ["--sizes", "37"],
    # On PoCL (the CPU's OpenCL) where no GPU is there.
    "bench_opencl_gpu.py": ["--target", "opencl", "--kernels", "matmul256", "--trials", "2", "--per-round", "2",
                            "--number", "1", "--time-budget-s", "60"],
    # LocalRunner only: test_ray_runner.py starts Ray itself.
    "bench_pretrained_curves.py": ["--tiny", "--models", "squeezenet1_1", "--seconds", "4", "--every", "2"],
    "bench_ray_runner.py": ["--n", "16", "--candidates", "2", "--actors", "", "--min-repeat-ms", "0"],
    "bench_search_cost_model.py": ["--trials", "2", "--seeds", "1", "--tasks", "matmul16", "--per-round", "2"],
    "bench_search_population.py": ["--tiny", "--budget-s", "1", "--tasks", "2", "--configs", "16x1",
                                   "--per-round", "2"],
    "bench_task_scheduler.py": ["--trials", "8", "--per-round", "2", "--model", "random"],
    "bench_tune_matmul.py": ["--n", "32", "--trials", "2", "--per-round", "2", "--model", "random"],
    "bench_tuned_vs_untuned.py": ["--image-size", "32", "--trials-per-task", "1", "--rounds", "1",
                                  "--time-budget-s", "30"],
    "bench_tune_ops.py": ["--tiny", "--ops", "matmul,depthwise,int8_matmul", "--trials", "2", "--per-round", "2", "--model",
                          "random", "--halide-timeout", "60"],
}


def _cannot_run_here(script):
    """Why `script` cannot run on this machine ('' when it can)."""
    import autosched as ans
    if script in ("bench_opencl_gpu.py", "bench_gpu_networks.py", "bench_gpu_expert_groups.py") \
            and not ans.opencl.available():
        return "no OpenCL device (nor PoCL) on this machine"
    if script == "bench_busy_core.py" and len(os.sched_getaffinity(0)) < 2:
        return "it keeps one of two cores busy: this process has one core"
    return ""


def test_every_bench_script_has_a_smoke_run():
    assert sorted(p.name for p in (ROOT / "bench").glob("bench_*.py")) == sorted(SMOKE_ARGS)


@pytest.mark.parametrize("script", sorted(SMOKE_ARGS))
def test_bench_script_runs_at_its_smallest_size(script):
    why = _cannot_run_here(script)
    if why:
        pytest.skip(why)
    result = subprocess.run([sys.executable, str(ROOT / "bench" / script), *SMOKE_ARGS[script]], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, (result.stdout[-2000:]
                                                                         + result.stderr[-3000:])


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


def load_ort_profile():
    spec = importlib.util.spec_from_file_location("bench_ort_profile", ROOT / "bench" / "_ort_profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_network_bench_gives_each_onnxruntime_node_to_the_task_holding_it():
    """onnxruntime's profiled nodes per task of the network table: a node by its own name or by its name before
    a suffix onnxruntime adds (relu1_nchwc, fc_Gemm_0), the longest graph node name winning; the rest apart."""
    ort_profile = load_ort_profile()
    tasks_nodes = {"conv": ["layer1.bn", "layer1.relu"], "conv1": ["layer1.relu1"], "fc": ["fc"]}
    node_ms = {"layer1.relu_nchwc": 1.0, "layer1.relu1_nchwc": 2.0, "fc_Gemm_0": 0.5, "fc": 0.25,
               "ReorderOutput": 0.125}
    per_task, unmatched = ort_profile.node_tasks(node_ms, tasks_nodes)
    assert per_task == {"conv": 1.0, "conv1": 2.0, "fc": 0.75}
    assert unmatched == {"ReorderOutput": 0.125}


def test_onnxruntime_nodes_renamed_or_added_by_it_go_to_the_tasks_of_the_model_nodes():
    """The model's nodes (an imported ONNX model: our nodes carry its node names, "/op" for an importer's second
    node, ".nchw" for a layout copy) and onnxruntime's, renamed (a Conv named after its output value + "_nchwc",
    ".../MatMulAddFusion"), new ("SkipLayerNormalization_token_3": by the model value it computes) or inserted (a
    Reshape before a Gemm: by the node reading its output); an exported MatMul goes with the Add reading it; a
    node of no task stays apart."""
    ort_profile = load_ort_profile()
    model_nodes = [("/conv/Conv", ["x"], ["/conv/Conv_output_0"]),
                   ("/relu/Relu", ["/conv/Conv_output_0"], ["/relu/Relu_output_0"]),
                   ("/fc/MatMul", ["/relu/Relu_output_0"], ["/fc/MatMul_output_0"]),
                   ("/fc/Add", ["/fc/MatMul_output_0"], ["/fc/Add_output_0"]),
                   ("/ln/LayerNormalization", ["/fc/Add_output_0"], ["/ln/LayerNormalization_output_0"]),
                   ("/shape/Shape", ["x"], ["/shape/Shape_output_0"])]
    tasks_nodes = {"conv": ["/conv/Conv", "/relu/Relu", "/relu/Relu.nchw"], "dense": ["/fc/Add", "/fc/Add/bias"],
                   "norm": ["/ln/LayerNormalization"]}
    session_nodes = {"/relu/Relu_output_0_nchwc": (["x"], ["reorder_token_0"]),
                     "ReorderOutput": (["reorder_token_0"], ["/relu/Relu_output_0"]),
                     "gemm_input_reshape": (["/relu/Relu_output_0"], ["gemm_arg"]),
                     "/fc/MatMul/MatMulAddFusion": (["gemm_arg"], ["/fc/Add_output_0"]),
                     "SkipLayerNormalization_token_3": (["/fc/Add_output_0"], ["/ln/LayerNormalization_output_0"]),
                     "/shape/Shape": (["x"], ["/shape/Shape_output_0"]), "Orphan": ([], ["orphan_out"])}
    node_ms = {"/relu/Relu_output_0_nchwc": 1.0, "ReorderOutput": 0.5, "gemm_input_reshape": 0.25,
               "/fc/MatMul/MatMulAddFusion": 2.0, "SkipLayerNormalization_token_3": 4.0, "/shape/Shape": 0.125,
               "Orphan": 8.0}
    per_task, unmatched = ort_profile.node_tasks(node_ms, tasks_nodes, model_nodes, session_nodes)
    assert per_task == {"conv": 1.5, "dense": 2.25, "norm": 4.0}
    assert unmatched == {"/shape/Shape": 0.125, "Orphan": 8.0}


def test_network_bench_times_networks_and_peers_in_alternating_rounds(monkeypatch):
    """The built networks and the peers are timed in turn, round after round, the rounds apart; the ratios per round
    are shown."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_networks
    finally:
        sys.path.remove(str(ROOT / "bench"))
    calls = []
    monkeypatch.setattr(bench_networks._env, "best_of", lambda fn, min_seconds, min_runs=3: fn())
    clock = iter(range(1, 100))
    runs = {name: (lambda name=name: calls.append(name) or next(clock) / 1000) for name in ("ours", "ort", "torch")}
    sleeps = []
    monkeypatch.setattr(bench_networks.time, "sleep", lambda s: sleeps.append((s, len(calls))))
    times = bench_networks.alternate(runs, rounds=2, gap_seconds=7.5)
    assert calls == ["ours", "ort", "torch", "ours", "ort", "torch"]
    assert sleeps == [(7.5, 3)]  # between the rounds only
    assert times == {"ours": [0.001, 0.004], "ort": [0.002, 0.005], "torch": [0.003, 0.006]}
    row = {"autosched rounds": times["ours"], "onnxruntime rounds": times["ort"]}
    assert bench_networks.round_ratios(row, "onnxruntime", "autosched") == "1.25-2.00"


@pytest.mark.parametrize("flag, value, problem", [("--rounds", "0", "--rounds must be at least 1"),
                                                  ("--round-gap-s", "-1", "--round-gap-s must be 0 or more")])
def test_network_bench_refuses_bad_rounds(flag, value, problem):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_networks.py"), flag, value], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and problem in result.stderr, result.stderr


def test_model_suite_bench_tunes_within_its_budget_and_prints_the_curve(tmp_path):
    """--time-budget takes a duration, keeps the log in --log-dir, prints the estimate against time and the
    geometric means of the ratios to onnxruntime; --ort-table gives the tuned network's table the tuner's column."""
    pytest.importorskip("onnxruntime")
    logs = tmp_path / "logs"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_models.py"), "--tiny", "--models",
                             "squeezenet1_1", "--frontend", "onnx", "--rounds", "1", "--time-budget", "0.1m",
                             "--log-dir", str(logs), "--ort-table"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stdout[-2000:] + result.stderr[-3000:]
    curve = next(line for line in result.stdout.splitlines() if "estimate (ms) after:" in line)
    assert curve.rstrip().endswith("x)") and "6s " in curve, curve  # the last point: the whole budget
    assert "geometric mean of onnxruntime / autosched tuned" in result.stdout
    assert (logs / "squeezenet1_1.onnx.json").stat().st_size > 0
    # --ort-table on the tuned network: the tuner's estimate beside the time inside network runs and onnxruntime's
    header = result.stdout.splitlines().index(next(line for line in result.stdout.splitlines()
                                                   if line.startswith("  tasks in the network (")))
    assert result.stdout.splitlines()[header + 1].split()[:7] == ["task", "tuner", "ms", "in", "net", "ms", "in"]
    assert "onnxruntime's nodes matched to tasks:" in result.stdout
    bad = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_models.py"), "--time-budget", "ten"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "time budget 'ten'" in bad.stderr, bad.stderr
    bad = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_models.py"), "--compare", "-1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--compare at least 0" in bad.stderr, bad.stderr
    bad = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_int8.py"), "--rounds", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--rounds must be at least 1" in bad.stderr, bad.stderr


@pytest.mark.parametrize("how", ["static", "dynamic"])
def test_model_suite_bench_runs_quantized_models(how):
    """--quantize: the exported model quantized by onnxruntime's tools, imported and timed beside onnxruntime's
    quantized run, without a mismatch; --compare runs random inputs through both and compares argmax and steps."""
    pytest.importorskip("onnxruntime")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_models.py"), "--tiny", "--models",
                             "squeezenet1_1", "--rounds", "1", "--quantize", how, "--compare", "4"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stdout[-2000:] + result.stderr[-3000:]
    row = next(line for line in result.stdout.splitlines() if line.startswith("squeezenet1_1"))
    assert "MISMATCH" not in row and "1 of 1 imports built and timed" in result.stdout, result.stdout[-2000:]
    for label in ("autosched (untuned) against onnxruntime", "autosched (untuned) against ONNX's definition",
                  "onnxruntime against ONNX's definition"):
        compared = next(line for line in result.stdout.splitlines() if label in line)
        assert re.search(r"same argmax on \d of 4 random inputs \(\d+ of \d+ rows\)", compared), compared


def test_model_suite_bench_gives_onnxruntime_time_to_the_tasks_of_a_cnn_and_a_transformer():
    """--ort-table: per task of the built network, its time inside network runs beside onnxruntime's profiled time
    for the same ONNX nodes; all of onnxruntime's time of a tiny CNN and a tiny transformer goes to tasks but a
    sliver; the PyTorch import says the table is the ONNX import's."""
    pytest.importorskip("onnxruntime")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_models.py"), "--tiny", "--models",
                             "squeezenet1_1,bert_base", "--rounds", "1", "--ort-table"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stdout[-2000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("  tasks in the network (")]
    assert len(headers) == 2, result.stdout[-4000:]
    for start in headers:
        assert lines[start + 1].split() == ["task", "in", "net", "ms", "ort", "ms", "ort", "/", "in", "net"]
        end = next(i for i in range(start + 2, len(lines)) if lines[i].startswith("    all tasks"))
        table = "\n".join(lines[start:end + 2])
        ort_ms = [float(line.split()[-2]) for line in lines[start + 2:end]]  # the tasks' ort ms column
        assert ort_ms and sum(ms > 0 for ms in ort_ms) >= 0.9 * len(ort_ms), table
        matched = re.search(r"onnxruntime's nodes matched to tasks: [\d.]+ of its [\d.]+ ms \((\d+)%",
                            lines[end + 1])
        assert matched and int(matched.group(1)) >= 90, table
    assert "onnxruntime's table: for the onnx import only" in result.stdout
