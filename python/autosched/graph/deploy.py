"""Deploying a network (autosched.graph.build): every fused group compiled with its best tuned schedule, run in order.

    net = autosched.graph.build(graph, "llvm", log="net.json")
    out, = net(x)                      # or net(data=x): numpy arrays in, a list of numpy outputs back
    t = net.time_evaluator(number=10, repeat=3)(x)     # t.mean: seconds per run of the whole network

Each group takes the best record of its task (workload key and THIS target) from the log, else its default
schedule, what the untuned network runs (search.default_schedules: on a CPU the expert schedule where the task
has one, else the parallel + vectorized loop nest);
net.untuned lists those groups and build prints a note. A tuned network is never slower than the untuned one:
tuning measures each task's default first and keeps no record slower than it as the best, and where the log has no
measurement of a task's default (a log of an older version, records made elsewhere) build times the record's
kernel against the default's and runs the faster (net.default_faster lists the groups where that was the default,
and the note says so). Identical groups share one compiled module. Intermediate values live in buffers allocated
once at build time and shared between values whose lifetimes do not overlap (plan_memory); constants are converted
once at build time. A stage of a schedule that computes only from constants (the packed copy of a weight of the
pack-operand rule, a cache_read of a weight) runs once at build time (prepack=True): the kernel reads its result
instead of computing it on every call. The buffers are the module's own, so calls from several threads take turns
(a lock): each gets its own outputs, one network run at a time.
"""
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np

from .. import _core
from ..core import artifact
from ..core.checks import check_path
from ..core.dtypes import is_float, numpy_dtype
from ..core.build import Module, TimeResult, build as build_kernel, check_run_counts
from ..records import applied_log, load_best_state, read_log
from ..search.policy import default_schedules
from ..core.text import format_time
from . import export
from .extract import check_graph_args, format_problems, lower_graph
from .ir import GraphError

__all__ = ["build", "load_module", "GraphModule", "GroupInfo", "KernelCalls", "NetworkProfile", "plan_memory"]

# Every array the network owns starts at a multiple of 64 bytes (a cache line, an AVX-512 vector): a vector
# load that straddles two cache lines costs about two, and numpy's own arrays start wherever malloc puts them
# (16-byte alignment). On an AVX-512 CPU a tuned ResNet-18 convolution ran 0.57 ms with its arrays aligned and
# 0.66-0.80 ms with them 16 or 32 bytes off, as tuned and as built.
_ALIGN = 64


def plan_memory(values):
    """Greedy buffer sharing. `values`: (name, nbytes, first, last) with the step that writes the value and the
    last step that reads it. Returns ({name: buffer index}, [buffer nbytes]). A buffer is free for a value
    written at step s when the value it last held was last read before s; among free buffers the smallest that
    is large enough is taken, else the largest free one grows, else a new buffer is made. Values are placed
    in order of first step, larger first."""
    assign, sizes, holder_last = {}, [], []
    for name, nbytes, first, last in sorted(values, key=lambda v: (v[2], -v[1])):
        free = [b for b in range(len(sizes)) if holder_last[b] < first]
        fits = [b for b in free if sizes[b] >= nbytes]
        if fits:
            b = min(fits, key=lambda i: sizes[i])
        elif free:
            b = max(free, key=lambda i: sizes[i])
            sizes[b] = nbytes
        else:
            b = len(sizes)
            sizes.append(nbytes)
            holder_last.append(-1)
        assign[name] = b
        holder_last[b] = max(last, first)
    return assign, sizes


def _contiguous(array):
    """A C-contiguous array of the same shape (np.ascontiguousarray would make a 0-d array 1-d)."""
    return array if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(array.shape)


def _aligned_bytes(nbytes):
    raw = np.empty(nbytes + _ALIGN, np.uint8)
    offset = (-raw.ctypes.data) % _ALIGN
    return raw[offset:offset + nbytes]


