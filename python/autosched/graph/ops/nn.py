"""Neural-network graph ops: conv2d, dense, matmul, softmax, layer_norm, batch_norm, group_norm (instance norm
is group_norm with a group per channel). Layout NCHW, weights OIHW; each OpDef below is everything about its
op. conv2d's layout converter (the layout pass's rewrite of it into conv2d_nchwc, depthwise_conv2d_nchwc or
conv2d_winograd_nchwc) is here too; the others run in NCHW."""
import numpy as np

from ... import ops
from ...core import te
from ...ops._utils import accumulation_dtype
from ...ops.quantized import pack_dot_conv_weight
from ...ops.winograd import winograd_weight
from ..errors import OpError
from ..opdef import OpDef
from .nchwc_arrays import block_depthwise_weight, block_vector, block_weight, merge_groups
from .common import (REQUIRED, anchor_dtype, broadcast_shapes, check_conv_channels, check_rank, fmt, int_attr, ints,
                     is_known, norm_axis, pad_hw, pads_attr, pair, positive_float, same_dim, same_dtypes, tap_windows,
                     window_out)

__all__ = ["DEFS"]

DEFS = []


def _bcast_index(shape, out_shape, index):
    """The index into dims `shape` (right-aligned to `out_shape`, size-1 dims broadcast) of output `index`."""
    offset = len(out_shape) - len(shape)
    return tuple(0 if shape[d] == 1 and out_shape[offset + d] != 1 else index[offset + d] for d in range(len(shape)))


# ---------------- conv2d: data NCHW, weight (O, C/groups, kh, kw), optional bias (O) ----------------


