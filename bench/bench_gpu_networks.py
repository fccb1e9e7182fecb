"""Benchmark: whole networks built for an OpenCL GPU, timed beside PyTorch eager on the same GPU.

Run (on a machine with an NVIDIA GPU whose OpenCL driver is registered, docs/opencl.md):
  python3 bench/bench_gpu_networks.py [--models resnet50,bert_base] [--target "opencl -device=nvidia"]
                                      [--time-budget 5m] [--cost-model auto|scratch|pretrained] [--log-dir D]
                                      [--rounds 3] [--tiny]

Each model of bench/_models.py (random weights, batch 1; BERT-base at sequence 128) is exported with
torch.onnx.export, imported with from_onnx and built for the OpenCL target (graph.build): untuned (each task's
default, the GPU expert where the task has one), and with --time-budget T tuned for T (TaskScheduler) and built
from that log. The network runs with its weights and intermediate values in the GPU's memory; a timed run copies
its input in and its output out. PyTorch runs the same module on the GPU (CUDA, TF32 off, no_grad), timed with
CUDA events around --number calls, the copy of the input to the GPU and of the output back included, as ours.
The output is checked against PyTorch's (the largest difference relative to the output's largest magnitude).
The table gives milliseconds per inference and PyTorch's time over ours (above 1: autosched is faster).

--profile N: the untuned network's N slowest kernels, each timed inside runs of the network (waited for one by
one), beside the sum of all and a whole run.

--tiny: tiny models (tests/python/test_bench.py runs them on PoCL, without a CUDA PyTorch); the figures mean
nothing there. Exits with an error when a model failed (its row says why). Not a test: figures vary with the
device and its clocks.
"""
import argparse
import os
import sys
import tempfile
import time
import traceback

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import autosched as ans  # noqa: E402
from autosched import frontends  # noqa: E402
from autosched import graph as agraph  # noqa: E402
from autosched.core.text import parse_duration  # noqa: E402

import numpy as np  # noqa: E402

import _models  # noqa: E402


def torch_ms(torch, module, example, number):
    """PyTorch eager on the GPU: ms per inference, the input copied in and the output out, as ours."""
    with torch.no_grad():
        for _ in range(3):
            module(example.cuda()).cpu()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(number):
            module(example.cuda()).cpu()
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / number * 1e3


def relative_error(got, want):
    return float(np.max(np.abs(got.astype(np.float64) - want)) / (np.max(np.abs(want)) + 1e-30))


def bench_model(name, args, torch_cuda, log_dir):
    import torch
    torch.manual_seed(0)
    module, example = _models.SUITE[name].make(tiny=args.tiny)
    model_bytes = _models.onnx_bytes(module, (example,), ["input"])
    graph = frontends.from_onnx(model_bytes)
    feed = example.numpy()
    with torch.no_grad():
        want = module(example).numpy()
    row = {"model": name, "tasks": len(agraph.extract_tasks(graph, args.target)[0])}
    start = time.monotonic()
    net = agraph.build(graph, args.target, verbose=False)
    row["build_s"] = time.monotonic() - start
    (out,) = net(feed)
    row["error"] = relative_error(out, want)
    row["untuned_ms"] = min(net.time_evaluator(number=args.number, repeat=args.rounds)(feed)) * 1e3
    if args.profile:
        _env.print_profile(name, net, feed, args.profile)
    if args.time_budget > 0:
        log = os.path.join(log_dir, f"{name}.json")
        tasks, weights = agraph.extract_tasks(graph, args.target)
        options = ans.TuningOptions(time_budget=args.time_budget, num_measure_trials=100000,
                                    measure_callbacks=[ans.RecordToFile(log)], verbose=args.verbose)
        result = ans.TaskScheduler(tasks, weights, cost_model=args.cost_model).tune(options)
        row["trials"] = result.trials
        tuned = agraph.build(graph, args.target, log, verbose=False)
        (out,) = tuned(feed)
        row["tuned_error"] = relative_error(out, want)
        row["tuned_ms"] = min(tuned.time_evaluator(number=args.number, repeat=args.rounds)(feed)) * 1e3
    if torch_cuda is not None:
        gpu_module = module.cuda()
        row["torch_ms"] = min(torch_ms(torch_cuda, gpu_module, example, args.number) for _ in range(args.rounds))
        with torch_cuda.no_grad():
            row["torch_error"] = relative_error(gpu_module(example.cuda()).cpu().numpy(), want)
    return row


