"""The command line: tune an ONNX model, then run and time it with the tuned schedules, without writing Python.

    autosched tasks model.onnx [--target llvm] [--shape data=1,3,224,224 | --input-shapes "data:[1,3,224,224]"]
    autosched tune  model.onnx [--log model.json] [--target llvm] [--trials 2000] [--time-budget-s 3600]
    autosched compile model.onnx [--log model.json] -o model.so [--target llvm] [--cross-compiler CC]
    autosched run   model.so|model.onnx [--log model.json] [--inputs x.npz] [--print-time] [--print-top N]
                    [--profile] [--compare onnxruntime]
    autosched --version

(`python -m autosched ...` is the same.) `tune` extracts the model's tasks, tunes them with the task scheduler
under one trial budget (its table at the end) and appends every measurement to --log (default
<model name>.json in the current directory); run it again with the same log to resume. `run` builds the
model with the best record of each task in the log (tasks without one get the default schedule and are
listed), runs it on random inputs, checks the outputs against the graph's reference evaluation and prints the
end-to-end latency. Errors in the input (a missing file, an
operator that cannot be imported, a dynamic dimension left unbound, a missing optional package) end with one
line and exit status 2; Ctrl-C ends a command with exit status 130 (`tune` says how many records its log
keeps). Checks of the files read and written: files.py; the options, with tvmc's spellings beside ours:
parser.py; shapes: shapes.py; what `run` prints: run_report.py.
"""
import importlib.util
import os
import re
import sys
import time
import warnings

import numpy as np

from .. import _core, plot
from ..core.artifact import linker_prefix, machine_of
from ..tune.budget import process_start
from .files import CommandError, check_input_file, check_output_path, count_records, read_inputs
from .parser import parse_args
from .run_report import fill_inputs, output_summary, time_summary, top_results
from .shapes import shape_dict
from .report import compare_line, latency_line, profile_table, tune_closing, tune_opening
from ..frontends import from_onnx
from ..frontends.onnx import _import_onnx, _load
from ..graph import build as build_graph
from ..graph import NetworkTiming, extract_tasks, load_module, outside_kernels_seconds
from ..graph.extract import format_problems
from ..tune import TaskScheduler, TuningOptions
from ..records import RecordToFile


# Exit status after Ctrl-C: 128 + SIGINT, as shells report a process that SIGINT ended.
INTERRUPTED = 130
INSTALL_ONNX = "pip install 'autosched[onnx]'"


class Interrupted(Exception):
    """Ctrl-C, with what the command had done by then."""


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
    graph = _load_graph(args.model, shape_dict(args.shape, args.input_shapes))
    tasks, weights = extract_tasks(graph, args.target)
    _print_tasks(tasks, weights)
    return 0


def cmd_tune(args):
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise CommandError("--plot needs matplotlib, which is not installed: pip install 'autosched[plot]'")
    if args.log is None:  # tvmc's habit: the records beside where the command runs, named after the model
        args.log = os.path.splitext(os.path.basename(args.model))[0] + ".json"
        print(f"no --log given: records go to {args.log} in the current directory")
    check_output_path(args.log, "--log")
    if args.plot:
        check_output_path(args.plot, "--plot")
    if args.network_timing_s is not None and not args.network_timing_s >= 0:
        raise CommandError(f"--network-timing-s must be seconds >= 0, got {args.network_timing_s:g}")
    target = _check_target_here(args.target, "tune")
    graph = _load_graph(args.model, shape_dict(args.shape, args.input_shapes))
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


# ---- compile / run: artifacts (docs/deploy.md) ----

def _a_machine(triple):
    """'an aarch64 machine', 'a riscv64 machine'."""
    machine = machine_of(triple)
    return f"{'an' if machine[0] in 'aeiox' else 'a'} {machine} machine"


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
    if target.runs_in_host_process and target.foreign and command != "compile":
        machine = machine_of(target.triple)
        raise CommandError(f"target '{text}' makes code for {machine}, which this machine cannot run: "
                           f"`autosched compile --target \"{text}\" --cross-compiler {machine}-linux-gnu-gcc -o "
                           f"model.so` builds it here; run the artifact on {_a_machine(target.triple)}"
                           + (" (tune there: tuning measures every candidate on the device itself)"
                              if command == "tune" else ""))
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
    graph = _load_graph(args.model, shape_dict(args.shape, args.input_shapes))
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


def _check_linker(target, cross_compiler):
    """Ends `compile` before any build where the kernels of `target` could not be linked (a target of another
    architecture without a cross compiler for it, a compiler that is not installed)."""
    if not target.runs_in_host_process:
        if cross_compiler:
            raise CommandError(f"--cross-compiler applies to llvm targets; target '{target.text}' needs none")
        return
    try:
        linker_prefix(target, cross_compiler, option="--cross-compiler ")
    except RuntimeError as e:
        raise CommandError(str(e)) from None


def cmd_compile(args):
    start = time.perf_counter()
    check_output_path(args.output, "-o")
    target = _check_target_here(args.target, "compile")
    _check_linker(target, args.cross_compiler)
    graph = _graph_to_build(args)
    net = _build(graph, args)
    tuned = len(net.groups) - len(net.untuned) - len(net.default_faster)
    try:
        net.export_library(args.output, cross_compiler=args.cross_compiler)
    except RuntimeError as e:  # no linker, or the linker failed
        raise CommandError(str(e)) from None
    size = os.path.getsize(args.output)
    kernels = len({id(info.module) for info in net.groups})
    print(f"compiled {graph.name}: {len(net.groups)} groups ({kernels} kernels), {tuned} tuned"
          + ("" if args.log else " (no --log: default schedules)")
          + f", target {args.target}")
    where = f" on {_a_machine(target.triple)}" if target.runs_in_host_process and target.foreign else ""
    print(f"wrote {args.output} ({size / 1e6:.1f} MB) in {time.perf_counter() - start:.1f} s; run it{where} with: "
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
              else fill_inputs(signature, args.fill_mode))
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
        print(output_summary(label, out, with_values=not args.outputs))
    if args.print_top:
        print(top_results(labels[0], outputs[0], args.print_top))
    if args.outputs:
        np.savez(args.outputs, **dict(zip(labels, outputs)))
        print(f"outputs written to {args.outputs}")
    times = net.time_evaluator(number=args.number, repeat=args.repeat)(*arrays).results
    best = min(times)
    print(latency_line(times, args.number, net.target.text if is_artifact else args.target))
    if args.print_time:
        print(time_summary(times))
    if args.profile:
        print(profile_table(net, arrays, args.number, args.repeat))
    if args.compare:
        if not onnx_model or not os.path.exists(onnx_model):
            raise CommandError("--compare onnxruntime needs the ONNX model: give it with --onnx model.onnx")
        worst, ort = _compare_onnxruntime(onnx_model, _onnx_names(onnx_model)[0], arrays, outputs, labels,
                                          args.number, args.repeat)
        print(compare_line(worst, ort, best))
    return 0


def main(argv=None):
    """The command's exit status: 0 done, 2 an error in its input (one message), 130 interrupted (Ctrl-C)."""
    args = parse_args(argv)
    try:
        return COMMANDS[args.command](args)
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


COMMANDS = {"tasks": cmd_tasks, "tune": cmd_tune, "compile": cmd_compile, "run": cmd_run}

if __name__ == "__main__":
    sys.exit(main())