def _aligned_empty(shape, dtype):
    """np.empty(shape, dtype) starting at a multiple of _ALIGN bytes."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return _aligned_bytes(nbytes).view(dtype).reshape(shape)


def _aligned(array):
    """`array` itself when it is C-contiguous and starts at a multiple of _ALIGN bytes, else an aligned copy."""
    array = np.asarray(array)
    if array.flags.c_contiguous and array.ctypes.data % _ALIGN == 0:
        return array
    out = _aligned_empty(array.shape, array.dtype)
    out[...] = array
    return out


class GroupInfo:
    """One compiled group: name, nodes (names), task, state, tuned (from the log) and the module. prepacked:
    the names of the state's stages computed once at build time from constants (their arrays are passed to
    the module after the output)."""

    def __init__(self, group, task, state, tuned, module, prepacked=(), prepacked_arrays=(), mean_cost=None):
        self.name, self.nodes, self.output = group.name, [n.name for n in group.nodes], group.output
        self.inputs = list(group.inputs)
        self.task, self.state, self.tuned, self.module = task, state, tuned, module
        self.prepacked, self.prepacked_arrays = list(prepacked), list(prepacked_arrays)
        # The measured seconds of the record the schedule came from (None: the default). A group of a loaded
        # network has no task or state: `record` holds what the artifact says of them.
        self.mean_cost, self.record = mean_cost, None
        # (record seconds, default seconds) as build timed them, where the log's best record of the task ran
        # slower than its default schedule, which the group runs instead; None otherwise.
        self.default_faster = None

    def __repr__(self):
        return f"GroupInfo({self.name}, output={self.output!r}, tuned={self.tuned})"


class NetworkProfile(NamedTuple):
    """GraphModule.network_profile's result: rows of (GroupInfo, seconds per run of its kernel inside the
    network) in execution order, and the seconds of a whole run of the kernels."""
    rows: List[Tuple[Any, float]]
    run_seconds: float


class KernelCalls:
    """The groups' kernels run in order by one native KernelSequence: a slot per value the groups read or write
    and per prepacked array, made on the first run from that run's arrays, every call's arguments checked then.
    The values of `fixed` (constants, intermediate buffers) keep their arrays; the others (graph inputs,
    outputs made per call) are rebound, and checked again, on every run. A run of the network is then one call
    into the core, which holds the GIL for none of it. OpenCL kernels run with every slot in the device's
    memory: the constants are copied there on the first run, the inputs in and the outputs out on every run,
    and the intermediate buffers stay there (their host arrays are not written)."""

    def __init__(self, groups, fixed):
        self.groups, self.fixed = list(groups), set(fixed)
        self._sequence, self._rebind = None, []

    def _make(self, env):
        sequence, slots = _core.KernelSequence(), {}

        def slot(key, array, rebind):
            if key not in slots:
                slots[key] = sequence.add_slot(array, per_run=rebind)
                if rebind:
                    self._rebind.append((slots[key], key))
            return slots[key]

        for info in self.groups:
            args = [slot(v, env[v], v not in self.fixed) for v in list(info.inputs) + [info.output]]
            args += [slot(("prepacked", id(a)), a, False) for a in info.prepacked_arrays]
            sequence.add_call(info.module._mod, args)
        self._sequence = sequence

    def run(self, env):
        if self._sequence is None:
            self._make(env)
        else:
            for index, value in self._rebind:
                self._sequence.bind(index, env[value])
        self._sequence.run()

    def run_timed(self, runs):
        """Runs the kernels `runs` times on the arrays of the last run; each group's mean seconds per run of
        its kernel inside those runs, in the groups' order."""
        return self._sequence.run_timed(runs)


