"""torch.compile(model, backend="autosched"): TorchDynamo's graphs compiled by autosched.

    import autosched                                   # registers the backend (torch is not imported here)
    fast = torch.compile(model, backend="autosched")   # untuned: baseline schedules, no tuning
    fast = torch.compile(model, backend="autosched", options={"log": "model.json"})        # tuned records
    fast = torch.compile(model, backend="autosched", options={"time_budget": "5m", "log": "model.json"})
    with torch.no_grad():
        y = fast(x)

Registration: `import autosched` registers "autosched" with TorchDynamo's backend registry when that
registry is loaded (a hook on its import, so torch is never imported by autosched itself; where it is
already loaded, at once).

Each graph Dynamo hands over is imported with from_torch (through torch.export) with the model's parameters
and buffers taken as constants, frozen at compile time (inference). A parameter or buffer changed later is
seen at the next call, and that graph then runs eagerly with a warning: every call compares each of them with
what was compiled (see _ConstantWatch): the same tensor, storage and version counter (an optimizer step,
load_state_dict, `p.data = t`), and the bytes of up to 256 elements at fixed, evenly spread positions (what
moves no version counter: `p.data.mul_(3)`, a BatchNorm's running statistics updated by a forward in train
mode). A change confined to elements between those positions of a larger tensor goes unseen. The check
costs about 2 us per parameter or buffer per call (0.2 ms for ResNet-18's 102 on the shared 2-core
development machine). Options (all optional; docs/frontends.md has them with an example):
  log                 a record file: its best schedules are used (and tuning appends to it)
  time_budget         tune the graph's tasks within this budget ("90s", "30m", "1h" or seconds) before building;
                      default: no tuning, the baseline schedules (time_budget_s: its alias, as TuningOptions's)
  num_measure_trials  most measurements when tuning (default: 64 per task; trials: its alias, the command line's
                      --trials)
  target              default "llvm" (the host CPU)
  verbose             0: quiet (default), 1: the tuner's tables and the build's note
A misspelled option is a TypeError naming the closest one. A graph autosched cannot take (an operator it cannot
import, a dynamic shape, tensors not on the CPU or of another dtype, inputs that require grad while grad is
enabled) runs eagerly, with an AutoschedFallbackWarning saying why. autosched compiles static shapes: when a
model is called with a new input shape, Dynamo recompiles it with that dimension dynamic (a SymInt input), which
runs eagerly; torch.compile(model, backend="autosched", dynamic=False) compiles each shape apart instead. Outputs
carry no autograd history.
"""
import importlib.abc
import importlib.machinery
import os
import sys
import tempfile
import warnings

import numpy as np

from . import from_torch
from ..graph import build, extract_tasks, outside_kernels_seconds
from ..graph.extract import format_problems
from ..core.keywords import check_keywords, time_budget_seconds
from ..core.text import parse_duration
from ..deploy.torch_tensors import to_numpy, to_torch
from ..records import RecordToFile
from ..tune import TaskScheduler, TuningOptions

__all__ = ["autosched_backend", "register", "AutoschedFallbackWarning", "parse_duration"]

_REGISTRY = "torch._dynamo.backends.registry"
_OPTIONS = ("log", "time_budget", "time_budget_s", "num_measure_trials", "trials", "target", "verbose")
_OWNER = "torch.compile(backend='autosched')"
# What a dynamic shape falls back with: the fix is a static compile per shape.
_DYNAMIC_FIX = ("autosched compiles static shapes: pass dynamic=False, torch.compile(model, backend='autosched', "
                "dynamic=False), to compile each input shape apart")


class AutoschedFallbackWarning(UserWarning):
    """A graph torch.compile handed to autosched runs eagerly; the message says why."""


def _register_with(registry):
    if "autosched" not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=autosched_backend, name="autosched")


class _Loader(importlib.abc.Loader):
    """The registry's own loader, registering autosched once the module has run."""

    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        try:
            _register_with(module)
        except Exception as e:  # never break torch's import
            warnings.warn(f"autosched could not register its torch.compile backend: {e}", AutoschedFallbackWarning)


