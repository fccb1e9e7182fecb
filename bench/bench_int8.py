"""Benchmark: int8 and bfloat16 matmul and convolution against onnxruntime's and PyTorch's kernels, in one run.

Run: python3 bench/bench_int8.py [--size 1024] [--ops matmul,conv,bf16,bf16conv] [--trials 0] [--rounds 5]
                                 [--log-dir DIR] [--target T] [--tiny]

autosched computes the product over a weight packed for the CPU's int8 dot-product instruction
(ops.matmul_dot_packed: [N/16, K/4, 16, 4], panels of 16 columns); where the CPU has VNNI the code generator
emits vpdpbusd (and AMX's tdpbusd where it has that), on AVX2 two vpmaddwd per lane group (the same exact sums).
With --trials 0 (the default) the expert schedule is timed as it is; with more, the task is tuned (seeded with
the expert) and the best schedule is timed. Peers in this process, on the same threads (the cores this process
may run on; run under `taskset -c 0,1` for two):
- matmul (u8 x s8 -> s32): onnxruntime's MatMulInteger (weight an initializer, zero points 0), PyTorch's
  quantized linear on its x86 and onednn engines (requantized to u8: a little more work than ours), autosched's
  own float32 matmul (its expert schedule, or tuned with the same trials) and numpy's (OpenBLAS).
- conv: ResNet-50's 3x3, 64 -> 64 channels at 56x56, NCHW16c for autosched (kernel packed by
  pack_dot_conv_weight), against onnxruntime's ConvInteger and QLinearConv (u8 out), PyTorch's quantized
  convolution on each engine (u8 out) and its float32 convolution.
- bf16: the bfloat16 x bfloat16 -> float32 matmul over a weight packed in pairs of rows (vdpbf16ps where the CPU
  has AVX512-BF16, tdpbf16ps with AMX) against PyTorch's bfloat16 matmul (which rounds its result to bfloat16).
- bf16conv: the same convolution as conv in bfloat16 (float32 out), the kernel packed in pairs of input
  channels, against PyTorch's bfloat16 and float32 convolutions (channels_last).
Every implementation is timed in turn over --rounds alternating rounds (the best of each is printed), so that a
slow spell of the machine falls on all of them. Prints the CPU, its dot-product features, the instructions each
kernel uses, times, GOP/s and ratios (peer / autosched: above 1, autosched is faster). Not a test.
"""
import argparse
import os
import re
import sys
import tempfile
import warnings

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS
warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*deprecated")

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import search, te  # noqa: E402
from autosched.ops.quantized import pack_dot_conv_weight, pack_dot_weight  # noqa: E402

INSTRUCTIONS = ("vpdpbusd", "vpmaddwd", "vpmaddubsw", "vpmulld", "vfmadd231ps", "tdpbusd", "tdpbsud", "tileloadd")


def cores():
    return len(os.sched_getaffinity(0))


def schedule(task, trials, log_dir, name):
    """The expert schedule (trials 0) or the best after tuning."""
    if trials <= 0:
        return search.expert_schedule(task)
    os.makedirs(log_dir, exist_ok=True)
    log = os.path.join(log_dir, f"{name}.json")
    task.tune(ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=min(64, trials), verbose=0,
                                measure_callbacks=[ans.RecordToFile(log)]))
    return task.apply_best(log)


class time_module:  # noqa: N801 -- used like the peers' run functions
    """The built module on `args`, timed by its own evaluator (no Python call in the time) beside the peers."""

    def __init__(self, mod, args):
        self.evaluator, self.args = mod.time_evaluator(number=5, repeat=3), args

    def seconds(self):
        return float(np.min(self.evaluator(*self.args).results))


def alternate(rows, rounds):
    """The rows with each run function replaced by its best time: every round times each run in turn (the mean
    of as many calls as fill 0.1 s, the best of 3), so that a slow spell of the machine falls on all of them."""
    best = [float("inf")] * len(rows)
    for _ in range(rounds):
        for i, (_, run, _) in enumerate(rows):
            if run is not None:
                seconds = run.seconds() if isinstance(run, time_module) else _env.best_mean(run, repeat=3)
                best[i] = min(best[i], seconds)
    return [(name, best[i] if run is not None else None, note) for i, (name, run, note) in enumerate(rows)]


