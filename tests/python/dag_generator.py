"""Random tensor-expression DAGs, their inputs and the comparison of results, for test_fuzz_generated.py.

    case = generate(seed)                 # the DAG as Python source (case.code) and what it exercises
    tensors = case.tensors()              # runs the source: the placeholders used, then the outputs
    inputs = make_inputs(dag, seed)       # one array per placeholder, with NaN, +-inf, INT_MIN, ... mixed in
    compare(got, want, "float16")         # NaN where and only where the reference has NaN, infs equal

The generator covers what the operator library's DAGs miss: reduce axes starting above 0, sum / prod / max /
min reductions with and without `where`, float16 / float32 / int8 / int32 stages mixed through casts,
integer division and modulo by values that may be 0 or -1 (guarded or not), element-wise chains of hundreds
of terms, deep nests, broadcasting, reductions feeding element-wise consumers, shapes of primes and 1, and a
few DAGs that must be refused (unused reduce axis, mixed dtypes, ...).

Built code computes floats in float32, the reference evaluator in double; both agree within the dtype's
tolerance only where no operation amplifies rounding. So every float expression carries a bound on its
magnitude for finite inputs (kept under LIMIT), and operations that are not continuous in their operands
(comparisons, floor, float-to-int casts) only take *exact* operands: values both sides compute bit for bit
(loads of inputs and of exact stages, indices, constants). NaN and infinities follow IEEE rules the same way
in both. Integers wrap and compare exactly, so nothing restricts them.
"""
import collections
import math
import random
import re

import numpy as np

from schedule_helpers import assert_close

FLOATS = ("float32", "float16")
INTS = ("int32", "int8")
DTYPES = FLOATS + INTS
DTYPE_WEIGHTS = (40, 20, 25, 15)
LIMIT = {"float32": 1e5, "float16": 1000.0}  # magnitude bound of float values for finite inputs
DIMS = (1, 1, 2, 3, 4, 5, 6, 7, 11, 13, 16, 17)
MAX_ELEMENTS = 3000
INT_RANGE = {"int32": (-2**31, 2**31 - 1), "int8": (-128, 127)}
INPUT_BOUND = 2.0  # |finite float input| <= 2, and >= MIN_INPUT (a divisor stays away from 0)
MIN_INPUT = 0.05

# An expression as source code with its dtype, its magnitude bound (floats; None for integers) and whether
# float32 and double evaluation give the same bits.
E = collections.namedtuple("E", "code dtype bound exact")
Var = collections.namedtuple("Var", "name lo hi")  # an index variable over [lo, hi)


class _Tensor:
    def __init__(self, name, shape, dtype, bound, exact, placeholder):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.bound, self.exact, self.placeholder = bound, exact, placeholder


def _const(rng, dtype, special=False):
    """A constant expression; special ones are NaN / +-inf / -0.0 or the extreme integers, 0 and -1."""
    if dtype in FLOATS:
        if special:
            value = rng.choice(['float("nan")', 'float("inf")', '-float("inf")', "-0.0", "0.0"])
            return E(f"te.const({value}, \"{dtype}\")", dtype, 0.0, True)
        value = rng.choice([0.5, 1.0, 1.5, 2.0, -0.25, -1.0, 3.0, 0.125])
        return E(f"te.const({value}, \"{dtype}\")", dtype, abs(value), True)
    low, high = INT_RANGE[dtype]
    value = rng.choice([low, high, -1, 0, low + 1]) if special else rng.choice([1, 2, 3, -1, -2, 5, 7])
    return E(f"te.const({value}, \"{dtype}\")", dtype, None, True)


