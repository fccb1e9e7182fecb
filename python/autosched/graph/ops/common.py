"""What the op families share: attr converters (a value checked and put in normal form, or OpError naming the
attr), dim arithmetic over ints, strs (named dynamic dims) and None (unknown), and numpy window helpers."""
import numbers

import numpy as np

from ...core.dtypes import dtype_name
from ...ops._utils import accumulation_dtype
from ..errors import OpError
from ..opdef import REQUIRED, same_dtypes

__all__ = ["REQUIRED", "same_dtypes", "int_attr", "ints", "pair", "pads_attr", "float_or_none", "real",
           "positive_float", "boolean", "choice", "dtype_attr", "any_ints", "is_known", "fmt", "same_dim", "unify",
           "broadcast_shapes", "prod", "norm_axis", "check_rank", "window_out", "check_windows_see_input", "pad_hw",
           "tap_windows", "triple", "pads3d_attr", "pad_spatial", "tap_windows_nd"]

# ---------------- attr converters (rank-independent) ----------------


def int_attr(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OpError(f"{what} must be an int, got {value!r}")
    return int(value)


def ints(value, what, n=None, low=None):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and n is not None:
        value = (value,) * n
    try:
        items = tuple(value)
    except TypeError:
        raise OpError(f"{what} must be a tuple of ints, got {value!r}") from None
    out = tuple(int_attr(v, what) for v in items)
    if n is not None and len(out) != n:
        raise OpError(f"{what} must have {n} values, got {value!r}")
    if low is not None and any(v < low for v in out):
        raise OpError(f"{what} must be >= {low}, got {value!r}")
    return out


def pair(what, low=1):
    return lambda v: ints(v, what, 2, low)


def pads_attr(value):
    """int, (h, w) or (top, left, bottom, right) -> (top, left, bottom, right)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,) * 4
    items = ints(value, "pads", None, 0)
    if len(items) == 2:
        items = (items[0], items[1], items[0], items[1])
    if len(items) != 4:
        raise OpError(f"pads must be (top, left, bottom, right), got {value!r}")
    return items


def triple(what, low=1):
    return lambda v: ints(v, what, 3, low)


def pads3d_attr(value):
    """int, (d, h, w) or (front, top, left, back, bottom, right) -> (front, top, left, back, bottom, right)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,) * 6
    items = ints(value, "pads", None, 0)
    if len(items) == 3:
        items = items * 2
    if len(items) != 6:
        raise OpError(f"pads must be (front, top, left, back, bottom, right), got {value!r}")
    return items


def float_or_none(what):
    def convert(value):
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise OpError(f"{what} must be a float or None, got {value!r}")
        return float(value)
    return convert


def real(what):
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise OpError(f"{what} must be a float, got {value!r}")
        return float(value)
    return convert


def positive_float(what):
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
            raise OpError(f"{what} must be a positive float, got {value!r}")
        return float(value)
    return convert


def boolean(what):
    def convert(value):
        if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
            raise OpError(f"{what} must be a bool, got {value!r}")
        return bool(value)
    return convert


def choice(what, choices):
    def convert(value):
        if value not in choices:
            raise OpError(f"{what} must be one of {choices}, got {value!r}")
        return value
    return convert


def anchor_dtype(data, bias):
    """The output dtype of a convolution or matmul whose bias is added after it: float32 for 16-bit floats, so
    that the bias is added before the one rounding (as PyTorch's convolutions and addmm do), else the data's."""
    return accumulation_dtype(data.dtype) if bias is not None else data.dtype


def dtype_attr(value):
    try:
        return dtype_name(value)
    except TypeError:
        raise OpError(f"dtype: not a dtype: {value!r}") from None


def any_ints(what):
    return lambda v: None if v is None else ints(v, what)


# ---------------- dims ----------------


def is_known(d):
    return isinstance(d, int)


def fmt(shape):
    return str(tuple(shape))


def same_dim(a, b):
    """Could dims a and b be equal? (unknown or dynamic dims could)."""
    return not (is_known(a) and is_known(b)) or a == b


def unify(a, b):
    """The dim two dims that must be equal have."""
    if is_known(a):
        return a
    if is_known(b):
        return b
    return a if a == b else None