class GraphModule:
    """A compiled network: net(*inputs) or net(**inputs) -> list of numpy outputs. export_library(path)
    writes it as one file that autosched.graph.load_module(path) loads without compiling; it pickles the same
    way."""

    def __init__(self, graph, target, groups, constants, plan, buffer_sizes, note):
        self.graph, self.target, self.groups, self.note = graph, target, groups, note
        self.input_names, self.output_names = graph.inputs, graph.outputs
        self.memory_plan, self.buffer_sizes = plan, buffer_sizes
        # Constants and prepacked arrays aligned once (arrays shared by several groups stay shared).
        self._static = {value: _aligned(array) for value, array in constants.items()}
        originals = [a for info in groups for a in info.prepacked_arrays]  # alive, so their ids stay theirs
        copies = {id(a): _aligned(a) for a in originals}
        for info in groups:
            info.prepacked_arrays = [copies[id(a)] for a in info.prepacked_arrays]
        self._buffers = [_aligned_bytes(n) for n in buffer_sizes]
        for value, b in plan.items():
            dtype = numpy_dtype(graph.dtype(value))
            shape = graph.shape(value)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            self._static[value] = self._buffers[b][:nbytes].view(dtype).reshape(shape)
        self._specs = [(v, tuple(graph.shape(v)), numpy_dtype(graph.dtype(v))) for v in graph.inputs]
        # What callers call the outputs (the names of the model's own format, e.g. ONNX's, where they differ
        # from the graph's value names); export_library keeps them.
        self.output_labels = list(graph.outputs)
        # The intermediate buffers above are shared by every call: one run at a time uses them.
        self._lock = threading.Lock()
        # The outputs each run makes (the groups' outputs that are no buffer: the graph's outputs).
        self._made_per_run = [(info.output, tuple(graph.shape(info.output)), numpy_dtype(graph.dtype(info.output)))
                              for info in groups if info.output not in self._static]
        self._calls = KernelCalls(groups, self._static)

    @property
    def untuned(self):
        """The groups that run their default schedule for want of a record of their task for this target."""
        return [g for g in self.groups if not g.tuned and not getattr(g, "default_faster", None)]

    @property
    def default_faster(self):
        """The groups that run their default schedule because the log's best record ran slower (build timed
        both)."""
        return [g for g in self.groups if getattr(g, "default_faster", None)]

    @property
    def intermediate_bytes(self):
        return sum(self.buffer_sizes)

    def _bind_inputs(self, arrays, named):
        names = [v for v, _, _ in self._specs]
        if arrays and named:
            raise TypeError(f"network '{self.graph.name}': give the inputs by position or by name, not both")
        if named:
            unknown = [k for k in named if k not in names]
            if unknown:
                raise TypeError(f"network '{self.graph.name}': unknown input(s) {unknown}; its inputs are {names}")
            missing = [k for k in names if k not in named]
            if missing:
                raise TypeError(f"network '{self.graph.name}': missing input(s) {missing}")
            arrays = [named[k] for k in names]
        if len(arrays) != len(names):
            raise TypeError(f"network '{self.graph.name}' takes {len(names)} input(s) {names}, got {len(arrays)}")
        env = {}
        for (name, shape, dtype), array in zip(self._specs, arrays):
            array = np.asarray(array)
            if array.dtype != dtype:
                raise TypeError(f"network '{self.graph.name}': input '{name}' must be {dtype.name}, got "
                                f"{array.dtype.name}")
            if array.shape != shape:
                raise ValueError(f"network '{self.graph.name}': input '{name}' must have shape {shape}, got "
                                 f"{array.shape}")
            env[name] = _contiguous(array)
        return env

    def _run(self, env):
        for value, shape, dtype in self._made_per_run:
            if value not in env:
                env[value] = _aligned_empty(shape, dtype)
        self._calls.run(env)
        return env

    def __call__(self, *arrays, **named):
        env = self._bind_inputs(arrays, named)
        env.update(self._static)
        with self._lock:
            self._run(env)
        # Each output is an array of its own, which a caller may write into: outputs that are inputs or
        # constants are copied, and so is a value that is a graph output twice (or more), after its first.
        outputs, given = [], set()
        for v in self.output_names:
            own = v not in self._static and v not in self.input_names and v not in given
            outputs.append(env[v] if own else env[v].copy())
            given.add(v)
        return outputs

    def profile(self, *arrays, number=10, repeat=3, **named):
        """Per-group times on these inputs: a list of (GroupInfo, seconds per run: the best of `repeat`
        means of `number` runs of its kernel, back to back as the tuner times it), in execution order, after
        one run of the whole network (which fills the intermediate buffers each kernel reads).
        network_profile times the kernels inside runs of the whole network instead."""
        if number < 1 or repeat < 1:
            raise ValueError(f"profile: number and repeat must be >= 1, got {number}, {repeat}")
        env = self._bind_inputs(arrays, named)
        env.update(self._static)
        rows = []
        with self._lock:
            self._run(env)
            for info in self.groups:
                args = [env[v] for v in info.inputs] + [env[info.output]] + list(info.prepacked_arrays)
                rows.append((info, min(info.module.time_evaluator(number=number, repeat=repeat)(*args))))
        return rows

    def network_profile(self, *arrays, number=10, repeat=3, **named):
        """Each group's kernel timed inside runs of the whole network, with the caches as the kernels before
        it leave them and its weights read once per run, as a call of the network runs it: a NetworkProfile
        of `repeat` x (one warm-up run, then `number` timed runs). rows: (GroupInfo, seconds per run: the best
        of the `repeat` means of its kernel), in execution order; run_seconds: the best of the `repeat` means
        of a whole run of the kernels, so run_seconds - sum of rows is the time between them."""
        if number < 1 or repeat < 1:
            raise ValueError(f"network_profile: number and repeat must be >= 1, got {number}, {repeat}")
        env = self._bind_inputs(arrays, named)
        env.update(self._static)
        means, runs = [], []
        with self._lock:
            for _ in range(repeat):
                self._run(env)  # makes the per-run outputs once, binds the inputs, warms up
                start = time.perf_counter()
                means.append(self._calls.run_timed(number))
                runs.append((time.perf_counter() - start) / number)
        rows = [(info, min(m[i] for m in means)) for i, info in enumerate(self.groups)]
        return NetworkProfile(rows, min(runs))

    def time_evaluator(self, number=10, repeat=3):
        """A function of the inputs (as for a call) returning a TimeResult: `repeat` times in seconds per run
        of the whole network, each the mean of `number` runs, after one warm-up run."""
        check_run_counts("GraphModule.time_evaluator", number, repeat)

        def evaluate(*arrays, **named):
            env = self._bind_inputs(arrays, named)
            env.update(self._static)
            times = []
            with self._lock:  # the timed runs are not interleaved with another thread's call
                self._run(dict(env))
                for _ in range(repeat):
                    start = time.perf_counter()
                    for _ in range(number):
                        self._run(dict(env))
                    times.append((time.perf_counter() - start) / number)
            return TimeResult(times)
        return evaluate

    def export_library(self, path, cross_compiler=None):
        """Writes the network as one file: a shared library of its kernels with the weights and the graph's
        metadata (graph/export.py, docs/deploy.md); autosched.graph.load_module(path) runs it. A network built
        for another architecture ("llvm -mtriple=aarch64-linux-gnu") is linked by `cross_compiler` (e.g.
        "aarch64-linux-gnu-gcc"), else $CC; loaded on a machine of that architecture."""
        export.export_library(self, path, cross_compiler)

    def __reduce__(self):
        return artifact.load_bytes, (artifact.to_bytes(self.export_library), load_module)

    def __repr__(self):
        return (f"<GraphModule {self.graph.name}: {len(self.groups)} groups, {len(self.untuned)} untuned, "
                f"{self.intermediate_bytes} bytes of intermediates>")


