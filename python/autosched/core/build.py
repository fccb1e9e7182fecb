"""Build a schedule into a native module and run it on numpy arrays.

    mod = ans.build(task_or_dag, state=None, target=None)
    mod(a, b, out)                        # C-contiguous numpy arrays, written in place
    res = mod.time_evaluator(number=10, repeat=3)(a, b, out)    # res.mean, res.results: seconds per run
    print(mod.get_source("asm"))          # "ll", "asm" or "lowered" (mod.source_formats lists them)
    gpu = ans.build(dag, state, target="opencl")   # OpenCL C (docs/opencl.md); gpu.get_source() is the "cl"
"""
import numbers
from typing import Any, Union

from .. import _core
from . import artifact
from .checks import check_target, check_type, describe, fail
from .._core import Target
from .state import State


def _dag_and_target(task_or_dag, target):
    dag = getattr(task_or_dag, "compute_dag", None)
    if dag is not None:
        if target is None:
            target = getattr(task_or_dag, "target", None)
        return dag, target
    if isinstance(task_or_dag, _core.ComputeDAG):
        return task_or_dag, target
    raise TypeError(f"build: the first argument must be a SearchTask, a ComputeDAG or a State (TVM's sch), got "
                    f"{describe(task_or_dag)}")


def _check_same_dag(dag, state):
    """A state schedules the DAG it was made from: building it for another one would silently compute that
    other DAG, so a state whose initial DAG differs structurally from `dag` is refused."""
    state_key, dag_key = state.init_dag.workload_key(), dag.workload_key()
    if state_key != dag_key:
        raise ValueError(f"the state was made from a different DAG (workload key {state_key}) than the one "
                         f"given to build (workload key {dag_key}); build the state with the DAG it came "
                         "from (dag.get_init_state() of that DAG)")


class TimeResult(tuple):
    """Seconds per run, one entry per repeat: a tuple of the times, with .results (the same times) and
    .mean. Every run behind it succeeded: a failing run raises instead of giving a time."""

    @property
    def results(self):
        return tuple(self)

    @property
    def mean(self):
        return sum(self) / len(self)

    def __repr__(self):
        times = ", ".join(f"{t:.3e}" for t in self)
        return f"TimeResult(mean={self.mean:.3e} s, results=({times}))"


def check_run_counts(where, number, repeat):
    """The `number` and `repeat` of a time_evaluator (Module's, GraphModule's): ints >= 1, and no function
    name where TVM's spelling puts one first."""
    if isinstance(number, str):  # TVM's mod.time_evaluator(mod.entry_name, dev, number=...)
        raise TypeError(f"{where}: number must be an int, got {describe(number)}; a module holds one function, "
                        "so it takes no function name (nor device): mod.time_evaluator(number=10, "
                        "repeat=3)(*arrays)")
    for arg, value in (("number", number), ("repeat", repeat)):
        check_type(where, arg, value, numbers.Integral, "an int >= 1")
        if value < 1:
            fail(where, arg, "an int >= 1", value, ValueError)


def _check_time_evaluator_args(number, repeat, min_repeat_ms, flush_cache):
    where = "Module.time_evaluator"
    check_run_counts(where, number, repeat)
    check_type(where, "min_repeat_ms", min_repeat_ms, numbers.Real, "a number of milliseconds >= 0")
    if not min_repeat_ms >= 0:  # NaN too
        fail(where, "min_repeat_ms", "a number of milliseconds >= 0", min_repeat_ms, ValueError)
    check_type(where, "flush_cache", flush_cache, bool, "True or False")


