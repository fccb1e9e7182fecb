"""Shared helpers of the schedule tests: random inputs, the check of a built state against the reference
evaluator, and a rule-based generator of hand-style schedules for any DAG.

    check(dag, state)                     # build, run on random inputs, compare with ans.evaluate
    tile_matmul(s, C); cache_write_matmul(s, C)   # the hand-written matmul schedules
    for name, schedule in generated_schedules(dag):
        s = dag.get_init_state(); schedule(s); check(dag, s)

The generator's rules only make steps that are valid for every DAG (it looks at the stages: reductions,
consumers, outputs), so a ValueError from one of them is a bug of the schedule language, not of the test.
"""
import numpy as np

import autosched as ans
from autosched import te

# Relative and absolute tolerance per dtype, scaled by the magnitude of the expected output (float16 sums
# are rounded at every stored partial result, so their error grows with the values).
TOL = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 2e-2, "int32": 0}

SPLIT_FACTORS = (3, 2, 5, 4, 7)


# ---- inputs and the check ----

def matmul_tensors(n, m, k, dtype="float32", name="C"):
    """[A, B, C] with C = A @ B, A (n, k), B (k, m) and the reduce axis "k": the matmul the tests share (its
    workload key is what the stored logs of the tests hold)."""
    a = te.placeholder((n, k), name="A", dtype=dtype)
    b = te.placeholder((k, m), name="B", dtype=dtype)
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name=name)
    return [a, b, c]


def vector_double(n=16):
    """B = A * 2 over n elements. Returns (dag, B)."""
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * 2, name="B")
    return ans.ComputeDAG([a, b]), b


def unary_module(fn, n, dtype, lanes, target="llvm"):
    """A built CPU kernel y[i] = fn(x[i]) over n elements, its loop split by `lanes` and vectorized when lanes > 1
    (a non-dividing lane count leaves a guarded tail), for `target` (default the host CPU)."""
    x = te.placeholder((n,), dtype, name="x")
    y = te.compute((n,), lambda i: fn(x[i]), name="y")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([x, y]), target=target)
    state = task.compute_dag.get_init_state()
    if lanes > 1:
        state.split("y", 0, [lanes])
        state.vectorize("y", 1)
    return ans.build(task, state)


def matmul(n, m, k, dtype="float32", name="C"):
    """C = A @ B with A (n, k) and B (k, m). Returns (dag, C)."""
    tensors = matmul_tensors(n, m, k, dtype, name)
    return ans.ComputeDAG(tensors), tensors[2]


def gpu_matmul_state(dag, tile=8, shared=False):
    """A GPU schedule of matmul's C: blocks of tile x tile work items, one C element each. With shared, the A
    and B tiles are fetched cooperatively into __local memory (their copy loops bound to the same threads) at
    every step of 4 along the reduction."""
    s = dag.get_init_state()
    caches = [s.cache_read("A", "shared", ["C"]), s.cache_read("B", "shared", ["C"])] if shared else []
    i, j, k = s["C"].iters
    bi, ti = s.split("C", i, [tile])
    bj, tj = s.split("C", j, [tile])
    if shared:
        ko, ki = s.split("C", k, [4])
        s.reorder("C", [bi, bj, ko, ti, tj, ki])
    else:
        s.reorder("C", [bi, bj, ti, tj, k])
    for it, binding in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"), (tj, "threadIdx.x")):
        s.bind("C", it, binding)
    for cache in caches:
        s.compute_at(cache, "C", ko)
        fused = s.fuse(cache, s[cache].iters)
        _, inner = s.split(cache, fused, [tile])
        s.bind(cache, inner, "threadIdx.x")
    return s


def matmul_bias_relu(n, m, k, dtype="float32"):
    """C = A @ B, E = C + 1, D = max(E, 0): a reduction with two element-wise consumers.
    Returns (dag, C, E, D)."""
    a = te.placeholder((n, k), name="A", dtype=dtype)
    b = te.placeholder((k, m), name="B", dtype=dtype)
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    e = te.compute((n, m), lambda i, j: c[i, j] + te.const(1, dtype), name="E")
    d = te.compute((n, m), lambda i, j: te.max(e[i, j], te.const(0, dtype)), name="D")
    return ans.ComputeDAG([a, b, d]), c, e, d


