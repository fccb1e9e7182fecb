"""Torch tensors to and from the numpy arrays a built network takes and returns. torch is imported only when a
tensor is converted: importing autosched does not import it. numpy has no bfloat16 of its own: a torch.bfloat16
tensor becomes an array of ml_dtypes.bfloat16 (and back) sharing its bits."""
import numpy as np

from ..core.dtypes import bfloat16

__all__ = ["to_numpy", "to_torch", "tensor_to_numpy"]


def tensor_to_numpy(tensor):
    """A numpy view of a CPU tensor's data (torch.bfloat16 as ml_dtypes.bfloat16), whatever its grad."""
    import torch
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(bfloat16())
    return tensor.numpy()


def to_numpy(tensor, what):
    """A numpy view (or copy, where not contiguous) of a CPU tensor; TypeError naming `what` otherwise."""
    import torch  # only where tensors are converted: importing autosched does not import torch
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise TypeError(f"{what} is on {tensor.device}; autosched networks built for the CPU take CPU tensors "
                        "(use .cpu())")
    if tensor.requires_grad and torch.is_grad_enabled():
        raise TypeError(f"{what} requires grad: an autosched network has no backward pass; call it under "
                        "torch.no_grad() or pass tensor.detach()")
    return np.ascontiguousarray(tensor_to_numpy(tensor))


def to_torch(array):
    import torch
    array = np.ascontiguousarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
