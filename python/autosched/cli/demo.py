"""autosched's main job, run by the README's first command: tune a network, build it, check it, time it.

    python -m autosched.demo [--model resnet18 | --model model.onnx] [--time-budget 3m] [--out-dir DIR]

1. Takes a network: ResNet-18 from the zoo (random weights, batch 1) by default, another zoo model by name, or
   an ONNX file (imported with frontends.from_onnx; dynamic dims bound with --shape NAME=DIMS).
2. Extracts its tasks (one per distinct fused group of operators) and tunes them with the TaskScheduler on
   this CPU within the time budget, recording every measurement in DIR/<model>.json (a second run resumes
   from it). Prints the tasks' table (latency, speed, weight, trials) and why tuning stopped. The budget is
   the wall time from the line that announces tuning to the line that says why it stopped; loading the
   model before it and steps 3 and 4 after it are not counted.
3. Builds the network with the best schedules of the log, checks its output against onnxruntime (the same
   graph, exported to ONNX) and PyTorch (the graph run op by op with torch.nn.functional), and times all
   three in this process on the same input, taking turns in rounds (fastest_in_turns).
4. Exports the built network to DIR/<model>.so where this version of autosched can (GraphModule.export_library).

Exits with status 1 when the output differs from a peer's. onnxruntime and PyTorch are optional peers: a
missing one is reported and skipped (pip install 'autosched[onnx,torch]').
"""
import argparse
import os
import sys
import time

import numpy as np

import autosched as ans
from autosched import graph as agraph
from autosched.frontends import from_onnx
from autosched.graph import zoo
from autosched.graph.torch_runner import TorchGraph
from autosched.core.text import (compare_speed, format_duration_column, parse_duration as text_parse_duration,
                                 plain_number, short_task_name)

TOLERANCE = 1e-3  # max |difference| over the largest magnitude of the peer's output


def parse_duration(text):
    """Seconds of "180", "90s", "3m", "1h" or "2.5m" (core.text.parse_duration), as argparse wants its error."""
    try:
        return text_parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autosched.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18",
                        help=f"a zoo model ({', '.join(zoo.MODELS)}) or an .onnx file (default: resnet18)")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=DIMS",
                        help="ONNX models: bind a dynamic input, e.g. --shape input=1,3,224,224")
    parser.add_argument("--time-budget", type=parse_duration, default=180.0, metavar="T",
                        help="tuning's wall-clock budget, from the line announcing tuning to the one saying why it "
                             "stopped (building, checking and timing afterwards not counted): seconds, or 90s, "
                             "3m, 1h (default 3m)")
    parser.add_argument("--out-dir", default="autosched_demo",
                        help="where the record log and the exported network go (default ./autosched_demo)")
    parser.add_argument("--timing-s", type=float, default=2.0,
                        help="seconds of timing runs for each of autosched, onnxruntime and PyTorch (default 2)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads of the peers (default: all)")
    parser.add_argument("--per-round", type=int, default=16,
                        help="measurements per task scheduler round (default 16: small rounds let every task "
                             "get one within a few minutes)")
    parser.add_argument("--verbose", type=int, default=0, help="1: progress lines and the task scheduler's table at the end; 2: more")
    return parser.parse_args(argv)


def load_model(args):
    if args.model.endswith(".onnx"):
        shapes = {}
        for item in args.shape:
            name, _, dims = item.partition("=")
            if not name or not dims:
                raise SystemExit(f"--shape wants NAME=DIMS (e.g. input=1,3,224,224), got {item!r}")
            shapes[name] = tuple(int(d) for d in dims.split(","))
        return os.path.splitext(os.path.basename(args.model))[0], from_onnx(args.model, shapes or None)
    if args.model not in zoo.MODELS:
        raise SystemExit(f"unknown model {args.model!r}: an .onnx file or one of {', '.join(zoo.MODELS)}")
    return args.model, zoo.get_model(args.model)


