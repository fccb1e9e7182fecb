"""The Python State API: schedule a ComputeDAG step by step.

    s = dag.get_init_state()
    i, j, k = s[C].iters
    io, ii = s.split(C, i, [8])
    s.reorder(C, [io, j, k, ii])
    s.parallel(C, io)
    print(s)                          # the loop nest
    print(dag.print_python_steps(s))  # the steps as Python

Stages are addressed by tensor, by name or by position (resolved by the core:
ComputeDAG::FindOp); iterators by the objects of ``s[stage].iters``, by name or
by position. Each call appends one step: it builds the step's record (the JSON
form records store, ["SP", stage, iter, ...]; docs/schedules.md lists them) and
the core replays it in place (``LoopState.append_step``; State is the core's
LoopState with these methods). Invalid steps raise ValueError naming the step
and leave the state as it was.
"""
import json
import numbers
from typing import Any, Iterator, List, Optional, Sequence, Union

from .. import _core
from .checks import call_core, describe

__all__ = ["State", "StageView", "BestState", "ComputeDAG", "lower_state", "lower_state_text"]

INT32_RANGE = (-2**31, 2**31)


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


StageView = _core.Stage  # what state.stages and state[stage] give: a stage as it was when taken


class State(_core.LoopState):
    """A loop state of a ComputeDAG; see the module docstring. State(dag) has no steps; State(state) is a copy.
    The core's LoopState with the step methods: the core hands every state out as this class. States pickle
    (as their DAG and steps) and copy (copies are independent)."""

    def __getitem__(self, stage):
        return self.stages[self._stage_id(stage)]

    def __iter__(self) -> Iterator[Any]:
        """The stages, in order (as state.stages)."""
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    # ---- resolution of stages and iterators ----
    def _stage_id(self, stage):
        if isinstance(stage, StageView):
            stage = stage.op
        if isinstance(stage, bool) or not isinstance(stage, (_core.Tensor, str, numbers.Integral)):
            raise TypeError("a stage is given by tensor, name or index, got %r" % (stage,))
        return self.stage_id(stage if isinstance(stage, (_core.Tensor, str)) else int(stage))

    def _iter_id(self, stage_id, it):
        iters = self.stages[stage_id].iters
        if isinstance(it, numbers.Integral) and not isinstance(it, bool):
            if not INT32_RANGE[0] <= it < INT32_RANGE[1]:  # the step checks the range; a record holds int32
                raise ValueError("stage '%s' has no iterator %d (it has %d)"
                                 % (self.stages[stage_id].name, it, len(iters)))
            return int(it)
        name = getattr(it, "name", it)
        if not isinstance(name, str):
            raise TypeError("an iterator is given by object, name or index, got %r" % (it,))
        for i, x in enumerate(iters):
            if x.name == name:
                return i
        raise ValueError("stage '%s' has no iterator '%s' (it has %s)"
                         % (self.stages[stage_id].name, name, [x.name for x in iters]))

    def _iters(self, stage_id):
        return self.stages[stage_id].iters

    def _apply(self, step, record_name, *args):
        """Appends the step whose record is [record_name, *args]."""
        self.append_step(json.dumps([record_name, *args]))

    def _int(self, step, what, x):
        """An integer argument of a step; records hold 32-bit ones, so a larger one is refused here rather
        than cut short."""
        if isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise TypeError(f"step {self.num_steps} ({step}): {what} must be an integer, got {x!r}")
        if not INT32_RANGE[0] <= x < INT32_RANGE[1]:
            raise ValueError(f"step {self.num_steps} ({step}): {what} {x} is out of range")
        return int(x)

    def _str(self, step, what, x):
        if not isinstance(x, str):
            raise TypeError(f"step {self.num_steps} ({step}): {what} must be a string, got {x!r}")
        return x

    # ---- steps (the record of each: transform_steps.h) ----
    def split(self, stage: Any, iterator: Any, lengths: Union[int, Sequence[Optional[int]]],
              inner_to_outer: bool = True) -> List[Any]:
        """Splits an iterator into len(lengths)+1 iterators, outermost first; returns them.
        lengths: a list of ints (None: to be filled later), or one int."""
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        factors = _split_lengths(lengths)
        for x in factors:  # beyond int64 a record could not hold it; the step refuses such lengths anyway
            if x is not None and not -2**63 <= x < 2**63:
                problem = (f"length {x}, more than {_core.MAX_ITER_EXTENT} (loop indices are 32-bit integers)"
                           if x > 0 else f"a bad factor {x} (lengths must be positive)")
                raise ValueError(f"step {self.num_steps} (split): split of '{self._iters(sid)[it].name}' "
                                 f"has {problem}")
        iters = self._iters(sid)
        extent = iters[it].extent if 0 <= it < len(iters) else None  # informative, kept in the record
        self._apply("split", "SP", sid, it, extent, factors, bool(inner_to_outer))
        return self._iters(sid)[it:it + len(factors) + 1]

    def follow_split(self, stage: Any, iterator: Any, src_step_id: int, n_split: int) -> List[Any]:
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        n_split = self._int("follow_split", "n_split", n_split)
        self._apply("follow_split", "FSP", sid, it, self._int("follow_split", "src_step_id", src_step_id), n_split)
        return self._iters(sid)[it:it + n_split + 1]

    def follow_fused_split(self, stage: Any, iterator: Any, src_step_ids: Sequence[int], level: int,
                           factor_or_nparts: bool) -> List[Any]:
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        src = [self._int("follow_fused_split", "a source step", x) for x in src_step_ids]
        self._apply("follow_fused_split", "FFSP", sid, it, src, self._int("follow_fused_split", "level", level),
                    bool(factor_or_nparts))
        return self._iters(sid)[it:it + 2]

    def fuse(self, stage: Any, iters: Sequence[Any]) -> Any:
        """Fuses consecutive iterators; returns the fused one."""
        sid = self._stage_id(stage)
        ids = [self._iter_id(sid, x) for x in iters]
        self._apply("fuse", "FU", sid, ids)
        return self._iters(sid)[min(ids)] if ids else None

    def reorder(self, stage: Any, order: Sequence[Any]) -> None:
        sid = self._stage_id(stage)
        self._apply("reorder", "RE", sid, [self._iter_id(sid, x) for x in order])

    def _annotate(self, stage, iterator, annotation):
        sid = self._stage_id(stage)
        it = self._iter_id(sid, iterator)
        self._apply("annotation", "AN", sid, it, self._str("annotation", "the annotation", annotation))
        return self._iters(sid)[it]

    def parallel(self, stage: Any, iterator: Any) -> Any:
        return self._annotate(stage, iterator, "parallel")

    def vectorize(self, stage: Any, iterator: Any) -> Any:
        return self._annotate(stage, iterator, "vectorize")

    def unroll(self, stage: Any, iterator: Any) -> Any:
        return self._annotate(stage, iterator, "unroll")

    def bind(self, stage: Any, iterator: Any, thread_name: str) -> Any:
        """Binds to "vthread", "blockIdx.x/y/z" or "threadIdx.x/y/z"."""
        return self._annotate(stage, iterator, thread_name)

    def pragma(self, stage: Any, iterator: Any, pragma_type: str) -> None:
        """pragma_type: "auto_unroll_max_step$N", "double_buffer" (a shared stage, or a local register
        tile, computed at a serial loop),
        "storage_transpose" (a shared stage: its last two dimensions swap places in its buffer) or
        "block_swizzle$G" (a loop fused from two or more, visited in bands of G rows)."""
        sid = self._stage_id(stage)
        self._apply("pragma", "PR", sid, self._iter_id(sid, iterator), self._str("pragma", "the pragma", pragma_type))

    def storage_align(self, stage: Any, iterator: Any, factor: int, offset: int) -> None:
        sid = self._stage_id(stage)
        self._apply("storage_align", "SA", sid, self._iter_id(sid, iterator),
                    self._int("storage_align", "factor", factor), self._int("storage_align", "offset", offset))

    def compute_at(self, stage: Any, target_stage: Any, target_iter: Any) -> None:
        sid = self._stage_id(stage)
        tid = self._stage_id(target_stage)
        self._apply("compute_at", "CA", sid, tid, self._iter_id(tid, target_iter))

    def compute_inline(self, stage: Any) -> None:
        self._apply("compute_inline", "CI", self._stage_id(stage))

    def compute_root(self, stage: Any) -> None:
        self._apply("compute_root", "CR", self._stage_id(stage))

    def _apply_adding_stage(self, step, record_name, *args):
        """Applies a step that adds one stage; returns that stage's tensor."""
        before = {st.name for st in self.stages}
        self._apply(step, record_name, *args)
        (added,) = [st for st in self.stages if st.name not in before]
        return added.op

    def cache_read(self, stage: Any, scope_name: str, reader_stages: Sequence[Any]) -> Any:
        """Adds a stage "<name>.<scope>" read by reader_stages; returns its tensor.
        (A suffix _1, _2, ... keeps the name unique when it is taken.)"""
        sid = self._stage_id(stage)
        readers = [self._stage_id(r) for r in reader_stages]
        return self._apply_adding_stage("cache_read", "CHR", sid, self._str("cache_read", "the scope", scope_name),
                                        readers)

    def pack(self, stage: Any, reader_stages: Sequence[Any], axis: int, lanes: int) -> Any:
        """Adds a stage "<name>.pack" holding the tensor with dimension `axis` split
        into blocks of `lanes` elements, the lanes innermost (for B[k, j] and axis 1:
        Bp[jo, k, jv] = B[k, jo * lanes + jv]); reader_stages then read
        Bp[x // lanes, .., x % lanes] (the other indices in order). Returns the packed tensor."""
        sid = self._stage_id(stage)
        readers = [self._stage_id(r) for r in reader_stages]
        return self._apply_adding_stage("pack", "PK", sid, readers, self._int("pack", "axis", axis),
                                        self._int("pack", "lanes", lanes))

    def cache_write(self, stage: Any, scope_name: str) -> Any:
        """Adds a stage "<name>.<scope>" computing the tensor; returns its tensor."""
        sid = self._stage_id(stage)
        return self._apply_adding_stage("cache_write", "CHW", sid, self._str("cache_write", "the scope", scope_name))

    def rfactor(self, stage: Any, iterator: Any, factor_iter_id: int) -> Any:
        """Factors a reduction into a stage "<name>.rf"; returns its tensor."""
        sid = self._stage_id(stage)
        return self._apply_adding_stage("rfactor", "RF", sid, self._iter_id(sid, iterator),
                                        self._int("rfactor", "factor_iter_id", factor_iter_id))


