"""Winograd convolution F(m x m, 3 x 3) in the channel-blocked layout NCHW[x]c.

A 3x3 convolution of stride 1 computes each m x m tile of its output from an (m + 2) x (m + 2) tile of its
input. Winograd's minimal filtering algorithm (Lavin and Gray, 2015) writes that as

    Y = A^T [ (G g G^T) * (B^T d B) ] A        (* element-wise, summed over input channels)

so with the weights transformed once (U = G g G^T, at build time: winograd_weight), the multiply-adds over
channels become one batched matrix product per position (eps, nu) of the alpha x alpha transformed tile:
(m + 2)^2 products per m^2 outputs instead of 9 m^2 (2.25x fewer for m = 2, 4x fewer for m = 4). The
transforms B^T d B and A^T M A sum only the nonzero terms of their matrices: output row i of a transform reads
term t of that row (its column and coefficient are constants written as expressions of (t, i)), so that the
search unrolls them (sketch rule simplify-compute-with-const-tensor) into constant loads and adds, subtracts
or multiply-adds by the small coefficients, with no multiply by a zero.

Stages: data_pack (alpha, alpha, P, C/x, x) = B^T d B per tile p of the padded input; bgemm (alpha, alpha, P,
O/y, y) = sum over input channels of data_pack * U; inverse (m, m, P, O/y, y) = A^T bgemm A; the output
(N, O/y, OH, OW, y) reads its tile's element of inverse. P = N * ceil(OH / m) * ceil(OW / m); tiles that run
past the output read zero padding and their extra outputs are dropped.

    u = winograd_weight(w, 2, 16, 16)                 # w: (O, C, 3, 3) numpy -> (4, 4, O/16, C/16, 16, 16)
    y5 = conv2d_winograd_nchwc(x5, u, tile=2, padding=1)
"""
import numpy as np

from ..core import te
from ._utils import const
from .nn import _ConvGeometry, _as_out, _check_rank, _check_same_dtype
from .nchwc import _conv_attrs, _padded

__all__ = ["WINOGRAD_TILES", "winograd_matrices", "winograd_weight", "conv2d_winograd_nchwc"]

WINOGRAD_TILES = (2, 4)

# A^T (m x alpha), B^T (alpha x alpha), G (alpha x 3) of F(m, 3), from the interpolation points 0, +-1 (m = 2)
# and 0, +-1, +-2 (m = 4), the last row the point at infinity.
_MATRICES = {
    2: ([[1, 1, 1, 0],
         [0, 1, -1, -1]],
        [[1, 0, -1, 0],
         [0, 1, 1, 0],
         [0, -1, 1, 0],
         [0, 1, 0, -1]],
        [[1, 0, 0],
         [1 / 2, 1 / 2, 1 / 2],
         [1 / 2, -1 / 2, 1 / 2],
         [0, 0, 1]]),
    4: ([[1, 1, 1, 1, 1, 0],
         [0, 1, -1, 2, -2, 0],
         [0, 1, 1, 4, 4, 0],
         [0, 1, -1, 8, -8, 1]],
        [[4, 0, -5, 0, 1, 0],
         [0, -4, -4, 1, 1, 0],
         [0, 4, -4, -1, 1, 0],
         [0, -2, -1, 2, 1, 0],
         [0, 2, -1, -2, 1, 0],
         [0, 4, 0, -5, 0, 1]],
        [[1 / 4, 0, 0],
         [-1 / 6, -1 / 6, -1 / 6],
         [-1 / 6, 1 / 6, -1 / 6],
         [1 / 24, 1 / 12, 1 / 6],
         [1 / 24, -1 / 12, 1 / 6],
         [0, 0, 1]]),
}


def _check_tile(tile, op):
    if isinstance(tile, bool) or tile not in WINOGRAD_TILES:
        raise ValueError(f"{op}: tile must be one of {WINOGRAD_TILES} (the output tile m of F(m x m, 3 x 3)), "
                         f"got {tile!r}")
    return tile


def winograd_matrices(tile):
    """(A^T, B^T, G) of F(tile x tile, 3 x 3) as float64 arrays: m x alpha, alpha x alpha, alpha x 3."""
    a_t, b_t, g = _MATRICES[_check_tile(tile, "winograd_matrices")]
    return np.array(a_t, np.float64), np.array(b_t, np.float64), np.array(g, np.float64)


