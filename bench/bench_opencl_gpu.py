"""Benchmark: tune float32 kernels for an OpenCL GPU and compare them with cuBLAS and cuDNN (through PyTorch).

Run (on a machine with an NVIDIA GPU whose OpenCL driver is registered with the ICD loader, docs/opencl.md):
  python3 bench/bench_opencl_gpu.py [--target "opencl -device=nvidia"] [--trials 256] [--time-budget-s 150]
         [--kernels matmul4096,conv_r50_56,conv_r50_14] [--log-dir DIR] [--model auto|xgb|random]
         [--ptx-counts] [--show-source] [--no-expert]

The kernels (float32, batch 1, NCHW):
  matmul4096   4096 x 4096 x 4096
  conv_r50_56  ResNet-50 layer: 1x64x56x56 -> 64 channels, 3x3, stride 1, pad 1
  conv_r50_14  ResNet-50 layer: 1x256x14x14 -> 256 channels, 3x3, stride 1, pad 1
  matmul256    256 x 256 x 256 (not in the default list: a quick check of the script, e.g. on PoCL)
Each is tuned with task.tune on the OpenCL target (the log goes to --log-dir, so a later run with the same
directory resumes), its best schedule is built and checked against PyTorch's result, and then both are timed
in this process: the tuned kernel with OpenCL profiling events (module.time_evaluator), PyTorch on the GPU with
CUDA events, TF32 off (cuBLAS for the matmul, cuDNN for the convolutions). The table gives milliseconds,
TFLOP/s, % of the fp32 peak (--peak-tflops, default the GH100's 66.9) and PyTorch's time divided by the tuned
time (above 1: autosched is faster), then the tuning wall time and trials. Without PyTorch's CUDA the peer
columns are empty. --no-expert tunes without the expert schedule (SearchParams.use_expert_schedule=False: it
is neither measured nor seeded); the header says which. Not a test: figures vary with the device and its clocks.
"""
import argparse
import os
import platform
import sys
import tempfile
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import autosched as ans  # noqa: E402
from autosched import ops, search, te  # noqa: E402
from autosched import tune as tuner  # noqa: E402

import numpy as np  # noqa: E402


class Kernel:
    def __init__(self, name, flop, tensors, shapes, torch_fn):
        self.name, self.flop, self.tensors, self.shapes, self.torch_fn = name, flop, tensors, shapes, torch_fn


def matmul(n=4096):
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return Kernel(f"matmul{n}", 2.0 * n ** 3, [A, B, C], [(n, n), (n, n)], lambda torch, a, b: torch.mm(a, b))


def conv(name, channels, size):
    data = te.placeholder((1, channels, size, size), name="data")
    weight = te.placeholder((channels, channels, 3, 3), name="weight")
    out = ops.conv2d_nchw(data, weight, stride=1, padding=1)
    flop = 2.0 * channels * channels * 9 * size * size
    return Kernel(name, flop, [data, weight, out], [(1, channels, size, size), (channels, channels, 3, 3)],
                  lambda torch, x, w: torch.nn.functional.conv2d(x, w, padding=1))


KERNELS = {
    "matmul4096": lambda: matmul(4096),
    "matmul256": lambda: matmul(256),  # a quick check of the script (e.g. on PoCL), not in the default list
    "conv_r50_56": lambda: conv("conv_r50_56", 64, 56),
    "conv_r50_14": lambda: conv("conv_r50_14", 256, 14),
}


def load_torch():
    """PyTorch with a CUDA device and TF32 off, or None (the peer columns stay empty)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def torch_seconds(torch, fn, args, repeat=50):
    """Mean GPU seconds per call over `repeat` calls after warm-up. The calls are captured in a CUDA graph and
    replayed, so that they run back to back on the GPU: timed as launched from Python, a kernel of a few
    microseconds measures the host's dispatch instead (0.02 ms of cuDNN's convolution read 0.1-0.2 ms while
    other processes kept the CPU busy). Falls back to timing the launches where capture fails."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(5):
            fn(torch, *args)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(repeat):
                fn(torch, *args)
        graph.replay()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(3):
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3 / repeat)
        return best
    except RuntimeError as e:
        print(f"  (PyTorch timed by its launches: CUDA graph capture failed: {e})")
    start.record()
    for _ in range(repeat):
        fn(torch, *args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / repeat


def run_kernel(kernel, args, log_dir, torch):
    dag = ans.ComputeDAG(kernel.tensors)
    task = ans.SearchTask(compute_dag=dag, target=args.target, desc=kernel.name)
    log = os.path.join(log_dir, f"{kernel.name}.json")
    options = tuner.TuningOptions(num_measure_trials=args.trials, num_measures_per_round=args.per_round,
                                  time_budget_s=args.time_budget_s, verbose=args.verbose,
                                  measure_callbacks=[ans.RecordToFile(log)])
    start = time.monotonic()
    policy = search.SketchPolicy(task, search.make_cost_model(args.model, "auto"),
                                 search.SearchParams(use_expert_schedule=not args.no_expert))
    result = task.tune(options, search_policy=policy)
    tune_s = time.monotonic() - start
    row = {"kernel": kernel.name, "trials": result.trials, "tune_s": tune_s, "ms": None, "torch_ms": None,
           "errors": dict(result.errors), "max_err": None}
    if result.best_state is None:
        print(f"  {kernel.name}: no valid schedule ({dict(result.errors)})")
        return row
    mod = ans.build(dag, result.best_state, target=args.target)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype("float32") for s in kernel.shapes]
    out = np.zeros([int(d) for d in kernel.tensors[-1].shape], "float32")
    mod(*inputs, out)
    times = mod.time_evaluator(number=args.number, repeat=3)(*inputs, out)
    row["ms"] = min(times) * 1e3
    if torch is not None:
        device_inputs = [torch.from_numpy(a).cuda() for a in inputs]
        reference = kernel.torch_fn(torch, *device_inputs).cpu().numpy()
        row["max_err"] = float(np.max(np.abs(reference - out)) / (np.max(np.abs(reference)) + 1e-30))
        row["torch_ms"] = torch_seconds(torch, kernel.torch_fn, device_inputs) * 1e3
    print(f"  {kernel.name}: {result.trials} trials in {tune_s:.0f} s, best {row['ms']:.3f} ms"
          + (f", PyTorch {row['torch_ms']:.3f} ms, max relative error {row['max_err']:.1e}" if torch else ""))
    if args.ptx_counts:
        print_ptx_counts(kernel.name, mod)
    if args.show_source:
        print(mod.get_source("cl"))
    return row


