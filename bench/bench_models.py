"""Benchmark: a suite of models nobody in the project wrote (torchvision, timm, transformers), imported, built and
timed beside onnxruntime and PyTorch.

Run: python3 bench/bench_models.py [--models resnet50,gpt2] [--families cnn,mobile,vit,encoder,decoder]
                                   [--frontend onnx|torch|both] [--threads 2] [--time-budget 10m] [--log-dir D] [--tiny]
                                   [--quantize dynamic|static] [--compare 100] [--ort-table]
                                   [--layout auto|NCHW|NCHWc] [--fuse-attention] [--profile N] [--rounds 3] [--verbose]

Each model of bench/_models.py (random weights, batch 1, made from the packages' constructors and config classes:
nothing is downloaded) is exported with torch.onnx.export (opset 17) and imported with from_onnx, and imported
with from_torch (--frontend). For each import: the number of tasks, the untuned build's time, its output's
largest difference from onnxruntime's (relative to the output's largest magnitude), and its latency beside
onnxruntime's and PyTorch's (eager, the original module), timed in turn over --rounds alternating rounds, the
peers on --threads threads (autosched's built network uses its thread pool, one thread per hardware thread).
With --time-budget T (seconds, or 10m), the tasks are tuned for T (TaskScheduler) and the tuned network is
timed too, and the curve (the estimated latency after shares of the budget) follows the row; the run ends with
the geometric means of onnxruntime's latency over ours, untuned and tuned. A
model that fails (a package missing, an op not imported, a build error) prints the first line of its error and
the table goes on. Prints the CPU and the load average. Not a test: figures vary with the machine's load.

--quantize dynamic|static: the exported model quantized by onnxruntime's quantize_dynamic (int8 weights) or
quantize_static (QDQ, per-channel int8 weights, uint8 activations calibrated on four inputs), run by onnxruntime
and imported by autosched (from_onnx); PyTorch stays the float model (its time is beside the point there).

--compare N: N random inputs (normal images, token ids below the example's largest) through onnxruntime and the
network (tuned where --time-budget is given, else untuned): how many give the same argmax over the output's last
axis (every row of it: a token's hidden state, a classifier's scores), and the largest difference, in steps of the
output's quantization where the model ends in DequantizeLinear with one scale, else over the largest magnitude.
Both are also compared with ONNX's definition of the model (onnxruntime with its graph optimizations off), which
tells a difference of autosched's from one of onnxruntime's fused kernels.

--ort-table: after the network (tuned where --time-budget is given, else untuned) is built and timed, for the
onnx import: onnxruntime's profile of the exported ONNX model (the peer's session options, profiling on; the best
of 3 means of 10 runs, as for ours) by operator type, then per task: its kernels' time inside runs of the network
(GraphModule.network_profile), the tuner's estimate where tuned (weight x the best record's time), onnxruntime's
time for the same ONNX nodes and onnxruntime / ours; the totals and the share of onnxruntime's time that no task
holds, by operator type. onnxruntime renames the nodes it fuses or converts (".../MatMul/MatMulAddFusion", a Conv
named after its output value with "_nchwc", "SkipLayerNormalization_token_3") and adds its own (ReorderOutput, the
Reshapes around a Gemm): bench/_ort_profile.py gives each to a node of the model by its name, else through the graph
onnxruntime ran. The table tells where a model that misses its target loses its time. onnxruntime's profiled
times hold its profiler's cost, microseconds per node (most of a tiny model's figures): its last line gives a
profiled run's time beside them.

--log-dir D keeps the tuning logs (D/MODEL.FRONTEND.json); --layout is graph.build's (auto: convolutions
blocked, the quantized ones where the CPU has VNNI; NCHW: none; NCHWc: all); --fuse-attention fuses attention's
scores and softmax into one task; --profile N prints the untuned network's N slowest tasks timed inside runs of
the network; --verbose prints each failure's traceback.

--tiny: every model at a tiny size (few channels, 64x64 images, 8 tokens) with timings of a few runs: a check
that the script works (tests/python/test_bench.py), whose figures mean nothing.
"""
import argparse
import math
import os
import shlex
import sys
import tempfile
import time
import traceback
import warnings

import _env  # bench/, the script's folder, is on sys.path

_env.set_openblas_coretype()  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import _models  # noqa: E402
import _ort_profile  # noqa: E402
import autosched as ans  # noqa: E402
from autosched import graph as agraph  # noqa: E402
from autosched.core.text import parse_duration  # noqa: E402


