"""Benchmark: tune three CPU kernels and compare them with numpy, PyTorch and Halide's autoschedulers in one run.

Run: python3 bench/bench_tune_ops.py [--trials 1000] [--ops matmul,conv2d,depthwise] [--log-dir DIR]
     [--model auto|xgb|random] [--no-halide] [--no-torch] [--no-expert] [--tiny]

The kernels (float32, batch 1):
  matmul     1024 x 1024 x 1024
  conv2d     ResNet-50 layer: 1x56x56x64 -> 64 channels, 3x3, stride 1, pad 1, NHWC (HWIO weights)
  depthwise  MobileNet-V2 layer: 1x56x56x144, 3x3, stride 1, pad 1, NHWC
Each is tuned with task.tune (the log goes to --log-dir, so a later run with the same directory resumes),
its best schedule is built and checked against numpy, and then every implementation is timed in this process:
the tuned kernel, the expert seed alone (the analytic schedule tuning starts from), numpy/OpenBLAS (matmul only), PyTorch on the CPU (channels_last for the convolutions, one
thread per core), and Halide's Adams2019, Li2018 and Mullapudi2016 autoschedulers (parallelism = cores; each
one's scheduling time is printed too; each runs in a child process, given up after --halide-timeout seconds). The table gives milliseconds, GFLOP/s, % of the target's estimated peak
and each peer's time divided by the tuned time (above 1: autosched is faster), then the tuning wall time, the
time per trial and the share spent outside measurement. Not a test: timings vary with the machine and its load.
--tiny takes the kernels at a tiny size (matmul 32^3, 8x8x8 convolutions): a check that the script works.
--no-expert tunes without the expert schedule (SearchParams.use_expert_schedule=False: not measured, not seeded)
and times no expert seed; the header line says which.
A peer that is not installed (pip install 'autosched[torch]' halide) is reported and skipped.
int8 and bfloat16 kernels: --ops int8_matmul,int8_conv,bf16_matmul,bf16_conv runs bench/bench_int8.py's
kernels (u8 x s8 -> s32 and bfloat16 -> float32 on the dot-product instructions) with the same --trials,
--target and --log-dir, against onnxruntime's and PyTorch's quantized and bfloat16 kernels, after the float ones.
"""
import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import autosched as ans  # noqa: E402
from autosched import ops, search, te  # noqa: E402
from autosched import tune as tuner  # noqa: E402


# ---- the kernels: autosched definition, numpy inputs and reference, PyTorch and Halide versions ----

class Kernel:
    """One benchmark kernel: name, FLOPs, an autosched DAG, inputs, a reference output and peer runners."""

    def __init__(self, name, flop, tensors, inputs, reference, torch_fn, halide_fn):
        self.name, self.flop, self.inputs, self.reference = name, flop, inputs, reference
        self.dag = ans.ComputeDAG(tensors)
        self.torch_fn, self.halide_fn = torch_fn, halide_fn


def matmul_kernel(rng, n=1024):
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))

    def torch_fn(torch):
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        out = torch.empty((n, n))
        return lambda: torch.mm(ta, tb, out=out)

    def halide_fn(hl):
        Ai, Bi = hl.ImageParam(hl.Float(32), 2, "A"), hl.ImageParam(hl.Float(32), 2, "B")
        x, y, r = hl.Var("x"), hl.Var("y"), hl.RDom([(0, n)])
        f = hl.Func("C")
        f[x, y] = 0.0
        f[x, y] += Ai[r.x, y] * Bi[x, r.x]  # Halide's first dimension is numpy's last
        for p in (Ai, Bi, f):
            p.set_estimates([(0, n), (0, n)])
        return f, [(Ai, a), (Bi, b)], (n, n)

    return Kernel(f"matmul {n}^3", 2.0 * n ** 3, [A, B, C], [a, b], a @ b, torch_fn, halide_fn)