def print_row(row):
    if "failure" in row:
        print(f"{row['model']:12} failed: {row['failure']}")
        return
    torch_ms = row.get("torch_ms")
    cells = [f"{row['model']:12}", f"{row['tasks']:6d}", f"{row['build_s']:8.1f}", f"{row['error']:9.1e}",
             f"{row['untuned_ms']:10.3f}"]
    cells.append(f"{torch_ms / row['untuned_ms']:8.2f}" if torch_ms else f"{'-':>8}")
    if "tuned_ms" in row:
        cells += [f"{row['trials']:7d}", f"{row['tuned_ms']:9.3f}",
                  f"{torch_ms / row['tuned_ms']:8.2f}" if torch_ms else f"{'-':>8}"]
    else:
        cells += [f"{'-':>7}", f"{'-':>9}", f"{'-':>8}"]
    cells.append(f"{torch_ms:9.3f}" if torch_ms else f"{'-':>9}")
    print("".join(cells), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert_base", help=f"of: {', '.join(_models.SUITE)}")
    parser.add_argument("--target", default="opencl -device=nvidia")
    parser.add_argument("--time-budget", type=parse_duration, default=0.0,
                        help="tuning time per model (seconds, or 90s / 5m); 0: untuned only")
    parser.add_argument("--rounds", type=int, default=3, help="timed repeats (the best is kept)")
    parser.add_argument("--number", type=int, default=20, help="inferences per timed repeat")
    parser.add_argument("--log-dir", default="")
    parser.add_argument("--tiny", action="store_true", help="tiny models: a check that the script works")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N kernels of the untuned network that take the most of a run")
    parser.add_argument("--cost-model", default="auto", choices=["auto", "scratch", "pretrained"],
                        help="the tuner's cost model: auto starts from the GPU model shipped in the "
                             "package on GPUs with warps (as pretrained), scratch learns from the session alone")
    parser.add_argument("--verbose", type=int, default=0)
    args = parser.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in _models.SUITE]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {', '.join(_models.SUITE)}")
    if not ans.opencl.available():
        raise SystemExit("no OpenCL device (or autosched built without OpenCL): see docs/opencl.md")
    print(f"command: {' '.join([sys.executable] + sys.argv)}")
    print(f"OpenCL device: {ans.Target(args.target)}: "
          + ", ".join(d["name"] for d in ans.opencl.devices()))
    torch_cuda = _env.torch_cuda()
    print("peer: " + (f"PyTorch {torch_cuda.__version__} eager on {torch_cuda.cuda.get_device_name()} (TF32 off)"
                      if torch_cuda else "none (no PyTorch with CUDA)"))
    print(f"{'model':12}{'tasks':>6}{'build s':>8}{'error':>9}{'untuned ms':>11}{'ratio':>8}"
          f"{'trials':>7}{'tuned ms':>9}{'ratio':>8}{'torch ms':>9}")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        log_dir = args.log_dir or tmp
        os.makedirs(log_dir, exist_ok=True)
        for name in names:
            try:
                row = bench_model(name, args, torch_cuda, log_dir)
            except Exception as e:  # noqa: BLE001 -- the table goes on
                if args.verbose:
                    traceback.print_exc()
                row = {"model": name, "failure": str(e).splitlines()[0] if str(e) else type(e).__name__}
            failures += "failure" in row
            print_row(row)
    print("ratio: PyTorch's time over ours (above 1: autosched is faster); error: largest difference from "
          "PyTorch's CPU output, relative to its largest magnitude")
    print(_env.load_note())
    if failures:
        raise SystemExit(f"{failures} model(s) failed")


if __name__ == "__main__":
    main()
