"""Benchmark: tune float32 kernels for an OpenCL GPU and compare them with cuBLAS and cuDNN (through PyTorch).

Run (on a machine with an NVIDIA GPU whose OpenCL driver is registered with the ICD loader, docs/opencl.md):
  python3 bench/bench_opencl_gpu.py [--target "opencl -device=nvidia"] [--trials 256] [--time-budget-s 150]
         [--kernels matmul4096,conv_r50_56,conv_r50_14] [--log-dir DIR] [--model auto|scratch|pretrained|random]
         [--ptx-counts] [--show-source] [--no-expert]

The kernels (float32, batch 1, NCHW):
  matmul4096   4096 x 4096 x 4096
  conv_r50_56  ResNet-50 layer: 1x64x56x56 -> 64 channels, 3x3, stride 1, pad 1
  conv_r50_14  ResNet-50 layer: 1x256x14x14 -> 256 channels, 3x3, stride 1, pad 1
  matmul256    256 x 256 x 256 (not in the default list: a quick check of the script, e.g. on PoCL)
Shapes no part of the project was fitted to (--kernels nonbench names them all):
  dense_x_wt   a transformer's dense layer: 512 x 768 times W^T, W stored 3072 x 768 (PyTorch's Linear)
  ffn2_128     BERT-base's second feed-forward layer at sequence 128: 128 x 3072 times W^T, W 768 x 3072
  ffn2_197     the same at ViT-B/16's 197 tokens (a prime: no tile divides the rows)
  ffn1_197     ViT-B/16's first feed-forward layer: 197 x 768 times W^T, W 3072 x 768
  bmm_qk       attention scores: 48 x (128 x 64) times (48 x 64 x 128)^T (4 sequences of 128, 12 heads)
  matmul1000   1000 x 1000 x 1000 (no tile of a power of two above 8 divides it)
  matmul_odd   1023 x 771 x 517 (odd extents, no common factor)
  conv_odd     3x3 convolution 1x90x27x27 -> 150 channels, pad 1 (channels and sizes not multiples of 8)
  conv_s2      3x3 convolution 1x96x57x57 -> 160 channels, stride 2, pad 1
  conv_r50_7   3x3 convolution 1x512x7x7 -> 512 channels, pad 1 (ResNet-50's last stage: few outputs)
  depthwise    3x3 depthwise convolution 1x144x56x56, pad 1 (MobileNet-V2)
  maxpool      3x3 max pooling, stride 2, pad 1, of 1x64x112x112 (ResNet's stem)
  softmax      softmax over the last axis of 48 x 128 x 128
  layer_norm   layer normalisation of 512 x 768 (gamma and beta)
Each is tuned with task.tune on the OpenCL target (the log goes to --log-dir, so a later run with the same
directory resumes), its best schedule is built and checked against PyTorch's result, and then both are timed
in this process: the tuned kernel with OpenCL profiling events (module.time_evaluator), PyTorch on the GPU with
CUDA events, TF32 off (cuBLAS for the matmul, cuDNN for the convolutions), the faster of its calls replayed
from a CUDA graph and launched eagerly (torch_seconds says why both). The table gives milliseconds,
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
    """A kernel to tune: its tensors (inputs, then the output), the input shapes, PyTorch's version of it,
    and its work: floating-point operations, and for a memory-bound kernel the bytes it must move (its
    table row gives GB/s instead of a share of the fp32 peak)."""

    def __init__(self, name, flop, tensors, shapes, torch_fn, bytes_moved=None):
        self.name, self.flop, self.tensors, self.shapes, self.torch_fn = name, flop, tensors, shapes, torch_fn
        self.bytes_moved = bytes_moved


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


def dense_x_wt(rows=512, k=768, n=3072, name="dense_x_wt"):
    x, w = te.placeholder((rows, k), name="x"), te.placeholder((n, k), name="w")
    return Kernel(name, 2.0 * rows * k * n, [x, w, ops.dense(x, w)], [(rows, k), (n, k)],
                  lambda torch, a, b: torch.nn.functional.linear(a, b))


def bmm_qk(batch=48, rows=128, depth=64):
    q, k = te.placeholder((batch, rows, depth), name="q"), te.placeholder((batch, rows, depth), name="k")
    return Kernel("bmm_qk", 2.0 * batch * rows * rows * depth, [q, k, ops.batch_matmul(q, k, transpose_b=True)],
                  [(batch, rows, depth)] * 2, lambda torch, a, b: torch.bmm(a, b.transpose(1, 2)))


def matmul_mnk(name, m, n, k):
    A, B = te.placeholder((m, k), name="A"), te.placeholder((k, n), name="B")
    return Kernel(name, 2.0 * m * n * k, [A, B, ops.matmul(A, B)], [(m, k), (k, n)],
                  lambda torch, a, b: torch.mm(a, b))


def conv_general(name, in_channels, out_channels, size, stride):
    data = te.placeholder((1, in_channels, size, size), name="data")
    weight = te.placeholder((out_channels, in_channels, 3, 3), name="weight")
    out = ops.conv2d_nchw(data, weight, stride=stride, padding=1)
    out_size = int(out.shape[2])
    flop = 2.0 * out_channels * in_channels * 9 * out_size * out_size
    return Kernel(name, flop, [data, weight, out], [(1, in_channels, size, size), (out_channels, in_channels, 3, 3)],
                  lambda torch, x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=1))


def depthwise(channels=144, size=56):
    data = te.placeholder((1, channels, size, size), name="data")
    weight = te.placeholder((channels, 1, 3, 3), name="weight")
    out = ops.depthwise_conv2d_nchw(data, weight, stride=1, padding=1)
    return Kernel("depthwise", 2.0 * channels * 9 * size * size, [data, weight, out],
                  [(1, channels, size, size), (channels, 1, 3, 3)],
                  lambda torch, x, w: torch.nn.functional.conv2d(x, w, padding=1, groups=channels),
                  bytes_moved=4.0 * 2 * channels * size * size)


def maxpool(channels=64, size=112):
    data = te.placeholder((1, channels, size, size), name="data")
    out = ops.max_pool2d(data, pool_size=3, strides=2, padding=1)
    out_elems = channels * int(out.shape[2]) * int(out.shape[3])
    return Kernel("maxpool", 9.0 * out_elems, [data, out], [(1, channels, size, size)],
                  lambda torch, x: torch.nn.functional.max_pool2d(x, 3, stride=2, padding=1),
                  bytes_moved=4.0 * (channels * size * size + out_elems))


def softmax(shape=(48, 128, 128)):
    x = te.placeholder(shape, name="x")
    count = float(np.prod(shape))
    return Kernel("softmax", 4.0 * count, [x, ops.softmax(x)], [shape], lambda torch, a: torch.softmax(a, -1),
                  bytes_moved=4.0 * 2 * count)


def layer_norm(rows=512, width=768):
    x = te.placeholder((rows, width), name="x")
    gamma, beta = te.placeholder((width,), name="gamma"), te.placeholder((width,), name="beta")
    return Kernel("layer_norm", 8.0 * rows * width, [x, gamma, beta, ops.layer_norm(x, gamma, beta)],
                  [(rows, width), (width,), (width,)],
                  lambda torch, a, g, b: torch.nn.functional.layer_norm(a, (width,), g, b),
                  bytes_moved=4.0 * 2 * rows * width)


NONBENCH = {
    "dense_x_wt": dense_x_wt,
    "ffn2_128": lambda: dense_x_wt(128, 3072, 768, "ffn2_128"),
    "ffn2_197": lambda: dense_x_wt(197, 3072, 768, "ffn2_197"),
    "ffn1_197": lambda: dense_x_wt(197, 768, 3072, "ffn1_197"),
    "bmm_qk": bmm_qk,
    "matmul1000": lambda: matmul_mnk("matmul1000", 1000, 1000, 1000),
    "matmul_odd": lambda: matmul_mnk("matmul_odd", 1023, 771, 517),
    "conv_odd": lambda: conv_general("conv_odd", 90, 150, 27, 1),
    "conv_s2": lambda: conv_general("conv_s2", 96, 160, 57, 2),
    "conv_r50_7": lambda: conv_general("conv_r50_7", 512, 512, 7, 1),
    "depthwise": depthwise,
    "maxpool": maxpool,
    "softmax": softmax,
    "layer_norm": layer_norm,
}

KERNELS = {
    "matmul4096": lambda: matmul(4096),
    "matmul256": lambda: matmul(256),  # a quick check of the script (e.g. on PoCL), not in the default list
    "conv_r50_56": lambda: conv("conv_r50_56", 64, 56),
    "conv_r50_14": lambda: conv("conv_r50_14", 256, 14),
    **NONBENCH,
}


def torch_seconds(torch, fn, args, repeat=50):
    """GPU seconds per call over `repeat` calls after warm-up: the faster of two timings. The calls captured in a
    CUDA graph and replayed run back to back on the GPU (timed as launched from Python, a kernel of a few
    microseconds measures the host's dispatch instead: 0.02 ms of cuDNN's convolution read 0.1-0.2 ms while
    other processes kept the CPU busy). But a call captured in a graph may not run the kernel that eager
    PyTorch runs: on an H100, cuDNN's 3x3 convolution of 256 channels at 14 x 14 took 55 us a call replayed and
    at most 22 us launched eagerly. So the launches are timed too (between CUDA events, `repeat` calls in a
    row), and the peer keeps whichever is faster."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(5):
            fn(torch, *args)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(repeat):
                fn(torch, *args)
        graph.replay()
        torch.cuda.synchronize()
        for _ in range(3):
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3 / repeat)
    except RuntimeError as e:
        print(f"  (PyTorch timed by its launches alone: CUDA graph capture failed: {e})")
    for _ in range(3):
        start.record()
        for _ in range(repeat):
            fn(torch, *args)
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / repeat)
    return best


