"""The Python State API: schedule a ComputeDAG step by step.

    s = dag.get_init_state()
    i, j, k = s[C].iters
    io, ii = s.split(C, i, [8])
    s.reorder(C, [io, j, k, ii])
    s.parallel(C, io)
    print(s)                          # the loop nest
    print(dag.print_python_steps(s))  # the steps as Python

Stages are addressed by tensor, by name or by position; iterators by the
objects of ``s[stage].iters`` or by position. Each call appends one step to the
state (the C++ state underneath is an immutable value; this wrapper holds the
latest one). Invalid steps raise ValueError naming the step.
"""
import numbers

from . import _core

__all__ = ["State", "StageView"]


def _split_lengths(lengths):
    """The lengths of a split as a list of ints (None: unknown); one int is one length. Non-integral lengths
    are a TypeError; the step checks their range."""
    if lengths is None or isinstance(lengths, (numbers.Number, str, bytes)):
        lengths = [lengths]
    try:
        lengths = list(lengths)
    except TypeError:
        raise TypeError(f"split lengths must be an int or a list of ints, got {lengths!r}") from None
    for x in lengths:
        if x is not None and (isinstance(x, bool) or not isinstance(x, numbers.Integral)):
            raise TypeError(f"split lengths must be integers, got {x!r} ({type(x).__name__}) in {lengths!r}")
    return [None if x is None else int(x) for x in lengths]


class StageView:
    """A stage of a state at the time it was taken (name, op, iters, location)."""

    def __init__(self, state, index):
        core = state._core.stages[index]
        self.index = index
        self.name = core.name
        self.op = core.op
        self.iters = core.iters
        self.compute_at = core.compute_at
        self.scope = core.scope
        self.auto_unroll_max_step = core.auto_unroll_max_step
        self.attach_point = state._core.attach_point(index)

    def __repr__(self):
        return "Stage(%s)" % self.name


