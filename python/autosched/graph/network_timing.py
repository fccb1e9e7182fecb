"""Times a network built from a tuning run's best schedules so far, so that the task scheduler's estimate is what
the network runs in, not the sum of kernels timed alone.

The tuner times each candidate alone, back to back, its weights and inputs warm after the first run. Inside the
network a kernel finds the caches as the kernels before it left them and reads its weights once per run: on
MobileNet-V2 (a 30-minute log, 2-core Xeon) the kernels took 1.13 to 2.03 times their tuner-timed latency in
the network, 1.38 times in all, which the estimate (0.71 of the built network) did not see. A NetworkTiming
builds the network from the schedules the tuning has found (graph.build from a log of one record per task,
a few seconds) and times each kernel inside runs of it (GraphModule.network_profile); the scheduler then
scales each task's latency by what it took in the network per second of its tuner-timed latency, in its
estimate and in how it gives out rounds:

    timing = autosched.graph.NetworkTiming(graph, "llvm", every_s=120)
    autosched.TaskScheduler(tasks, weights, network_timing=timing).tune(options)

The first timing comes once every task has a valid schedule, then one every `every_s` seconds of tuning; the
scale of a task holds until the next one (its schedule may change in between).
"""
import os
import tempfile
import time
from typing import List, NamedTuple, Optional

import numpy as np

from .. import _core
from ..core.checks import check_target
from ..core.dtypes import is_float, numpy_dtype
from ..measure.local import MeasureResult
from .deploy import build

__all__ = ["NetworkTiming", "NetworkTimes"]


class NetworkTimes(NamedTuple):
    """NetworkTiming.measure's result: per task (in the order given), the seconds its groups' kernels took per
    run of the network (None for a task no group of the network runs), the seconds between the kernels, the
    seconds of a whole run, the seconds the build and the timing took, and how many of the network's groups
    ran a given schedule (the others their baseline)."""
    task_seconds: List[Optional[float]]
    between_s: float
    run_s: float
    seconds: float
    tuned_groups: int


class NetworkTiming:
    """The network of `graph` built for `target` from given schedules, its kernels timed in it (module
    docstring). layout and winograd: as given to extract_tasks (the tasks must be the network's kernels).
    number, repeat: of GraphModule.network_profile. inputs: arrays of the graph's inputs (default: random,
    fixed by `seed`)."""

    def __init__(self, graph, target, *, every_s=120.0, layout="auto", winograd="auto", number=10, repeat=3,
                 inputs=None, seed=0):
        self.graph, self.target = graph, check_target("NetworkTiming", target)
        if isinstance(every_s, bool) or not isinstance(every_s, (int, float)) or not every_s >= 0:
            raise ValueError(f"NetworkTiming: every_s must be seconds >= 0, got {every_s!r}")
        if number < 1 or repeat < 1:
            raise ValueError(f"NetworkTiming: number and repeat must be >= 1, got {number}, {repeat}")
        self.every_s, self.layout, self.winograd = float(every_s), layout, winograd
        self.number, self.repeat = int(number), int(repeat)
        if inputs is None:
            rng = np.random.default_rng(seed)
            inputs = [_random_input(rng, tuple(graph.shape(v)), numpy_dtype(graph.dtype(v))) for v in graph.inputs]
        if len(inputs) != len(graph.inputs):
            raise ValueError(f"NetworkTiming: the graph has {len(graph.inputs)} inputs, got {len(inputs)} arrays")
        for name, array in zip(graph.inputs, inputs):  # checked now, not at the first timing mid-tuning
            shape, dtype = tuple(graph.shape(name)), numpy_dtype(graph.dtype(name))
            if not isinstance(array, np.ndarray) or array.shape != shape or array.dtype != dtype:
                got = f"{array.dtype}{list(array.shape)}" if isinstance(array, np.ndarray) else type(array).__name__
                raise ValueError(f"NetworkTiming: input '{name}' must be a {dtype}{list(shape)} array, got {got}")
        self.inputs = list(inputs)
        self.last_at = None  # tuning seconds of the last measurement

    def due(self, elapsed_s):
        """Whether a measurement is due at `elapsed_s` seconds of tuning."""
        return self.last_at is None or elapsed_s - self.last_at >= self.every_s

    def measure(self, tasks, states, costs, elapsed_s=0.0):
        """Builds the network with `states[i]` (measured `costs[i]` seconds) for task i and times it: a
        NetworkTimes. Tasks without a state (None) take their baseline schedule, as graph.build gives them."""
        start = time.monotonic()
        self.last_at = elapsed_s
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "best.json")
            writer = _core.RecordWriter(log, False)
            for task, state, cost in zip(tasks, states, costs):
                if state is not None:
                    writer.write(task.to_json(), state, MeasureResult([float(cost)]))
            del writer
            # The tuner's best states are never slower than the defaults it measured: nothing to time at build.
            net = build(self.graph, self.target, log, verbose=False, layout=self.layout, winograd=self.winograd,
                        check_defaults=False)
        profile = net.network_profile(*self.inputs, number=self.number, repeat=self.repeat)
        by_key = {}
        for info, seconds in profile.rows:
            key = info.task.workload_key if info.task is not None else None
            by_key[key] = by_key.get(key, 0.0) + seconds
        task_seconds = [by_key.get(task.workload_key) for task in tasks]
        kernels = sum(seconds for _, seconds in profile.rows)
        return NetworkTimes(task_seconds, max(0.0, profile.run_seconds - kernels), profile.run_seconds,
                            time.monotonic() - start, sum(1 for info, _ in profile.rows if info.tuned))


def _random_input(rng, shape, dtype):
    if is_float(dtype):
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype)  # indices (token ids): 0 is valid for any table
