"""Build a schedule into a native module and run it on numpy arrays.

    mod = ans.build(task_or_dag, state=None, target=None)
    mod(a, b, out)                        # C-contiguous numpy arrays, written in place
    times = mod.time_evaluator(number=10, repeat=3)(a, b, out)   # seconds per run
    print(mod.get_source("asm"))          # "ll", "asm" or "lowered"
"""
from . import _core


def _core_state(state):
    """The C++ LoopState behind a state object (the Python State wraps one)."""
    if isinstance(state, _core.LoopState):
        return state
    for name in ("_core", "_state", "state"):
        inner = getattr(state, name, None)
        if isinstance(inner, _core.LoopState):
            return inner
    raise TypeError(f"state must be a loop state (from dag.get_init_state()), got {type(state).__name__}")


def _dag_and_target(task_or_dag, target):
    dag = getattr(task_or_dag, "compute_dag", None)
    if dag is not None:
        if target is None:
            target = getattr(task_or_dag, "target", None)
        return dag, target
    if isinstance(task_or_dag, _core.ComputeDAG):
        return task_or_dag, target
    raise TypeError(f"build needs a SearchTask or a ComputeDAG, got {type(task_or_dag).__name__}")


def _check_same_dag(dag, core_state):
    """A state schedules the DAG it was made from: building it for another one would silently compute that
    other DAG, so a state whose initial DAG differs structurally from `dag` is refused."""
    state_key, dag_key = core_state.init_dag.workload_key(), dag.workload_key()
    if state_key != dag_key:
        raise ValueError(f"the state was made from a different DAG (workload key {state_key}) than the one "
                         f"given to build (workload key {dag_key}); build the state with the DAG it came "
                         "from (dag.get_init_state() of that DAG)")


class Module:
    """A compiled kernel. Arguments follow the DAG's tensor order."""

    def __init__(self, core_module, state):
        self._mod = core_module
        self._state = state

    def __call__(self, *arrays):
        self._mod(*arrays)

    def time_evaluator(self, number=1, repeat=1, min_repeat_ms=0, flush_cache=False):
        """A function that runs the kernel and returns `repeat` times in seconds per run."""
        def evaluate(*arrays):
            return self._mod.time_evaluate(list(arrays), number, repeat, float(min_repeat_ms), flush_cache)
        return evaluate

    def get_source(self, fmt="ll"):
        """'ll': optimised LLVM IR, 'asm': assembly, 'lowered': the loop nest that was compiled."""
        return self._mod.get_source(fmt)

    def lowered_ir(self):
        return self._mod.get_source("lowered")

    @property
    def compile_seconds(self):
        return self._mod.compile_seconds

    @property
    def arg_specs(self):
        """(name, dtype, shape) of every argument."""
        return self._mod.arg_specs

    def __repr__(self):
        return f"Module({self._mod.name}, args={[a[0] for a in self.arg_specs]})"


def build(task_or_dag, state=None, target=None):
    """Compile `state` (default: the plain loop nest of the DAG) for `target` (default: host CPU)."""
    dag, target = _dag_and_target(task_or_dag, target)
    if state is None:
        state = dag.get_init_state() if hasattr(dag, "get_init_state") else _core.LoopState(dag)
    core_state = _core_state(state)
    _check_same_dag(dag, core_state)
    target_text = "llvm" if target is None else str(target)
    return Module(_core.build_state(core_state, target_text), state)


def lower(state, log_passes=False):
    """The fully lowered loop nest of a state as text (log_passes: after every pass)."""
    return _core.lowered_text(_core_state(state), log_passes)
