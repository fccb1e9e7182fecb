"""A built or loaded network as a torch.nn.Module: torch tensors in, torch tensors out.

    net = autosched.graph.build(graph, "llvm", log="net.json")      # or autosched.graph.load_module("net.so")
    module = TorchModule(net)                # from autosched.torch_module import TorchModule
    y = module(torch.randn(1, 3, 224, 224))  # a tensor (a tuple of tensors for several outputs)

Inputs are CPU tensors of the network's dtypes and shapes (they are read without a copy where contiguous);
outputs are new CPU tensors that share memory with the arrays the network returned. The network runs
outside autograd: outputs never require grad, and a call with grad enabled on an input that requires grad
is refused (run it under torch.no_grad() or detach the input). torch is imported when TorchModule is first
looked up, not when autosched is imported.
"""
import functools

from .torch_tensors import to_numpy, to_torch

__all__ = ["TorchModule", "to_numpy", "to_torch"]


def __getattr__(name):
    if name == "TorchModule":
        return _torch_module_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _torch_module_class():
    import torch

    class TorchModule(_Forward, torch.nn.Module):
        """Wraps a GraphModule (built by autosched.graph.build or loaded by autosched.graph.load_module)."""

    TorchModule.__module__, TorchModule.__qualname__ = __name__, "TorchModule"
    return TorchModule


class _Forward:
    """TorchModule's methods (the class itself derives from torch.nn.Module, made when torch is imported)."""

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
