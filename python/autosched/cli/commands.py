"""The command line: tune an ONNX model, then run and time it with the tuned schedules, without writing Python.

    autosched tasks model.onnx [--target llvm] [--shape data=1,3,224,224]
    autosched tune  model.onnx --log model.json [--target llvm] [--trials 2000] [--time-budget-s 3600]
    autosched compile model.onnx [--log model.json] -o model.so [--target llvm]
    autosched run   model.so|model.onnx [--log model.json] [--inputs x.npz] [--profile] [--compare onnxruntime]
    autosched --version

(`python -m autosched ...` is the same.) `tune` extracts the model's tasks, tunes them with the task scheduler
under one trial budget (its table at the end) and appends every measurement to --log; run it again with
the same log to resume. `run` builds the model with the best record of each task in the log (tasks without
one get the default schedule and are listed), runs it on random inputs, checks the outputs against the
graph's reference evaluation and prints the end-to-end latency. Errors in the input (a missing file, an
operator that cannot be imported, a dynamic dimension left unbound, a missing optional package) end with one
line and exit status 2; Ctrl-C ends a command with exit status 130 (`tune` says how many records its log
keeps). Checks of the files read and written: cli_files.py.
"""
import argparse
import importlib.util
import os
import re
import sys
import time
import warnings

import numpy as np

from .. import __version__, _core, plot
from ..tune.budget import process_start
from .files import CommandError, check_input_file, check_output_path, count_records, read_inputs
from .report import compare_line, latency_line, profile_table, tune_closing, tune_opening
from ..frontends import from_onnx
from ..frontends.onnx import _import_onnx, _load
from ..graph import build as build_graph
from ..graph import NetworkTiming, extract_tasks, load_module, outside_kernels_seconds
from ..graph.extract import format_problems
from ..tune import TaskScheduler, TuningOptions
from ..records import RecordToFile
from ..core.text import parse_duration


# Exit status after Ctrl-C: 128 + SIGINT, as shells report a process that SIGINT ended.
INTERRUPTED = 130
INSTALL_ONNX = "pip install 'autosched[onnx]'"


class Interrupted(Exception):
    """Ctrl-C, with what the command had done by then."""


def _shape_dict(items):
    """["data=1,3,224,224", "batch=1"] -> {"data": (1, 3, 224, 224), "batch": (1,)}."""
    out = {}
    for item in items or ():
        name, sep, dims = item.partition("=")
        try:
            values = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            values = ()
        if not sep or not name or not values or any(v < 1 for v in values):
            raise CommandError(f"--shape {item!r}: expected NAME=D1,D2,... (an input) or NAME=N (a dimension) "
                               "with positive integers")
        out[name] = values
    return out


def _onnx_module():
    try:
        return _import_onnx()
    except ImportError:
        raise CommandError(f"reading ONNX models needs the 'onnx' package, which is not installed: "
                           f"{INSTALL_ONNX}") from None


def _load_graph(path, shapes):
    check_input_file(path, "model file")
    if not path.endswith(".onnx"):
        raise CommandError(f"'{path}': only ONNX models (.onnx) are read from the command line; import other "
                           "models from Python (autosched.frontends.from_torch)")
    onnx = _onnx_module()
    model = _load(onnx, path)
    # Inputs take their shape as a tuple, dynamic dims their value as an int; both are bound at import, so
    # shape arithmetic on them folds (docs/frontends.md).
    constants = {t.name for t in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in constants]
    shape_dict = {k: (v if k in inputs else v[0]) for k, v in shapes.items()}
    bad = [k for k, v in shapes.items() if k not in inputs and len(v) > 1]
    if bad:
        raise CommandError(f"--shape {bad[0]}=...: '{bad[0]}' is not an input of the model (inputs: "
                           f"{', '.join(inputs)}); a dimension name takes one value")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the problems are reported below, once
        try:
            graph = from_onnx(model, shape_dict=shape_dict)
        except ValueError as e:  # in the command line's words: --shape data=1,8, not shape_dict['data'] = (1, 8)
            raise CommandError(_in_shape_words(str(e))) from None
    problems = graph.problems()
    if problems:
        raise CommandError(f"'{path}': {len(problems)} node(s) cannot be compiled:\n"
                           f"{format_problems(problems, interface='cli')}")
    return graph


