"""Torch tensors to and from the numpy arrays a built network takes and returns. torch is imported only when a
tensor is converted: importing autosched does not import it."""
import numpy as np

__all__ = ["to_numpy", "to_torch"]


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
    return np.ascontiguousarray(tensor.detach().numpy())


def to_torch(array):
    import torch
    return torch.from_numpy(np.ascontiguousarray(array))