def float_matmul_task(n, target):
    a, b = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([a, b, c]), target=target)


def ort_seconds(op, feeds, initializers, out_shape, threads, want, out_uint8=False, **attrs):
    """(run, note) of a one-node onnxruntime model: `op` on the feeds (uint8) and the initializers, into int32
    (uint8 with `out_uint8`: the QLinear ops, which requantize)."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        return None, f"onnxruntime not installed ({e})"
    names = list(feeds) + [name for name, _ in initializers]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["Y"], **attrs)], op,
        [helper.make_tensor_value_info(k, TensorProto.UINT8, list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8 if out_uint8 else TensorProto.INT32,
                                       list(out_shape))],
        initializer=[numpy_helper.from_array(v, k) for k, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what every onnxruntime since 1.10 reads
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        (out,) = session.run(None, feeds)
    except Exception as e:  # noqa: BLE001 (an op this onnxruntime lacks is reported, not fatal)
        return None, f"onnxruntime {ort.__version__} cannot run {op}: {str(e).splitlines()[0][:120]}"
    note = f"onnxruntime {ort.__version__}"
    if want is not None and not np.array_equal(out, want):
        # Without VNNI, its u8 x s8 kernel sums pairs of products in int16 (pmaddubsw), which saturates.
        wrong = np.count_nonzero(out != want)
        note += f"; its result differs from the exact one in {wrong} of {out.size} elements (max |diff| " \
                f"{np.abs(out.astype(np.int64) - want).max()})"
    return (lambda: session.run(None, feeds)), note


def matmul_rows(args, n, threads, log_dir):
    """(title, GOP, rows) of the matmul."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (n, n)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, n)).astype(np.int8)
    want = a.astype(np.int64) @ w.astype(np.int64)
    task = ans.SearchTask(func="matmul_u8s8_packed", args=(n, n, n), target=args.target)
    mod = ans.build(task.compute_dag, schedule(task, args.trials, log_dir, "int8"), args.target)
    out = np.zeros((n, -(-n // 16), 16), np.int32)
    int8_args = [a, pack_dot_weight(w), out]
    mod(*int8_args)
    if not np.array_equal(out.reshape(n, -1)[:, :n], want):
        sys.exit("autosched's int8 matmul differs from numpy's")
    print_instructions("int8 matmul", mod)
    rows = [("autosched int8 (u8 x s8 -> s32)", time_module(mod, int8_args), "")]
    rows.append(("onnxruntime MatMulInteger",) + ort_seconds(
        "MatMulInteger", {"A": a}, [("W", w)], (n, n), threads, want))
    rows += torch_quantized_linear_rows(a, w, want, threads)
    ftask = float_matmul_task(n, args.target)
    fmod = ans.build(ftask.compute_dag, schedule(ftask, args.trials, log_dir, "float32"), args.target)
    af, wf = a.astype(np.float32), w.astype(np.float32)
    rows.append(("autosched float32", time_module(fmod, [af, wf, np.zeros((n, n), np.float32)]), ""))
    rows.append(("numpy float32 (OpenBLAS)", lambda: af @ wf, ""))
    return f"matmul {n}x{n}x{n}", 2 * n ** 3 / 1e9, rows


def conv_rows(args, tiny, threads, log_dir):
    """(title, GOP, rows) of ResNet-50's 3x3 convolution, 64 -> 64 channels at 56x56 (NCHW16c for autosched)."""
    c, size = (16, 8) if tiny else (64, 56)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (1, c, size, size)).astype(np.uint8)
    w = rng.integers(-128, 128, (c, c, 3, 3)).astype(np.int8)
    task = ans.SearchTask(func="conv2d_nchwc_u8s8_dot", args=(1, c, size, size, c, 3, 3, 1, 1),
                          target=args.target)
    mod = ans.build(task.compute_dag, schedule(task, args.trials, log_dir, "int8_conv"), args.target)
    x5 = np.ascontiguousarray(x.reshape(1, c // 16, 16, size, size).transpose(0, 1, 3, 4, 2))
    out = np.zeros((1, c // 16, size, size, 16), np.int32)
    int8_args = [x5, pack_dot_conv_weight(w, 16, 16), out]
    mod(*int8_args)
    got = out.transpose(0, 1, 4, 2, 3).reshape(1, c, size, size)
    want = _conv_reference(x, w)
    if want is not None and not np.array_equal(got, want):
        sys.exit("autosched's int8 convolution differs from the reference")
    print_instructions("int8 convolution", mod)
    rows = [("autosched int8 (u8 x s8 -> s32)", time_module(mod, int8_args), "NCHW16c")]
    rows.append(("onnxruntime ConvInteger",) + ort_seconds(
        "ConvInteger", {"A": x}, [("W", w)], (1, c, size, size), threads, want, pads=[1, 1, 1, 1]))
    one, zero = np.array(1.0, np.float32), np.array(0, np.uint8)
    y_scale = np.array(np.abs(want).max() / 127 if want is not None else 1.0, np.float32)
    rows.append(("onnxruntime QLinearConv (-> u8)",) + ort_seconds(
        "QLinearConv", {"x": x}, [("x_scale", one), ("x_zero_point", zero), ("w", w), ("w_scale", one),
                                  ("w_zero_point", np.array(0, np.int8)), ("y_scale", y_scale),
                                  ("y_zero_point", np.array(128, np.uint8))],
        (1, c, size, size), threads, None, out_uint8=True, pads=[1, 1, 1, 1]))
    rows += torch_quantized_conv_rows(x, w, float(y_scale), threads)
    rows.append(("PyTorch float32 (channels_last)",) + torch_conv_seconds(x, w, threads))
    return f"conv2d 3x3 {c}->{c} at {size}x{size}", 2 * c * c * 9 * size * size / 1e9, rows


def _quantized_engines(torch):
    """PyTorch's int8 CPU engines worth timing here: x86 (its default: FBGEMM or oneDNN, by shape) and onednn
    (AMX where the CPU has it)."""
    return [e for e in ("x86", "onednn") if e in torch.backends.quantized.supported_engines]


def _exact_quantized(torch, array, dtype):
    """An integer array as a PyTorch quantized tensor of scale 1 and zero point 0 (its values exactly)."""
    return torch.quantize_per_tensor(torch.from_numpy(np.ascontiguousarray(array).astype(np.float32)), 1.0, 0, dtype)


def torch_quantized_linear_rows(a, w, want, threads):
    """PyTorch's quantized linear (u8 x s8, requantized to u8) on each engine; scales 1 so the inputs are exact."""
    try:
        import torch
    except ImportError as e:
        return [("PyTorch quantized linear", None, f"PyTorch not installed ({e})")]
    torch.set_num_threads(threads)
    xq, wq = _exact_quantized(torch, a, torch.quint8), _exact_quantized(torch, w.T, torch.qint8)
    out_scale = float(np.abs(want).max() / 127)
    rows = []
    for engine in _quantized_engines(torch):
        torch.backends.quantized.engine = engine
        packed = torch.ops.quantized.linear_prepack(wq, None)
        run = (lambda e, p: lambda: _with_engine(torch, e, lambda: torch.ops.quantized.linear(xq, p, out_scale,
                                                                                              128)))(engine, packed)
        rows.append((f"PyTorch quantized linear ({engine})", run, "requantized to u8"))
    return rows


def torch_quantized_conv_rows(x, w, y_scale, threads):
    """PyTorch's quantized 3x3 convolution (u8 x s8, requantized to u8, channels_last) on each engine."""
    try:
        import torch
    except ImportError as e:
        return [("PyTorch quantized conv", None, f"PyTorch not installed ({e})")]
    torch.set_num_threads(threads)
    xq = _exact_quantized(torch, x, torch.quint8).contiguous(memory_format=torch.channels_last)
    wq = _exact_quantized(torch, w, torch.qint8)
    rows = []
    for engine in _quantized_engines(torch):
        torch.backends.quantized.engine = engine
        conv = torch.ao.nn.quantized.Conv2d(w.shape[1], w.shape[0], 3, padding=1)
        conv.set_weight_bias(wq, None)
        conv.scale, conv.zero_point = y_scale, 128
        run = (lambda e, m: lambda: _with_engine(torch, e, lambda: m(xq)))(engine, conv)
        rows.append((f"PyTorch quantized conv ({engine})", run, "requantized to u8"))
    return rows


def _with_engine(torch, engine, call):
    torch.backends.quantized.engine = engine
    return _no_grad(torch, call)


def _conv_reference(x, w):
    try:
        import torch
    except ImportError:
        return None
    out = torch.nn.functional.conv2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                                     padding=1)
    return out.numpy().astype(np.int64)


def torch_conv_seconds(x, w, threads):
    try:
        import torch
    except ImportError as e:
        return None, f"PyTorch not installed ({e})"
    torch.set_num_threads(threads)
    xt = torch.from_numpy(x.astype(np.float32)).contiguous(memory_format=torch.channels_last)
    wt = torch.from_numpy(w.astype(np.float32)).contiguous(memory_format=torch.channels_last)
    def run():
        with torch.no_grad():
            torch.nn.functional.conv2d(xt, wt, padding=1)
    return run, f"torch {torch.__version__}"


def bf16_rows(args, n, threads, log_dir):
    """(title, GFLOP, rows) of the bfloat16 matmul (float32 accumulation) against PyTorch's bfloat16 matmul."""
    import ml_dtypes
    rng = np.random.default_rng(2)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    want = a.astype(np.float64) @ w.astype(np.float64)
    task = ans.SearchTask(func="matmul_bf16_packed", args=(n, n, n), target=args.target)
    mod = ans.build(task.compute_dag, schedule(task, args.trials, log_dir, "bf16"), args.target)
    out = np.zeros((n, -(-n // 16), 16), np.float32)
    bf16_args = [a, pack_dot_weight(w, 16, 2), out]
    mod(*bf16_args)
    error = float(np.abs(out.reshape(n, -1)[:, :n] - want).max() / np.abs(want).max())
    if error > 1e-4:
        sys.exit(f"autosched's bfloat16 matmul differs from the exact product by {error:.1e} (relative)")
    print_instructions("bfloat16 matmul", mod, ("vdpbf16ps", "tdpbf16ps", "vfmadd231ps"))
    rows = [("autosched bfloat16 (-> float32)", time_module(mod, bf16_args), f"max rel. error {error:.1e}")]
    try:
        import torch
        torch.set_num_threads(threads)
        ta = torch.from_numpy(a.view(np.uint16).astype(np.int32) << 16).view(torch.float32).to(torch.bfloat16)
        tw = torch.from_numpy(w.view(np.uint16).astype(np.int32) << 16).view(torch.float32).to(torch.bfloat16)
        rows.append(("PyTorch bfloat16 matmul", lambda: ta @ tw, f"torch {torch.__version__}"))
    except ImportError as e:
        rows.append(("PyTorch bfloat16 matmul", None, f"PyTorch not installed ({e})"))
    return f"bfloat16 matmul {n}x{n}x{n}", 2 * n ** 3 / 1e9, rows


def bf16_conv_rows(args, tiny, threads, log_dir):
    """(title, GFLOP, rows) of ResNet-50's 3x3 convolution in bfloat16 (float32 accumulation, NCHW16c, the kernel
    packed in pairs of input channels) against PyTorch's bfloat16 and float32 convolutions (channels_last)."""
    import ml_dtypes
    c, size = (16, 8) if tiny else (64, 56)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, c, size, size)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((c, c, 3, 3)).astype(ml_dtypes.bfloat16)
    task = ans.SearchTask(func="conv2d_nchwc_bf16_dot", args=(1, c, size, size, c, 3, 3, 1, 1), target=args.target)
    mod = ans.build(task.compute_dag, schedule(task, args.trials, log_dir, "bf16_conv"), args.target)
    x5 = np.ascontiguousarray(x.reshape(1, c // 16, 16, size, size).transpose(0, 1, 3, 4, 2))
    out = np.zeros((1, c // 16, size, size, 16), np.float32)
    bf16_args = [x5, pack_dot_conv_weight(w, 16, 16, group=2), out]
    mod(*bf16_args)
    rows = [("autosched bfloat16 (-> float32)", time_module(mod, bf16_args), "NCHW16c")]
    try:
        import torch
    except ImportError as e:
        return f"bfloat16 conv2d 3x3 {c}->{c} at {size}x{size}", 2 * c * c * 9 * size * size / 1e9, rows + [
            ("PyTorch bfloat16 (channels_last)", None, f"PyTorch not installed ({e})")]
    torch.set_num_threads(threads)
    xf, wf = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(w.astype(np.float32))
    want = torch.nn.functional.conv2d(xf.double(), wf.double(), padding=1).numpy()
    got = out.transpose(0, 1, 4, 2, 3).reshape(1, c, size, size)
    error = float(np.abs(got - want).max() / np.abs(want).max())
    if error > 1e-4:
        sys.exit(f"autosched's bfloat16 convolution differs from the exact one by {error:.1e} (relative)")
    rows[0] = rows[0][:2] + (f"NCHW16c; max rel. error {error:.1e}",)
    print_instructions("bfloat16 convolution", mod, ("vdpbf16ps", "tdpbf16ps", "vfmadd231ps"))
    for dtype, name in ((torch.bfloat16, "bfloat16"), (torch.float32, "float32")):
        xt = xf.to(dtype).contiguous(memory_format=torch.channels_last)
        wt = wf.to(dtype).contiguous(memory_format=torch.channels_last)
        run = (lambda a, b: lambda: _no_grad(torch, lambda: torch.nn.functional.conv2d(a, b, padding=1)))(xt, wt)
        rows.append((f"PyTorch {name} (channels_last)", run, f"torch {torch.__version__}"))
    return f"bfloat16 conv2d 3x3 {c}->{c} at {size}x{size}", 2 * c * c * 9 * size * size / 1e9, rows


def _no_grad(torch, call):
    with torch.no_grad():
        return call()


def print_instructions(what, mod, instructions=INSTRUCTIONS):
    asm = mod.get_source("asm")
    used = {i: len(re.findall(rf"\b{i}\b", asm)) for i in instructions}
    print(f"{what}'s instructions: " + ", ".join(f"{i} {c}" for i, c in used.items() if c))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1024, help="M = N = K of the matmul")
    parser.add_argument("--ops", default="matmul,conv,bf16,bf16conv",
                        help="comma-separated, of matmul, conv, bf16 (matmul) and bf16conv")
    parser.add_argument("--trials", type=int, default=0, help="0: the expert schedule as it is")
    parser.add_argument("--log-dir", default=None)
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--rounds", type=int, default=5, help="alternating timing rounds")
    parser.add_argument("--tiny", action="store_true", help="small sizes (a check that the script works)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    threads = cores()
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="bench_int8_")
    print(f"CPU: {_env.cpu_text()}; {threads} cores for every implementation")
    print(f"target {args.target}")
    tables = []
    ops = args.ops.split(",")
    if "matmul" in ops:
        tables.append(matmul_rows(args, 64 if args.tiny else args.size, threads, log_dir))
    if "conv" in ops:
        tables.append(conv_rows(args, args.tiny, threads, log_dir))
    if "bf16" in ops:
        tables.append(bf16_rows(args, 64 if args.tiny else args.size, threads, log_dir))
    if "bf16conv" in ops:
        tables.append(bf16_conv_rows(args, args.tiny, threads, log_dir))
    for title, gop, runs in tables:
        rows = alternate(runs, 1 if args.tiny else args.rounds)
        ours = rows[0][1]
        print(f"\n{title} ({'expert schedule' if args.trials <= 0 else f'{args.trials} trials'}); "
              f"{_env.load_note()}")
        print(f"{'implementation':34}{'ms':>10}{'GOP/s':>9}{'peer / ours':>13}  note")
        for name, seconds, note in rows:
            if seconds is None:
                print(f"{name:34}{'-':>10}{'':>9}{'':>13}  {note}")
                continue
            ratio = f"{seconds / ours:.2f}" if name != rows[0][0] else ""
            print(f"{name:34}{seconds * 1e3:10.3f}{gop / seconds:9.1f}{ratio:>13}  {note}")


if __name__ == "__main__":
    main()