def _in_shape_words(message):
    """from_onnx's message about its shape_dict, with each "shape_dict['K'] = V" written as "--shape K=V"."""
    message = message[len("from_onnx: "):] if message.startswith("from_onnx: ") else message

    def option(m):
        return f"--shape {m[1]}={','.join(re.findall(r'-?[0-9]+', m[2]))}"
    message = re.sub(r"shape_dict\['([^']*)'\] = (\([^)]*\)|-?[0-9]+)", option, message)
    return message.replace("shape_dict key ", "--shape ")


def _print_tasks(tasks, weights):
    print(f"{len(tasks)} tasks")
    for i, (task, weight) in enumerate(zip(tasks, weights)):
        print(f"  {i:3}  weight {weight:3}  {task.compute_dag.flop_ct / 1e6:10.2f} MFLOP  {task.desc}")


def cmd_tasks(args):
    graph = _load_graph(args.model, _shape_dict(args.shape))
    tasks, weights = extract_tasks(graph, args.target)
    _print_tasks(tasks, weights)
    return 0


def cmd_tune(args):
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise CommandError("--plot needs matplotlib, which is not installed: pip install 'autosched[plot]'")
    check_output_path(args.log, "--log")
    if args.plot:
        check_output_path(args.plot, "--plot")
    if args.network_timing_s is not None and not args.network_timing_s >= 0:
        raise CommandError(f"--network-timing-s must be seconds >= 0, got {args.network_timing_s:g}")
    target = _check_target_here(args.target, "tune")
    graph = _load_graph(args.model, _shape_dict(args.shape))
    tasks, weights = extract_tasks(graph, args.target)
    print(tune_opening(tasks, weights, args.log))
    trials = args.trials if args.trials is not None else args.trials_per_task * len(tasks)
    options = TuningOptions(num_measure_trials=trials, num_measures_per_round=args.per_round,
                            time_budget_s=args.time_budget_s, measure_callbacks=[RecordToFile(args.log)],
                            verbose=args.verbose)
    resume = args.log if os.path.exists(args.log) and os.path.getsize(args.log) > 0 else None
    every = args.network_timing_s
    if every is None:
        # The network's caches matter where its kernels run in this process (CPU targets).
        every = 120.0 if target.runs_in_host_process else 0.0
    timing = NetworkTiming(graph, args.target, every_s=every) if every > 0 else None
    scheduler = TaskScheduler(tasks, weights, load_log_file=resume, cost_model=args.model_kind,
                              outside_kernels_s=outside_kernels_seconds(graph, args.target), network_timing=timing)
    start, records_before = process_start(), count_records(args.log)  # the budget counts from the command's start
    try:
        result = scheduler.tune(options, start=start)
    except KeyboardInterrupt:
        records = count_records(args.log)
        raise Interrupted(f"interrupted after {records - records_before} trials; {records} records in {args.log}; "
                          "the same command resumes") from None
    print("\n".join(tune_closing(result, tasks, args.log, time.monotonic() - start, args.verbose)))
    if args.plot:
        plot.tuning_curve(args.log, args.plot)
        print(f"tuning curve in {args.plot}")
    return 0


def _random_inputs(graph, seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for name in graph.inputs:
        dtype = np.dtype(graph.dtype(name))
        shape = tuple(graph.shape(name))
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 2, size=shape).astype(dtype))
    return arrays


# ---- compile / run: artifacts (docs/deploy.md) ----

def _version_text():
    backends = [name for name in _core.target_kinds() if _core.Target(name).has_backend]
    return f"autosched {__version__} (backends: {', '.join(backends) or 'none'})"