def conv_kernel(rng, network, size, channels, depthwise):
    name = f"{'depthwise' if depthwise else 'conv2d'} {network} {size}x{size}x{channels}" + \
        ("" if depthwise else f"->{channels}") + " 3x3"
    h = w = size
    kh = kw = 3
    data = te.placeholder((1, h, w, channels), name="data")
    if depthwise:
        kernel = te.placeholder((kh, kw, channels, 1), name="kernel")
        out = ops.depthwise_conv2d_nhwc(data, kernel, stride=1, padding=1)
        flop = 2.0 * h * w * channels * kh * kw
    else:
        kernel = te.placeholder((kh, kw, channels, channels), name="kernel")
        out = ops.conv2d_nhwc(data, kernel, stride=1, padding=1)
        flop = 2.0 * h * w * channels * channels * kh * kw
    x = rng.standard_normal((1, h, w, channels)).astype("float32")
    wt = rng.standard_normal(tuple(kernel.shape)).astype("float32")
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros((1, h, w, channels), "float32")
    for dy in range(kh):
        for dx in range(kw):
            window = padded[:, dy:dy + h, dx:dx + w, :]
            ref += window * wt[dy, dx, :, 0] if depthwise else window @ wt[dy, dx]

    def torch_fn(torch):
        # NCHW logical shape in channels_last memory, OIHW weights (groups=C for depthwise).
        tx = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        if depthwise:
            tw = torch.from_numpy(wt).permute(2, 3, 0, 1).contiguous()  # (C, 1, KH, KW)
        else:
            tw = torch.from_numpy(wt).permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
        groups = channels if depthwise else 1
        return lambda: torch.nn.functional.conv2d(tx, tw, padding=1, groups=groups)

    def halide_fn(hl):
        # numpy (N, H, W, C) is Halide (c, w, h, n); HWIO weights are (o, i, kw, kh); depthwise (c, kw, kh).
        I = hl.ImageParam(hl.Float(32), 4, "data")
        W = hl.ImageParam(hl.Float(32), 3 if depthwise else 4, "kernel")
        c, xx, yy, nn = hl.Var("c"), hl.Var("x"), hl.Var("y"), hl.Var("n")
        padded_in = hl.BoundaryConditions.constant_exterior(I, 0.0, [(0, channels), (0, w), (0, h), (0, 1)])
        f = hl.Func("conv")
        f[c, xx, yy, nn] = 0.0
        if depthwise:
            r = hl.RDom([(0, kw), (0, kh)])
            f[c, xx, yy, nn] += padded_in[c, xx + r.x - 1, yy + r.y - 1, nn] * W[c, r.x, r.y]
            W.set_estimates([(0, channels), (0, kw), (0, kh)])
            weights = wt[:, :, :, 0]
        else:
            r = hl.RDom([(0, channels), (0, kw), (0, kh)])
            f[c, xx, yy, nn] += padded_in[r.x, xx + r.y - 1, yy + r.z - 1, nn] * W[c, r.x, r.y, r.z]
            W.set_estimates([(0, channels), (0, channels), (0, kw), (0, kh)])
            weights = wt
        I.set_estimates([(0, channels), (0, w), (0, h), (0, 1)])
        f.set_estimates([(0, channels), (0, w), (0, h), (0, 1)])
        return f, [(I, x), (W, np.ascontiguousarray(weights))], (1, h, w, channels)

    return Kernel(name, flop, [data, kernel, out], [x, wt], ref, torch_fn, halide_fn)


# Each kernel draws its inputs from its own seeded generator, so a child process rebuilds the same ones.
# tiny: the sizes of --tiny.
# --ops names of bench_int8.py's kernels
LOW_PRECISION = {"int8_matmul": "matmul", "int8_conv": "conv", "bf16_matmul": "bf16", "bf16_conv": "bf16conv"}

KERNELS = {
    "matmul": lambda tiny=False: matmul_kernel(np.random.default_rng(1), 32 if tiny else 1024),
    "conv2d": lambda tiny=False: conv_kernel(np.random.default_rng(2), "resnet50", 8 if tiny else 56,
                                             8 if tiny else 64, depthwise=False),
    "depthwise": lambda tiny=False: conv_kernel(np.random.default_rng(3), "mobilenetv2", 8 if tiny else 56,
                                                8 if tiny else 144, depthwise=True),
}


# ---- peers ----

def torch_seconds(kernel, threads):
    try:
        import torch
    except ImportError:
        return None, "not installed (pip install 'autosched[torch]')"
    torch.set_num_threads(threads)
    with torch.no_grad():
        fn = kernel.torch_fn(torch)
        got = fn()
        got = got.permute(0, 2, 3, 1).numpy() if got.dim() == 4 else got.numpy()
        err = relative_error(got, kernel.reference)
        return _env.best_mean(fn), f"torch {torch.__version__}, max rel. error {err:.1e}"


def load_halide():
    try:
        import halide as hl
    except ImportError:
        return None
    libdir = os.path.join(os.path.dirname(hl.__file__), "lib64")
    for plugin in ("adams2019", "li2018", "mullapudi2016"):
        path = os.path.join(libdir, f"libautoschedule_{plugin}.so")
        if os.path.exists(path):
            hl.load_plugin(path)
    return hl