class Module:
    """A compiled kernel. Arguments follow the DAG's tensor order. export_library(path) writes it as one file
    that autosched.runtime.load_module(path) loads without compiling; it pickles the same way."""

    def __init__(self, core_module, state, target=None):
        self._mod = core_module
        self._state = state
        self.target = target

    def export_library(self, path, cross_compiler=None):
        """Writes the kernel as one file (a shared library with its metadata for llvm targets; source and the
        driver's binary for opencl), for autosched.runtime.load_module (docs/deploy.md). `cross_compiler` (else
        $CC) links the kernel of a target of another architecture, e.g. "aarch64-linux-gnu-gcc"."""
        artifact.export_module(self, path, cross_compiler)

    def __reduce__(self):
        return artifact.load_bytes, (artifact.to_bytes(self.export_library), load_module)

    def __call__(self, *arrays):
        self._mod(*arrays)

    def time_evaluator(self, number=1, repeat=1, min_repeat_ms=0, flush_cache=False):
        """A function that runs the kernel on its arguments and returns a TimeResult: `repeat` times in
        seconds per run (each the mean of `number` runs; `number` grows until a repeat takes at least
        `min_repeat_ms`), after one warm-up run. A run that fails raises ValueError. A module holds one
        function: TVM's leading function name and device arguments are refused with the call to write."""
        _check_time_evaluator_args(number, repeat, min_repeat_ms, flush_cache)

        def evaluate(*arrays):
            return TimeResult(self._mod.time_evaluate(list(arrays), number, repeat, float(min_repeat_ms),
                                                      flush_cache))
        return evaluate

    def get_source(self, fmt=None):
        """'ll': optimised LLVM IR, 'asm': assembly (llvm targets); 'cl': OpenCL C, 'binary': the device's
        binary as bytes (opencl targets); 'lowered': the loop nest that was compiled (see source_formats). Default: 'cl' for OpenCL, else 'll'."""
        if fmt is None:
            fmt = "cl" if "cl" in self._mod.source_formats else "ll"
        if fmt == "binary":
            return self.device_binary()
        return self._mod.get_source(fmt)

    def device_binary(self):
        """The OpenCL device compiler's binary of the program, as bytes (source format 'binary'): PTX text on
        NVIDIA (count its instructions with autosched.opencl.ptx_instruction_counts), the driver's own format
        elsewhere."""
        if "binary" not in self._mod.source_formats:
            raise ValueError(f"device_binary: only modules built for an OpenCL target have a device binary; this "
                             f"one has the source formats {self._mod.source_formats}")
        return self._mod.device_binary()

    def export_object(self, path):
        """Writes the object file of a module cross-compiled for another architecture (a target with a foreign
        -mtriple, e.g. "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76") to `path`; returns the path. Its
        undefined symbols are the runtime's (autosched_parallel_for, autosched_alloc, autosched_free)."""
        if "obj" not in self._mod.source_formats:
            raise ValueError("export_object: this module was built to run in this process, not cross-compiled; "
                             "only a target of another architecture (-mtriple=...) has an object file here")
        data = self._mod.object_code()
        with open(path, "wb") as f:
            f.write(data)
        return path

    @property
    def source_formats(self):
        return self._mod.source_formats

    @property
    def cannot_run(self):
        """Why this module cannot run on this host ('' when it can), e.g. built with -no-host-check."""
        return self._mod.cannot_run

    def lowered_ir(self):
        return self._mod.get_source("lowered")

    @property
    def compile_seconds(self):
        return self._mod.compile_seconds

    @property
    def arg_specs(self):
        """(name, dtype, shape) of every argument."""
        return self._mod.arg_specs

    def __repr__(self):
        return f"Module({self._mod.name}, args={[a[0] for a in self.arg_specs]})"


def build(task_or_dag: Any, state: Any = None, target: "Union[str, Target, None]" = None) -> "Module":
    """Compile `state` (default: the plain loop nest of the DAG) for `target` (a Target or its text; default:
    the task's target, else the host CPU, Target("llvm")). TVM's form build(sch, args, target) works too: a
    State first, then the DAG's tensors (``sch, args = task.apply_best(log)``)."""
    if isinstance(task_or_dag, State):
        sch, args = task_or_dag, state
        if args is not None and (isinstance(args, (str, _core.Target)) or not isinstance(args, (list, tuple))):
            raise TypeError(f"build(sch, args, target): args must be the list of the DAG's tensors, got "
                            f"{describe(args)}")
        task_or_dag, state = sch.init_dag, sch
    dag, target = _dag_and_target(task_or_dag, target)
    if state is None:
        state = State(dag)
    if not isinstance(state, State):
        raise TypeError(f"build: state must be an autosched.State (from dag.get_init_state() or "
                        f"task.apply_best), got {describe(state)}")
    _check_same_dag(dag, state)
    target = Target.host() if target is None else check_target("build", target)
    return Module(_core.build_state(state, target), state, target)


def lower(state: Any, log_passes: bool = False) -> str:
    """The fully lowered loop nest of a state as text (log_passes: after every pass)."""
    return _core.lowered_text(state, log_passes)


def load_module(path):
    """The kernel exported with Module.export_library(path), ready to call; nothing is compiled (llvm: dlopen
    of a private copy of the library, checked against the hash the metadata records, so a file re-exported to
    the same path gives its new code; opencl: the driver's binary, or the source where the device or driver
    differs). ArtifactError for a file that cannot be loaded here, naming why."""
    art = artifact.Artifact(path, "kernel")
    try:
        core, = art.modules()
        mod = Module(core, None, target=art.kernel_set.target)
        mod._kernel_set = art.kernel_set
        return mod
    finally:
        art.close()