def _duration(text):
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _check_target_here(text, command):
    """The target of --target; ends the command at once when no device of this machine can run code for it:
    every trial of tune, and every build, needs one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            target = _core.Target(text)
        except ValueError as e:
            raise CommandError(f"--target {text!r}: {e}") from None
    how = (f"run `autosched {command}` on a machine that has it (install autosched there); "
           "tuning measures every candidate on the device itself, and `autosched compile --log LOG -o "
           "model.so` there makes the artifact that `autosched run model.so` (or autosched.graph.load_module) "
           "runs on it")
    if not target.runs_in_host_process:  # kernels are launched on a device of this machine
        if not target.has_backend:
            raise CommandError(f"target '{text}': this autosched was built without the runtime of "
                               f"{target.kind} targets; {how}")
        try:
            target.device_hardware_params()
        except ValueError as e:
            raise CommandError(f"target '{text}' names no {target.kind} device of this machine ({e}); {how}") \
                from None
    elif target.missing_features and command != "compile":  # compiling for another CPU needs no run here
        raise CommandError(f"target '{text}': this CPU lacks {', '.join(target.missing_features)}, so code "
                           f"built for it cannot run here; {how}")
    return target


def _onnx_names(path):
    """(input names, output names) of an ONNX model, as the model names them."""
    onnx = _onnx_module()
    model = _load(onnx, path)
    constants = {t.name for t in model.graph.initializer}
    return ([vi.name for vi in model.graph.input if vi.name not in constants],
            [o.name for o in model.graph.output])


def _graph_to_build(args):
    """The ONNX model's graph, once the target, the model and the log are known to be usable."""
    _check_target_here(args.target, args.command)
    graph = _load_graph(args.model, _shape_dict(args.shape))
    if args.log is not None:
        if not os.path.exists(args.log):
            raise CommandError(f"log '{args.log}' does not exist (tune first: autosched tune {args.model} "
                               f"--log {args.log}, or leave out --log for the untuned network)")
        check_input_file(args.log, "log")
    return graph


def _build(graph, args):
    net = build_graph(graph, args.target, args.log, verbose=False)
    net.output_labels = _onnx_names(args.model)[1]
    net.source = os.path.abspath(args.model)
    note = _untuned_note(net, args.log, args.target)
    if note:
        print(note)
    if net.default_faster:  # the build note's last line names these groups and both times
        print(net.note.splitlines()[-1])
    return net


def _untuned_note(net, log, target):
    """With a log, the groups that run untuned (no record of their task for the target: the default
    schedule), by task; when no group found a record, that the log's records did not apply at all."""
    if log is None or not net.untuned:
        return ""
    if len(net.untuned) == len(net.groups):
        records = count_records(log)
        head = (f"the records of {log} did not apply ({records} record{'' if records == 1 else 's'}, none of this "
                f"model's tasks for target '{target}': a log of another model, shape or target?); "
                + ("the one group runs" if len(net.groups) == 1 else f"all {len(net.groups)} groups run")
                + " untuned (their default schedule):")
    else:
        head = (f"{len(net.untuned)} of {len(net.groups)} groups run untuned (their default schedule): {log} "
                "has no record of their task for this target:")
    by_task = {}
    for info in net.untuned:
        by_task[info.task.desc] = by_task.get(info.task.desc, 0) + 1
    return "\n".join([head] + [f"  {desc} x{count}" for desc, count in by_task.items()])


def cmd_compile(args):
    start = time.perf_counter()
    check_output_path(args.output, "-o")
    graph = _graph_to_build(args)
    net = _build(graph, args)
    tuned = len(net.groups) - len(net.untuned) - len(net.default_faster)
    try:
        net.export_library(args.output)
    except RuntimeError as e:  # no linker, or the linker failed
        raise CommandError(str(e)) from None
    size = os.path.getsize(args.output)
    kernels = len({id(info.module) for info in net.groups})
    print(f"compiled {graph.name}: {len(net.groups)} groups ({kernels} kernels), {tuned} tuned"
          + ("" if args.log else " (no --log: default schedules)")
          + f", target {args.target}")
    print(f"wrote {args.output} ({size / 1e6:.1f} MB) in {time.perf_counter() - start:.1f} s; run it with: "
          f"autosched run {args.output}")
    return 0


