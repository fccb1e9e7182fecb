"""Runs a Graph with PyTorch, op by op, through the `torch` of each OpDef (registry.py): the same weights and
computation on PyTorch's own kernels. A second reference for tests and the PyTorch peer of
bench/bench_networks.py; needs torch."""
import numpy as np

from ..deploy.torch_tensors import tensor_to_numpy, to_torch
from . import registry

__all__ = ["TorchGraph"]


class TorchGraph:
    """net = TorchGraph(graph); outputs = net(*numpy_arrays) (numpy in, numpy out); net.run(*tensors) for
    timing without conversions."""

    def __init__(self, graph):
        try:
            import torch
        except ImportError as err:
            raise ImportError("TorchGraph needs PyTorch, which is not installed: pip install 'autosched[torch]' "
                              "(or pip install torch==2.13.0)") from err
        self.torch = torch
        self.graph = graph
        self.table = {op: registry.get(op).torch for op in {n.op for n in graph.nodes}}
        missing = sorted(op for op, fn in self.table.items() if fn is None)
        if missing:
            raise ValueError(f"graph '{graph.name}' has ops TorchGraph cannot run: {', '.join(missing)}")
        # reshape: np.ascontiguousarray makes a 0-d constant 1-d
        self.constants = {k: to_torch(np.ascontiguousarray(v).reshape(v.shape)) for k, v in graph.constants.items()}

    def run(self, *tensors):
        values = dict(self.constants)
        values.update(zip(self.graph.inputs, tensors))
        with self.torch.inference_mode():
            for node in self.graph.nodes:
                values[node.name] = self.table[node.op](self.torch, node, *(values[i] for i in node.inputs))
        return [values[o] for o in self.graph.outputs]

    def __call__(self, *arrays):
        return [tensor_to_numpy(t) for t in self.run(*(to_torch(a) for a in arrays))]