class State:
    """A loop state of a ComputeDAG; see the module docstring."""

    def __init__(self, core_state):
        self._core = core_state

    # ---- construction and conversion ----
    @staticmethod
    def from_json(dag, text):
        """Replays the steps of ``State.to_json()`` on ``dag``."""
        return State(_core.LoopState.from_json(dag, text))

    def to_json(self):
        return self._core.to_json()

    def copy(self):
        return State(self._core)

    @property
    def core(self):
        """The underlying immutable C++ state."""
        return self._core

    @property
    def dag(self):
        """The current DAG (changed by cache_read, cache_write and rfactor)."""
        return self._core.dag

    @property
    def stages(self):
        return [StageView(self, i) for i in range(len(self._core.stages))]

    def __getitem__(self, stage):
        return StageView(self, self._stage_id(stage))

    def __str__(self):
        return str(self._core)

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, State) and self._core.same_steps(other._core)

    def __hash__(self):
        return hash(self.to_json())

    # ---- resolution of stages and iterators ----
    def _stage_id(self, stage):
        if isinstance(stage, StageView):
            stage = stage.op
        if isinstance(stage, _core.Tensor):
            return self._core.stage_index_of(stage)
        if isinstance(stage, bool) or not isinstance(stage, (int, str)):
            raise TypeError("a stage is given by tensor, name or index, got %r" % (stage,))
        if isinstance(stage, str):
            return self._core.stage_index(stage)
        if not 0 <= stage < len(self._core.stages):
            raise ValueError("stage %d does not exist (the state has %d stages)" % (stage, len(self._core.stages)))
        return stage

    def _iter_id(self, stage_id, it):
        if isinstance(it, int) and not isinstance(it, bool):
            return it
        name = getattr(it, "name", it)
        if not isinstance(name, str):
            raise TypeError("an iterator is given by object or index, got %r" % (it,))
        iters = self._core.stages[stage_id].iters
        for i, x in enumerate(iters):
            if x.name == name:
                return i
        raise ValueError("stage '%s' has no iterator '%s' (it has %s)"
                         % (self._core.stages[stage_id].name, name, [x.name for x in iters]))

    def _apply(self, new_core):
        self._core = new_core

    def _iters(self, stage_id):
        return self._core.stages[stage_id].iters

    # ---- steps ----
    def split(self, stage, iterator, lengths, inner_to_outer=True):
        """Splits an iterator into len(lengths)+1 iterators, outermost first; returns them.
        lengths: a list of ints (None: to be filled later), or one int."""
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        lengths = _split_lengths(lengths)
        for x in lengths:  # beyond int64 the binding could not take it; the step refuses such lengths anyway
            if x is not None and not -2**63 <= x < 2**63:
                problem = (f"length {x}, more than {_core.MAX_ITER_EXTENT} (loop indices are 32-bit integers)"
                           if x > 0 else f"a bad factor {x} (lengths must be positive)")
                raise ValueError(f"step {self._core.num_steps} (split): split of '{self._iters(sid)[it].name}' "
                                 f"has {problem}")
        self._apply(self._core.split(sid, it, lengths, inner_to_outer))
        return self._iters(sid)[it:it + len(lengths) + 1]

    def follow_split(self, stage, iterator, src_step_id, n_split):
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        self._apply(self._core.follow_split(sid, it, src_step_id, n_split))
        return self._iters(sid)[it:it + n_split + 1]

    def follow_fused_split(self, stage, iterator, src_step_ids, level, factor_or_nparts):
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        self._apply(self._core.follow_fused_split(sid, it, list(src_step_ids), level, bool(factor_or_nparts)))
        return self._iters(sid)[it:it + 2]

    def fuse(self, stage, iters):
        """Fuses consecutive iterators; returns the fused one."""
        sid = self._stage_id(stage)
        ids = [self._iter_id(sid, x) for x in iters]
        self._apply(self._core.fuse(sid, ids))
        return self._iters(sid)[min(ids)] if ids else None

    def reorder(self, stage, order):
        sid = self._stage_id(stage)
        self._apply(self._core.reorder(sid, [self._iter_id(sid, x) for x in order]))

    def _annotate(self, stage, iterator, annotation):
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        self._apply(self._core.annotate(sid, it, annotation))
        return self._iters(sid)[it]

    def parallel(self, stage, iterator):
        return self._annotate(stage, iterator, "parallel")

    def vectorize(self, stage, iterator):
        return self._annotate(stage, iterator, "vectorize")

    def unroll(self, stage, iterator):
        return self._annotate(stage, iterator, "unroll")

    def bind(self, stage, iterator, thread_name):
        """Binds to "vthread", "blockIdx.x/y/z" or "threadIdx.x/y/z"."""
        return self._annotate(stage, iterator, thread_name)

    def pragma(self, stage, iterator, pragma_type):
        """pragma_type: "auto_unroll_max_step$N"."""
        sid = self._stage_id(stage)
        self._apply(self._core.pragma(sid, self._iter_id(sid, iterator), pragma_type))

    def storage_align(self, stage, iterator, factor, offset):
        sid = self._stage_id(stage)
        self._apply(self._core.storage_align(sid, self._iter_id(sid, iterator), factor, offset))

    def compute_at(self, stage, target_stage, target_iter):
        sid = self._stage_id(stage)
        tid = self._stage_id(target_stage)
        self._apply(self._core.compute_at(sid, tid, self._iter_id(tid, target_iter)))

    def compute_inline(self, stage):
        self._apply(self._core.compute_inline(self._stage_id(stage)))

    def compute_root(self, stage):
        self._apply(self._core.compute_root(self._stage_id(stage)))

    def _apply_adding_stage(self, new_core):
        """Applies a step that adds one stage; returns that stage's tensor."""
        before = {st.name for st in self._core.stages}
        self._apply(new_core)
        (added,) = [st for st in self._core.stages if st.name not in before]
        return added.op

    def cache_read(self, stage, scope_name, reader_stages):
        """Adds a stage "<name>.<scope>" read by reader_stages; returns its tensor.
        (A suffix _1, _2, ... keeps the name unique when it is taken.)"""
        sid = self._stage_id(stage)
        readers = [self._stage_id(r) for r in reader_stages]
        return self._apply_adding_stage(self._core.cache_read(sid, scope_name, readers))

    def pack(self, stage, reader_stages, axis, lanes):
        """Adds a stage "<name>.pack" holding the tensor with dimension `axis` split
        into blocks of `lanes` elements, the lanes innermost (for B[k, j] and axis 1:
        Bp[jo, k, jv] = B[k, jo * lanes + jv]); reader_stages then read
        Bp[x // lanes, .., x % lanes] (the other indices in order). Returns the packed tensor."""
        sid = self._stage_id(stage)
        readers = [self._stage_id(r) for r in reader_stages]
        return self._apply_adding_stage(self._core.pack(sid, readers, int(axis), int(lanes)))

    def cache_write(self, stage, scope_name):
        """Adds a stage "<name>.<scope>" computing the tensor; returns its tensor."""
        sid = self._stage_id(stage)
        return self._apply_adding_stage(self._core.cache_write(sid, scope_name))

    def rfactor(self, stage, iterator, factor_iter_id):
        """Factors a reduction into a stage "<name>.rf"; returns its tensor."""
        sid = self._stage_id(stage)
        return self._apply_adding_stage(self._core.rfactor(sid, self._iter_id(sid, iterator), factor_iter_id))


def _get_init_state(dag):
    """The state with no steps: the plain loop nest of the DAG."""
    return State(_core.LoopState(dag))


def _print_python_steps(dag, state):
    """The steps of state as calls of this API (``s`` is the state)."""
    return _core_state_of(state).print_python_steps()


def _infer_bound(dag, state):
    """A copy of state whose iterators have the extents bound inference gives."""
    return State(_core_state_of(state).infer_bound())


def _core_state_of(state):
    return state._core if isinstance(state, State) else state


_core.ComputeDAG.get_init_state = _get_init_state
_core.ComputeDAG.print_python_steps = _print_python_steps
_core.ComputeDAG.infer_bound = _infer_bound


def lower_state(state):
    """The loop-nest IR (a LoweredFunc) of a state."""
    return _core.lower_state(_core_state_of(state))


def lower_state_text(state):
    """The loop-nest IR of a state, as text."""
    return _core.lower_state_text(_core_state_of(state))