def halide_in_child(op, tiny, autoscheduler, cores, timeout_s, memory_gib):
    """halide_seconds in a child process bounded in time and memory (an autoscheduler can run for many
    minutes or take all the memory on a large reduction); returns (seconds or None, note)."""
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_halide_child, args=(sender, op, tiny, autoscheduler, cores, memory_gib))
    child.start()
    sender.close()
    try:
        if receiver.poll(timeout_s):
            return receiver.recv()
        return None, f"gave up after {timeout_s} s (scheduling had not finished)"
    except EOFError:  # the child died without an answer
        child.join()
        return None, f"its process died (exit code {child.exitcode}; memory limited to {memory_gib} GiB)"
    finally:
        if child.is_alive():
            child.kill()
        child.join()


def _halide_child(sender, op, tiny, autoscheduler, cores, memory_gib):
    resource.setrlimit(resource.RLIMIT_AS, (memory_gib << 30, memory_gib << 30))
    try:
        sender.send(halide_seconds(load_halide(), KERNELS[op](tiny), autoscheduler, cores))
    except Exception as e:  # a Halide error or MemoryError: reported, not fatal
        sender.send((None, f"failed: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"))


def halide_seconds(hl, kernel, autoscheduler, cores):
    """Times Halide's pipeline scheduled by `autoscheduler`; returns (seconds, note)."""
    func, params, out_shape = kernel.halide_fn(hl)
    pipeline, target = hl.Pipeline(func), hl.get_jit_target_from_environment()
    t0 = time.perf_counter()
    pipeline.apply_autoscheduler(target, hl.AutoschedulerParams(autoscheduler, {"parallelism": str(cores)}))
    pipeline.compile_jit(target)
    schedule_s = time.perf_counter() - t0
    for param, array in params:
        param.set(hl.Buffer(array))
    out = hl.Buffer(hl.Float(32), list(reversed(out_shape)))
    pipeline.realize(out)
    err = relative_error(np.asarray(out).reshape(out_shape), kernel.reference)
    return _env.best_mean(lambda: pipeline.realize(out)), f"scheduled + compiled in {schedule_s:.1f} s, " \
                                                       f"max rel. error {err:.1e}"


def relative_error(got, want):
    return float(np.abs(got - want).max() / max(1e-30, np.abs(want).max()))


# ---- autosched ----

def tune(kernel, args, log_dir):
    task = ans.SearchTask(compute_dag=kernel.dag, target=args.target, desc=kernel.name)
    log = os.path.join(log_dir, kernel.name.split()[0] + ".json")
    options = ans.TuningOptions(num_measure_trials=args.trials, num_measures_per_round=args.per_round,
                                measure_callbacks=[ans.RecordToFile(log)], verbose=1)
    t0 = time.perf_counter()
    params = search.SearchParams(use_expert_schedule=not args.no_expert)
    policy = search.SketchPolicy(task, search.make_cost_model(args.model, "auto"), params)
    result = task.tune(options, search_policy=policy)
    wall = time.perf_counter() - t0
    module = task.build_best(log)
    outputs = [np.zeros(kernel.reference.shape, "float32")]
    module(*kernel.inputs, *outputs)
    err = relative_error(outputs[0], kernel.reference)
    seconds = min(module.time_evaluator(number=10, repeat=5, min_repeat_ms=100)(*kernel.inputs, *outputs))
    return task, result, wall, seconds, err


