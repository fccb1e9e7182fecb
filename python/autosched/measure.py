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
"launch_error": p})`` gives that share of candidates a fault (deterministic from ``fault_seed``) to test what
consumes results: they are recorded as ``wrong_answer``, ``runtime`` (a worker killed by SIGSEGV), ``run_timeout``,
``implausible`` (a time of 0, or of 1e-18 s: faster than the hardware allows) and ``runtime`` (OpenCL only: the
driver refuses a launch with an oversized work group).
"""
import os

from . import _core
from ._core import MeasureErrorNo, MeasureResult

__all__ = ["MeasureInput", "MeasureResult", "MeasureErrorNo", "LocalBuilder", "LocalRunner", "measure",
           "worker_path"]

FAULT_KINDS = ("wrong_result", "crash", "hang", "zero_time", "near_zero_time", "launch_error")


def worker_path():
    """The worker executable: $AUTOSCHED_WORKER, else ``autosched_worker`` beside the extension module."""
    env = os.environ.get("AUTOSCHED_WORKER")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(_core.__file__)), "autosched_worker")


class MeasureInput:
    """What is measured: a task and a state (an ``autosched.State``) of its DAG."""

    def __init__(self, task, state):
        if not isinstance(task, _core.SearchTask):
            raise TypeError(f"MeasureInput: task must be a SearchTask, got {type(task).__name__}")
        if not hasattr(state, "to_json"):
            raise TypeError(f"MeasureInput: state must be an autosched.State, got {type(state).__name__}")
        self.task = task
        self.state = state

    def __repr__(self):
        return f"MeasureInput({self.task!r}, {len(self.state.to_json())} bytes of steps)"


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


class LocalBuilder:
    """Compiles candidates in parallel in worker processes.

    timeout: seconds to lower and compile one candidate (then ``build_timeout``).
    n_parallel: worker processes compiling at once (None: the number of cores).
    """

    def __init__(self, timeout=15, n_parallel=None):
        self.timeout = _positive("timeout", timeout)
        self.n_parallel = 0 if n_parallel is None else _count("n_parallel", n_parallel, 1)

    def __repr__(self):
        return f"LocalBuilder(timeout={self.timeout}, n_parallel={self.n_parallel or None})"


class LocalRunner:
    """Verifies and times candidates one at a time in worker processes.

    timeout: seconds to verify and time one candidate (then ``run_timeout``).
    number, repeat, min_repeat_ms: each of the ``repeat`` costs is the mean of ``number`` runs, with ``number``
        grown until one repeat lasts ``min_repeat_ms`` -- but to at most ``max_repeat`` runs.
    max_device_runs: OpenCL targets: the most kernel runs the timing of one candidate launches over all its
        repeats (``repeat`` is capped at it, each repeat at ``max(1, max_device_runs // repeat)`` runs).
    cooldown_s: pause before each candidate. flush_cache: overwrite a large buffer before each repeat
        (``enable_cpu_cache_flush``, TVM's name for it, is accepted too).
    inject_faults: {"wrong_result"|"crash"|"hang"|"zero_time"|"near_zero_time"|"launch_error": share of
        candidates}, for tests.
    peak_flops, peak_bandwidth: FLOP/s and bytes/s no run can beat (None: the task's HardwareParams
        ``peak_gflops`` / ``peak_bandwidth_gbs`` when set, else derived from its hardware parameters, generously;
        see docs/records.md). A time below what the peaks allow, over a margin of 1.5, is ``implausible``.
    verify_seed: seed of the random inputs. whole_output_work, num_points: tasks of at most this much work
        (flop count + output elements) compare every output element, larger ones ``num_points`` sampled points.
    """

    def __init__(self, timeout=10, number=3, repeat=1, min_repeat_ms=100, max_repeat=1_000_000, cooldown_s=0,
                 flush_cache=False, inject_faults=None, fault_seed=0, peak_flops=None, peak_bandwidth=None,
                 verify_seed=0, whole_output_work=2e6, num_points=256, max_device_runs=1000,
                 enable_cpu_cache_flush=None):
        if enable_cpu_cache_flush is not None:  # TVM's name of flush_cache
            flush_cache = bool(flush_cache) or bool(enable_cpu_cache_flush)
        faults = dict(inject_faults or {})
        for kind, share in faults.items():
            if kind not in FAULT_KINDS:
                raise ValueError(f"inject_faults: unknown fault '{kind}' (known: {', '.join(FAULT_KINDS)})")
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
                raise ValueError(f"inject_faults['{kind}'] must be a share in [0, 1], got {share!r}")
        if sum(faults.values()) > 1 + 1e-12:
            raise ValueError("inject_faults: the shares add up to more than 1")
        self.options = {
            "timeout": _positive("timeout", timeout),
            "number": _count("number", number, 1),
            "repeat": _count("repeat", repeat, 1),
            "min_repeat_ms": float(min_repeat_ms) if min_repeat_ms == 0 else _positive("min_repeat_ms",
                                                                                     min_repeat_ms),
            "max_repeat": _count("max_repeat", max_repeat, 1),
            "max_device_runs": _count("max_device_runs", max_device_runs, 1),
            "cooldown_s": float(cooldown_s) if cooldown_s == 0 else _positive("cooldown_s", cooldown_s),
            "flush_cache": bool(flush_cache),
            "peak_flops": 0.0 if peak_flops is None else _positive("peak_flops", peak_flops),
            "peak_bandwidth": 0.0 if peak_bandwidth is None else _positive("peak_bandwidth", peak_bandwidth),
            "verify_seed": _count("verify_seed", verify_seed, 0),
            "whole_output_work": float(whole_output_work),
            "num_points": _count("num_points", num_points, 1),
            "fault_seed": _count("fault_seed", fault_seed, 0),
            "faults": {kind: float(faults.get(kind, 0.0)) for kind in FAULT_KINDS},
        }
        self._measurer = None
        self._builder_key = None

    def __getattr__(self, name):
        options = self.__dict__.get("options", {})
        if name in options:
            return options[name]
        raise AttributeError(name)

    def _measurer_for(self, builder):
        """The C++ supervisor for this builder; kept (with its worker processes) while the builder's options
        stay the same."""
        key = (builder.timeout, builder.n_parallel)
        if self._measurer is None or key != self._builder_key:
            self.close()
            options = dict(self.options, build_timeout=builder.timeout, n_parallel=builder.n_parallel)
            self._measurer = _core.LocalMeasurer(options, worker_path())
            self._builder_key = key
        return self._measurer

    def close(self):
        """Stops the worker processes (they also stop when the runner is garbage collected)."""
        self._measurer = None

    def __repr__(self):
        shown = ", ".join(f"{k}={v}" for k, v in self.options.items() if k != "faults")
        return f"LocalRunner({shown})"


def _core_state(task, state):
    from .build_module import _core_state as core_of
    if isinstance(state, MeasureInput):
        state = state.state
    return core_of(state)


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
    core_states = [_core_state(task, s) for s in states]
    return runner._measurer_for(builder).measure(task, core_states)
