"""The command line's arguments (commands.py runs the commands): the subcommands and their options, with TVM's
tvmc spellings accepted beside autosched's as equals:

    tune --output FILE (or -o)           = tune --log FILE
    compile/run --tuning-records FILE    = --log FILE
    --input-shapes "data:[1,3,224,224] mask:[1,128]"   beside   --shape data=1,3,224,224 --shape mask=1,128

An option that is unknown or malformed ends the command with the subcommand's usage (`autosched tune`'s, not
the top-level one) and one line of error, with "did you mean" where a misspelled option, subcommand or choice
is close to one (`--trails` -> `--trials`).
"""
import argparse
import difflib
import re

from .. import __version__, _core
from ..core.text import parse_duration

DESCRIPTION = "autosched: tune an ONNX model, then compile, run and time it with the tuned schedules"


def version_text():
    backends = [name for name in _core.target_kinds() if _core.Target(name).has_backend]
    return f"autosched {__version__} (backends: {', '.join(backends) or 'none'})"


def _duration(text):
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def did_you_mean(word, candidates):
    """'; did you mean X?' for the candidate closest to `word` (difflib), or '' when none is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose "invalid choice" errors (a subcommand, --cost-model, --fill-mode) name the
    closest choice."""

    def error(self, message):
        m = re.search(r"invalid choice: '?([^'(]*?)'? \(choose from (.*)\)$", message)
        if m:
            message += did_you_mean(m[1], [c.strip(" '") for c in m[2].split(",")])
        super().error(message)


def _add_shapes(p):
    p.add_argument("--shape", action="append", metavar="NAME=D1,D2,...",
                   help="an input's shape or a dynamic dimension's value (repeatable)")
    p.add_argument("--input-shapes", action="append", metavar='"NAME:[D1,D2,...] ..."',
                   help="input shapes as tvmc spells them, space-separated: \"data:[1,3,224,224] mask:[1,128]\" "
                        "(the same as --shape data=1,3,224,224 --shape mask=1,128)")


def _add_model(p, help_text="an ONNX model file (.onnx)"):
    p.add_argument("model", help=help_text)
    p.add_argument("--target", default="llvm", help="target text (default: llvm, the host CPU)")
    _add_shapes(p)


def _add_tune(sub):
    p = sub.add_parser("tune", help="tune a model's tasks, appending records to a log")
    _add_model(p)
    p.add_argument("--log", "--output", "-o", dest="log",
                   help="record log (appended to; an existing one is resumed); --output is tvmc's spelling "
                        "(default: <model name>.json in the current directory)")
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
    return p


def _add_log(p, what):
    p.add_argument("--log", "--tuning-records", dest="log",
                   help=f"{what}record log written by tune; --tuning-records is tvmc's spelling (default: none, "
                        "the untuned network)")


def _add_compile(sub):
    p = sub.add_parser("compile", help="build a model (with a log's best schedules) into one deployable file")
    _add_model(p)
    _add_log(p, "")
    p.add_argument("-o", "--output", required=True, help="the artifact to write, e.g. model.so")
    p.add_argument("--cross-compiler", metavar="CC",
                   help="the C compiler that links the kernels of a target of another architecture, e.g. "
                        "aarch64-linux-gnu-gcc for --target \"llvm -mtriple=aarch64-linux-gnu\" (default: $CC)")
    return p


def _add_run(sub):
    p = sub.add_parser("run", help="run a compiled artifact or an ONNX model: check, time, profile, compare")
    p.add_argument("model", help="an artifact of `autosched compile` (model.so) or an ONNX model (.onnx)")
    p.add_argument("--target", default="llvm", help="target text for an ONNX model (default: llvm)")
    _add_shapes(p)
    _add_log(p, "an ONNX model's ")
    p.add_argument("--inputs", help="a .npz of the inputs by name (default: made as --fill-mode says); an array of "
                                    "another dtype is converted only where no value changes (float64 -> float32 "
                                    "is, complex -> float and float -> int are refused)")
    p.add_argument("--fill-mode", choices=["random", "zeros", "ones"], default="random",
                   help="the inputs without --inputs: random (normal floats, integers 0 or 1; default), zeros "
                        "or ones")
    p.add_argument("--outputs", help="write the outputs, by the model's names, to this .npz (else a summary of "
                                     "each is printed)")
    p.add_argument("--print-time", action="store_true",
                   help="print the mean, median, max, min and std of the timed repeats in ms")
    p.add_argument("--print-top", type=_positive_int, metavar="N",
                   help="print the N highest scores of the first output (of its first item) and their classes")
    p.add_argument("--profile", action="store_true",
                   help="print a table of the time of every group's kernel, alone and inside the network")
    p.add_argument("--compare", choices=["onnxruntime"], help="check the outputs against a peer and time it")
    p.add_argument("--onnx", help="the ONNX model of an artifact, for --compare (default: the one it was "
                                  "compiled from)")
    p.add_argument("--number", type=int, default=10, help="runs per timed repeat")
    p.add_argument("--repeat", type=int, default=5, help="timed repeats")
    return p


def build_parser():
    """The top-level parser and its subcommands' parsers by name."""
    parser = Parser(prog="autosched", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p = sub.add_parser("tasks", help="list the tuning tasks of a model")
    _add_model(p)
    commands = {"tasks": p, "tune": _add_tune(sub), "compile": _add_compile(sub), "run": _add_run(sub)}
    return parser, commands


def parse_args(argv=None):
    """The parsed arguments; arguments no option of the subcommand takes end the command with the subcommand's
    usage, and the closest option where one is close."""
    parser, commands = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = commands[args.command]
        options = [s for action in sub._actions for s in action.option_strings]
        unknown = [e.split("=", 1)[0] for e in extras if e.startswith("-")]
        hint = did_you_mean(unknown[0], options) if unknown else ""
        sub.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return args