def print_ptx_counts(name, mod):
    """The best kernel's instructions by kind, from the device binary (PTX on NVIDIA's OpenCL)."""
    binary = mod.device_binary()
    try:
        counts = ans.opencl.ptx_instruction_counts(binary)
    except ValueError:
        print(f"  {name}: the device binary ({len(binary)} bytes) is not PTX; no instruction counts")
        return
    print(f"  {name} PTX: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def print_table(rows, peak_tflops, kernels):
    print(f"\n{'kernel':13}{'ms':>9}{'TFLOP/s':>9}{'% peak':>8}{'torch ms':>10}{'ratio':>7}"
          f"{'trials':>8}{'tuning s':>10}")
    for row in rows:
        flop = kernels[row["kernel"]].flop
        if row["ms"] is None:
            print(f"{row['kernel']:13}{'-':>9}  no valid schedule: {row['errors']}")
            continue
        tflops = flop / (row["ms"] * 1e-3) / 1e12
        torch_ms = f"{row['torch_ms']:10.3f}" if row["torch_ms"] else f"{'-':>10}"
        ratio = f"{row['torch_ms'] / row['ms']:7.2f}" if row["torch_ms"] else f"{'-':>7}"
        print(f"{row['kernel']:13}{row['ms']:9.3f}{tflops:9.2f}{100 * tflops / peak_tflops:7.1f}%{torch_ms}{ratio}"
              f"{row['trials']:8d}{row['tune_s']:10.0f}")
    print(_env.load_note())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="opencl -device=nvidia")
    parser.add_argument("--kernels", default="matmul4096,conv_r50_56,conv_r50_14")
    parser.add_argument("--trials", type=int, default=256, help="measurements per kernel")
    parser.add_argument("--per-round", type=int, default=64)
    parser.add_argument("--time-budget-s", type=float, default=150, help="tuning wall-clock budget per kernel")
    parser.add_argument("--model", default="auto", choices=["auto", "xgb", "random"])
    parser.add_argument("--number", type=int, default=10, help="kernel runs per timed repeat")
    parser.add_argument("--peak-tflops", type=float, default=66.9, help="fp32 peak of the device (GH100: 66.9)")
    parser.add_argument("--log-dir", default="")
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--ptx-counts", action="store_true",
                        help="print the best kernel's PTX instruction counts (ld.local/st.local spills, "
                             "ld.shared, fma, vector accesses) from its device binary (NVIDIA)")
    parser.add_argument("--show-source", action="store_true", help="print the best kernel's OpenCL C")
    parser.add_argument("--no-expert", action="store_true",
                        help="tune without the expert schedule (SearchParams.use_expert_schedule=False)")
    args = parser.parse_args()
    names = [n.strip() for n in args.kernels.split(",") if n.strip()]
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise SystemExit(f"unknown kernel(s) {unknown}; known: {', '.join(KERNELS)}")
    if not ans.opencl.available():
        raise SystemExit("no OpenCL device (or autosched built without OpenCL): see docs/opencl.md")
    print(f"command: {' '.join([sys.executable] + sys.argv)}")
    print(f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} hardware threads")
    for d in ans.opencl.devices():
        print(f"OpenCL device: {d}")
    print("expert schedule: " + ("off (use_expert_schedule=False: not measured, not seeded)" if args.no_expert
                                 else "on (measured first and seeded into every population)"))
    torch = load_torch()
    print("peer: " + (f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()} (TF32 off)"
                      if torch else "none (no PyTorch with CUDA)"))
    kernels = {n: KERNELS[n]() for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        log_dir = args.log_dir or tmp
        os.makedirs(log_dir, exist_ok=True)
        rows = [run_kernel(kernels[n], args, log_dir, torch) for n in names]
    print_table(rows, args.peak_tflops, kernels)


if __name__ == "__main__":
    main()