def _tuned_state(task, log, loaded):
    """The state of the best record of the task in the log for the task's target that replays on its DAG,
    or None (records.load_best_state warns about the ones it skips)."""
    if log is None:
        return None, None
    state, result = load_best_state(log, task, loaded=loaded)
    return state, (None if result is None else result.mean_cost)


def _default_logged(task, loaded):
    """Whether the log measured the task's default: of search.default_schedules in order, the first state
    that has a record of the task without error, before any that has none (the ones before it failed)."""
    measured = {}  # state key -> whether one of its records has no error
    for rec in loaded.records:
        if rec.task.workload_key == task.workload_key and rec.task.target.text == task.target.text:
            key = _core.state_key(rec.state)
            measured[key] = measured.get(key, False) or rec.result.ok
    for _, state in default_schedules(task):
        ok = measured.get(_core.state_key(state))
        if ok is not None:
            if ok:
                return True
            continue
        return False
    return False


def _first_default(task, build):
    """build(state) of the task's default: the first of search.default_schedules for which it does not raise
    ValueError (a schedule that does not compile), each one that does warned about. Returns (name, state,
    what build returned)."""
    candidates = default_schedules(task)
    for i, (name, state) in enumerate(candidates):
        try:
            return name, state, build(state)
        except ValueError as err:
            if i + 1 == len(candidates):
                raise
            warnings.warn(f"task '{task.desc}': its default schedule '{name}' does not compile ({err}); using "
                          f"'{candidates[i + 1][0]}'")


def _runs_here(target):
    return not (target.runs_in_host_process and (target.foreign or target.missing_features))


class _Choice:
    """What the groups of a task run: the best record of the log (`record`, measured `mean_cost` seconds), or
    the task's default (search.default_schedules), where the log has no record of the task or where the
    record's kernel ran slower than the default's when timed here (`timed`: (record seconds, default
    seconds)). `default` and `record_module`: the default (name, state, whole kernel) and the record's whole
    kernel, built to time them."""

    def __init__(self, task, record, mean_cost):
        self.task, self.record, self.mean_cost = task, record, mean_cost
        self.default, self.record_module, self.timed = None, None, None

    @property
    def tuned(self):
        return self.record is not None and self.timed is None