def run_kernel(kernel, args, log_dir, torch):
    dag = ans.ComputeDAG(kernel.tensors)
    task = ans.SearchTask(compute_dag=dag, target=args.target, desc=kernel.name)
    log = os.path.join(log_dir, f"{kernel.name}.json")
    options = tuner.TuningOptions(num_measure_trials=args.trials, num_measures_per_round=args.per_round,
                                  time_budget_s=args.time_budget_s, verbose=args.verbose,
                                  measure_callbacks=[ans.RecordToFile(log)])
    start = time.monotonic()
    policy = search.SketchPolicy(task, search.make_cost_model(args.model, "auto", target=args.target),
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
    """One row per kernel; a compute-bound kernel's rate is its share of the fp32 peak, a memory-bound one's
    (bytes_moved given) its GB/s. The ratio is PyTorch's time over ours (above 1: autosched is faster)."""
    print(f"\n{'kernel':13}{'ms':>9}{'TFLOP/s':>9}{'rate':>11}{'torch ms':>10}{'ratio':>7}"
          f"{'trials':>8}{'tuning s':>10}")
    ratios = []
    for row in rows:
        kernel = kernels[row["kernel"]]
        if row["ms"] is None:
            print(f"{row['kernel']:13}{'-':>9}  no valid schedule: {row['errors']}")
            continue
        seconds = row["ms"] * 1e-3
        tflops = kernel.flop / seconds / 1e12
        rate = (f"{kernel.bytes_moved / seconds / 1e9:6.0f} GB/s" if kernel.bytes_moved
                else f"{100 * tflops / peak_tflops:9.1f}%")
        torch_ms = f"{row['torch_ms']:10.3f}" if row["torch_ms"] else f"{'-':>10}"
        ratio = f"{row['torch_ms'] / row['ms']:7.2f}" if row["torch_ms"] else f"{'-':>7}"
        if row["torch_ms"]:
            ratios.append(row["torch_ms"] / row["ms"])
        print(f"{row['kernel']:13}{row['ms']:9.3f}{tflops:9.2f}{rate:>11}{torch_ms}{ratio}"
              f"{row['trials']:8d}{row['tune_s']:10.0f}")
    if len(ratios) > 1:
        print(f"geometric mean of the ratios: {float(np.exp(np.mean(np.log(ratios)))):.2f} over {len(ratios)} kernels")
    print(_env.load_note())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="opencl -device=nvidia")
    parser.add_argument("--kernels", default="matmul4096,conv_r50_56,conv_r50_14",
                        help="comma-separated names (the docstring lists them); nonbench: every non-benchmark shape")
    parser.add_argument("--trials", type=int, default=256, help="measurements per kernel")
    parser.add_argument("--per-round", type=int, default=64)
    parser.add_argument("--time-budget-s", type=float, default=150, help="tuning wall-clock budget per kernel")
    parser.add_argument("--model", default="auto", choices=["auto", "scratch", "pretrained", "xgb", "random"],
                        help="the cost model (make_cost_model): auto starts from the GPU model shipped in the "
                             "package on GPUs with warps (as pretrained), scratch learns from the session alone")
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
    names = [m for n in names for m in (NONBENCH if n == "nonbench" else [n])]
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
    torch = _env.torch_cuda()
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