class _Builder:
    """Collects the source lines of one DAG while tracking its tensors and what it exercises."""

    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.tensors = []
        self.features = set()
        self.names = collections.Counter()
        self.scalar_inputs = rng.random() < 0.05  # 0-d placeholders in some DAGs only

    def name(self, prefix):
        self.names[prefix] += 1
        return f"{prefix}{self.names[prefix] - 1}"

    # ---- indices and loads ----

    def index(self, size, vars_):
        """(code, guard): an index over vars_ within [0, size), guard None or a condition that keeps an
        otherwise out-of-range index in range (the load then sits in if_then_else)."""
        rng = self.rng
        if size == 1 and rng.random() < 0.8:
            return "0", None
        options = [(1, (str(rng.randrange(size)), None))]
        for v in vars_:
            top = v.hi - 1
            if top < size:
                options.append((8, (v.name, None)))
                options.append((2, (f"{size - 1} - {v.name}", None)))
                c = rng.randint(1, 3)
                if top + c < size:
                    options.append((3, (f"{v.name} + {c}", None)))
            if 2 * top < size:
                options.append((2, (f"{v.name} * 2", None)))
            options.append((1, (f"{v.name} // 2" if top // 2 < size else f"{v.name} // 2 % {size}", None)))
            options.append((2, (f"({v.name} + {rng.randint(0, 3)}) % {size}", None)))
            options.append((1, (f"te.min({v.name}, {size - 1})", None)))
            if top >= size:
                options.append((3, (v.name, f"{v.name} < {size}")))
            c = rng.randint(1, 2)
            if v.lo < c and top - c < size:
                options.append((2, (f"{v.name} - {c}", f"{v.name} >= {c}")))
        if len(vars_) >= 2:
            u, v = rng.sample(vars_, 2)
            if u.hi + v.hi - 2 < size:
                options.append((3, (f"{u.name} + {v.name}", None)))
        weights, choices = zip(*options)
        return rng.choices(choices, weights)[0]

    def load(self, t, vars_, dtype):
        """A load of tensor t converted to dtype, guarded by if_then_else where an index may leave t."""
        parts = [self.index(size, vars_) for size in t.shape]
        if t.shape and any(v.lo > 0 for v in vars_):
            self.features.add("reduce_min_nonzero_load")
        args = ", ".join(code for code, _ in parts) if parts else "()"
        e = E(f"{t.name}[{args}]", t.dtype, t.bound, t.exact)
        guards = [g for _, g in parts if g]
        if guards:
            self.features.add("guarded_load")
            cond = " & ".join(f"({g})" for g in guards)
            e = E(f"te.if_then_else({cond}, {e.code}, {_const(self.rng, t.dtype).code})", t.dtype,
                  max(t.bound, 3.0) if t.bound is not None else None, t.exact)
        return self.convert(e, dtype)

    def placeholder(self, dtype, vars_):
        """A new input shaped to be indexed by vars_ (dimensions of 1 broadcast)."""
        rng = self.rng
        shape = []
        rank = 0 if self.scalar_inputs and rng.random() < 0.3 else rng.choice([1, 1, 2, 2, 3])
        for _ in range(rank if vars_ else min(rank, 1)):
            if not vars_ or rng.random() < 0.15:
                shape.append(rng.choice([1, 1, 3]))
            else:
                shape.append(rng.choice(vars_).hi + rng.choice([0, 0, 0, 1, 2]))
        name = self.name("p")
        self.lines.append(f"{name} = te.placeholder({tuple(shape)!r}, name=\"{name}\", dtype=\"{dtype}\")")
        t = _Tensor(name, shape, dtype, INPUT_BOUND if dtype in FLOATS else None, True, True)
        self.tensors.append(t)
        return t

    def convert(self, e, dtype):
        """e as dtype: integers clamped before becoming floats, floats guarded before becoming integers."""
        if e.dtype == dtype:
            return e
        self.features.add("cast")
        if dtype in FLOATS and e.dtype in FLOATS:
            return E(f"te.cast({e.code}, \"{dtype}\")", dtype, e.bound, e.exact)
        if dtype in FLOATS:
            if e.dtype == "int8":
                return E(f"te.cast({e.code}, \"{dtype}\")", dtype, 128.0, True)
            return E(f"te.cast(te.max(te.min({e.code}, 1000), -1000), \"{dtype}\")", dtype, 1000.0, True)
        if dtype in INTS and e.dtype in INTS:
            return E(f"te.cast({e.code}, \"{dtype}\")", dtype, None, True)
        if not e.exact:  # truncation would turn a last-bit difference into 1
            return _const(self.rng, dtype)
        self.features.add("float_to_int")
        zero = f"te.const(0, \"{e.dtype}\")"
        return E(f"te.cast(te.if_then_else(te.abs({e.code}) < 100, {e.code}, {zero}), \"{dtype}\")", dtype,
                 None, True)

    # ---- expressions ----

    def leaf(self, dtype, vars_, exact=False):
        rng = self.rng
        r = rng.random()
        if r < 0.12 and not exact:
            special = rng.random() < 0.25
            if special:
                self.features.add("special_const")
            return _const(rng, dtype, special)
        if r < 0.2 and vars_:
            v = rng.choice(vars_)
            if v.lo > 0:
                self.features.add("reduce_min_nonzero_value")
            return E(f"te.cast({v.name}, \"{dtype}\")", dtype, float(v.hi) if dtype in FLOATS else None, True)
        stages = [t for t in self.tensors if not t.placeholder and (t.exact or not exact)]
        if stages and rng.random() < 0.55:
            source = stages[-1] if rng.random() < 0.6 else rng.choice(stages)
            return self.load(source, vars_, dtype)
        inputs = [t for t in self.tensors if t.placeholder]
        if inputs and rng.random() < (0.4 if len(inputs) < 4 else 0.85):
            same = [t for t in inputs if t.dtype == dtype]
            return self.load(rng.choice(same or inputs), vars_, dtype)
        other = dtype if rng.random() < 0.8 else rng.choice(DTYPES)
        return self.load(self.placeholder(other, vars_), vars_, dtype)

    def raw_input(self, dtype, vars_):
        """A load of an input, unconverted: exactly the array's value (0, -1, NaN, ...)."""
        inputs = [t for t in self.tensors if t.placeholder and t.dtype == dtype]
        if inputs and self.rng.random() < 0.5:
            return self.load(self.rng.choice(inputs), vars_, dtype)
        return self.load(self.placeholder(dtype, vars_), vars_, dtype)

    def cond(self, vars_):
        """A bool expression over exact values: indices, inputs (NaN compares false), constants."""
        rng = self.rng
        r = rng.random()
        if r < 0.45 and vars_:
            v = rng.choice(vars_)
            op = rng.choice(["<", ">=", "!=", "=="])
            if rng.random() < 0.3 and len(vars_) > 1:
                u = rng.choice([x for x in vars_ if x is not v])
                code = f"({v.name} + {u.name}) % 2 == 0"
            else:
                code = f"{v.name} {op} {rng.randint(v.lo, max(v.lo, v.hi - 1))}"
        else:
            dtype = rng.choice(DTYPES)
            a = self.leaf(dtype, vars_, exact=True)
            b = self.leaf(dtype, vars_, exact=True) if rng.random() < 0.4 else _const(rng, dtype)
            if rng.random() < 0.15 and dtype in FLOATS:
                b = a  # x == x is false only for NaN
                self.features.add("nan_test")
            code = f"{a.code} {rng.choice(['<', '<=', '>', '>=', '==', '!='])} {b.code}"
        if rng.random() < 0.15:
            code = f"({code}) {rng.choice(['&', '|'])} ({self.cond(vars_)})"
        elif rng.random() < 0.1:
            code = f"~({code})"
        return f"({code})"

    def expr(self, dtype, vars_, depth):
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf(dtype, vars_)
        if dtype in FLOATS:
            return self.float_op(dtype, vars_, depth)
        return self.int_op(dtype, vars_, depth)

    def float_op(self, dtype, vars_, depth, a=None):
        rng = self.rng
        a = self.expr(dtype, vars_, depth - 1) if a is None else a
        kind = rng.choices(["arith", "minmax", "div", "unary", "select", "floor"], [30, 15, 12, 22, 12, 5])[0]
        if kind in ("arith", "minmax", "select"):
            b = self.expr(dtype, vars_, depth - 1)
            return self.float_binary(kind, a, b, vars_)
        if kind == "div":
            r = rng.random()
            if r < 0.4:
                c = rng.choice([2.0, 4.0, 0.5, -2.0, 3.0])
                return E(f"({a.code} / {c})", dtype, a.bound / abs(c), False)
            if r < 0.7:
                d = self.raw_input(dtype, vars_)  # may be 0, -0.0, inf or NaN
                self.features.add("float_div_raw")
                return self.bounded(E(f"({a.code} / {d.code})", dtype, a.bound / MIN_INPUT, False), a)
            d = self.expr(dtype, vars_, depth - 1)
            return E(f"({a.code} / (te.abs({d.code}) + 1))", dtype, a.bound, False)
        if kind == "floor" and a.exact:
            fn = rng.choice(["floor", "ceil", "round"])
            return E(f"te.{fn}({a.code})", dtype, a.bound + 1, True)
        return self.float_unary(a, vars_)

    def float_binary(self, kind, a, b, vars_):
        rng, dtype = self.rng, a.dtype
        exact = a.exact and b.exact
        if kind == "minmax":
            return E(f"te.{rng.choice(['max', 'min'])}({a.code}, {b.code})", dtype, max(a.bound, b.bound), exact)
        if kind == "select":
            fn = rng.choice(["te.select", "te.if_then_else"])
            return E(f"{fn}({self.cond(vars_)}, {a.code}, {b.code})", dtype, max(a.bound, b.bound), exact)
        op = rng.choice(["+", "-", "*", "+", "-"])
        if rng.random() < 0.15:  # a Python number takes the expression's dtype
            value = rng.choice([1, 2, 0.5, 3.25])
            bound = a.bound * value if op == "*" else a.bound + value
            return self.bounded(E(f"({a.code} {op} {value})", dtype, bound, False), a)
        bound = a.bound * b.bound if op == "*" else a.bound + b.bound
        return self.bounded(E(f"({a.code} {op} {b.code})", dtype, bound, False), a, b)

    def bounded(self, e, a, b=None):
        """e when its bound stays under the dtype's LIMIT, else the max of its operands."""
        if e.bound <= LIMIT[e.dtype]:
            return e
        if b is None:
            return a
        return E(f"te.max({a.code}, {b.code})", a.dtype, max(a.bound, b.bound), a.exact and b.exact)

    def float_unary(self, a, vars_):
        rng, dtype = self.rng, a.dtype
        fn = rng.choice(["neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "erf", "power", "rsqrt"])
        if fn == "neg":
            return E(f"(-{a.code})", dtype, a.bound, a.exact)
        if fn == "abs":
            return E(f"te.abs({a.code})", dtype, a.bound, a.exact)
        if fn in ("tanh", "sigmoid", "erf"):
            return E(f"te.{fn}({a.code})", dtype, 1.0, False)
        if fn == "exp":
            if a.bound > 4:
                return E(f"te.tanh({a.code})", dtype, 1.0, False)
            return E(f"te.exp({a.code})", dtype, math.exp(a.bound), False)
        if fn == "power":
            p = rng.choice([2.0, 0.5, -1.0, 3.0])
            base = f"(te.abs({a.code}) + 1)"
            return self.bounded(E(f"te.power({base}, {p})", dtype, (a.bound + 1) ** abs(p), False), a)
        if rng.random() < 0.4:  # of an input as it is: log(0) = -inf, sqrt(-1) = NaN
            x = self.raw_input(dtype, vars_)
            self.features.add("raw_intrinsic")
            return E(f"te.{fn}({x.code})", dtype, 1 / math.sqrt(MIN_INPUT) if fn == "rsqrt" else 3.0, False)
        arg = f"(te.abs({a.code}) + 1)"
        return E(f"te.{fn}({arg})", dtype, math.log(a.bound + 1) + 1 if fn == "log" else math.sqrt(a.bound + 1),
                 False)

    def int_op(self, dtype, vars_, depth, a=None):
        rng = self.rng
        a = self.expr(dtype, vars_, depth - 1) if a is None else a
        kind = rng.choices(["arith", "minmax", "div", "unary", "select", "cast"], [30, 12, 25, 10, 13, 5])[0]
        if kind == "unary":
            return E(f"(-{a.code})" if rng.random() < 0.5 else f"te.abs({a.code})", dtype, None, True)
        if kind == "cast":
            other = "int8" if dtype == "int32" else "int32"
            self.features.add("int_cast")
            return E(f"te.cast(te.cast({a.code}, \"{other}\"), \"{dtype}\")", dtype, None, True)
        b = self.expr(dtype, vars_, depth - 1)
        if kind == "arith":
            if rng.random() < 0.15:
                return E(f"({a.code} {rng.choice(['+', '-', '*'])} {rng.choice([1, 3, 100, -7])})", dtype, None, True)
            return E(f"({a.code} {rng.choice(['+', '-', '*'])} {b.code})", dtype, None, True)
        if kind == "minmax":
            return E(f"te.{rng.choice(['max', 'min'])}({a.code}, {b.code})", dtype, None, True)
        if kind == "select":
            fn = rng.choice(["te.select", "te.if_then_else"])
            return E(f"{fn}({self.cond(vars_)}, {a.code}, {b.code})", dtype, None, True)
        return self.int_div(a, b, vars_)

    def int_div(self, a, b, vars_):
        """a divided by a divisor that is a constant (-1 among them), guarded, or any value (maybe 0)."""
        rng, dtype = self.rng, a.dtype
        op = rng.choice(["/", "//", "%", "te.floordiv", "te.floormod"])
        self.features.add("int_div")

        def div(x, y):
            return f"{op}({x}, {y})" if op.startswith("te.") else f"({x} {op} {y})"

        r = rng.random()
        if r < 0.3:
            low = INT_RANGE[dtype][0]
            d = rng.choice([-1, -1, 2, 3, 7, -2, low, 1])
            self.features.add("int_div_const")
            return E(div(a.code, f"te.const({d}, \"{dtype}\")"), dtype, None, True)
        if r < 0.55:
            self.features.add("int_div_guarded")
            fn = rng.choice(["te.if_then_else", "te.if_then_else", "te.select"])
            fallback = _const(rng, dtype, special=rng.random() < 0.3).code
            return E(f"{fn}({b.code} != 0, {div(a.code, b.code)}, {fallback})", dtype, None, True)
        if r < 0.7:
            return E(div(a.code, f"te.max(te.abs({b.code}), 1)"), dtype, None, True)
        self.features.add("int_div_any")  # the reference refuses a division by 0; built code must not trap
        d = self.raw_input(dtype, vars_) if rng.random() < 0.6 else b
        return E(div(a.code, d.code), dtype, None, True)

    # ---- stages ----

    def shape(self, max_rank=3):
        while True:
            rank = self.rng.choice([0, 1, 1, 2, 2, 2, 3, 3][:2 + 2 * max_rank])
            shape = tuple(self.rng.choice(DIMS) for _ in range(rank))
            if math.prod(shape) <= MAX_ELEMENTS:
                return shape

    def stage_shape(self):
        """The last stage's shape (a chain), that shape with one more dimension (broadcasting), or any."""
        stages = [t for t in self.tensors if not t.placeholder]
        r = self.rng.random()
        if not stages or r < 0.3:
            return self.shape()
        last = stages[-1].shape
        if r < 0.8 or len(last) >= 3:
            return last
        extra = self.rng.choice(DIMS)
        shape = (extra,) + last if self.rng.random() < 0.5 else last + (extra,)
        return shape if math.prod(shape) <= MAX_ELEMENTS else last

    def emit(self, name, shape, body, dtype, bound, exact):
        params = ", ".join(f"i{d}" for d in range(len(shape)))
        self.lines.append(f"def f_{name}({params}):")
        self.lines += ["    " + line for line in body]
        self.lines.append(f"{name} = te.compute({shape!r}, f_{name}, name=\"{name}\")")
        self.tensors.append(_Tensor(name, shape, dtype, bound, exact, False))

    def elementwise(self, dtype):
        shape = self.stage_shape()
        e = self.expr(dtype, _axes(shape), self.rng.choice([1, 2, 3, 4]))
        self.emit(self.name("T"), shape, [f"return {e.code}"], dtype, e.bound, e.exact)

    def chain(self, dtype):
        """e = term; e = e + term; e = te.max(e, term); ... over tens to hundreds of terms."""
        rng, shape = self.rng, self.stage_shape()
        vars_ = _axes(shape)
        count = rng.choice([20, 40, 80, 150, 300])
        self.features.add("chain_%d" % count)
        e = self.expr(dtype, vars_, 1)
        body, bound, exact = [f"e = {e.code}"], e.bound, e.exact
        for _ in range(count - 1):
            t = self.expr(dtype, vars_, rng.choice([0, 0, 1]))
            op = rng.choice(["+", "-", "max", "min", "+"] + (["*"] if dtype in INTS else []))
            if dtype in FLOATS and op in "+-" and bound + t.bound > LIMIT[dtype]:
                op = "max"
            if op in ("max", "min"):
                body.append(f"e = te.{op}(e, {t.code})")
                bound, exact = (max(bound, t.bound) if dtype in FLOATS else None), exact and t.exact
            else:
                body.append(f"e = e {op} {t.code}")
                bound, exact = (bound + t.bound if dtype in FLOATS else None), dtype in INTS
        self.emit(self.name("T"), shape, body + ["return e"], dtype, bound, exact)

    def deep(self, dtype):
        """One operation wrapped around the last, tens of times: an expression tree that deep."""
        rng, shape = self.rng, self.stage_shape()
        vars_ = _axes(shape)
        count = rng.choice([10, 30, 60, 120])
        self.features.add("deep_%d" % count)
        e = self.expr(dtype, vars_, 1)
        body = [f"e = {e.code}"]
        for _ in range(count):
            op = self.float_op if dtype in FLOATS else self.int_op
            e = op(dtype, vars_, 1, E("e", dtype, e.bound, e.exact))
            body.append(f"e = {e.code}")
        self.emit(self.name("T"), shape, body + ["return e"], dtype, e.bound, e.exact)

    def reduce_axes(self, over=None):
        """Reduce axes as Vars (their definitions emitted); `over` (an extent) bounds the first one."""
        rng, axes = self.rng, []
        for n in range(rng.choice([1, 1, 1, 2])):
            extent = rng.choice([1, 2, 3, 4, 5, 7, 11, 13])
            lo = rng.choice([0, 0, 1, 2, 3])
            if n == 0 and over is not None:
                lo = rng.choice([0, 0, 1, 2]) if over > 2 else 0
                extent = max(1, over - lo - rng.choice([0, 0, 1]))
            if lo:
                self.features.add("reduce_min_nonzero")
            name = self.name("k")
            self.lines.append(f"{name} = te.reduce_axis(({lo}, {lo + extent}), name=\"{name}\")")
            axes.append(Var(name, lo, lo + extent))
        return axes

    def reduction(self, dtype):
        """sum / prod / max / min over one or two reduce axes, often over one dimension of the last stage."""
        rng = self.rng
        stages = [t for t in self.tensors if not t.placeholder]
        last = stages[-1] if stages and stages[-1].shape and rng.random() < 0.6 else None
        if last is not None:
            dim = rng.randrange(len(last.shape))
            shape = last.shape[:dim] + last.shape[dim + 1:]
            raxes = self.reduce_axes(over=last.shape[dim])
        else:
            shape = self.shape(max_rank=2)
            raxes = self.reduce_axes()
        vars_ = _axes(shape) + raxes
        body = self.expr(dtype, vars_, rng.choice([0, 1, 1, 2]))
        if last is not None:
            spatial = iter(_axes(shape))
            index = [raxes[0].name if d == dim else next(spatial).name for d in range(len(last.shape))]
            direct = self.convert(E(f"{last.name}[{', '.join(index)}]", last.dtype, last.bound, last.exact), dtype)
            body = direct if rng.random() < 0.5 else self.combine(direct, body)
        for k in raxes:  # every reduce axis must be used
            if not re.search(rf"\b{k.name}\b", body.code):
                p = self.name("p")
                self.lines.append(f"{p} = te.placeholder(({k.hi},), name=\"{p}\", dtype=\"{dtype}\")")
                bound = INPUT_BOUND if dtype in FLOATS else None
                self.tensors.append(_Tensor(p, (k.hi,), dtype, bound, True, True))
                body = self.combine(body, E(f"{p}[{k.name}]", dtype, bound, True))
        self.emit_reduction(shape, raxes, vars_, body, dtype)

    def combine(self, a, b):
        if a.dtype in INTS or a.bound + b.bound <= LIMIT[a.dtype]:
            bound = None if a.dtype in INTS else a.bound + b.bound
            return E(f"({a.code} + {b.code})", a.dtype, bound, a.dtype in INTS)
        return E(f"te.max({a.code}, {b.code})", a.dtype, max(a.bound, b.bound), a.exact and b.exact)

    def emit_reduction(self, shape, raxes, vars_, body, dtype):
        rng = self.rng
        count = math.prod(k.hi - k.lo for k in raxes)
        combiner = rng.choices(["sum", "prod", "max", "min"], [40, 15, 25, 20])[0]
        if dtype in FLOATS:
            if combiner == "sum" and body.bound * count > LIMIT[dtype]:
                combiner = "max"
            if combiner == "prod" and count * math.log(max(body.bound, 1.0)) > math.log(LIMIT[dtype]):
                combiner = "min"
        self.features.add(f"{combiner}_{dtype}")
        where = ""
        if rng.random() < 0.3:
            where = f", where={self.cond(vars_)}"
            self.features.add("where")
        axis = ", ".join(k.name for k in raxes)
        code = f"return te.{combiner}({body.code}, axis=[{axis}]{where})"
        bound = None
        if dtype in FLOATS:
            bound = body.bound * count if combiner == "sum" else body.bound
            if combiner == "prod":
                bound = max(body.bound, 1.0) ** count
        exact = dtype in INTS or (combiner in ("max", "min") and body.exact)
        self.emit(self.name("R"), shape, [code], dtype, bound, exact)

    # ---- DAGs that must be refused ----

    def invalid(self):
        """A last stage that breaks a rule of the DSL; returns what it breaks."""
        rng = self.rng
        shape = self.shape(max_rank=2)
        vars_ = _axes(shape)
        kind = rng.choice(["empty_reduce_axis", "unused_reduce_axis", "nested_reduce", "mixed_dtypes",
                           "float_literal_with_int", "wrong_index_count", "empty_shape"])
        name = self.name("X")
        a = self.expr("float32", vars_, 1)
        if kind == "empty_reduce_axis":
            self.lines.append(f"kx = te.reduce_axis((3, {rng.choice([3, 2])}), name=\"kx\")")
            body = f"te.sum({a.code} + te.cast(kx, \"float32\"), axis=[kx])"
        elif kind == "unused_reduce_axis":
            self.lines.append("kx = te.reduce_axis((0, 3), name=\"kx\")")
            body = f"te.sum({a.code}, axis=[kx])"
        elif kind == "nested_reduce":
            self.lines.append("kx = te.reduce_axis((1, 4), name=\"kx\")")
            body = f"te.sum(te.cast(kx, \"float32\"), axis=[kx]) + {a.code}"
        elif kind == "mixed_dtypes":
            body = f"{a.code} + {self.expr('int32', vars_, 1).code}"
        elif kind == "float_literal_with_int":
            body = f"{self.expr('int32', vars_, 1).code} + 0.5"
        elif kind == "wrong_index_count":
            p = self.placeholder("float32", vars_)
            body = f"{p.name}[{', '.join(['0'] * (len(p.shape) + 1))}]"
        else:
            shape = shape + (0,)
            body = "te.const(1.0, \"float32\")"
        self.features.add("invalid_" + kind)
        self.emit(name, shape, [f"return {body}"], "float32", 1.0, False)
        return kind

    def outputs(self):
        """Stages no later stage reads, and now and then one that is read (an output and an input)."""
        code = "\n".join(self.lines)
        stages = [t for t in self.tensors if not t.placeholder]
        outs = [t for t in stages if not re.search(rf"\b{t.name}\[", code.split(f"{t.name} = te.compute")[1])]
        read = [t for t in stages if t not in outs]
        if read and self.rng.random() < 0.15:
            outs.insert(0, self.rng.choice(read))
            self.features.add("read_output")
        return outs


def _axes(shape):
    return [Var(f"i{d}", 0, n) for d, n in enumerate(shape)]


STAGE_KINDS = {"elementwise": 40, "reduction": 30, "chain": 8, "deep": 6}


class GeneratedDag:
    """The source of one random DAG: `code` defines `tensors` (used placeholders, then outputs)."""

    def __init__(self, seed, code, features, invalid):
        self.seed, self.code, self.features, self.invalid = seed, code, sorted(features), invalid

    def tensors(self):
        from autosched import te
        namespace = {"te": te}
        exec(compile(self.code, f"<generated dag {self.seed}>", "exec"), namespace)  # noqa: S102
        return namespace["tensors"]


def generate(seed):
    """The random DAG of `seed` (the same seed gives the same source)."""
    rng = random.Random(seed)
    b = _Builder(rng)
    main = rng.choices(DTYPES, DTYPE_WEIGHTS)[0]
    mixed = rng.random() < 0.3
    for _ in range(rng.choice([1, 1, 2, 2, 3, 3, 4, 5])):
        dtype = rng.choice(DTYPES) if mixed and rng.random() < 0.5 else main
        b.features.add(dtype)
        kind = rng.choices(list(STAGE_KINDS), list(STAGE_KINDS.values()))[0]
        getattr(b, kind)(dtype)
    invalid = b.invalid() if rng.random() < 0.04 else None
    outs = b.outputs()
    code = "\n".join(b.lines)
    inputs = [t.name for t in b.tensors if t.placeholder and re.search(rf"\b{t.name}\[", code)]
    b.lines.append(f"tensors = [{', '.join(inputs + [t.name for t in outs])}]")
    return GeneratedDag(seed, "\n".join(b.lines), b.features, invalid)


# ---- inputs and the comparison ----

def make_inputs(dag, seed):
    """One array per placeholder of the DAG. Floats lie in +-[MIN_INPUT, INPUT_BOUND], integers in +-[1, 4];
    a seed-chosen share of the elements (none for some seeds) is special: NaN, +-inf, +-0.0, +-1 for floats,
    the dtype's extremes, 0 and +-1 for integers."""
    rng = np.random.default_rng(seed)
    share = rng.choice([0.0, 0.0, 0.03, 0.1, 0.3])
    arrays = []
    for t in dag.tensors:
        if t.op_kind != "placeholder":
            continue
        shape = tuple(t.shape)
        sign = rng.choice([-1, 1], size=shape)
        if t.dtype in INT_RANGE:
            low, high = INT_RANGE[t.dtype]
            values = rng.integers(1, 5, size=shape) * sign
            specials = np.array([low, high, -1, 0, 1, low + 1], dtype="int64")
        else:
            values = rng.uniform(MIN_INPUT, INPUT_BOUND, size=shape) * sign
            specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0])
        mask = rng.random(shape) < share
        values = np.where(mask, rng.choice(specials, size=shape), values)
        arrays.append(np.array(values, dtype=t.dtype, order="C"))
    return arrays


def _first_difference(message, what, mask, got, want):
    bad = [tuple(int(i) for i in b) for b in np.argwhere(mask)]
    assert not bad, f"{message}\n{what} at {len(bad)} of {mask.size} elements, first at {bad[0]}: " \
                    f"got {got[bad[0]]}, expected {want[bad[0]]}"


def compare(got, want, dtype, message=""):
    """Integers equal; floats: NaN exactly where the reference has NaN, infinities equal, the rest within
    the dtype's tolerance (schedule_helpers.assert_close)."""
    got, want = np.asarray(got), np.asarray(want)
    if str(dtype).startswith("int"):
        _first_difference(message, "values differ", got != want, got, want)
        return
    got64, want64 = got.astype("float64"), want.astype("float64")
    nan_want = np.isnan(want64)
    _first_difference(message, "NaN differs", np.isnan(got64) != nan_want, got64, want64)
    inf = (np.isinf(got64) | np.isinf(want64)) & ~nan_want
    _first_difference(message, "infinities differ", inf & (got64 != want64), got64, want64)
    finite = ~(inf | nan_want)
    assert_close(got64[finite], want64[finite], dtype, message)