def _choose(task, log, loaded, check_defaults):
    """The task's _Choice, before any timing: where the record is to be timed against the default, both
    kernels are built whole."""
    record, mean_cost = _tuned_state(task, log, loaded)
    choice = _Choice(task, record, mean_cost)
    if record is None or not check_defaults or not _runs_here(task.target) or _default_logged(task, loaded):
        return choice
    choice.default = _first_default(task, lambda state: build_kernel(task, state))
    if _core.state_key(choice.default[1]) == _core.state_key(record):
        choice.default = None  # the record is the default
    else:
        choice.record_module = build_kernel(task, record)
    return choice


def _timing_arrays(module):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(tuple(shape)).astype(numpy_dtype(dtype)) if is_float(dtype)
            else np.zeros(tuple(shape), numpy_dtype(dtype)) for _, dtype, shape in module.arg_specs]


def _time_against_default(choice):
    """Times the record's kernel against the default's on random inputs, the default first (the least of
    3 runs, after a warm-up), the record then as long as it is not twice as slow (a loop nest far slower
    than the default takes one run and its warm-up); choice.timed is set when the default was faster."""
    _, _, default = choice.default
    arrays = _timing_arrays(default)
    try:
        default_s = min(default.time_evaluator(number=1, repeat=3, min_repeat_ms=2)(*arrays).results)
        record_s = min(choice.record_module.time_evaluator(number=1, repeat=1, min_repeat_ms=2)(*arrays).results)
        if record_s <= 2 * default_s:
            record_s = min(record_s, *choice.record_module.time_evaluator(number=1, repeat=3,
                                                                          min_repeat_ms=2)(*arrays).results)
    except ValueError as err:  # a kernel that cannot run here: the record stays
        warnings.warn(f"task '{choice.task.desc}': its kernels could not be timed against its default "
                      f"schedule ({err}); it runs its best record")
        return
    if record_s > default_s:
        choice.timed = (record_s, default_s)


class _Kernel:
    """A group's schedule built for the target. With constant stages split off (prepack), `module` is the
    kernel without them and `prepack` holds, per split stage, (its name, the module computing it alone,
    the positions among the group's inputs of the constants it reads)."""

    def __init__(self, state, tuned, module, prepack=(), mean_cost=None, timed=None):
        self.state, self.tuned, self.module, self.prepack = state, tuned, module, list(prepack)
        self.mean_cost, self.timed = mean_cost, timed


def _split_kernel(task, state, constant_args):
    """The kernel of `state` with its stages computed only from the constant arguments split off, or None
    when there are none."""
    kernel_state, stage_ids, dags, args = _core.split_constant_stages(state, constant_args)
    if not stage_ids:
        return None
    target = task.target
    module = Module(_core.build_state(kernel_state, target), kernel_state, target)
    prepack = [(state.stages[i].name, build_kernel(dag, None, target), list(a))
               for i, dag, a in zip(stage_ids, dags, args)]
    return module, prepack


def _group_kernel(task, state, constant_args, prepack, whole=None):
    """(module, prepack) of `state` for a group: its constant stages split off (prepack), else the whole kernel
    (`whole` where it is built already). ValueError when the state does not compile."""
    if prepack and constant_args:
        try:
            split = _split_kernel(task, state, constant_args)
        except ValueError as err:
            warnings.warn(f"task '{task.desc}': computing its constant stages ahead failed ({err}); the kernel "
                          "computes them on every call")
            split = None
        if split is not None:
            return split
    return whole or build_kernel(task, state), []


def _kernel(choice, constant_args, prepack):
    task = choice.task
    if choice.tuned:
        module, pre = _group_kernel(task, choice.record, constant_args, prepack, choice.record_module)
        return _Kernel(choice.record, True, module, pre, mean_cost=choice.mean_cost)
    if choice.default is not None:
        _, state, whole = choice.default
        module, pre = _group_kernel(task, state, constant_args, prepack, whole)
        return _Kernel(state, False, module, pre, timed=choice.timed)
    _, state, (module, pre) = _first_default(task, lambda s: _group_kernel(task, s, constant_args, prepack))
    return _Kernel(state, False, module, pre)