def _compare_onnxruntime(model, input_names, arrays, outputs, labels, number, repeat):
    try:
        import onnxruntime
    except ImportError:
        raise CommandError(f"--compare onnxruntime needs onnxruntime, which is not installed: {INSTALL_ONNX}") \
            from None
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    feed = dict(zip(input_names, arrays))
    expected = session.run(labels, feed)
    worst = 0.0
    for label, got, want in zip(labels, outputs, expected):
        scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
        err = float(np.max(np.abs(np.asarray(got, "float64") - np.asarray(want, "float64")))) if np.size(want) else 0.0
        worst = max(worst, err / scale)
        if not np.allclose(got, want, rtol=1e-3, atol=1e-3 * scale, equal_nan=True):
            raise CommandError(f"output '{label}' differs from onnxruntime's (max abs error {err:.3g})")
    session.run(labels, feed)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            session.run(labels, feed)
        times.append((time.perf_counter() - start) / number)
    return worst, min(times)


def cmd_run(args):
    is_artifact = not args.model.endswith(".onnx")
    if args.outputs:
        check_output_path(args.outputs, "--outputs")
    if is_artifact:
        if args.log is not None:
            raise CommandError(f"--log applies to ONNX models; '{args.model}' is compiled already")
        check_input_file(args.model, "artifact")
        net, graph = load_module(args.model), None
        onnx_model = args.onnx or getattr(net, "source", None)
        signature = net.graph
    else:
        graph = signature = _graph_to_build(args)
        onnx_model = args.model
    # The inputs are read before the build, so that a file that does not fit ends the command at once.
    arrays = (read_inputs(args.inputs, list(signature.inputs), signature) if args.inputs
              else _random_inputs(signature))
    if graph is not None:
        net = _build(graph, args)
    outputs = net(*arrays)
    labels = list(net.output_labels)
    if graph is not None:
        expected = graph.evaluate(*arrays)
        for label, got, want in zip(labels, outputs, expected):
            if not np.allclose(got, want, rtol=1e-3, atol=1e-3, equal_nan=True):
                worst = float(np.max(np.abs(np.asarray(got, "float64") - np.asarray(want, "float64"))))
                raise CommandError(f"output '{label}' differs from the reference evaluation (max abs error "
                                   f"{worst:.3g})")
        print(f"outputs match the reference evaluation ({', '.join(labels)})")
    for label, out in zip(labels, outputs):
        print(f"output {label}: {out.dtype} {tuple(out.shape)}")
    if args.outputs:
        np.savez(args.outputs, **dict(zip(labels, outputs)))
        print(f"outputs written to {args.outputs}")
    times = net.time_evaluator(number=args.number, repeat=args.repeat)(*arrays).results
    best = min(times)
    print(latency_line(times, args.number, net.target.text if is_artifact else args.target))
    if args.profile:
        print(profile_table(net, arrays, args.number, args.repeat))
    if args.compare:
        if not onnx_model or not os.path.exists(onnx_model):
            raise CommandError("--compare onnxruntime needs the ONNX model: give it with --onnx model.onnx")
        worst, ort = _compare_onnxruntime(onnx_model, _onnx_names(onnx_model)[0], arrays, outputs, labels,
                                          args.number, args.repeat)
        print(compare_line(worst, ort, best))
    return 0