def random_inputs(dag, rng, positive=False):
    """One array per tensor of the DAG: random placeholders, zeroed outputs. Integer placeholders hold
    small values (so products and sums do not overflow); `positive` keeps float inputs in [0.5, 1.5)."""
    arrays = []
    for t in dag.tensors:
        if t.op_kind != "placeholder":
            arrays.append(np.zeros(t.shape, dtype=t.dtype))
        elif t.dtype.startswith("int"):
            low = 1 if positive else -3
            arrays.append(rng.integers(low, 4, size=t.shape).astype(t.dtype))
        elif positive:
            arrays.append((rng.random(t.shape) + 0.5).astype(t.dtype))
        else:
            arrays.append((rng.random(t.shape) - 0.5).astype(t.dtype))
    return arrays


def assert_close(got, want, dtype, message=""):
    tol = TOL[str(dtype)]
    want = np.asarray(want, dtype="float64")
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got.astype("float64"), want, rtol=tol, atol=tol * scale, err_msg=message)


def check(dag, state, seed=0, positive=False, target=None):
    """Builds `state` (for `target`, default the host CPU), runs it on random inputs and compares every
    output with ans.evaluate. Returns the module."""
    rng = np.random.default_rng(seed)
    arrays = random_inputs(dag, rng, positive)
    is_input = [t.op_kind == "placeholder" for t in dag.tensors]
    expected = ans.evaluate(dag, [x for x, inp in zip(arrays, is_input) if inp])
    mod = ans.build(dag, state) if target is None else ans.build(dag, state, target)
    mod(*arrays)
    outputs = [x for x, inp in zip(arrays, is_input) if not inp]
    for got, want in zip(outputs, expected):
        assert_close(got, want, got.dtype, message=str(state))
    return mod


def cooperative_fetch(s, cache, consumer, at, threads, lanes, pad_axis=None, pad=0, double_buffer=False):
    """Computes shared stage `cache` at loop `at` of `consumer` and splits its copy among `threads` work items
    (bound to threadIdx.x), each copying vectors of `lanes`; with `pad`, the stride of dimension `pad_axis` is
    made `pad` modulo 32 banks; with `double_buffer`, the stage is double-buffered."""
    s.compute_at(cache, consumer, at)
    if pad:
        s.storage_align(cache, s[cache].iters[pad_axis], 32, pad)
    fused = s.fuse(cache, s[cache].iters)
    rest, vector = s.split(cache, fused, [lanes])
    _, inner = s.split(cache, rest, [threads])
    s.bind(cache, inner, "threadIdx.x")
    s.vectorize(cache, vector)
    if double_buffer:
        s.pragma(cache, s[cache].iters[0], "double_buffer")


# ---- the hand-written matmul schedules of the build tests ----

def tile_matmul(s, C):
    """Tiles matmul stage C (axes i, j, k): i by 8, j by 16, k by 4, ordered io jo ko ii ki ji; io in
    parallel, ki unrolled, ji vectorized. Returns (io, ji)."""
    i, j, k = s[C].iters
    io, ii = s.split(C, i, [8])
    jo, ji = s.split(C, j, [16])
    ko, ki = s.split(C, k, [4])
    s.reorder(C, [io, jo, ko, ii, ki, ji])
    s.parallel(C, io)
    s.unroll(C, ki)
    s.vectorize(C, ji)
    return io, ji


def cache_write_matmul(s, C, i_factor=4, j_factor=16):
    """Computes matmul stage C through a local cache: C (now the copy out) is split i by i_factor and j by
    j_factor, ordered io jo ii ji; the cache is computed at jo with its reduction outermost and its j
    vectorized. Returns (the cache's tensor, io, ji)."""
    local = s.cache_write(C, "local")
    i, j = s[C].iters
    io, ii = s.split(C, i, [i_factor])
    jo, ji = s.split(C, j, [j_factor])
    s.reorder(C, [io, jo, ii, ji])
    s.compute_at(local, C, jo)
    li, lj, lk = s[local].iters
    s.reorder(local, [lk, li, lj])
    s.vectorize(local, lj)
    return local, io, ji


def compute_at_inline(s, C, E, D):
    """Schedules matmul_bias_relu: E inlined, D tiled 4 x 8 (rows in parallel, columns vectorized, an
    auto-unroll pragma) and C computed at D's column tile."""
    s.compute_inline(E)
    i, j = s[D].iters
    io, ii = s.split(D, i, [4])
    jo, ji = s.split(D, j, [8])
    s.reorder(D, [io, jo, ii, ji])
    s.compute_at(C, D, jo)
    s.parallel(D, io)
    s.vectorize(D, ji)
    s.pragma(D, io, "auto_unroll_max_step$16")