def broadcast_shapes(shapes, op="broadcast"):
    """numpy broadcasting of shapes with dynamic dims."""
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    out = []
    for dims in zip(*padded):
        result = 1
        for d in dims:
            if d == 1:
                continue
            if result == 1:
                result = d
            elif is_known(result) and is_known(d):
                if result != d:
                    raise OpError(f"shapes {' and '.join(fmt(s) for s in shapes)} cannot be broadcast together")
            elif is_known(d):
                result = d  # the other is dynamic: it must be d (or 1)
            elif not is_known(result) and result != d:
                result = None
        out.append(result)
    return tuple(out)


def prod(dims):
    total = 1
    for d in dims:
        if not is_known(d):
            return None
        total *= d
    return total


def norm_axis(value, ndim, what="axis"):
    value = int_attr(value, what)
    if not -ndim <= value < ndim:
        raise OpError(f"{what} {value} is out of range for rank {ndim}")
    return value + ndim if value < 0 else value


def check_rank(shape, rank, what, at_least=False):
    if (len(shape) < rank) if at_least else (len(shape) != rank):
        raise OpError(f"{what} must have rank {'>= ' if at_least else ''}{rank}, got shape {fmt(shape)}")


def check_conv_channels(data, weight, groups, bias=None):
    """A convolution's channels: `groups` divides the output channels (weight's first dim) and the input
    channels (data's second), whose count is weight's second dim times `groups`; a bias (shape or None) has one
    value per output channel."""
    c, o, cg = data[1], weight[0], weight[1]
    if is_known(o) and o % groups:
        raise OpError(f"groups={groups} does not divide the {o} output channels of weight {fmt(weight)}")
    if is_known(c) and c % groups:
        raise OpError(f"groups={groups} does not divide the {c} input channels of data {fmt(data)}")
    if is_known(c) and is_known(cg) and c != cg * groups:
        raise OpError(f"channel mismatch: data {fmt(data)} has {c} channels, weight {fmt(weight)} expects "
                      f"{cg} per group x {groups} groups = {cg * groups}")
    if bias is not None:
        check_rank(bias, 1, "bias")
        if not same_dim(bias[0], o):
            raise OpError(f"bias {fmt(bias)} does not match the {o} output channels")



def window_out(size, kernel, stride, dilation, lo, hi, ceil_mode, what):
    """Output extent of a sliding window (torch semantics); None when size or kernel is not known. Refuses a
    window that reads only padding."""
    if not (is_known(size) and is_known(kernel)):
        return None
    extent = (kernel - 1) * dilation + 1
    span = size + lo + hi - extent
    if span < 0:
        raise OpError(f"{what}: window of extent {extent} does not fit the padded input of size {size + lo + hi}")
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + lo:
        out -= 1  # the last window would start in the trailing padding
    return out


def check_windows_see_input(size, out, kernel, stride, dilation, lo, what):
    for o in range(out):
        if not any(0 <= o * stride - lo + r * dilation < size for r in range(kernel)):
            raise OpError(f"{what}: output position {o} reads only padding (size {size}, kernel {kernel}, "
                          f"stride {stride}, dilation {dilation}, leading pad {lo})")


# ---------------- numpy windows (the references of convolution and pooling) ----------------


def tap_windows(x, kernel, strides, dilations, out_hw):
    """For every kernel tap (r, s): the (N, C, OH, OW) view of x (already padded) that the tap reads."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    for r in range(kh):
        for s in range(kw):
            y0, x0 = r * dh, s * dw
            yield r, s, x[:, :, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw]


def pad_hw(x, pads, value=0.0):
    top, left, bottom, right = pads
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def pad_spatial(x, pads, value=0.0):
    """x (N, C, spatial...) padded by pads (the begins of the spatial axes, then their ends)."""
    k = x.ndim - 2
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (0, 0)) + tuple(zip(pads[:k], pads[k:])), constant_values=value)


def tap_windows_nd(x, kernel, strides, dilations, out):
    """For every kernel tap (a tuple, one index per spatial axis): the (N, C, *out) view of x (already padded)
    that the tap reads."""
    for taps in np.ndindex(*kernel):
        yield taps, x[(slice(None), slice(None)) + tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, s, o in zip(taps, dilations, strides, out))]