class _RegistryHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _REGISTRY:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def register():
    """Registers the "autosched" backend with TorchDynamo: now where its registry is loaded, else when it
    is (called by `import autosched`)."""
    if _REGISTRY in sys.modules:
        _register_with(sys.modules[_REGISTRY])
    elif not any(isinstance(f, _RegistryHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegistryHook())


def _fallback(gm, why):
    warnings.warn(f"torch.compile(backend='autosched'): this graph runs eagerly: {why}", AutoschedFallbackWarning,
                  stacklevel=3)
    return gm.forward


def _is_constant(node, value, torch):
    """A placeholder Dynamo lifted from the module's parameters or buffers."""
    name = node.target if isinstance(node.target, str) else node.name
    return isinstance(value, torch.nn.Parameter) or "_parameters_" in name or "_buffers_" in name


def autosched_backend(gm, example_inputs, options=None):
    """The TorchDynamo backend: gm (a torch.fx.GraphModule) compiled by autosched, or gm.forward where it
    cannot be (with an AutoschedFallbackWarning)."""
    import torch
    options = _checked_options(options)
    budget = options.get("time_budget")
    log = options.get("log")
    if log is not None and budget is None and not os.path.exists(log):
        raise ValueError(f"torch.compile(backend='autosched'): log {log!r} does not exist (add a time_budget "
                         "option to tune into it)")
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return _fallback(gm, "its inputs are not all tensors")
    for value in example_inputs:
        if isinstance(value, torch.SymInt) or (isinstance(value, torch.Tensor) and any(
                isinstance(d, torch.SymInt) for d in value.shape)):
            return _fallback(gm, f"an input has a dynamic shape (a {type(value).__name__} of symbolic size, as "
                                 f"Dynamo makes after a call with a new input shape); {_DYNAMIC_FIX}")
        if not isinstance(value, torch.Tensor):
            return _fallback(gm, f"an input is a {type(value).__name__}, not a tensor")
        if value.device.type != "cpu":
            return _fallback(gm, f"an input is on {value.device}; autosched builds for the CPU")
    constant = [_is_constant(n, v, torch) for n, v in zip(placeholders, example_inputs)]
    user = [v for v, c in zip(example_inputs, constant) if not c]
    if torch.is_grad_enabled() and any(v.requires_grad for v in user):
        return _fallback(gm, "an input requires grad (autosched has no backward pass); compile under "
                             "torch.no_grad() for inference")
    watch = _ConstantWatch(torch, example_inputs, constant)  # the constants as they are built
    try:
        net = _build(torch, gm, example_inputs, constant, options, budget)
    except (ValueError, TypeError, NotImplementedError, ImportError) as e:
        return _fallback(gm, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
    return _Compiled(gm, net, constant, watch)


def _checked_options(options):
    """The backend's options with the aliases resolved (time_budget in seconds, num_measure_trials); TypeError
    naming the closest option for one it does not know."""
    options = dict(options or {})
    check_keywords(_OWNER, options, _OPTIONS, what="option")
    options["time_budget"] = time_budget_seconds(f"{_OWNER}: options", options.get("time_budget"),
                                                 options.pop("time_budget_s", None))
    trials = options.pop("trials", None)
    if trials is not None and options.get("num_measure_trials") is not None:
        raise TypeError(f"{_OWNER}: options: give num_measure_trials or its alias trials, not both")
    if trials is not None:
        options["num_measure_trials"] = trials
    return options


def _frozen_module(torch, gm, example_inputs, constant):
    """gm as a module of its user inputs, with the constant inputs as buffers (so from_torch takes them as
    constants)."""

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for i, (value, c) in enumerate(zip(example_inputs, constant)):
                if c:
                    self.register_buffer(f"c{i}", value.detach())

        def forward(self, *user):
            it = iter(user)
            args = [getattr(self, f"c{i}") if c else next(it) for i, c in enumerate(constant)]
            out = gm(*args)
            return tuple(out) if isinstance(out, (list, tuple)) else out

    return Frozen()


def _build(torch, gm, example_inputs, constant, options, budget):

    user = tuple(v.detach() for v, c in zip(example_inputs, constant) if not c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the problems are reported once, in the fallback's warning
        graph = from_torch(_frozen_module(torch, gm, example_inputs, constant), user, name="dynamo_graph")
    problems = graph.problems()
    if problems:
        raise ValueError(f"{len(problems)} node(s) cannot be compiled: " + "; ".join(
            line.strip() for line in format_problems(problems).splitlines()))
    target = options.get("target", "llvm")
    verbose = int(options.get("verbose", 0))
    log = options.get("log")
    if budget is not None:
        tmp = None
        if log is None:
            tmp = tempfile.mkdtemp(prefix="autosched_torch_")
            log = os.path.join(tmp, "records.json")
        tasks, weights = extract_tasks(graph, target)
        trials = options.get("num_measure_trials") or 64 * len(tasks)
        tuning = TuningOptions(num_measure_trials=int(trials), time_budget_s=budget,
                               measure_callbacks=[RecordToFile(log)], verbose=verbose)
        resume = log if os.path.exists(log) and os.path.getsize(log) > 0 else None
        TaskScheduler(tasks, weights, load_log_file=resume,
                      outside_kernels_s=outside_kernels_seconds(graph, target)).tune(tuning)
    return build(graph, target, log=log, verbose=bool(verbose))


# Elements of each constant whose bytes every call compares: all of a smaller tensor (biases, BatchNorm
# statistics), evenly spread positions of a larger one.
_SAMPLED_ELEMENTS = 256


def _content_sample(torch, tensor):
    """A function giving the bytes of up to _SAMPLED_ELEMENTS elements of `tensor`'s storage as it is then, at
    positions fixed now."""
    t = tensor.detach()
    t = t.reshape(1) if t.dim() == 0 else t
    n = t.numel()
    flat = np.arange(n) if n <= _SAMPLED_ELEMENTS else np.linspace(0, n - 1, _SAMPLED_ELEMENTS).astype(np.intp)
    positions = np.unravel_index(flat, tuple(t.shape))
    try:
        view = t.numpy()  # shares the storage: later writes show through it
    except (TypeError, RuntimeError):  # a dtype numpy lacks (bfloat16): gather with torch
        index = tuple(torch.from_numpy(p) for p in positions)
        return lambda: t[index].contiguous().view(torch.uint8).numpy().tobytes()
    if view.flags.c_contiguous:  # one flat index: a quarter of the time of one per dimension
        view = view.reshape(-1)
        return lambda: view[flat].tobytes()
    return lambda: view[positions].tobytes()


class _ConstantWatch:
    """Whether the constants of a call (the parameters and buffers autosched froze) are still those it
    compiled: the same tensors, storages and version counters, and the same bytes at the sampled positions
    (writes through `.data` and BatchNorm's running statistics move no version counter)."""

    def __init__(self, torch, example_inputs, constant):
        self.positions = [i for i, c in enumerate(constant) if c]
        self.tensors = [example_inputs[i] for i in self.positions]
        self.versions = [t._version for t in self.tensors]
        self.pointers = [t.data_ptr() for t in self.tensors]
        self.samples = [_content_sample(torch, t) for t in self.tensors]
        self.content = self._content()

    def _content(self):
        return b"".join(sample() for sample in self.samples)

    def changed(self, args):
        for i, t, version, pointer in zip(self.positions, self.tensors, self.versions, self.pointers):
            a = args[i]
            if a is not t or a._version != version or a.data_ptr() != pointer:
                return True
        return self._content() != self.content


class _Compiled:
    """The compiled graph as Dynamo calls it: the graph's inputs in, its outputs (a tuple) back."""

    def __init__(self, gm, net, constant, watch):
        self.gm, self.net, self.constant, self.watch = gm, net, constant, watch
        self.eager = False

    def __call__(self, *args):
        if self.eager:
            return self.gm(*args)
        if self.watch.changed(args):
            self.eager = True
            warnings.warn("torch.compile(backend='autosched'): a parameter or buffer changed since the graph "
                          "was compiled (autosched freezes them); the graph runs eagerly from now on",
                          AutoschedFallbackWarning, stacklevel=2)
            return self.gm(*args)
        user = [to_numpy(a, f"input {i}") for i, (a, c) in enumerate(zip(args, self.constant)) if not c]
        return tuple(to_torch(o) for o in self.net(*user))