def alternate(runs, rounds, min_seconds):
    """name -> the best time over `rounds` rounds, each timing every run of `runs` in turn."""
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(_env.best_of(fn, min_seconds))
    return {name: min(t) for name, t in times.items()}


def first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:160]


def relative_error(got, want):
    return float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-6)


def import_graph(frontend, module, example, model_bytes):
    from autosched import frontends
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", frontends.UnsupportedOperatorWarning)  # graph.problems() says it
        if frontend == "onnx":
            return frontends.from_onnx(model_bytes)
        return frontends.from_torch(module, (example,))


def tune(graph, seconds, log, layout="auto"):
    """The graph's tasks tuned for `seconds` into `log`: (the network built from the log, the TaskScheduler's
    result, whose time_history is the curve: (seconds since it started, estimated latency in seconds) after every
    batch)."""
    tasks, weights = agraph.extract_tasks(graph, "llvm", layout=layout)
    opts = ans.TuningOptions(num_measure_trials=1000 * len(tasks), num_measures_per_round=16,
                             measure_callbacks=[ans.RecordToFile(log)], verbose=0, time_budget_s=seconds)
    result = ans.TaskScheduler(tasks, weights).tune(opts)
    return agraph.build(graph, "llvm", log, verbose=False, layout=layout), result


CURVE_POINTS = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0)  # shares of the budget at which the curve is printed


def curve_text(curve, budget_s, peer_s):
    """The estimate at CURVE_POINTS of the budget: the latest estimate at or before each point, in ms, and
    the peer's latency over it."""
    parts = []
    for share in CURVE_POINTS:
        at = [latency for t, latency in curve if t <= share * budget_s and latency is not None]
        if at:
            ratio = f" ({peer_s / at[-1]:.2f}x)" if peer_s else ""
            parts.append(f"{share * budget_s:.0f}s {at[-1] * 1e3:.2f}{ratio}")
    return ", ".join(parts)


def parse_seconds(text):
    """A duration ('600', '600s', '10m', '1.5h') in seconds, as argparse wants its error; '0': untuned only."""
    if str(text).strip() == "0":
        return 0.0
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def bench_import(name, frontend, module, example, model_bytes, peers, args, log_dir):
    """One row of the table: the model imported through `frontend`, built, checked and timed."""
    row = {"model": name, "frontend": frontend}
    try:
        start = time.perf_counter()
        graph = import_graph(frontend, module, example, model_bytes)
        row["import_s"] = time.perf_counter() - start
        problems = graph.problems()
        if problems:
            raise RuntimeError(f"{len(problems)} nodes cannot be compiled, the first: {problems[0]}")
        tasks, _ = agraph.extract_tasks(graph, "llvm", layout=args.layout)
        row["tasks"] = len(tasks)
        start = time.perf_counter()
        net = agraph.build(graph, "llvm", verbose=False, layout=args.layout)
        row["build_s"] = time.perf_counter() - start
        feed = example.numpy()
        (got,) = net(feed)
        row["error"] = relative_error(got, peers["want"])
        if args.profile:
            _env.print_profile(name, net, feed, args.profile)
        runs = {"autosched": lambda: net(feed), **peers["runs"]}
        result = None
        if args.time_budget:
            tuned, result = tune(graph, args.time_budget, os.path.join(log_dir, f"{name}.{frontend}.json"),
                                 args.layout)
            row["curve"] = result.time_history
            runs["tuned"] = lambda: tuned(feed)
        if args.compare and "session" in peers:
            row["compare"] = compare_outputs(tuned if args.time_budget else net, peers["session"], model_bytes,
                                             example, args.compare, output_step(model_bytes))
        row.update(alternate(runs, args.rounds, args.min_seconds))
        if args.ort_table:
            row["ort_table"] = ort_table(tuned if args.time_budget else net, result, frontend, model_bytes, feed,
                                         args.threads)
    except Exception as e:  # noqa: BLE001 -- a model that fails is a row of the table, not the end of the run
        row["failure"] = first_line(e)
        if args.verbose:
            traceback.print_exc()
    return row