# ---- looking at a state ----

def compute_stages(s):
    """Names of the compute stages of a state, producers first."""
    return [st.name for st in s.stages if st.op.op_kind == "compute"]


def access(s, name):
    """Access analysis of stage `name` in the state's current DAG (consumers / producers as names)."""
    dag = s.dag
    info = dict(dag.access_info(name))
    ops = dag.ops
    info["consumers"] = [ops[i].name for i in info["consumers"]]
    info["producers"] = [ops[i].name for i in info["producers"]]
    return info


def loop_iterations(s):
    """Iterations of the innermost statements of a state's loop nest, with bound-inferred extents (a
    stage attached by compute_at runs once per iteration of the loops around its attach point)."""
    bounded = s.dag.infer_bound(s)

    def enclosing(name):
        stage = bounded[name]
        if stage.compute_at != "at":
            return 1
        target, iter_name = stage.attach_point
        count = enclosing(target)
        for it in bounded[target].iters:
            count *= max(it.extent, 1)
            if it.name == iter_name:
                break
        return count

    total = 0
    for stage in bounded.stages:
        if stage.op.op_kind != "compute" or stage.compute_at == "inlined":
            continue
        own = 1
        for it in stage.iters:
            own *= max(it.extent, 1)
        total += own * enclosing(stage.name)
    return total


def has_reduction(s, name):
    return any(it.kind == "reduce" for it in s[name].iters)


def is_root(s, name):
    return s[name].compute_at == "root"


def awkward_factor(extent, skip=0):
    """A split factor that does not divide `extent` (a factor larger than the extent when none does)."""
    candidates = [f for f in SPLIT_FACTORS if f < extent and extent % f]
    if not candidates:
        return extent + 1
    return candidates[skip % len(candidates)]


# ---- building blocks of schedules ----

def inline_elementwise(s, keep=()):
    """Inlines every non-output stage without a reduction (element-wise, injective, padding) but those
    named in `keep`."""
    for name in compute_stages(s):
        if name in keep:
            continue
        if not has_reduction(s, name) and not access(s, name)["is_output"] and is_root(s, name):
            s.compute_inline(name)


def tile(s, name, skip=0, reduce_split=False, parallel=True, vectorize=True, unroll=True):
    """Splits every spatial iterator of stage `name` by an awkward factor and orders the loops
    outer spatial tiles, reductions, inner spatial tiles; the fused outer tiles run in parallel, the
    innermost spatial loop is vectorized (no reduction is inside it) and the one above it unrolled.
    Returns (outer iterator names, inner iterator names)."""
    iters = s[name].iters
    outers, inners, reduce_outer, reduce_inner = [], [], [], []
    for it in iters:
        if it.kind == "reduce" and not reduce_split:
            reduce_outer.append(it.name)
            continue
        outer, inner = s.split(name, it.name, [awkward_factor(it.extent, skip)])
        if it.kind == "reduce":
            reduce_outer.append(outer.name)
            reduce_inner.append(inner.name)
        else:
            outers.append(outer.name)
            inners.append(inner.name)
    s.reorder(name, outers + reduce_outer + reduce_inner + inners)
    if outers:
        if len(outers) > 1:
            outers = [s.fuse(name, outers).name]
        if parallel:
            s.parallel(name, outers[0])
    if inners and vectorize:
        s.vectorize(name, inners[-1])
    if unroll:
        if len(inners) > 1:
            s.unroll(name, inners[-2])
        elif reduce_inner:
            s.unroll(name, reduce_inner[-1])
    return outers, inners


def single_root_consumer(s, name):
    """The one consumer of stage `name` when it has exactly one and that one has loops; else None."""
    consumers = access(s, name)["consumers"]
    if len(consumers) != 1 or s[consumers[0]].compute_at == "inlined":
        return None
    return consumers[0]


