"""A built or loaded network as a torch.nn.Module: torch tensors in, torch tensors out.

    net = autosched.graph.build(graph, "llvm", log="net.json")      # or autosched.graph.load_module("net.so")
    module = TorchModule(net)                # from autosched.torch_module import TorchModule
    y = module(torch.randn(1, 3, 224, 224))  # a tensor (a tuple of tensors for several outputs)

Inputs are CPU tensors of the network's dtypes and shapes (they are read without a copy where contiguous);
outputs are new CPU tensors that share memory with the arrays the network returned. The network runs
outside autograd: outputs never require grad, and a call with grad enabled on an input that requires grad
is refused (run it under torch.no_grad() or detach the input). This module imports torch.
"""
import numpy as np
import torch

__all__ = ["TorchModule", "to_numpy", "to_torch"]


def to_numpy(tensor, what):
    """A numpy view (or copy, where not contiguous) of a CPU tensor; TypeError naming `what` otherwise."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise TypeError(f"{what} is on {tensor.device}; autosched networks built for the CPU take CPU tensors "
                        "(use .cpu())")
    if tensor.requires_grad and torch.is_grad_enabled():
        raise TypeError(f"{what} requires grad: an autosched network has no backward pass; call it under "
                        "torch.no_grad() or pass tensor.detach()")
    return np.ascontiguousarray(tensor.detach().numpy())


def to_torch(array):
    return torch.from_numpy(np.ascontiguousarray(array))


class TorchModule(torch.nn.Module):
    """Wraps a GraphModule (built by autosched.graph.build or loaded by autosched.graph.load_module)."""

    def __init__(self, net):
        super().__init__()
        if not hasattr(net, "input_names") or not callable(net):
            raise TypeError(f"TorchModule wraps an autosched GraphModule, got {type(net).__name__}")
        self.net = net

    def forward(self, *inputs, **named):
        names = list(self.net.input_names)
        arrays = [to_numpy(t, f"input {i}" + (f" ({names[i]!r})" if i < len(names) else ""))
                  for i, t in enumerate(inputs)]
        kwargs = {k: to_numpy(v, f"input {k!r}") for k, v in named.items()}
        outputs = [to_torch(a) for a in self.net(*arrays, **kwargs)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def extra_repr(self):
        return f"net={self.net!r}"