def cpu_text():
    name, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and name == "unknown CPU":
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    simd = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{name}, {os.cpu_count()} hardware threads, {simd}"


def task_table(result):
    """The tuned tasks: latency, speed, weight and trials of each, and the estimated latency of the network.
    Task names keep their shape (only the op part is abbreviated); latencies share one unit."""
    names = [short_task_name(t.desc or t.workload_key, 44) for t in result.tasks]
    width = max(4, max(len(n) for n in names))
    unit, latencies = format_duration_column([r.best_cost for r in result.task_results])
    head = f"Latency ({unit})"
    lines = [f"| {'ID':>3} | {'Task':<{width}} | {head:>12} | {'GFLOP/s':>8} | {'Weight':>6} | {'Trials':>6} |"]
    for i, (task, r) in enumerate(zip(result.tasks, result.task_results)):
        cost, flop = r.best_cost, task.compute_dag.flop_ct
        speed = plain_number(flop / cost / 1e9, 4) if cost and flop > 0 else "-"
        lines.append(f"| {i:>3} | {names[i]:<{width}} | {latencies[i]:>12} | "
                     f"{speed:>8} | {result.weights[i]:>6g} | {r.trials:>6} |")
    before, after = result.latency_before, result.latency_after
    outside = result.outside_kernels_s
    timed = " x its time in the network per tuner-timed second" if result.network_timings else ""
    lines.append(f"Estimated latency of the network (sum of weight x task latency{timed}"
                 + (f" + {outside * 1e3:.3f} ms outside the kernels" if outside else "") + "): "
                 + (f"{after * 1e3:.3f} ms" if after is not None else "unknown")
                 + (f", from {before * 1e3:.3f} ms with the untuned baselines" if before is not None else ""))
    return "\n".join(lines)


def best_of(fn, seconds, min_runs=1):
    """The fastest of the calls of fn() made in `seconds` (at least min_runs); the caller has made one
    call already (the output it checked), which served as the warm-up."""
    times, start = [], time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# Rounds the timing of the demo takes turns in: a shared machine that slows down for a few seconds slows one
# round of one runner, not all of that runner's runs (timed one after the other, a 2-core VM's neighbours once
# made autosched read 38.5 ms and onnxruntime 27.1 ms; a minute later 22.8 and 22.3 ms).
TIMING_ROUNDS = 4