def ort_table(net, result, frontend, model_bytes, feed, threads):
    """--ort-table's lines: onnxruntime's profile of the exported model (`model_bytes`, the peer's session options)
    by operator type, and per task of `net`: its kernels' time inside runs of the network, the tuner's estimate
    (with the TaskScheduler's `result`), onnxruntime's time for the same ONNX nodes and their ratio; the totals
    and onnxruntime's nodes no task holds."""
    if frontend != "onnx" or model_bytes is None:
        return ["  onnxruntime's table: for the onnx import only (its groups' nodes have the ONNX nodes' names)"]
    try:
        ort = _ort_profile.onnxruntime_profile(model_bytes, {"input": feed}, threads, inter_op_threads=1)
        if ort is None:
            return ["  onnxruntime's table: onnxruntime is not installed"]
        return [_ort_profile.by_type_line(ort)] + _ort_profile.in_network_lines(net, [feed], result, ort)
    except Exception as e:  # noqa: BLE001 -- the row's timings stand without the table
        return [f"  onnxruntime's table failed: {first_line(e)}"]


def peer_runs(module, example, model_bytes, threads):
    """The reference output (onnxruntime's; PyTorch's where the model did not export to ONNX) and the peers'
    run functions."""
    import torch
    torch.set_num_threads(threads)

    def run_torch():
        with torch.no_grad():
            return module(example)

    runs = {"pytorch": run_torch}
    if model_bytes is None:
        return {"want": run_torch().numpy(), "runs": runs}
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    feed = {"input": example.numpy()}
    (want,) = session.run(None, feed)
    return {"want": want, "session": session, "runs": {"onnxruntime": lambda: session.run(None, feed), **runs}}


def output_step(model_bytes):
    """The quantization step of the model's output where it is a DequantizeLinear's with one scale, else None."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load_from_string(model_bytes)
    producer = {out: node for node in model.graph.node for out in node.output}
    node = producer.get(model.graph.output[0].name)
    if node is None or node.op_type != "DequantizeLinear":
        return None
    scales = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name == node.input[1]]
    return float(scales[0]) if scales and scales[0].size == 1 else None


def compare_outputs(net, session, model_bytes, example, count, step):
    """`count` random inputs of the example's kind through `net`, onnxruntime (`session`) and onnxruntime with its
    graph optimizations off (every node as ONNX defines it: the reference for both). Returns, for "autosched" (net
    against onnxruntime), "autosched_vs_onnx" and "onnxruntime_vs_onnx": the inputs whose every row has the same
    argmax over the last axis, the rows with the same argmax, the rows, the largest difference in output steps
    (None without a step) and over the largest magnitude."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = session.get_session_options().intra_op_num_threads
    reference = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feed = example.numpy()
    pairs = {"autosched": (0, 1), "autosched_vs_onnx": (0, 2), "onnxruntime_vs_onnx": (1, 2)}
    stats = {k: {"inputs": count, "same_inputs": 0, "same_rows": 0, "rows": 0, "steps": 0.0 if step else None,
                 "relative": 0.0} for k in pairs}
    for _ in range(count):
        if feed.dtype.kind == "f":
            x = rng.standard_normal(feed.shape).astype(feed.dtype)
        else:
            x = rng.integers(0, int(feed.max()) + 1, feed.shape).astype(feed.dtype)
        outputs = [net(x)[0], session.run(None, {"input": x})[0], reference.run(None, {"input": x})[0]]
        for key, (i, j) in pairs.items():
            got, want, c = outputs[i], outputs[j], stats[key]
            agree = np.argmax(got.reshape(-1, got.shape[-1]), -1) == np.argmax(want.reshape(-1, want.shape[-1]), -1)
            c["same_inputs"] += bool(agree.all())
            c["same_rows"] += int(agree.sum())
            c["rows"] += agree.size
            if step:
                c["steps"] = max(c["steps"], float(np.abs(got.astype(np.float64) - want).max()) / step)
            c["relative"] = max(c["relative"], relative_error(got, want))
    return stats


def compare_text(c):
    steps = f"{c['steps']:.0f} output steps, " if c["steps"] is not None else ""
    return (f"same argmax on {c['same_inputs']} of {c['inputs']} random inputs ({c['same_rows']} of {c['rows']} "
            f"rows); largest difference {steps}{c['relative']:.1e} of the largest magnitude")


