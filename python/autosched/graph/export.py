"""A built network as one file: what GraphModule.export_library(path) writes and graph.load_module(path)
(deploy.py) reads (docs/deploy.md).

The artifact (autosched/deploy/runtime.py) holds the network's distinct kernels, and beside them: the inputs and
outputs (names, shapes, dtypes), the shape and dtype of every value the groups pass, each group's inputs,
output, kernel and pre-packed arrays, the memory plan, the constants the groups read, and per group the task
and the record its schedule came from (workload key, target, state, measured time). Loading makes a
GraphModule that runs the same kernels in the same order on the same buffers; it compiles nothing.
"""
import numpy as np

from ..core import artifact
from ..core.dtypes import numpy_dtype

__all__ = ["export_library", "ArtifactGraph"]


class ArtifactGraph:
    """What a loaded network knows of its graph: name, inputs, outputs, and the shape and dtype of the values
    its groups pass (the nodes themselves stay behind)."""

    def __init__(self, name, inputs, outputs, values):
        self.name, self._inputs, self._outputs = name, list(inputs), list(outputs)
        self._values = {v: (tuple(shape), dtype) for v, (shape, dtype) in values.items()}

    @property
    def inputs(self):
        return list(self._inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    def shape(self, value):
        return self._values[value][0]

    def dtype(self, value):
        return self._values[value][1]

    def __repr__(self):
        return f"ArtifactGraph({self.name}, inputs={self._inputs}, outputs={self._outputs})"


def _record(info):
    task = info.task
    if task is None:
        return getattr(info, "record", None)
    rec = {"workload_key": task.workload_key, "desc": task.desc, "target": task.target.text, "tuned": info.tuned}
    if info.state is not None and hasattr(info.state, "to_json"):
        rec["state"] = info.state.to_json()
    if getattr(info, "mean_cost", None) is not None:
        rec["mean_cost"] = info.mean_cost
    return rec


def _layout(net):
    """The metadata and arrays of a GraphModule: kernels deduplicated by module, arrays by identity."""
    modules, kernel_of = [], {}
    arrays, array_of = [], {}

    def array_name(prefix, array):
        if id(array) not in array_of:
            array_of[id(array)] = f"{prefix}/{len(arrays)}.npy"
            arrays.append((array_of[id(array)], array))
        return array_of[id(array)]

    groups = []
    for info in net.groups:
        core = info.module._mod
        if id(core) not in kernel_of:
            kernel_of[id(core)] = len(modules)
            modules.append(core)
        groups.append({"name": info.name, "nodes": info.nodes, "inputs": info.inputs, "output": info.output,
                       "tuned": info.tuned, "default_faster": getattr(info, "default_faster", None),
                       "kernel": kernel_of[id(core)], "prepacked": info.prepacked,
                       "prepacked_arrays": [array_name("prepacked", a) for a in info.prepacked_arrays],
                       "record": _record(info)})
    plan = net.memory_plan
    constants = {v: array_name("constants", a) for v, a in net._static.items() if v not in plan}
    graph = net.graph
    values = set(graph.inputs) | set(graph.outputs) | set(constants)
    for g in groups:
        values.update(g["inputs"])
        values.add(g["output"])
    meta = {"kind": "graph", "graph": {
        "name": graph.name, "inputs": list(graph.inputs), "outputs": list(graph.outputs),
        "values": {v: [list(graph.shape(v)), str(numpy_dtype(graph.dtype(v)))] for v in sorted(values)},
        "groups": groups, "constants": constants, "memory_plan": plan,
        "buffer_sizes": [int(n) for n in net.buffer_sizes], "note": net.note,
        "output_labels": list(net.output_labels)}}
    return meta, modules, arrays


def export_library(net, path, cross_compiler=None):
    """Writes a GraphModule as one file (see the module's doc); `cross_compiler` (e.g. "aarch64-linux-gnu-gcc"; None:
    $CC, else this machine's cc) links the kernels of a target of another architecture (core/artifact.py)."""
    meta, modules, arrays = _layout(net)
    if getattr(net, "source", None):
        meta["source"] = net.source
    kernel_set = getattr(net, "_kernel_set", None)
    if kernel_set is None:
        kernel_set = artifact.KernelSet.from_modules(modules, net.target, cross_compiler)
    artifact.write_artifact(path, meta, kernel_set, arrays)