def expert_seed_seconds(task, kernel):
    """The expert seed alone (search.expert_schedule), built, checked and timed as the tuned kernel is."""
    state, reason, _ = search.expert_schedule_info(task)
    if state is None:
        return None, f"no seed: {reason}"
    module = ans.build(task, state)
    outputs = [np.zeros(kernel.reference.shape, "float32")]
    module(*kernel.inputs, *outputs)
    err = relative_error(outputs[0], kernel.reference)
    if err > 1e-3:
        return None, f"wrong result (max rel. error {err:.1e})"
    return min(module.time_evaluator(number=10, repeat=5, min_repeat_ms=100)(*kernel.inputs, *outputs)), ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--per-round", type=int, default=64)
    parser.add_argument("--ops", default="matmul,conv2d,depthwise", help=f"comma-separated, of {list(KERNELS)}")
    parser.add_argument("--model", default="auto", help="xgb, random or auto (xgb when available)")
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--log-dir", default=None, help="keep the tuning logs here (a rerun resumes them)")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-halide", action="store_true")
    parser.add_argument("--halide-timeout", type=int, default=300, help="seconds per Halide autoscheduler")
    parser.add_argument("--halide-memory-gib", type=int, default=8, help="address-space limit of its process")
    parser.add_argument("--tiny", action="store_true", help="tiny kernels (a check that the script works)")
    parser.add_argument("--no-expert", action="store_true",
                        help="tune without the expert schedule (SearchParams.use_expert_schedule=False)")
    args = parser.parse_args()
    ops = args.ops.split(",")
    unknown = [o for o in ops if o not in KERNELS and o not in LOW_PRECISION]
    if unknown:
        parser.error(f"unknown --ops {unknown}; choose from {list(KERNELS) + list(LOW_PRECISION)}")
    low_precision = [LOW_PRECISION[o] for o in ops if o in LOW_PRECISION]
    args.ops = ",".join(o for o in ops if o in KERNELS)
    cores = os.cpu_count() or 1
    print(f"command: {' '.join(sys.argv)}")
    print(f"CPU: {ans.Target(args.target)}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("expert schedule: " + ("off (use_expert_schedule=False: not measured, not seeded)" if args.no_expert
                                 else "on (measured first and seeded into every population)"))
    halide = not args.no_halide and load_halide() is not None
    if not args.no_halide and not halide:
        print("Halide: not installed (pip install halide); its autoschedulers are skipped")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        log_dir = args.log_dir or tmp
        os.makedirs(log_dir, exist_ok=True)
        for op in filter(None, args.ops.split(",")):
            kernel = KERNELS[op](args.tiny)
            print(f"\n==== {kernel.name}: tuning for {args.trials} trials")
            task, result, wall, ours, err = tune(kernel, args, log_dir)
            peak = tuner.peak_gflops(task)
            peers = [] if args.no_expert else [("expert seed (ours)",) + expert_seed_seconds(task, kernel)]
            if op == "matmul":
                a, b = kernel.inputs
                out = np.empty_like(kernel.reference)
                peers.append(("numpy (OpenBLAS)", _env.best_mean(lambda: np.matmul(a, b, out=out)), ""))
            if not args.no_torch:
                peers.append(("PyTorch",) + torch_seconds(kernel, cores))
            for name in ("Adams2019", "Li2018", "Mullapudi2016") if halide else ():
                print(f"Halide {name} ...", flush=True)
                peers.append((f"Halide {name}",) + halide_in_child(op, args.tiny, name, cores,
                                                                   args.halide_timeout, args.halide_memory_gib))
            rows.append((kernel, result, wall, ours, err, peak, peers))
    if rows:
        print_table(rows)
    if low_precision:
        import bench_int8
        print("\n==== int8 and bfloat16 kernels (bench/bench_int8.py)")
        bench_int8.main(["--ops", ",".join(low_precision), "--trials", str(args.trials), "--target", args.target]
                        + (["--log-dir", args.log_dir] if args.log_dir else []) + (["--tiny"] if args.tiny else []))


def print_table(rows):
    for kernel, result, wall, ours, err, peak, peers in rows:
        gflops = kernel.flop / ours / 1e9
        print(f"\n{kernel.name}: tuned {ours * 1e3:.3f} ms = {gflops:.1f} GFLOP/s "
              f"({100 * gflops / peak:.0f}% of the estimated peak {peak:.0f} GFLOP/s), max rel. error {err:.1e}")
        print(f"  {'peer':22}{'ms':>10}{'GFLOP/s':>10}{'peer/tuned':>12}  note")
        for name, seconds, note in peers:
            if seconds is None:
                print(f"  {name:22}{'-':>10}{'-':>10}{'-':>12}  {note}")
            else:
                print(f"  {name:22}{seconds * 1e3:10.3f}{kernel.flop / seconds / 1e9:10.1f}"
                      f"{seconds / ours:12.2f}  {note}")
        if result.resumed_trials and result.resumed_trials >= result.trials:
            print(f"  tuning: all {result.trials} trials resumed from the log (the tuning time is in the run "
                  "that wrote it)")
            continue
        trials = max(1, result.trials)
        measuring = sum(result.seconds.get(k, 0.0) for k in ("build", "run", "measure"))
        print(f"  tuning: {result.trials} trials in {wall:.0f} s ({wall / trials:.2f} s per trial), "
              f"{100 * (1 - measuring / max(wall, 1e-9)):.0f}% of it outside measurement (build + run); "
              f"speed-up over the baseline {result.speedup or float('nan'):.1f}x")


if __name__ == "__main__":
    main()