def _conv2d_infer(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    check_rank(data, 4, "data (NCHW)")
    check_rank(weight, 4, "weight (OIHW)")
    n, _, h, w = data
    o, _, kh, kw = weight
    check_conv_channels(data, weight, attrs["groups"], shapes[2] if len(shapes) == 3 else None)
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    top, left, bottom, right = attrs["pads"]
    oh = window_out(h, kh, sh, dh, top, bottom, False, "height")
    ow = window_out(w, kw, sw, dw, left, right, False, "width")
    return (n, o, oh, ow), same_dtypes(dtypes)


def _conv2d_reference(node, data, weight, bias=None):
    a = node.attrs
    groups = a["groups"]
    n, c = data.shape[:2]
    o, cg, kh, kw = weight.shape
    oh, ow = node.shape[2], node.shape[3]
    padded = pad_hw(data, a["pads"])
    out = np.zeros((n, groups, o // groups, oh, ow), data.dtype)
    w = weight.reshape(groups, o // groups, cg, kh, kw)
    for r, s, window in tap_windows(padded, (kh, kw), a["strides"], a["dilations"], (oh, ow)):
        win = window.reshape(n, groups, cg, oh, ow)
        if groups == 1:
            out[:, 0] += np.tensordot(w[0, :, :, r, s], win[:, 0], axes=([1], [1])).transpose(1, 0, 2, 3)
        elif cg == 1 and o == groups:  # depthwise
            out[:, :, 0] += win[:, :, 0] * w[None, :, 0, 0, r, s, None, None]
        else:
            out += np.einsum("ngchw,goc->ngohw", win, w[:, :, :, r, s])
    out = out.reshape(n, o, oh, ow)
    if bias is not None:
        out += bias.reshape(1, o, 1, 1)
    return out


def _conv2d_te(node, data, weight, bias=None):
    a = node.attrs
    groups = a["groups"]
    channels, out_channels = data.shape[1], weight.shape[0]
    name = node.name if bias is None else node.name + "_conv"
    out_dtype = anchor_dtype(data, bias)
    if groups > 1 and groups == channels == out_channels:  # weight (C, 1, kh, kw) is the depthwise kernel
        out = ops.depthwise_conv2d_nchw(data, weight, a["strides"], a["pads"], a["dilations"], out_dtype, name=name)
    else:
        out = ops.conv2d_nchw(data, weight, a["strides"], a["pads"], a["dilations"], groups, out_dtype, name=name)
    return out if bias is None else ops.bias_add(out, bias, axis=1, name=node.name, out_dtype=data.dtype)


def _conv2d_onnx(w, node):
    a = node.attrs
    kh, kw = w.graph.shape(node.inputs[1])[2:]
    return w.node("Conv", list(node.inputs), node.name, kernel_shape=[kh, kw], strides=list(a["strides"]),
                  pads=list(a["pads"]), dilations=list(a["dilations"]), group=a["groups"])


def _conv2d_torch(torch, node, x, w, b=None):
    a = node.attrs
    top, left, bottom, right = a["pads"]
    if (top, left) != (bottom, right):
        x = torch.nn.functional.pad(x, (left, right, top, bottom))
        padding = 0
    else:
        padding = (top, left)
    return torch.nn.functional.conv2d(x, w, b, stride=a["strides"], padding=padding, dilation=a["dilations"],
                                      groups=a["groups"])


# The layout pass merges adjacent groups of a grouped convolution whose groups are not whole blocks into
# groups that are, their weights block-diagonal, only while the merged convolution does at most this many times
# the multiply-adds of the grouped one: a grouped convolution in NCHW runs 3-10x slower than a blocked one of
# its channels, and its layout_transforms before and after cost besides.
MAX_GROUP_MERGE = 4


def blocked_groups(channels, out_channels, groups, block, out_block):
    """The groups a grouped convolution runs with in the blocked layout, input blocks of `block` channels and
    output blocks of `out_block`: the largest divisor g' of `groups` whose groups are whole blocks on both
    sides, if groups / g' <= MAX_GROUP_MERGE; None where there is none, or where the channels are not whole
    blocks (padded channels would fall inside a group)."""
    if channels % block or out_channels % out_block:
        return None
    for merge in range(1, min(groups, MAX_GROUP_MERGE) + 1):
        merged = groups // merge
        if groups % merge == 0 and (channels // merged) % block == 0 and (out_channels // merged) % out_block == 0:
            return merged
    return None


def _conv2d_to_blocked(rewriter, node):
    """conv2d's layout converter (graph/layout.py), for constant weights (and bias), rearranged once in numpy:
    groups = 1 becomes conv2d_nchwc, or conv2d_winograd_nchwc where the rewriter picks a Winograd tile; a
    depthwise one depthwise_conv2d_nchwc; any other grouped one a grouped conv2d_nchwc where each group's
    channels are whole blocks (x for C, y for O as for groups = 1), with adjacent groups merged where they are
    not (blocked_groups; the weight block-diagonal, so the result is exact). A grouped convolution whose
    channels are padded (C or O not a multiple of its block) or whose groups would need more merging than
    MAX_GROUP_MERGE stays NCHW."""
    g, a = rewriter.graph, node.attrs
    data, weight = node.inputs[0], node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) == 3 else None
    if weight not in g.constants or (bias is not None and bias not in g.constants):
        return False
    channels, out_channels, groups = g.shape(data)[1], g.shape(weight)[0], a["groups"]
    conv_attrs = {k: a[k] for k in ("strides", "pads", "dilations")}

    def blocked_bias(block, how):
        return rewriter.derived(bias, how, lambda arr: block_vector(arr, block))

    if 1 < groups == channels == out_channels and g.shape(weight)[1] == 1:
        x = rewriter.layout_for(channels)
        ins = [rewriter.get(data, x), rewriter.derived(weight, f"nchw{x.block}c",
                                                       lambda arr: block_depthwise_weight(arr, x.block))]
        if bias is not None:
            ins.append(blocked_bias(x.block, f"nchw{x.block}c"))
        rewriter.emit(node, "depthwise_conv2d_nchwc", ins, conv_attrs, x)
        return True
    x, y = rewriter.layout_for(channels), rewriter.layout_for(out_channels)
    tile = rewriter.winograd_tile(node, channels, out_channels) if groups == 1 else 0
    if tile:
        w = rewriter.derived(weight, f"winograd{tile}_{x.block}i{y.block}o",
                             lambda arr: winograd_weight(arr, tile, x.block, y.block))
        op, attrs = "conv2d_winograd_nchwc", dict(pads=a["pads"], tile=tile)
    elif groups == 1 and rewriter.bf16_dot and node.dtype == "bfloat16" and x.block % 2 == 0:
        w = rewriter.derived(weight, f"nchw{x.block}i{y.block}o_pairs",
                             lambda arr: pack_dot_conv_weight(arr, x.block, y.block, group=2))
        op, attrs = "conv2d_nchwc_bf16_dot", conv_attrs
    elif groups == 1:
        w = rewriter.derived(weight, f"nchw{x.block}i{y.block}o", lambda arr: block_weight(arr, x.block, y.block))
        op, attrs = "conv2d_nchwc", conv_attrs
    else:
        merged = blocked_groups(channels, out_channels, groups, x.block, y.block)
        if merged is None:
            return False
        w = rewriter.derived(weight, f"g{merged}_nchw{x.block}i{y.block}o",
                             lambda arr: block_weight(merge_groups(arr, groups, merged), x.block, y.block))
        op, attrs = "conv2d_nchwc", dict(conv_attrs, groups=merged)
    ins = [rewriter.get(data, x), w]
    if bias is not None:
        ins.append(blocked_bias(y.block, f"nchw{y.block}o"))
    rewriter.emit(node, op, ins, attrs, y)
    return True


DEFS.append(OpDef("conv2d", (2, 3), _conv2d_infer,
                  {"strides": ((1, 1), pair("strides")), "pads": ((0, 0, 0, 0), pads_attr),
                   "dilations": ((1, 1), pair("dilations")), "groups": (1, lambda v: ints([v], "groups", 1, 1)[0])},
                  fusion="anchor", layout=_conv2d_to_blocked, bias_input=2, reference=_conv2d_reference,
                  te=_conv2d_te, onnx=_conv2d_onnx,
                  torch=_conv2d_torch))

# ---------------- dense: data (..., K) @ weight (N, K).T + bias (N) ----------------


def _dense_infer(attrs, shapes, dtypes):
    data, weight = shapes[0], shapes[1]
    check_rank(data, 1, "data", at_least=True)
    check_rank(weight, 2, "weight (N, K)")
    if not same_dim(data[-1], weight[1]):
        raise OpError(f"data {fmt(data)} has {data[-1]} features, weight {fmt(weight)} expects {weight[1]}")
    if len(shapes) == 3:
        check_rank(shapes[2], 1, "bias")
        if not same_dim(shapes[2][0], weight[0]):
            raise OpError(f"bias {fmt(shapes[2])} does not match the {weight[0]} units of weight")
    return tuple(data[:-1]) + (weight[0],), same_dtypes(dtypes)


def _dense_reference(node, data, weight, bias=None):
    out = np.matmul(data, weight.T)
    return out + bias if bias is not None else out


def _dense_te(node, data, weight, bias=None):
    product_dtype = anchor_dtype(data, bias)
    name = node.name if bias is None else node.name + "_matmul"
    if data.ndim == 2:
        out = ops.dense(data, weight, out_dtype=product_dtype, name=name)
    else:
        k = data.shape[-1]

        def fcompute(*i):
            r = te.reduce_axis((0, k), name="k")
            return te.sum(te.cast(data[i[:-1] + (r,)], product_dtype) * te.cast(weight[i[-1], r], product_dtype),
                          axis=r)

        out = te.compute(tuple(node.shape), fcompute, name=name, tag="dense")
    if bias is None:
        return out
    if product_dtype == data.dtype:
        return ops.add(out, bias, name=node.name)
    return ops.bias_add(out, bias, axis=-1, name=node.name, out_dtype=data.dtype)


def _dense_onnx(w, node):
    """Gemm for 2-D data, else Transpose + MatMul (+ Add)."""
    ins, out = list(node.inputs), node.name
    if len(w.graph.shape(ins[0])) == 2:
        return w.node("Gemm", ins, out, transB=1)
    weight_t = w.node("Transpose", [ins[1]], w.fresh(out + "_weight_t"), perm=[1, 0])
    if len(ins) == 2:
        return w.node("MatMul", [ins[0], weight_t], out)
    product = w.node("MatMul", [ins[0], weight_t], w.fresh(out + "_matmul"))
    return w.node("Add", [product, ins[2]], out)


DEFS.append(OpDef("dense", (2, 3), _dense_infer, fusion="anchor", layout="nchw", bias_input=2,
                  reference=_dense_reference, te=_dense_te,
                  onnx=_dense_onnx, torch=lambda torch, node, x, w, b=None: torch.nn.functional.linear(x, w, b)))

# ---------------- matmul: numpy matmul (1-D operands, batch broadcasting) ----------------


def _matmul_infer(attrs, shapes, dtypes):
    a, b = shapes
    check_rank(a, 1, "a", at_least=True)
    check_rank(b, 1, "b", at_least=True)
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if not same_dim(a2[-1], b2[-2]):
        raise OpError(f"inner dimensions differ: a {fmt(a)} and b {fmt(b)}")
    batch = broadcast_shapes([a2[:-2], b2[:-2]]) if len(a2) > 2 or len(b2) > 2 else ()
    out = batch + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())
    return out, same_dtypes(dtypes)


def _matmul_te(node, a, b):
    if a.ndim == 2 and b.ndim == 2:
        return ops.matmul(a, b, name=node.name)
    if a.ndim == 3 and b.ndim == 3 and (a.shape[0] == b.shape[0] or 1 in (a.shape[0], b.shape[0])):
        return ops.batch_matmul(a, b, transpose_b=False, name=node.name)
    out_shape = tuple(node.shape)
    k = a.shape[-1]
    rows, cols = a.ndim > 1, b.ndim > 1
    batch_shape = out_shape[:len(out_shape) - rows - cols]

    def fcompute(*i):
        r = te.reduce_axis((0, k), name="k")
        batch = i[:len(batch_shape)]
        lhs = a[_bcast_index(a.shape[:-2], batch_shape, batch) + (i[len(batch)], r)] if rows else a[r]
        rhs = b[_bcast_index(b.shape[:-2], batch_shape, batch) + (r, i[-1])] if cols else b[r]
        return te.sum(lhs * rhs, axis=r)

    return te.compute(out_shape, fcompute, name=node.name, tag="batch_matmul")


DEFS.append(OpDef("matmul", 2, _matmul_infer, fusion="anchor", layout="nchw",
                  reference=lambda node, a, b: np.matmul(a, b),
                  te=_matmul_te, onnx="MatMul", torch=lambda torch, node, a, b: torch.matmul(a, b)))

# ---------------- softmax ----------------


def _softmax_infer(attrs, shapes, dtypes):
    check_rank(shapes[0], 1, "x", at_least=True)
    attrs["axis"] = norm_axis(attrs["axis"], len(shapes[0]))
    return tuple(shapes[0]), dtypes[0]


def _softmax_reference(node, x):
    axis = node.attrs["axis"]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


DEFS.append(OpDef("softmax", 1, _softmax_infer, {"axis": (-1, lambda v: int_attr(v, "axis"))}, float_only=True,
                  fusion="anchor", layout="nchw", reference=_softmax_reference,
                  te=lambda node, x: ops.softmax(x, node.attrs["axis"], name=node.name),
                  onnx=lambda w, node: w.node("Softmax", list(node.inputs), node.name, axis=node.attrs["axis"]),
                  torch=lambda torch, node, x: torch.softmax(x, node.attrs["axis"])))

# ---------------- layer_norm: normalises axes axis..last ----------------


def _layer_norm_infer(attrs, shapes, dtypes):
    x = shapes[0]
    check_rank(x, 1, "x", at_least=True)
    attrs["axis"] = axis = norm_axis(attrs["axis"], len(x))
    norm = tuple(x[axis:])
    for what, s in (("gamma", shapes[1]), ("beta", shapes[2])):
        if len(s) != len(norm) or not all(same_dim(a, b) for a, b in zip(s, norm)):
            raise OpError(f"{what} has shape {fmt(s)}, expected {fmt(norm)} (axes {axis}.. of x {fmt(x)})")
    return tuple(x), same_dtypes(dtypes)


def _layer_norm_reference(node, x, gamma, beta):
    axes = tuple(range(node.attrs["axis"], x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + x.dtype.type(node.attrs["epsilon"])) * gamma + beta


def _layer_norm_te(node, x, gamma, beta):
    axes = list(range(node.attrs["axis"], x.ndim))
    return ops.layer_norm(x, gamma, beta, axis=axes, epsilon=node.attrs["epsilon"], name=node.name)


def _layer_norm_onnx(w, node):
    return w.node("LayerNormalization", list(node.inputs), node.name, axis=node.attrs["axis"],
                  epsilon=node.attrs["epsilon"])


def _layer_norm_torch(torch, node, x, gamma, beta):
    return torch.nn.functional.layer_norm(x, x.shape[node.attrs["axis"]:], gamma, beta, node.attrs["epsilon"])


DEFS.append(OpDef("layer_norm", 3, _layer_norm_infer, {"axis": (-1, lambda v: int_attr(v, "axis")),
                                                       "epsilon": (1e-5, positive_float("epsilon"))},
                  float_only=True, fusion="anchor", layout="nchw", reference=_layer_norm_reference,
                  te=_layer_norm_te,
                  onnx=_layer_norm_onnx, torch=_layer_norm_torch))

# ---------------- batch_norm: inference, channel axis 1 ----------------


def _batch_norm_infer(attrs, shapes, dtypes):
    x = shapes[0]
    check_rank(x, 2, "x", at_least=True)
    for what, s in zip(("gamma", "beta", "mean", "var"), shapes[1:]):
        if len(s) != 1 or not same_dim(s[0], x[1]):
            raise OpError(f"{what} has shape {fmt(s)}, expected ({x[1]},) (the channels of x {fmt(x)})")
    return tuple(x), same_dtypes(dtypes)


def _batch_norm_reference(node, x, gamma, beta, mean, var):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma / np.sqrt(var + x.dtype.type(node.attrs["epsilon"]))
    return (x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)


def _batch_norm_te(node, x, gamma, beta, mean, var):
    acc = accumulation_dtype(x.dtype)  # 16-bit floats: the scale in float32, the result rounded once

    def wide(v):
        return te.cast(v, acc)

    eps = te.const(node.attrs["epsilon"], acc)
    scale = te.compute(gamma.shape, lambda c: wide(gamma[c]) * te.rsqrt(wide(var[c]) + eps),
                       name=node.name + "_scale", tag="elemwise")
    return te.compute(x.shape, lambda *i: te.cast((wide(x[i]) - wide(mean[i[1]])) * scale[i[1]] + wide(beta[i[1]]),
                                                  x.dtype),
                      name=node.name, tag="broadcast")


def _batch_norm_torch(torch, node, x, gamma, beta, mean, var):
    return torch.nn.functional.batch_norm(x, mean, var, gamma, beta, False, 0.0, node.attrs["epsilon"])


DEFS.append(OpDef("batch_norm", 5, _batch_norm_infer, {"epsilon": (1e-5, positive_float("epsilon"))},
                  float_only=True, fusion="injective", layout="nchw", reference=_batch_norm_reference,
                  te=_batch_norm_te,
                  onnx=lambda w, node: w.node("BatchNormalization", list(node.inputs), node.name,
                                              epsilon=node.attrs["epsilon"]),
                  torch=_batch_norm_torch))

# ---------------- group_norm: channels in num_groups groups, each normalised over its channels and space -------


def _group_norm_infer(attrs, shapes, dtypes):
    x = shapes[0]
    check_rank(x, 2, "x (N, C, ...)", at_least=True)
    groups = attrs["num_groups"]
    if is_known(x[1]) and x[1] % groups:
        raise OpError(f"num_groups={groups} does not divide the {x[1]} channels of x {fmt(x)}")
    for what, s in (("gamma", shapes[1]), ("beta", shapes[2])):
        if len(s) != 1 or not same_dim(s[0], x[1]):
            raise OpError(f"{what} has shape {fmt(s)}, expected ({x[1]},) (the channels of x {fmt(x)})")
    return tuple(x), same_dtypes(dtypes)


def _group_norm_reference(node, x, gamma, beta):
    n, c = x.shape[:2]
    grouped = x.reshape(n, node.attrs["num_groups"], -1)
    mean = grouped.mean(axis=2, keepdims=True)
    var = ((grouped - mean) ** 2).mean(axis=2, keepdims=True)
    normed = ((grouped - mean) / np.sqrt(var + x.dtype.type(node.attrs["epsilon"]))).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return normed * gamma.reshape(shape) + beta.reshape(shape)


def _group_norm_te(node, x, gamma, beta):
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    groups = node.attrs["num_groups"]
    per_group = c // groups
    count = per_group * int(np.prod(spatial, dtype=np.int64))

    def over_group(body):
        def fcompute(b, g):
            rc = te.reduce_axis((0, per_group), name="rc")
            rs = [te.reduce_axis((0, s), name=f"r{d}") for d, s in enumerate(spatial)]
            return te.sum(body((b, g * per_group + rc) + tuple(rs), b, g), axis=[rc] + rs)
        return fcompute

    inv_count = te.const(1.0 / count, x.dtype)
    total = te.compute((n, groups), over_group(lambda i, b, g: x[i]), name=node.name + "_sum", tag="comm_reduce")
    mean = te.compute((n, groups), lambda b, g: total[b, g] * inv_count, name=node.name + "_mean", tag="elemwise")

    def squared_dev(i, b, g):
        d = x[i] - mean[b, g]
        return d * d

    dev = te.compute((n, groups), over_group(squared_dev), name=node.name + "_var_sum", tag="comm_reduce")
    eps = te.const(node.attrs["epsilon"], x.dtype)
    inv_std = te.compute((n, groups), lambda b, g: te.rsqrt(dev[b, g] * inv_count + eps),
                         name=node.name + "_inv_std", tag="elemwise")

    def fcompute(b, ch, *sp):
        g = te.floordiv(ch, te.const(per_group, "int32"))
        return (x[(b, ch) + sp] - mean[b, g]) * inv_std[b, g] * gamma[ch] + beta[ch]

    return te.compute(x.shape, fcompute, name=node.name, tag="group_norm")


def _group_norm_onnx(w, node):
    """InstanceNormalization over (N, num_groups, -1), then the per-channel scale and shift (GroupNormalization
    arrives in opset 18, with a per-group scale until opset 21)."""
    x, gamma, beta = node.inputs
    out, dtype = node.name, node.dtype
    shape = w.graph.shape(x)
    groups = node.attrs["num_groups"]
    grouped = w.node("Reshape", [x, w.const(out + "_grouped", np.asarray([0, groups, -1], np.int64))],
                     w.fresh(out + "_grouped"))
    normed = w.node("InstanceNormalization", [grouped, w.const(out + "_ones", np.ones(groups, dtype)),
                                              w.const(out + "_zeros", np.zeros(groups, dtype))],
                    w.fresh(out + "_normed"), epsilon=node.attrs["epsilon"])
    back = w.node("Reshape", [normed, w.const(out + "_shape", np.asarray([0] + list(shape[1:]), np.int64))],
                  w.fresh(out + "_back"))
    per_channel = np.asarray([-1] + [1] * (len(shape) - 2), np.int64)
    g = w.node("Reshape", [gamma, w.const(out + "_cshape", per_channel)], w.fresh(out + "_gamma"))
    b = w.node("Reshape", [beta, w.const(out + "_cshape2", per_channel)], w.fresh(out + "_beta"))
    return w.node("Add", [w.node("Mul", [back, g], w.fresh(out + "_scaled")), b], out)


DEFS.append(OpDef("group_norm", 3, _group_norm_infer, {"num_groups": (REQUIRED, lambda v: ints([v], "num_groups",
                                                                                                1, 1)[0]),
                                                      "epsilon": (1e-5, positive_float("epsilon"))},
                  float_only=True, fusion="anchor", layout="nchw", reference=_group_norm_reference,
                  te=_group_norm_te, onnx=_group_norm_onnx,
                  torch=lambda torch, node, x, g, b: torch.nn.functional.group_norm(
                      x, node.attrs["num_groups"], g, b, node.attrs["epsilon"])))