def fastest_in_turns(fns, seconds, rounds=TIMING_ROUNDS):
    """For each callable of `fns`, its fastest call over `rounds` rounds in which every callable runs in turn
    for seconds / rounds (each at least once a round): `seconds` of runs each in all."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_of(fn, seconds / rounds))
    return best


def onnxruntime_peer(g, inputs, threads):
    try:
        import onnx  # noqa: F401 (Graph.to_onnx needs it)
        import onnxruntime as ort
    except ImportError:
        return None, "not installed (pip install 'autosched[onnx]')"
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(g.to_onnx().SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = dict(zip(g.inputs, inputs))
    return (lambda: sess.run(None, feed)), ""


def torch_peer(g, inputs, threads):
    try:
        import torch
    except ImportError:
        return None, "not installed (pip install 'autosched[torch]')"
    torch.set_num_threads(threads)
    net = TorchGraph(g)
    tensors = [torch.from_numpy(x) for x in inputs]
    return (lambda: [t.numpy() for t in _as_list(net.run(*tensors))]), ""


def _as_list(outputs):
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def ratio_text(ours, peer, name):
    """How autosched's time compares with a peer's, phrased as everywhere else (text.compare_speed)."""
    return compare_speed(ours, peer, name)


def main(argv=None):
    args = parse_args(argv)
    if not ans._core.has_llvm():
        raise SystemExit("this build of autosched has no LLVM backend: it cannot compile for the CPU")
    name, g = load_model(args)
    os.makedirs(args.out_dir, exist_ok=True)
    log = os.path.join(args.out_dir, f"{name}.json")
    target = "llvm"
    print(f"autosched {ans.__version__} on {cpu_text()}")
    tasks, weights = agraph.extract_tasks(g, target)
    flop = sum(t.compute_dag.flop_ct * w for t, w in zip(tasks, weights))
    print(f"{name}: {len(g.nodes)} nodes, {sum(weights)} fused groups, {len(tasks)} distinct tasks, "
          f"{flop / 1e9:.3g} GFLOP per run")
    start = time.monotonic()  # the time budget counts from this line to the one saying why tuning stopped
    print(f"tuning on target '{target}' for at most {args.time_budget:g} s, from now to why it stopped (the build, "
          f"checks and timings after it not counted); records in {log}", flush=True)

    # A trial budget no run reaches: the time budget (or every task done) ends tuning.
    opts = ans.TuningOptions(num_measure_trials=1000 * len(tasks), num_measures_per_round=args.per_round,
                             time_budget_s=args.time_budget,
                             measure_callbacks=[ans.RecordToFile(log)], verbose=args.verbose)
    # Every 60 s the network built from the best schedules so far is timed, so the estimate is the network's.
    result = ans.TaskScheduler(tasks, weights, outside_kernels_s=agraph.outside_kernels_seconds(g, target),
                               network_timing=agraph.NetworkTiming(g, target, every_s=60)).tune(opts, start=start)
    print(f"\n{task_table(result)}")
    tune_s = time.monotonic() - start
    print(f"tuning stopped after {tune_s:.1f} s and {result.trials} trials "
          f"({result.trials - result.resumed_trials} measured now): {result.stop_reason}", flush=True)

    start = time.monotonic()
    net = agraph.build(g, target, log, verbose=False)
    print(f"\nbuilt {name} in {time.monotonic() - start:.1f} s"
          + (f" ({len(net.untuned)} groups without a tuned schedule run their default)" if net.untuned else ""))
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(g.shape(i)).astype(g.dtype(i)) for i in g.inputs]
    ours = _as_list(net(*inputs))

    runners = [("autosched", lambda: net(*inputs))]
    mismatch = False
    for peer, make in (("onnxruntime", onnxruntime_peer), ("PyTorch", torch_peer)):
        run, why = make(g, inputs, args.threads)
        if run is None:
            print(f"{peer}: skipped, {why}")
            continue
        theirs = _as_list(run())
        err = max(float(np.abs(a - np.asarray(b)).max()) / max(float(np.abs(np.asarray(b)).max()), 1e-6)
                  for a, b in zip(ours, theirs))
        ok = err < TOLERANCE
        mismatch |= not ok
        print(f"output vs {peer}: max |difference| = {err:.1e} of the largest magnitude: "
              + ("equal" if ok else f"MISMATCH (tolerance {TOLERANCE:g})"))
        runners.append((peer, run))

    fastest = fastest_in_turns([run for _, run in runners], args.timing_s)
    rows = [(label, t) for (label, _), t in zip(runners, fastest)]
    print(f"\nLatency of one run of {name} (batch 1; fastest of {args.timing_s:g} s of runs each, in "
          f"{TIMING_ROUNDS} rounds taken in turn; peers with {args.threads} threads)")
    ours_s = rows[0][1]
    for label, seconds in rows:
        text = "" if label == "autosched" else ratio_text(ours_s, seconds, label)
        print(f"  {label:<12} {seconds * 1e3:9.2f} ms   {text}".rstrip())

    if hasattr(net, "export_library"):
        path = os.path.join(args.out_dir, f"{name}.so")
        net.export_library(path)
        print(f"\nexported the built network to {path} ({os.path.getsize(path) / 2**20:.1f} MiB)")
    else:
        print("\nthis version of autosched cannot export a built network (no GraphModule.export_library)")
    if mismatch:
        print(f"the output of autosched differs from a peer's beyond {TOLERANCE:g}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