def _prepacked_arrays(kernel, group, constants):
    """The arrays of the kernel's split stages for this group's constants (computed once)."""
    arrays = []
    for _, module, positions in kernel.prepack:
        name, dtype, shape = module.arg_specs[-1]
        out = _aligned_empty(tuple(shape), dtype)
        module(*(constants[group.inputs[p]] for p in positions), out)
        arrays.append(out)
    return arrays


def _compile(lowered, log, constants, prepack, check_defaults):
    """A GroupInfo per group. Groups with the same task and the same inputs that are constants share one
    kernel; groups that also read the same constants share the prepacked arrays. The log is read once, the
    kernels build in parallel (building releases the GIL), and the records to time against their default
    are timed one at a time, while nothing else runs."""
    loaded = read_log(log) if log is not None else None
    tasks, jobs = {}, {}
    for group, task in zip(lowered.groups, lowered.group_tasks):
        constant_args = [i for i, v in enumerate(group.inputs) if v in constants]
        tasks.setdefault(task.workload_key, task)
        jobs.setdefault((task.workload_key, tuple(constant_args)), (task, constant_args))
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        futures = {key: pool.submit(_choose, task, log, loaded, check_defaults) for key, task in tasks.items()}
        choices = {key: future.result() for key, future in futures.items()}
        for choice in choices.values():
            if choice.default is not None:
                _time_against_default(choice)
        futures = {key: pool.submit(_kernel, choices[task.workload_key], args, prepack)
                   for key, (task, args) in jobs.items()}
        kernels = {key: future.result() for key, future in futures.items()}
    arrays, infos = {}, []
    for group, task in zip(lowered.groups, lowered.group_tasks):
        constant_args = [i for i, v in enumerate(group.inputs) if v in constants]
        key = (task.workload_key, tuple(constant_args))
        kernel = kernels[key]
        packed = ()
        if kernel.prepack:
            data_key = (key, tuple(group.inputs[i] for i in constant_args))
            if data_key not in arrays:
                arrays[data_key] = _prepacked_arrays(kernel, group, constants)
            packed = arrays[data_key]
        info = GroupInfo(group, task, kernel.state, kernel.tuned, kernel.module,
                         [name for name, _, _ in kernel.prepack], packed, kernel.mean_cost)
        info.default_faster = kernel.timed
        infos.append(info)
    return infos


def _plan(graph, groups):
    """The memory plan of the values that are neither graph outputs nor inputs nor constants."""
    step_of = {g.output: i for i, g in enumerate(groups)}
    last = {}
    for i, g in enumerate(groups):
        for v in g.inputs:
            last[v] = i
    values = []
    for v, i in step_of.items():
        if v in graph.outputs:
            continue
        nbytes = int(np.prod(graph.shape(v), dtype=np.int64)) * numpy_dtype(graph.dtype(v)).itemsize
        values.append((v, nbytes, i, last.get(v, i)))
    return plan_memory(values)


def _note(infos):
    untuned, faster = {}, {}
    for info in infos:
        if info.default_faster:
            faster.setdefault(info.task.desc, (info.default_faster, []))[1].append(info.output)
        elif not info.tuned:
            untuned.setdefault(info.task.desc, []).append(info.output)
    lines = []
    if untuned:
        count = sum(len(v) for v in untuned.values())
        lines += [f"{count} group(s) without a tuned schedule (running the default schedule):"]
        lines += [f"  {desc} x{len(outs)}" for desc, outs in untuned.items()]
    if faster:
        lines.append(f"{sum(len(outs) for _, outs in faster.values())} group(s) run the default schedule, faster "
                     "than the log's best record: " + "; ".join(
                         f"{desc} x{len(outs)} ({format_time(default_s)} against {format_time(record_s)})"
                         for desc, ((record_s, default_s), outs) in faster.items()))
    return "\n".join(lines)


