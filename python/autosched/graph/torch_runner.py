"""Runs a Graph with PyTorch, op by op (torch.nn.functional): the same weights and computation on PyTorch's
own kernels. A second reference for tests and the PyTorch peer of bench/bench_networks.py; needs torch."""
import numpy as np

__all__ = ["TorchGraph"]


def _conv2d(F, node, x, w, b=None):
    a = node.attrs
    top, left, bottom, right = a["pads"]
    if (top, left) != (bottom, right):
        x = F.pad(x, (left, right, top, bottom))
        padding = 0
    else:
        padding = (top, left)
    return F.conv2d(x, w, b, stride=a["strides"], padding=padding, dilation=a["dilations"], groups=a["groups"])


def _pool(F, node, x, kind):
    a = node.attrs
    top, left, bottom, right = a["pads"]
    if (top, left) != (bottom, right):
        raise ValueError(f"TorchGraph: pool '{node.name}' has asymmetric padding {a['pads']}")
    if kind == "max":
        return F.max_pool2d(x, a["kernel"], a["strides"], (top, left), a["dilations"], ceil_mode=a["ceil_mode"])
    return F.avg_pool2d(x, a["kernel"], a["strides"], (top, left), ceil_mode=a["ceil_mode"],
                        count_include_pad=a["count_include_pad"])


def _slices(node, ndim):
    index = [slice(None)] * ndim
    for b, e, s, axis in zip(node.attrs["begin"], node.attrs["end"], node.attrs["strides"], node.attrs["axes"]):
        index[axis] = slice(b, e, s)
    return tuple(index)


def _take(torch, node, x, indices):
    axis, extent = node.attrs["axis"], x.shape[node.attrs["axis"]]
    indices = indices.long()
    flat = torch.where(indices < 0, indices + extent, indices).clamp(0, extent - 1).reshape(-1)
    return torch.index_select(x, axis, flat).reshape(node.shape)


def _ops(torch):
    F = torch.nn.functional
    binary = {"add": torch.add, "subtract": torch.sub, "multiply": torch.mul, "divide": torch.div,
              "power": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum}
    unary = {"relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp,
             "log": torch.log, "sqrt": torch.sqrt, "erf": torch.erf, "negative": torch.neg, "abs": torch.abs}
    table = {op: (lambda fn: lambda node, a, b: fn(a, b))(fn) for op, fn in binary.items()}
    table.update({op: (lambda fn: lambda node, x: fn(x))(fn) for op, fn in unary.items()})
    table.update({
        "conv2d": lambda node, *xs: _conv2d(F, node, *xs),
        "dense": lambda node, x, w, b=None: F.linear(x, w, b),
        "matmul": lambda node, a, b: torch.matmul(a, b),
        "gelu": lambda node, x: F.gelu(x, approximate=node.attrs["approximate"]),
        "clip": lambda node, x: torch.clamp(x, node.attrs["min"], node.attrs["max"]),
        "softmax": lambda node, x: torch.softmax(x, node.attrs["axis"]),
        "layer_norm": lambda node, x, g, b: F.layer_norm(x, x.shape[node.attrs["axis"]:], g, b,
                                                         node.attrs["epsilon"]),
        "batch_norm": lambda node, x, g, b, m, v: F.batch_norm(x, m, v, g, b, False, 0.0, node.attrs["epsilon"]),
        "max_pool2d": lambda node, x: _pool(F, node, x, "max"),
        "avg_pool2d": lambda node, x: _pool(F, node, x, "avg"),
        "global_avg_pool2d": lambda node, x: torch.mean(x, (2, 3), keepdim=True),
        "reshape": lambda node, x: torch.reshape(x, node.shape),
        "flatten": lambda node, x: torch.reshape(x, node.shape),
        "transpose": lambda node, x: x.permute(*node.attrs["perm"]),
        "concat": lambda node, *xs: torch.cat(xs, node.attrs["axis"]),
        "strided_slice": lambda node, x: x[_slices(node, x.ndim)],
        "take": lambda node, x, i: _take(torch, node, x, i),
        "reduce_mean": lambda node, x: torch.mean(x, node.attrs["axes"], keepdim=node.attrs["keepdims"]),
        "reduce_sum": lambda node, x: torch.sum(x, node.attrs["axes"], keepdim=node.attrs["keepdims"]),
        "reduce_max": lambda node, x: torch.amax(x, node.attrs["axes"], keepdim=node.attrs["keepdims"]),
    })
    return table


class TorchGraph:
    """net = TorchGraph(graph); outputs = net(*numpy_arrays) (numpy in, numpy out); net.run(*tensors) for
    timing without conversions."""

    def __init__(self, graph):
        try:
            import torch
        except ImportError as err:
            raise ImportError("TorchGraph needs PyTorch: pip install torch==2.13.0") from err
        self.torch = torch
        self.graph = graph
        self.table = _ops(torch)
        missing = sorted({n.op for n in graph.nodes if n.op not in self.table})
        if missing:
            raise ValueError(f"graph '{graph.name}' has ops TorchGraph cannot run: {', '.join(missing)}")
        # reshape: np.ascontiguousarray makes a 0-d constant 1-d
        self.constants = {k: torch.from_numpy(np.ascontiguousarray(v).reshape(v.shape))
                          for k, v in graph.constants.items()}

    def run(self, *tensors):
        values = dict(self.constants)
        values.update(zip(self.graph.inputs, tensors))
        with self.torch.inference_mode():
            for node in self.graph.nodes:
                values[node.name] = self.table[node.op](node, *(values[i] for i in node.inputs))
        return [values[o] for o in self.graph.outputs]

    def __call__(self, *arrays):
        return [t.numpy() for t in self.run(*(self.torch.from_numpy(np.ascontiguousarray(a)) for a in arrays))]
