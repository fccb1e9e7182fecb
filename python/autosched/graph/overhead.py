"""What a built network spends outside the kernels of its tasks, so that the tuner's estimated total (the sum of
weight x task latency) is comparable to the network that graph.build makes.

Every fused group of a network is a tuning task (extract.py), so the time outside the tasks' kernels is what
the graph runtime (deploy.GraphModule) does around each kernel call: rebinding the network's input, the step
of its native call sequence (deploy.KernelCalls) and the wake-up of the thread pool. It is the same for every
call, whatever the kernel, so it is measured once per target and process on a tiny kernel with a parallel loop,
run the way a GraphModule runs its kernels, minus the time the kernel itself takes (timed the way the tuner
times kernels):

    per_call = ans.graph.dispatch_seconds("llvm")                   # seconds per kernel call, measured once
    outside = ans.graph.outside_kernels_seconds(graph, "llvm")      # x the network's groups
    ans.TaskScheduler(tasks, weights, outside_kernels_s=outside)    # or outside_kernels_s="measure"

What it leaves out: the kernels' own time differs between the tuner's timing loop (warm caches, weights
re-read) and a network run (the input just written by the previous kernel, each weight read once), and the
inputs' checks and outputs' copies of a call to the network (microseconds).
"""
import time
from types import SimpleNamespace
from typing import Dict

import numpy as np

from ..core import te
from ..core.checks import check_target
from ..core.build import build as build_kernel
from ..core.compute_dag import ComputeDAG
from ..search.policy import baseline_states
from ..core.task import SearchTask
from .deploy import KernelCalls
from .extract import lower_graph

__all__ = ["dispatch_seconds", "outside_kernels_seconds"]

_MEASURED: Dict[str, float] = {}  # target text -> seconds per call
CALLS = 64      # calls per timed run of the loop
REPEAT = 15     # timed runs of each


def _tiny_kernel(target):
    """A module scaling 64 x 16 floats with its outer loop parallel (the baseline's parallel variant), and
    its arguments."""
    a = te.placeholder((64, 16), name="a")
    b = te.compute((64, 16), lambda i, j: a[i, j] * 2.0, name="b")
    task = SearchTask(compute_dag=ComputeDAG([a, b]), target=target, desc="dispatch")
    state = baseline_states(task)[-1]
    args = [np.ones((64, 16), np.float32), np.zeros((64, 16), np.float32)]
    return build_kernel(task, state), args


def dispatch_seconds(target):
    """Seconds a network built for `target` spends per kernel call outside the kernel (see the module
    docstring); measured on the first call for a target, then remembered for the process."""
    target = check_target("dispatch_seconds", target)
    key = target.text
    if key not in _MEASURED:
        module, (a, b) = _tiny_kernel(target)
        timer = module.time_evaluator(number=CALLS, repeat=1)
        group = SimpleNamespace(output="b", inputs=["a"], module=module, prepacked_arrays=[])
        # As a network runs its kernels: one native sequence of calls on buffers.
        calls = KernelCalls([group] * CALLS, fixed=["a", "b"])
        env = {"a": a, "b": b}
        calls.run(env)  # warm-up
        # The loop and the kernel's own timing alternate, so that a change of the machine's load between
        # them cancels out; the median of the differences counts.
        differences = []
        for _ in range(REPEAT):
            start = time.perf_counter()
            calls.run(env)
            loop = (time.perf_counter() - start) / CALLS
            differences.append(loop - timer(a, b).mean)
        _MEASURED[key] = max(0.0, float(np.median(differences)))
    return _MEASURED[key]


def outside_kernels_seconds(graph, target, hardware_params=None, layout="auto", winograd="auto"):
    """Seconds per run of `graph` built for `target` (graph.build with the same layout and winograd) spent
    outside the kernels of its tasks: its number of fused groups x dispatch_seconds(target)."""
    groups = lower_graph(graph, check_target("outside_kernels_seconds", target), hardware_params, layout,
                         winograd=winograd).groups
    return len(groups) * dispatch_seconds(target)
