"""Measure candidate schedules: build them in parallel, run them one at a time, verify their output, time them.

    builder = ans.LocalBuilder(timeout=15)           # n_parallel worker processes compile at once
    runner = ans.LocalRunner(timeout=10, number=3)   # times candidates one at a time
    results = ans.measure(task, [state1, state2], builder, runner)
    results[0].costs, results[0].error, results[0].error_msg

Builds and runs happen in worker processes (the executable ``autosched_worker`` installed next to the extension
module), supervised from C++: a candidate that crashes its worker (any signal), hangs past the timeout, fails to
compile, computes a wrong result or reports an impossible time gets a typed error (``MeasureErrorNo``) and the
batch goes on. No time counts unless the candidate's output matched the reference evaluator on random inputs, and
a time faster than the hardware allows is flagged ``implausible``. Workers are kept between calls of ``measure``
with the same runner and re-initialised for a new task; they belong to the process, not to the thread that started
them (a runner may be used from one thread, then another), and end as soon as the process ends, however it ends
(SIGKILL included), even in the middle of a candidate. Ctrl-C during ``measure`` raises KeyboardInterrupt.

OpenCL targets (``opencl -device=...``) are measured the same way: each worker makes its OpenCL context on first
use, the kernels are timed with profiling events, at most ``max_device_runs`` runs per candidate; a failed launch
is a ``runtime`` error naming the OpenCL error (the worker is then replaced), a kernel beyond the device's work-group
or local-memory limits a ``compile`` error before anything is built.

``LocalRunner(inject_faults={"wrong_result": p, "crash": p, "hang": p, "zero_time": p, "near_zero_time": p,
"launch_error": p, "resource_error": p})`` gives that share of candidates a fault (deterministic from
``fault_seed``) to test what consumes results: they are recorded as ``wrong_answer``, ``runtime`` (a worker killed by
SIGSEGV), ``run_timeout``, ``implausible`` (a time of 0, or of 1e-18 s: faster than the hardware allows), ``runtime``
(OpenCL only: the driver refuses a launch with an oversized work group) and ``compile`` (the worker's device runs
out of host memory from that build on: the worker is replaced and the candidate tried once more in a fresh one;
the other candidates are not affected).

A device resource error (``CL_OUT_OF_HOST_MEMORY``, ``CL_OUT_OF_RESOURCES``, ``CL_MEM_OBJECT_ALLOCATION_FAILURE``) while
building or running a candidate replaces the worker, and the candidate is measured once more in the fresh one
before the error counts as its own.
"""
import os
from typing import Any

from .. import _core
from .._core import FaultInjection, LocalBuilder, MeasureErrorNo, MeasureResult

__all__ = ["MeasureInput", "MeasureResult", "MeasureErrorNo", "LocalBuilder", "LocalRunner", "FaultInjection",
           "measure", "worker_path", "FAULT_KINDS"]

FAULT_KINDS = FaultInjection.field_names


def worker_path():
    """The worker executable: $AUTOSCHED_WORKER, else ``autosched_worker`` beside the extension module."""
    env = os.environ.get("AUTOSCHED_WORKER")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(_core.__file__)), "autosched_worker")


class MeasureInput:
    """What is measured: a task and a state (an ``autosched.State``) of its DAG."""

    def __init__(self, task: Any, state: Any) -> None:
        if not isinstance(task, _core.SearchTask):
            raise TypeError(f"MeasureInput: task must be a SearchTask, got {type(task).__name__}")
        if not hasattr(state, "to_json"):
            raise TypeError(f"MeasureInput: state must be an autosched.State, got {type(state).__name__}")
        self.task = task
        self.state = state

    def __repr__(self):
        return f"MeasureInput({self.task!r}, {len(self.state.to_json())} bytes of steps)"


class LocalRunner(_core.RunnerOptions):
    """Verifies and times candidates one at a time in worker processes.

    The options are the fields of RunnerOptions (cpp/measure/measure.h), by keyword, with their defaults
    there: timeout, number, repeat, min_repeat_ms, max_repeat, max_device_runs, cooldown_s, flush_cache,
    peak_flops, peak_bandwidth (None or 0: derived from the task, see docs/records.md), verify_seed,
    whole_output_work, num_points, fault_seed. ``inject_faults={"wrong_result"|"crash"|"hang"|"zero_time"|
    "near_zero_time"|"launch_error"|"resource_error": share of candidates}`` (for tests) sets ``faults``.
    ``enable_cpu_cache_flush`` (TVM's name of ``flush_cache``) is accepted too. The runner keeps its
    worker processes between calls of ``measure`` while its options and the builder's stay the same.
    """

    measures_here = True  # candidates run on this machine (RayRunner: on a cluster's)

    def __init__(self, inject_faults=None, enable_cpu_cache_flush=None, **options):
        if enable_cpu_cache_flush is not None:  # TVM's name of flush_cache
            if options.get("flush_cache") is not None and options["flush_cache"] != enable_cpu_cache_flush:
                raise ValueError("LocalRunner: flush_cache and enable_cpu_cache_flush (its TVM name) differ")
            options["flush_cache"] = enable_cpu_cache_flush
        super().__init__(**options)
        faults = dict(inject_faults or {})
        unknown = [kind for kind in faults if kind not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"inject_faults: unknown fault '{unknown[0]}' (known: {', '.join(FAULT_KINDS)})")
        self.faults = FaultInjection(**faults)
        self._measurer = None
        self._key = None

    def _measurer_for(self, builder):
        """The C++ supervisor for this builder; kept (with its worker processes) while the runner's and the
        builder's options stay the same."""
        key = (self.to_dict(), builder.to_dict())
        if self._measurer is None or key != self._key:
            self.close()
            self._measurer = _core.LocalMeasurer(builder, self, worker_path())
            self._key = key
        return self._measurer

    def close(self):
        """Stops the worker processes (they also stop when the runner is garbage collected)."""
        self._measurer = None


def check_runs_here(task, runner):
    """Refuses a runner that measures on this machine for a target cross-compiled for another architecture."""
    if runner.measures_here and task.target.runs_in_host_process and task.target.foreign:
        raise ValueError(f"target '{task.target.text}' is cross-compiled for {task.target.triple}: its code "
                         "cannot run on this machine; measure it on a machine of that architecture (RayRunner)")


def measure(task, states, builder=None, runner=None):
    """Measures each state of ``task``; returns one MeasureResult per state, in order.

    Results with ``error == "none"`` carry verified, plausible costs in seconds; every other result names why
    (``error``, ``error_msg``). Raises only for a problem of the setup (e.g. the worker executable is missing).
    """
    if not isinstance(task, _core.SearchTask):
        raise TypeError(f"measure needs a SearchTask, got {type(task).__name__}")
    builder = builder or LocalBuilder()
    runner = runner or LocalRunner()
    if not isinstance(builder, LocalBuilder):
        raise TypeError(f"builder must be a LocalBuilder, got {type(builder).__name__}")
    if not isinstance(runner, LocalRunner):
        raise TypeError(f"runner must be a LocalRunner, got {type(runner).__name__}")
    check_runs_here(task, runner)
    states = [s.state if isinstance(s, MeasureInput) else s for s in states]
    return runner._measurer_for(builder).measure(task, states)