def multi_level_tile(s, name, spatial_lengths=(3, 1, 2), reduce_lengths=(2,)):
    """The "SSRSRS" tiling of a search sketch: every spatial iterator split in four parts and every
    reduction in two, ordered S0 S1 R0 S2 R1 S3; S0 is fused, S3's last loop vectorized and R1's last
    unrolled. Returns the names of the loops per spatial level (S0 fused)."""
    spatial = [[] for _ in range(len(spatial_lengths) + 1)]
    reduce = [[] for _ in range(len(reduce_lengths) + 1)]
    for it in s[name].iters:
        levels, lengths = (reduce, reduce_lengths) if it.kind == "reduce" else (spatial, spatial_lengths)
        for level, part in zip(levels, s.split(name, it.name, list(lengths))):
            level.append(part.name)
    s.reorder(name, spatial[0] + spatial[1] + reduce[0] + spatial[2] + reduce[1] + spatial[3])
    if len(spatial[0]) > 1:
        spatial[0] = [s.fuse(name, spatial[0]).name]
    if spatial[3]:
        s.vectorize(name, spatial[3][-1])
    if reduce[1]:
        s.unroll(name, reduce[1][-1])
    return spatial


def _ssrsrs(s, cache_write=False):
    """Multi-level tiling of the stages the access analysis marks for it (convolutions, matmuls),
    optionally through a local cache; element-wise producers (padding) inlined, and a single
    element-wise consumer (bias, relu) fused: the tiled stage is computed at the consumer's outer tile."""
    targets = [n for n in compute_stages(s) if access(s, n)["needs_multi_level_tiling"]]
    if cache_write:
        for name in targets:
            s.cache_write(name, "local")
    inline_elementwise(s, keep=targets)
    for name in targets:
        if cache_write:
            levels = multi_level_tile(s, name + ".local")
            outers, _ = tile(s, name, parallel=False, vectorize=False, unroll=False)
            if outers:
                s.compute_at(name + ".local", name, outers[0])
        else:
            levels = multi_level_tile(s, name)
            outers = levels[0]
        consumer = None if access(s, name)["is_output"] else single_root_consumer(s, name)
        if consumer is not None and is_root(s, consumer) and not has_reduction(s, consumer):
            consumer_outers, _ = tile(s, consumer, skip=1)
            if consumer_outers:
                s.compute_at(name, consumer, consumer_outers[0])
                continue
        if outers:
            s.parallel(name, outers[0])


def _attach_all_at_output(s):
    """Every other compute stage computed inside the outer tile of the last output (consumers first, so
    each producer's readers already run inside that loop); a pipeline per tile of rows."""
    stages = compute_stages(s)
    output = stages[-1]
    outers, _ = tile(s, output, skip=2)
    if not outers:
        return
    for name in reversed(stages[:-1]):
        if not access(s, name)["is_output"]:
            s.compute_at(name, output, outers[0])


def _fuse_flat(s):
    """Producers inlined; each output's loops fused into one, split by 7, outer parallel, inner
    vectorized (for stages without a reduction)."""
    inline_elementwise(s)
    for name in compute_stages(s):
        if not is_root(s, name) or has_reduction(s, name) or not s[name].iters:
            continue
        fused = s.fuse(name, [it.name for it in s[name].iters])
        outer, inner = s.split(name, fused.name, [7])
        s.parallel(name, outer.name)
        s.vectorize(name, inner.name)


TARGETED = {
    "ssrsrs": _ssrsrs,
    "ssrsrs_cache_write": lambda s: _ssrsrs(s, cache_write=True),
    "attach_all": _attach_all_at_output,
    "fuse_flat": _fuse_flat,
}


# ---- the generator ----

def _inline_and_tile(s):
    inline_elementwise(s)
    for k, name in enumerate(compute_stages(s)):
        if is_root(s, name):
            tile(s, name, skip=k, reduce_split=k % 2 == 0)


def _deep_tiles(s):
    """Three-level splits with factors larger than or not dividing the extents, reductions split too;
    no annotations but an auto-unroll pragma."""
    for name in compute_stages(s):
        iters = s[name].iters
        spatial, reduce_parts, inner = [], [], []
        for it in iters:
            parts = [p.name for p in s.split(name, it.name, [2, 3])]
            if it.kind == "reduce":
                reduce_parts += parts
            else:
                spatial.append(parts[0])
                inner += parts[1:]
        s.reorder(name, spatial + reduce_parts + inner)
        s.pragma(name, s[name].iters[0].name, "auto_unroll_max_step$8")


def _compute_at_consumers(s):
    """Tiles every stage, then attaches each single-consumer producer at its consumer's outer tile."""
    tiles = {}
    for k, name in enumerate(compute_stages(s)):
        tiles[name] = tile(s, name, skip=k, parallel=False, unroll=False)
    attached = set()
    for name in reversed(compute_stages(s)):
        consumer = single_root_consumer(s, name)
        if consumer is None or access(s, name)["is_output"] or not tiles[consumer][0]:
            continue
        s.compute_at(name, consumer, tiles[consumer][0][0])
        attached.add(name)
    for name in compute_stages(s):
        outer = tiles[name][0]
        if name not in attached and outer:
            s.parallel(name, outer[0])


