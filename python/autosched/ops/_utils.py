"""Argument checking and small helpers shared by the operator library."""
from ..core import dtypes, te


def is_tensor(x):
    return isinstance(x, te.Tensor)


def is_float(dtype):
    return dtypes.is_float(str(dtype))


def accumulation_dtype(dtype):
    """The type intermediate results over values of `dtype` are kept in: float32 for the 16-bit floats, as the
    IR accumulates them and PyTorch computes them (a normalisation's mean rounded to 16 bits would shift every
    centred value by up to half its unit; a product rounded before its bias is added rounds twice); the dtype
    itself otherwise."""
    return "float32" if str(dtype) in ("float16", "bfloat16") else str(dtype)


def is_integer(dtype):
    dtype = str(dtype)
    return dtype.startswith("int") or dtype.startswith("uint")


def check_tensor(x, op, what="input"):
    if not is_tensor(x):
        raise TypeError(f"{op}: {what} must be a te.Tensor, got {type(x).__name__}")


def check_float(x, op):
    if not is_float(x.dtype):
        raise TypeError(f"{op}: needs a floating-point tensor, got '{x.name}' of dtype {x.dtype}")


def normalize_axis(axis, ndim, op):
    """One axis in [-ndim, ndim) -> a non-negative int."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def normalize_axes(axis, ndim, op):
    """None (all axes), an int or a sequence of ints -> sorted list of distinct non-negative axes."""
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, int):
        axis = [axis]
    axes = [normalize_axis(a, ndim, op) for a in axis]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axis in {tuple(axis)}")
    return sorted(axes)


def as_pair(value, op, what):
    """An int or a pair of ints -> a tuple of two positive ints."""
    if isinstance(value, int):
        value = (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{op}: {what} must be an int or a pair of ints, got {value!r}")
    if any(v < 1 for v in value):
        raise ValueError(f"{op}: {what} must be positive, got {value!r}")
    return value


def padding_2d(padding, kernel_hw, dilation_hw, op):
    """Padding as int, (h, w), (top, left, bottom, right), "VALID" or "SAME" -> (top, left, bottom, right)."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0, 0, 0, 0)
        if mode == "SAME":
            pads = []
            for k, d in zip(kernel_hw, dilation_hw):
                total = (k - 1) * d
                pads.append((total // 2, total - total // 2))
            return (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
        raise ValueError(f"{op}: padding string must be 'VALID' or 'SAME', got {padding!r}")
    if isinstance(padding, int):
        padding = (padding,) * 4
    padding = tuple(padding)
    if len(padding) == 2:
        padding = (padding[0], padding[1], padding[0], padding[1])
    if len(padding) != 4 or not all(isinstance(p, int) for p in padding):
        raise ValueError(f"{op}: padding must be an int, 2 or 4 ints, 'VALID' or 'SAME', got {padding!r}")
    if any(p < 0 for p in padding):
        raise ValueError(f"{op}: padding must be non-negative, got {padding!r}")
    return padding


def conv_out_size(size, kernel, stride, dilation, pad_lo, pad_hi, op, dim_name):
    extent = (kernel - 1) * dilation + 1
    out = (size + pad_lo + pad_hi - extent) // stride + 1
    if out < 1:
        raise ValueError(
            f"{op}: {dim_name} window of extent {extent} (kernel {kernel}, dilation {dilation}) does not fit "
            f"the padded input of size {size + pad_lo + pad_hi}")
    return out


def const(value, dtype):
    return te.const(value, dtype)


def elem_count(shape):
    n = 1
    for s in shape:
        n *= s
    return n