def _add_compile_and_run(sub, common):
    p = sub.add_parser("compile", help="build a model (with a log's best schedules) into one deployable file")
    common(p)
    p.add_argument("--log", help="record log written by tune (default: none, the untuned network)")
    p.add_argument("-o", "--output", required=True, help="the artifact to write, e.g. model.so")
    p.set_defaults(run=cmd_compile)

    p = sub.add_parser("run", help="run a compiled artifact or an ONNX model: check, time, profile, compare")
    p.add_argument("model", help="an artifact of `autosched compile` (model.so) or an ONNX model (.onnx)")
    p.add_argument("--target", default="llvm", help="target text for an ONNX model (default: llvm)")
    p.add_argument("--shape", action="append", metavar="NAME=D1,D2,...",
                   help="an ONNX model's input shape or dynamic dimension (repeatable)")
    p.add_argument("--log", help="an ONNX model's record log (default: none, the untuned network)")
    p.add_argument("--inputs", help="a .npz of the inputs by name (default: random inputs); an array of another "
                                    "dtype is converted only where no value changes (float64 -> float32 is, "
                                    "complex -> float and float -> int are refused)")
    p.add_argument("--outputs", help="write the outputs, by the model's names, to this .npz")
    p.add_argument("--profile", action="store_true",
                   help="print a table of the time of every group's kernel, alone and inside the network")
    p.add_argument("--compare", choices=["onnxruntime"], help="check the outputs against a peer and time it")
    p.add_argument("--onnx", help="the ONNX model of an artifact, for --compare (default: the one it was "
                                  "compiled from)")
    p.add_argument("--number", type=int, default=10, help="runs per timed repeat")
    p.add_argument("--repeat", type=int, default=5, help="timed repeats")
    p.set_defaults(run=cmd_run)


def _parser():
    parser = argparse.ArgumentParser(prog="autosched", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=_version_text())
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("model", help="an ONNX model file (.onnx)")
        p.add_argument("--target", default="llvm", help="target text (default: llvm, the host CPU)")
        p.add_argument("--shape", action="append", metavar="NAME=D1,D2,...",
                       help="an input's shape or a dynamic dimension's value (repeatable)")

    p = sub.add_parser("tasks", help="list the tuning tasks of a model")
    common(p)
    p.set_defaults(run=cmd_tasks)

    p = sub.add_parser("tune", help="tune a model's tasks, appending records to a log")
    common(p)
    p.add_argument("--log", required=True, help="record log (appended to; an existing one is resumed)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--trials", type=int, help="measurements in all (default: 64 per task)")
    budget.add_argument("--trials-per-task", type=int, default=64)
    p.add_argument("--time-budget-s", type=float, default=None,
                   help="the command's wall time in seconds, from its start (loading the model included) to the "
                        "summary")
    p.add_argument("--time-budget", type=_duration, dest="time_budget_s", metavar="DURATION",
                   help="the same as a duration: 90s, 30m, 1h (or seconds)")
    p.add_argument("--per-round", type=int, default=16, help="measurements per task scheduler round")
    p.add_argument("--cost-model", dest="model_kind", default="auto",
                   choices=["auto", "pretrained", "scratch", "xgb", "random"],
                   help="auto: the pretrained model on CPUs; scratch: learn from this run alone")
    p.add_argument("--network-timing-s", type=float, default=None, metavar="SECONDS",
                   help="build the network from the best schedules and time its kernels in it every this many "
                        "seconds of tuning, so the estimate is the network's (default: 120 on CPU targets, "
                        "0 on OpenCL ones; 0: never)")
    p.add_argument("--verbose", type=int, default=1)
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="write the tuning curve of the log (best speed per task) to this image (needs matplotlib)")
    p.set_defaults(run=cmd_tune)

    _add_compile_and_run(sub, common)
    return parser


def main(argv=None):
    """The command's exit status: 0 done, 2 an error in its input (one message), 130 interrupted (Ctrl-C)."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (CommandError, ValueError, ImportError) as e:
        print(f"autosched {args.command}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a file that cannot be read or written, past the checks above
        where = f": '{e.filename}'" if e.filename else ""
        print(f"autosched {args.command}: error: {e.strerror or e}{where}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"autosched {args.command}: {e}", file=sys.stderr)
        return INTERRUPTED
    except KeyboardInterrupt:
        print(f"autosched {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