def _cache_write_tiles(s):
    """cache_write of every stage with a reduction; the copy is tiled and the local stage computed at
    its outer tile with the reduction outside the vectorized spatial loop."""
    cached = [name for name in compute_stages(s) if has_reduction(s, name)]
    for name in cached:
        s.cache_write(name, "local")
    inline_elementwise(s, keep=cached)
    for name in compute_stages(s):
        if not name.endswith(".local") or not is_root(s, name):
            continue
        original = name[:-len(".local")]
        outers, _ = tile(s, original, parallel=False, vectorize=False, unroll=False)
        iters = s[name].iters
        spatial = [it.name for it in iters if it.kind == "spatial"]
        reduce = [it.name for it in iters if it.kind == "reduce"]
        s.reorder(name, reduce + spatial)
        if spatial:
            s.vectorize(name, spatial[-1])
        if outers:
            s.compute_at(name, original, outers[0])
            s.parallel(original, outers[0])
    for name in compute_stages(s):
        if is_root(s, name) and s[name].iters and not has_reduction(s, name) and not any(
                it.annotation == "parallel" for it in s[name].iters):
            s.parallel(name, s[name].iters[0].name)


def _rfactor(s, inner=True):
    """Splits the last reduce iterator of every reduction by an awkward factor and factors out one part
    (the inner one placed innermost, or the outer one placed outermost)."""
    for name in compute_stages(s):
        iters = s[name].iters
        reduce = [it for it in iters if it.kind == "reduce"]
        if not reduce:
            continue
        num_spatial = len(iters) - len(reduce)
        outer, inner_it = s.split(name, reduce[-1].name, [awkward_factor(reduce[-1].extent)])
        if inner:
            s.rfactor(name, inner_it.name, num_spatial)
        else:
            s.rfactor(name, outer.name, 0)
        rf = name + ".rf"
        first = s[rf].iters[0]
        if first.kind == "spatial" and first.extent > 1:
            s.parallel(rf, first.name)


def _reduce_outside(s):
    """Reduction loops moved outside the spatial ones, innermost loops unrolled."""
    for name in compute_stages(s):
        iters = s[name].iters
        reduce = [it.name for it in iters if it.kind == "reduce"]
        spatial = [it.name for it in iters if it.kind == "spatial"]
        s.reorder(name, reduce + spatial)
        s.unroll(name, s[name].iters[-1].name)


def generated_schedules(dag):
    """(name, schedule) pairs; schedule(state) applies the steps to a fresh state of `dag`."""
    schedules = [
        ("inline_tile", _inline_and_tile),
        ("deep_tiles", _deep_tiles),
        ("compute_at", _compute_at_consumers),
        ("cache_write", _cache_write_tiles),
        ("reduce_outside", _reduce_outside),
    ]
    s = dag.get_init_state()
    if any(has_reduction(s, name) for name in compute_stages(s)):
        schedules += [("rfactor_inner", _rfactor),
                      ("rfactor_outer", lambda state: _rfactor(state, inner=False))]
    return schedules


def register_block_matmul(n, m, k, rows, vectors, lanes):
    """A matmul whose C tiles are rows x vectors registers of `lanes` accumulators (a local cache-write
    stage, the reduction outermost in it, rows and vectors unrolled, lanes vectorised), tiles in parallel.
    Returns (dag, state)."""
    dag, c = matmul(n, m, k)
    s = dag.get_init_state()
    cc = s.cache_write(c, "local")
    i, j = s[c].iters
    io, ii = s.split(c, i, [rows])
    jo, ji = s.split(c, j, [vectors * lanes])
    s.reorder(c, [io, jo, ii, ji])
    s.parallel(c, io)
    s.vectorize(c, s.split(c, ji, [lanes])[1])
    s.compute_at(cc, c, jo)
    ci, cj, ck = s[cc].iters
    cjo, cjv = s.split(cc, cj, [lanes])
    s.reorder(cc, [ck, ci, cjo, cjv])
    s.unroll(cc, ci)
    s.unroll(cc, cjo)
    s.vectorize(cc, cjv)
    return dag, s