def bench_model(name, args, log_dir):
    spec = _models.SUITE[name]
    frontends = ["onnx", "torch"] if args.frontend == "both" else [args.frontend]
    try:
        import torch
        torch.manual_seed(0)
        module, example = spec.make(tiny=args.tiny)
    except Exception as e:  # noqa: BLE001
        if args.verbose:
            traceback.print_exc()
        return [{"model": name, "frontend": f, "failure": first_line(e)} for f in frontends]
    export_failure = None
    try:
        model_bytes = _models.onnx_bytes(module, (example,), ["input"])
        if args.quantize != "none":
            model_bytes = quantized_bytes(model_bytes, args.quantize, example, log_dir)
    except Exception as e:  # noqa: BLE001 -- from_torch goes on, checked against PyTorch
        model_bytes, export_failure = None, f"torch.onnx.export or quantization: {first_line(e)}"
    peers = peer_runs(module, example, model_bytes, args.threads)
    rows = []
    for frontend in frontends:
        if frontend == "onnx" and export_failure:
            row = {"model": name, "frontend": frontend, "failure": export_failure}
        else:
            row = bench_import(name, frontend, module, example, model_bytes, peers, args, log_dir)
            row["reference"] = "onnxruntime" if model_bytes else "pytorch"
        print_row(row, args, spec.family)
        rows.append(row)
    return rows


# The largest relative difference from onnxruntime that is not flagged, for quantized models: a few quantization
# steps of an 8-bit output (onnxruntime's u8 x s8 kernels without VNNI also saturate pairs of products at 16 bits).
MISMATCH_QUANTIZED = 0.05


def quantized_bytes(model_bytes, how, example, folder):
    """The model quantized by onnxruntime's tools: quantize_dynamic (int8 weights, activations quantized at
    run time) or quantize_static (QDQ, per-channel int8 weights, uint8 activations calibrated on the example and
    three random inputs of its shape)."""
    import logging

    from onnxruntime import quantization as q
    logging.getLogger().setLevel(logging.ERROR)  # the tools' advice on pre-processing, once per layer
    source, target = os.path.join(folder, "float.onnx"), os.path.join(folder, "quantized.onnx")
    with open(source, "wb") as f:
        f.write(model_bytes)
    if how == "dynamic":
        q.quantize_dynamic(source, target, weight_type=q.QuantType.QInt8)
    else:
        feed = example.numpy()
        rng = np.random.default_rng(0)
        samples = [feed] + [(rng.standard_normal(feed.shape) if feed.dtype.kind == "f" else feed).astype(feed.dtype)
                            for _ in range(3)]

        class Reader(q.CalibrationDataReader):
            def __init__(self):
                self.items = iter({"input": x} for x in samples)

            def get_next(self):
                return next(self.items, None)

        q.quantize_static(source, target, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                          activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)
    with open(target, "rb") as f:
        return f.read()


def header(args):
    text = (f"{'model':22}{'family':>8}{'import':>7}{'tasks':>6}{'build s':>8}{'rel err':>9}{'autosched':>10}"
            f"{'ort':>8}{'ratio':>7}{'torch':>8}{'ratio':>7}")
    return text + (f"{'tuned':>8}{'ort/tuned':>10}" if args.time_budget else "")


def print_row(row, args, family=""):
    line = f"{row['model']:22}{family:>8}{row['frontend']:>7}"
    if "autosched" not in row:
        print(f"{line}  FAILED: {row.get('failure', '')}", flush=True)
        return
    ours = row["autosched"]
    line += f"{row['tasks']:6d}{row['build_s']:8.1f}{row['error']:9.1e}{ours * 1e3:10.2f}"
    for peer in ("onnxruntime", "pytorch"):
        line += f"{row[peer] * 1e3:8.2f}{row[peer] / ours:7.2f}" if peer in row else f"{'-':>8}{'-':>7}"
    if "tuned" in row:
        line += f"{row['tuned'] * 1e3:8.2f}" + (f"{row['onnxruntime'] / row['tuned']:10.2f}"
                                                if "onnxruntime" in row else f"{'-':>10}")
    notes = ("  ** MISMATCH **" if row["error"] > (MISMATCH_QUANTIZED if args.quantize != "none" else 1e-3)
             else "") + (
        "  (checked against PyTorch: no ONNX export)" if row.get("reference") == "pytorch" else "")
    print(line + notes, flush=True)
    if row.get("compare"):
        which = "tuned" if "tuned" in row else "untuned"
        for key, label in (("autosched", f"autosched ({which}) against onnxruntime"),
                           ("autosched_vs_onnx", f"autosched ({which}) against ONNX's definition"),
                           ("onnxruntime_vs_onnx", "onnxruntime against ONNX's definition")):
            print(f"{'':22}{label}: {compare_text(row['compare'][key])}", flush=True)
    if row.get("curve"):
        print(f"{'':22}estimate (ms) after: {curve_text(row['curve'], args.time_budget, row.get('onnxruntime'))}",
              flush=True)
    if row.get("ort_table"):
        print("\n".join(row["ort_table"]), flush=True)