def winograd_weight(weight, tile, in_block, out_block):
    """The transformed weights U = G g G^T of a (O, C, 3, 3) numpy weight, blocked for conv2d_winograd_nchwc:
    (alpha, alpha, O/y, C/x, x, y), channels padded with zeros to whole blocks. Computed in float64."""
    weight = np.asarray(weight)
    if weight.ndim != 4 or weight.shape[2:] != (3, 3):
        raise ValueError(f"winograd_weight: needs a (O, C, 3, 3) weight, got shape {weight.shape}")
    for what, block in (("in_block", in_block), ("out_block", out_block)):
        if isinstance(block, bool) or not isinstance(block, int) or block < 1:
            raise ValueError(f"winograd_weight: {what} must be a positive int, got {block!r}")
    _, _, g = winograd_matrices(tile)
    o, c = weight.shape[:2]
    ob, cb = -(-o // out_block), -(-c // in_block)
    padded = np.zeros((ob * out_block, cb * in_block, 3, 3), np.float64)
    padded[:o, :c] = weight
    u = np.einsum("ai,ocij,bj->aboc", g, padded, g)  # (alpha, alpha, O, C)
    alpha = u.shape[0]
    u = u.reshape(alpha, alpha, ob, out_block, cb, in_block).transpose(0, 1, 2, 4, 5, 3)
    return np.ascontiguousarray(u.astype(weight.dtype))


def _const_matrix(values, name, dtype):
    """A compute tensor reading no tensor whose element (i, j) is values[i][j]: a chain of selects that folds
    to a constant once i and j are (unrolled) constants."""
    rows, cols = len(values), len(values[0])

    def fcompute(i, j):
        result = const(0, dtype)
        for r in range(rows):
            for c in range(cols):
                if values[r][c] != 0:
                    result = te.select(te.all(i == r, j == c), const(values[r][c], dtype), result)
        return result

    return te.compute((rows, cols), fcompute, name=name, tag="const_matrix")


class _SparseRows:
    """The nonzero entries of a transform matrix M, row by row: row i sums M[i][col(t, i)] * x[col(t, i)] over
    its terms t < terms (rows with fewer nonzeros are padded with coefficient 0). The coefficients are a
    constant tensor (terms, rows), read as (reduce, spatial) so the search unrolls both; the columns are an
    index expression of (t, i) that folds to a constant once they are unrolled."""

    def __init__(self, matrix, name, dtype):
        self.entries = [[(col, value) for col, value in enumerate(row) if value != 0] for row in matrix]
        self.terms = max(len(row) for row in self.entries)
        self.padded = any(len(row) < self.terms for row in self.entries)
        coefs = [[row[t][1] if t < len(row) else 0 for row in self.entries] for t in range(self.terms)]
        self.coef = _const_matrix(coefs, name, dtype)

    def column(self, t, i):
        result = const(0, "int32")
        for r, row in enumerate(self.entries):
            for term, (col, _) in enumerate(row):
                if col != 0:
                    result = te.select(te.all(t == term, i == r), const(col, "int32"), result)
        return result


def _sparse_term(value, rows_a, ta, i, rows_b, tb, j, dtype):
    """value * M_a[i][col] * M_b[j][col'] for term (ta, tb): the two constants multiplied first, so that they
    fold into one. A padding term (coefficient 0) is -0.0, which an add folds away exactly."""
    coef = rows_a.coef[ta, i] * rows_b.coef[tb, j]
    term = value * coef
    if rows_a.padded or rows_b.padded:
        term = te.select(coef == const(0, dtype), const(-0.0, dtype), term)
    return term


def conv2d_winograd_nchwc(data, kernel_pack, tile, padding, out_dtype=None, name="conv2d_winograd_NCHWc"):
    """data (N, C/x, H, W, x), kernel_pack (alpha, alpha, O/y, C/x, x, y) from winograd_weight ->
    (N, O/y, OH, OW, y): a 3x3 convolution of stride 1 and dilation 1 by F(tile x tile, 3 x 3)."""
    op = "conv2d_winograd_nchwc"
    tile = _check_tile(tile, op)
    _check_rank(data, 5, op, "data")
    _check_rank(kernel_pack, 6, op, "kernel_pack")
    _check_same_dtype(data, kernel_pack, op)
    alpha = tile + 2
    n, in_cb, in_h, in_w, in_x = data.shape
    k_a, k_b, out_cb, k_cb, k_x, out_y = kernel_pack.shape
    if (k_a, k_b) != (alpha, alpha):
        raise ValueError(f"{op}: kernel_pack '{kernel_pack.name}' {kernel_pack.shape} is not transformed for "
                         f"tile {tile} (its first two axes must be {alpha}, {alpha})")
    if (k_cb, k_x) != (in_cb, in_x):
        raise ValueError(f"{op}: channel mismatch: data '{data.name}' {data.shape} has {in_cb} blocks of {in_x} "
                         f"channels, kernel_pack '{kernel_pack.name}' {kernel_pack.shape} expects {k_cb} blocks "
                         f"of {k_x}")
    out_dtype = out_dtype or data.dtype
    geo = _ConvGeometry(op, (in_h, in_w), (3, 3), 1, padding, 1)
    tiles_h, tiles_w = -(-geo.out_h // tile), -(-geo.out_w // tile)
    tiles = n * tiles_h * tiles_w
    padded = _padded(data, geo, extra_bottom=tiles_h * tile - geo.out_h, extra_right=tiles_w * tile - geo.out_w)
    a_t, b_t, _ = _MATRICES[tile]
    b_rows = _SparseRows(b_t, "B", out_dtype)
    a_rows = _SparseRows(a_t, "A", out_dtype)

    def fpack(eps, nu, p, cb, ci):
        ta = te.reduce_axis((0, b_rows.terms), name="t_a")
        tb = te.reduce_axis((0, b_rows.terms), name="t_b")
        nn, rest = p // (tiles_h * tiles_w), p % (tiles_h * tiles_w)
        y = rest // tiles_w * tile + b_rows.column(ta, eps)
        x = rest % tiles_w * tile + b_rows.column(tb, nu)
        pixel = _as_out(padded[nn, cb, y, x, ci], data.dtype, out_dtype)
        return te.sum(_sparse_term(pixel, b_rows, ta, eps, b_rows, tb, nu, out_dtype), axis=[ta, tb])

    data_pack = te.compute((alpha, alpha, tiles, in_cb, in_x), fpack, name="data_pack", tag="winograd_data_pack")

    def fgemm(eps, nu, p, ob, oy):
        rc = te.reduce_axis((0, in_cb), name="rc")
        ri = te.reduce_axis((0, in_x), name="ri")
        weight = _as_out(kernel_pack[eps, nu, ob, rc, ri, oy], kernel_pack.dtype, out_dtype)
        return te.sum(data_pack[eps, nu, p, rc, ri] * weight, axis=[rc, ri])

    bgemm = te.compute((alpha, alpha, tiles, out_cb, out_y), fgemm, name="bgemm", tag="winograd_bgemm")

    def finverse(vh, vw, p, ob, oy):
        ta = te.reduce_axis((0, a_rows.terms), name="t_a")
        tb = te.reduce_axis((0, a_rows.terms), name="t_b")
        value = bgemm[a_rows.column(ta, vh), a_rows.column(tb, vw), p, ob, oy]
        return te.sum(_sparse_term(value, a_rows, ta, vh, a_rows, tb, vw, out_dtype), axis=[ta, tb])

    inverse = te.compute((tile, tile, tiles, out_cb, out_y), finverse, name="inverse", tag="winograd_inverse")

    def foutput(nn, ob, yy, xx, oy):
        p = nn * (tiles_h * tiles_w) + yy // tile * tiles_w + xx // tile
        return inverse[yy % tile, xx % tile, p, ob, oy]

    attrs = _conv_attrs(geo, 1)
    attrs["winograd_tile"] = str(tile)
    return te.compute((n, out_cb, geo.out_h, geo.out_w, out_y), foutput, name=name, tag="conv2d_winograd_nchwc",
                      attrs=attrs)
