"""numpy: arrays between NCHW and the channel-blocked layout NCHW[x]c, (N, C/x, H, W, x) with the channels
padded with zeros up to a whole block: values, convolution weights and bias vectors. The references of the
blocked ops (ops/layout.py) and the layout converters of the ops (conv2d's in ops/nn.py) use them."""
import numpy as np

__all__ = ["to_blocked", "to_nchw", "block_weight", "block_depthwise_weight", "block_vector", "merge_groups"]


def _blocks(channels, block):
    return -(-channels // block)


def to_blocked(a, block):
    """(N, C, H, W) -> (N, ceil(C/x), H, W, x), the padded channels zero."""
    n, c, h, w = a.shape
    cb = _blocks(c, block)
    if cb * block != c:
        a = np.concatenate([a, np.zeros((n, cb * block - c, h, w), a.dtype)], axis=1)
    return np.ascontiguousarray(a.reshape(n, cb, block, h, w).transpose(0, 1, 3, 4, 2))


def to_nchw(a, channels=None):
    """(N, C/x, H, W, x) -> (N, channels, H, W) (all lanes by default)."""
    n, cb, h, w, x = a.shape
    out = a.transpose(0, 1, 4, 2, 3).reshape(n, cb * x, h, w)
    return np.ascontiguousarray(out if channels is None else out[:, :channels])


def _pad_axis(a, axis, size):
    if a.shape[axis] == size:
        return a
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, size - a.shape[axis])
    return np.pad(a, widths)


def block_weight(w, x, y):
    """OIHW (O, C, KH, KW) -> (O/y, C/x, KH, KW, x, y), padded with zeros."""
    o, c, kh, kw = w.shape
    ob, cb = _blocks(o, y), _blocks(c, x)
    w = _pad_axis(_pad_axis(w, 0, ob * y), 1, cb * x)
    return np.ascontiguousarray(w.reshape(ob, y, cb, x, kh, kw).transpose(0, 2, 4, 5, 3, 1))


def merge_groups(w, groups, merged_groups):
    """The OIHW weight (O, C/groups, KH, KW) of a grouped convolution as one of `merged_groups` groups,
    (O, C/merged_groups, KH, KW): each merged group is groups/merged_groups adjacent groups, its weight
    block-diagonal (an output channel's weights over the other groups' input channels are zero), so the
    convolution computes exactly what it did."""
    o, per_group, kh, kw = w.shape
    merge, group_out = groups // merged_groups, o // groups
    out = np.zeros((o, per_group * merge, kh, kw), w.dtype)
    for g in range(groups):
        lane = (g % merge) * per_group  # the group's input channels inside its merged group
        out[g * group_out:(g + 1) * group_out, lane:lane + per_group] = w[g * group_out:(g + 1) * group_out]
    return out


def _unblock_weight(w):
    ob, cb, kh, kw, x, y = w.shape
    return w.transpose(0, 5, 1, 4, 2, 3).reshape(ob * y, cb * x, kh, kw)


def block_depthwise_weight(w, x):
    """(C, 1, KH, KW) -> (C/x, KH, KW, x), padded with zeros."""
    c, _, kh, kw = w.shape
    cb = _blocks(c, x)
    w = _pad_axis(w[:, 0], 0, cb * x)
    return np.ascontiguousarray(w.reshape(cb, x, kh, kw).transpose(0, 2, 3, 1))


def block_vector(b, y):
    """(C,) -> (C/y, y), padded with zeros."""
    cb = _blocks(b.shape[0], y)
    return np.ascontiguousarray(_pad_axis(b, 0, cb * y).reshape(cb, y))