def print_geometric_means(rows):
    """The geometric mean of onnxruntime's latency over ours, untuned and tuned, over the rows with both."""
    for column, label in (("autosched", "untuned"), ("tuned", "tuned")):
        ratios = [r["onnxruntime"] / r[column] for r in rows if column in r and "onnxruntime" in r]
        if ratios:
            mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            print(f"geometric mean of onnxruntime / autosched {label}: {mean:.2f}x over {len(ratios)} imports "
                  f"(lowest {min(ratios):.2f}x); {_env.load_note()}")


def main():
    # torch.export's pytree deprecation, printed once per export, says nothing about the models
    warnings.filterwarnings("ignore", category=FutureWarning)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help=f"comma-separated, of: {', '.join(_models.SUITE)}")
    parser.add_argument("--families", default="", help=f"comma-separated, of: {', '.join(_models.FAMILIES)}")
    parser.add_argument("--frontend", default="both", choices=["onnx", "torch", "both"])
    parser.add_argument("--threads", type=int, default=2, help="threads of onnxruntime and PyTorch")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timing rounds")
    parser.add_argument("--time-budget", type=parse_seconds, default=0.0,
                        help="tuning time per model and frontend: seconds, or e.g. 10m (0: untuned only)")
    parser.add_argument("--log-dir", default="",
                        help="keep the tuning logs here (MODEL.FRONTEND.json; default: a temporary folder)")
    parser.add_argument("--tiny", action="store_true",
                        help="tiny models and timings (a check that the script works; the figures mean nothing)")
    parser.add_argument("--fuse-attention", action="store_true",
                        help="fuse attention's scores and softmax into one task (graph.fusion.FUSE_ATTENTION_SCORES)")
    parser.add_argument("--quantize", default="none", choices=["none", "dynamic", "static"],
                        help="run the ONNX model quantized by onnxruntime's quantize_dynamic or quantize_static "
                             "(QDQ, per-channel), for onnxruntime and autosched alike (implies --frontend onnx)")
    parser.add_argument("--layout", default="auto", choices=["auto", "NCHW", "NCHWc"],
                        help="graph.build's layout: 'auto' blocks convolutions (the quantized ones where the CPU "
                             "has VNNI), 'NCHW' none, 'NCHWc' all")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the untuned network's N slowest kernels, timed inside runs of the network")
    parser.add_argument("--compare", type=int, default=0, metavar="N",
                        help="compare the (tuned) network's outputs with onnxruntime's on N random inputs: argmax "
                             "and largest difference")
    parser.add_argument("--ort-table", action="store_true",
                        help="per task of the (tuned) network: its time inside runs of the network beside "
                             "onnxruntime's profiled time for the same ONNX nodes (onnx imports)")
    parser.add_argument("--verbose", action="store_true", help="print each failure's traceback")
    args = parser.parse_args()
    if args.quantize != "none":
        args.frontend = "onnx"
    if args.rounds < 1 or args.threads < 1 or args.compare < 0:
        parser.error("--rounds and --threads must be at least 1, --compare at least 0")
    try:
        names = _models.select(args.models, args.families)
    except ValueError as e:
        parser.error(str(e))
    args.min_seconds = 0.01 if args.tiny else 0.5
    if args.fuse_attention:
        from autosched.graph import fusion
        fusion.FUSE_ATTENTION_SCORES = True
    print(f"command: {' '.join(shlex.quote(a) for a in [sys.executable] + sys.argv)}")
    print(f"CPU: {_env.cpu_text()}; {_env.load_text()}")
    # autosched's pool takes one thread per hardware thread this process may run on (its affinity: 2 under
    # `taskset -c 0,1`), not every one of the machine's.
    print(f"peers on {args.threads} threads; autosched on its thread pool ({len(os.sched_getaffinity(0))} of the "
          f"machine's {os.cpu_count()} hardware threads)")
    print("latency in ms, the best of the alternating rounds; ratio: peer / autosched (above 1: autosched is "
          "faster); rel err: largest difference from onnxruntime / largest magnitude")
    print(header(args), flush=True)
    start = time.monotonic()
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        rows = [row for name in names for row in bench_model(name, args, args.log_dir or temporary)]
    failed = [r for r in rows if "failure" in r]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} imports built and timed in {time.monotonic() - start:.0f} s; "
          f"{_env.load_text()}")
    print_geometric_means(rows)
    for r in failed:
        print(f"  {r['model']} ({r['frontend']}): {r['failure']}")


if __name__ == "__main__":
    main()