class BestState(State):
    """The State task.apply_best(log) returns. It is a State in every way but one: it unpacks as TVM's pair
    ``sch, args = task.apply_best(log)`` (the state and the DAG's tensors), and
    ``autosched.build(sch, args)`` builds it."""

    def __init__(self, state: State, args: Sequence[Any]) -> None:
        super().__init__(state)
        self.args = list(args)

    def __iter__(self) -> Iterator[Any]:
        return iter((self, self.args))

    def __len__(self) -> int:
        return 2

    def __reduce__(self):
        return BestState, (State(self), self.args)


# The DAG and its states hand each other out (dag.get_init_state(), state.dag), so both live in this module;
# autosched.compute_dag re-exports ComputeDAG.
class ComputeDAG(_core.ComputeDAG):
    """ComputeDAG(tensors): the ops reachable from the given inputs and outputs, in topological order.
    ComputeDAG(dag) gives the same DAG. The core hands every DAG out as this class."""

    def __init__(self, tensors: Any) -> None:
        # Until the core's constructor has run, the object holds no DAG: its repr (which a traceback that
        # holds `self` may ask for) must not reach the core.
        self._unconstructed = True
        if not isinstance(tensors, _core.ComputeDAG):
            if isinstance(tensors, (str, bytes)) or not isinstance(tensors, (list, tuple)):
                raise TypeError(f"ComputeDAG: tensors must be a list of te tensors (inputs and outputs), got "
                                f"{describe(tensors)}")
            for i, t in enumerate(tensors):
                if not isinstance(t, _core.Tensor):
                    raise TypeError(f"ComputeDAG: tensors[{i}] must be a te tensor (te.placeholder / te.compute), "
                                    f"got {describe(t)}")
        call_core("ComputeDAG", super().__init__, tensors)
        del self._unconstructed

    def __repr__(self):
        return "ComputeDAG(not constructed)" if self.__dict__.get("_unconstructed") else super().__repr__()

    def __str__(self):
        return repr(self) if self.__dict__.get("_unconstructed") else super().__str__()

    def get_init_state(self) -> "State":
        """The state with no steps: the plain loop nest of the DAG."""
        return State(self)

    def print_python_steps(self, state: "State") -> str:
        """The steps of ``state`` as calls of the State API (``s`` is the state)."""
        return state.print_python_steps()

    def infer_bound(self, state: "State") -> "State":
        """A copy of ``state`` whose iterators have the extents bound inference gives."""
        return state.infer_bound()


_core._hand_out_as(State)
_core._hand_out_as(ComputeDAG)


def lower_state(state):
    """The loop nest of a state as it comes from the state, before the lowering passes (a LoweredFunc:
    name, args, and its text as str())."""
    return _core.lower_state(state)


def lower_state_text(state):
    """The loop nest of a state before the lowering passes, as text."""
    return str(lower_state(state))
