"""Deploying a network (autosched.graph.build): every fused group compiled with its best tuned schedule, run in order.

    net = autosched.graph.build(graph, "llvm", log="net.json")
    out, = net(x)                      # or net(data=x): numpy arrays in, a list of numpy outputs back
    t = net.time_evaluator(number=10, repeat=3)(x)     # t.mean: seconds per run of the whole network

Each group takes the best record of its task (workload key and THIS target) from the log, else the baseline
schedule (the parallel + vectorized default); net.untuned lists those groups and build prints a note. Identical
groups share one compiled module. Intermediate values live in buffers allocated once at build time and shared
between values whose lifetimes do not overlap (plan_memory); constants are converted once at build time. A
stage of a schedule that computes only from constants (the packed copy of a weight of the pack-operand rule, a
cache_read of a weight) runs once at build time (prepack=True): the kernel reads its result instead of
computing it on every call. The buffers are the module's own, so calls from several threads take turns (a
lock): each gets its own outputs, one network run at a time.
"""
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np

from .. import _core, artifact
from .._check import check_path
from ..build_module import Module, TimeResult, build as build_kernel
from ..records import applied_log, load_best_state, read_log
from ..search import baseline_states
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
        # The measured seconds of the record the schedule came from (None: baseline). A group of a loaded
        # network has no task or state: `record` holds what the artifact says of them.
        self.mean_cost, self.record = mean_cost, None

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
    into the core, which holds the GIL for none of it."""

    def __init__(self, groups, fixed):
        self.groups, self.fixed = list(groups), set(fixed)
        self._sequence, self._rebind = None, []

    def _make(self, env):
        sequence, slots = _core.KernelSequence(), {}

        def slot(key, array, rebind):
            if key not in slots:
                slots[key] = sequence.add_slot(array)
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
            dtype = np.dtype(graph.dtype(value))
            shape = graph.shape(value)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            self._static[value] = self._buffers[b][:nbytes].view(dtype).reshape(shape)
        self._specs = [(v, tuple(graph.shape(v)), np.dtype(graph.dtype(v))) for v in graph.inputs]
        # What callers call the outputs (the names of the model's own format, e.g. ONNX's, where they differ
        # from the graph's value names); export_library keeps them.
        self.output_labels = list(graph.outputs)
        # The intermediate buffers above are shared by every call: one run at a time uses them.
        self._lock = threading.Lock()
        # The outputs each run makes (the groups' outputs that are no buffer: the graph's outputs).
        self._made_per_run = [(info.output, tuple(graph.shape(info.output)), np.dtype(graph.dtype(info.output)))
                              for info in groups if info.output not in self._static]
        self._calls = KernelCalls(groups, self._static)

    @property
    def untuned(self):
        """The groups that run their baseline schedule (no record of their task for this target)."""
        return [g for g in self.groups if not g.tuned]

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
        if number < 1 or repeat < 1:
            raise ValueError(f"time_evaluator: number and repeat must be >= 1, got {number}, {repeat}")

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

    def export_library(self, path):
        """Writes the network as one file: a shared library of its kernels with the weights and the graph's
        metadata (graph/export.py, docs/deploy.md); autosched.graph.load_module(path) runs it."""
        export.export_library(self, path)

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


def _baseline_module(task):
    """The parallel + vectorized default when it compiles, else the plain loop nest."""
    states = baseline_states(task)
    for state in reversed(states[1:]):
        try:
            return state, build_kernel(task, state)
        except ValueError as err:
            warnings.warn(f"task '{task.desc}': the default parallel schedule does not compile ({err}); using "
                          "the plain loop nest")
    return states[0], build_kernel(task, states[0])


class _Kernel:
    """A group's schedule built for the target. With constant stages split off (prepack), `module` is the
    kernel without them and `prepack` holds, per split stage, (its name, the module computing it alone,
    the positions among the group's inputs of the constants it reads)."""

    def __init__(self, state, tuned, module, prepack=(), mean_cost=None):
        self.state, self.tuned, self.module, self.prepack = state, tuned, module, list(prepack)
        self.mean_cost = mean_cost


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


def _kernel(task, log, loaded, constant_args, prepack):
    state, mean_cost = _tuned_state(task, log, loaded)
    tuned = state is not None
    if not tuned:
        state, module = _baseline_module(task)
    if prepack and constant_args:
        try:
            split = _split_kernel(task, state, constant_args)
        except ValueError as err:
            warnings.warn(f"task '{task.desc}': computing its constant stages ahead failed ({err}); the kernel "
                          "computes them on every call")
            split = None
        if split is not None:
            return _Kernel(state, tuned, *split, mean_cost=mean_cost)
    return _Kernel(state, tuned, build_kernel(task, state) if tuned else module, mean_cost=mean_cost)


def _prepacked_arrays(kernel, group, constants):
    """The arrays of the kernel's split stages for this group's constants (computed once)."""
    arrays = []
    for _, module, positions in kernel.prepack:
        name, dtype, shape = module.arg_specs[-1]
        out = _aligned_empty(tuple(shape), dtype)
        module(*(constants[group.inputs[p]] for p in positions), out)
        arrays.append(out)
    return arrays


def _compile(lowered, log, constants, prepack):
    """A GroupInfo per group. Groups with the same task and the same inputs that are constants share one
    kernel; groups that also read the same constants share the prepacked arrays. The log is read once, and
    the kernels build in parallel (building releases the GIL)."""
    loaded = read_log(log) if log is not None else None
    jobs = {}
    for group, task in zip(lowered.groups, lowered.group_tasks):
        constant_args = [i for i, v in enumerate(group.inputs) if v in constants]
        jobs.setdefault((task.workload_key, tuple(constant_args)), (task, constant_args))
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        futures = {key: pool.submit(_kernel, task, log, loaded, args, prepack) for key, (task, args) in jobs.items()}
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
        infos.append(GroupInfo(group, task, kernel.state, kernel.tuned, kernel.module,
                               [name for name, _, _ in kernel.prepack], packed, kernel.mean_cost))
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
        nbytes = int(np.prod(graph.shape(v), dtype=np.int64)) * np.dtype(graph.dtype(v)).itemsize
        values.append((v, nbytes, i, last.get(v, i)))
    return plan_memory(values)


def _note(infos):
    untuned = {}
    for info in infos:
        if not info.tuned:
            untuned.setdefault(info.task.desc, []).append(info.output)
    if not untuned:
        return ""
    count = sum(len(v) for v in untuned.values())
    lines = [f"{count} group(s) without a tuned schedule (running the baseline schedule):"]
    lines += [f"  {desc} x{len(outs)}" for desc, outs in untuned.items()]
    return "\n".join(lines)


def build(graph: Any, target: Any, log: Any = None, hardware_params: Any = None, verbose: bool = True,
          prepack: bool = True, layout: str = "auto", *, params: Optional[Dict[str, Any]] = None,
          winograd: Union[bool, str] = "auto") -> "GraphModule":
    """Compiles `graph` for `target` (a Target or its text) with the best schedules of `log` (a record file;
    None: baseline schedules only) and returns a GraphModule. A graph with problems() (unsupported ops,
    dynamic dims: bind them with Graph.bind) is refused with a GraphError listing them. verbose: print the
    note about groups without a tuned schedule (also in net.note). prepack: compute the stages of a schedule
    that read only constants (a packed weight) once here, not in every call of the kernel. layout and
    winograd: as for extract_tasks (give both the same values, or the tuned tasks are not the kernels built).
    Inside ``with autosched.ApplyHistoryBest(log):`` (TVM's spelling), log=None takes that log. params: TVM's
    argument, accepted when it names the graph's own constants."""
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
    folded = lowered.graph
    used = {v for g in lowered.groups for v in g.inputs} | set(folded.outputs)
    constants = {k: _contiguous(a) for k, a in folded.constants.items() if k in used}
    infos = _compile(lowered, None if log is None else str(log), constants, prepack)
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