def build(graph: Any, target: Any, log: Any = None, hardware_params: Any = None, verbose: bool = True,
          prepack: bool = True, layout: str = "auto", *, params: Optional[Dict[str, Any]] = None,
          winograd: Union[bool, str] = "auto", check_defaults: bool = True) -> "GraphModule":
    """Compiles `graph` for `target` (a Target or its text) with the best schedules of `log` (a record file;
    None: the default schedules only, the untuned network) and returns a GraphModule. A graph with problems()
    (unsupported ops, dynamic dims: bind them with Graph.bind) is refused with a GraphError listing them.
    verbose: print the note about groups without a tuned schedule, and about groups whose default schedule
    ran faster than their record (also in net.note). prepack: compute the stages of a schedule that read
    only constants (a packed weight) once here, not in every call of the kernel; only for targets whose
    kernels run in this process (on a device those stages are tiles in shared or private memory). layout and winograd: as for
    extract_tasks (give both the same values, or the tuned tasks are not the kernels built). Inside
    ``with autosched.ApplyHistoryBest(log):`` (TVM's spelling), log=None takes that log. params: TVM's
    argument, accepted when it names the graph's own constants.

    check_defaults: where the log holds a task's best record but no measurement of its default schedule
    (search.default_schedules), which tuning measures first, the record is not known to be faster: build
    then times both kernels on random inputs (a few runs each, one at a time; a record far slower takes one
    run) and runs the faster, so that a tuned network is not slower than the untuned one. A log written by
    tuning holds the default's measurement, and nothing is timed. False runs the best records as they are
    (the code of a target that does not run on this machine is never timed)."""
    target, hardware_params = check_graph_args("graph.build", graph, target, hardware_params, params)
    if log is None:
        log = applied_log()
    else:
        log = check_path("graph.build", log, "log")
    problems = graph.problems()
    if problems:
        raise GraphError(f"graph '{graph.name}' cannot be built: {len(problems)} node(s) cannot be compiled:\n"
                         f"{format_problems(problems)}")
    lowered = lower_graph(graph, target, hardware_params, layout, winograd=winograd)
    # Constant stages are computed ahead only for kernels that run in this process, as tuning measured them
    # (lower_graph gives a device's tasks no constant arguments). On a GPU they are a shared or private copy
    # of a weight's tile that only the kernel fills: split off, the kernel read the weight's register tiles
    # from global memory (ViT-B/16's dense layers ran 7-9x slower than the kernels tuning measured).
    prepack = prepack and target.runs_in_host_process
    folded = lowered.graph
    used = {v for g in lowered.groups for v in g.inputs} | set(folded.outputs)
    constants = {k: _contiguous(a) for k, a in folded.constants.items() if k in used}
    infos = _compile(lowered, None if log is None else str(log), constants, prepack, check_defaults)
    plan, sizes = _plan(folded, lowered.groups)
    note = _note(infos)
    if note and verbose:
        print(note)
    return GraphModule(folded, lowered.tasks[0].target if lowered.tasks else target, infos, constants, plan,
                       sizes, note)


def load_module(path):
    """The GraphModule exported to `path` by export_library, ready to run: the kernels come from the file's
    shared library (llvm) or program binaries (opencl), nothing is compiled. Refuses a file that is not a
    network artifact, and code this CPU cannot run (naming the features it lacks)."""
    art = artifact.Artifact(path, "graph")
    try:
        cores = art.modules()
        g = art.meta["graph"]
        graph = export.ArtifactGraph(g["name"], g["inputs"], g["outputs"], g["values"])
        modules = [Module(core, None, target=art.kernel_set.target) for core in cores]
        loaded = {}

        def array(name):
            if name not in loaded:
                loaded[name] = art.array(name)
            return loaded[name]

        infos = []
        for spec in g["groups"]:
            info = GroupInfo.__new__(GroupInfo)
            info.name, info.nodes, info.output = spec["name"], list(spec["nodes"]), spec["output"]
            info.inputs = list(spec["inputs"])
            info.task, info.state, info.tuned = None, None, spec["tuned"]
            info.module = modules[spec["kernel"]]
            info.prepacked = list(spec["prepacked"])
            info.prepacked_arrays = [array(n) for n in spec["prepacked_arrays"]]
            info.record = spec.get("record")
            faster = spec.get("default_faster")
            info.default_faster = tuple(faster) if faster else None
            infos.append(info)
        constants = {v: array(n) for v, n in g["constants"].items()}
        net = GraphModule(graph, art.kernel_set.target, infos, constants, dict(g["memory_plan"]),
                          list(g["buffer_sizes"]), g["note"])
        net._kernel_set = art.kernel_set
        net.output_labels = list(g.get("output_labels", g["outputs"]))
        net.source = art.meta.get("source")
        return net
    finally:
        art.close()
