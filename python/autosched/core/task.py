"""SearchTask: what to tune (a DAG, from a registered workload or given directly) and where it runs."""
import json
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from .. import _core
from . import workload
from .checks import call_core, check_hardware_params, check_path, check_target, check_type
from .keywords import TimeBudget, checked_keywords
from .._core import ComputeDAG, HardwareParams, Target
from .build import build, lower
from .record_log import load_best_state
from .state import BestState

if TYPE_CHECKING:  # the layers above the task, for the annotations only (never imported at run time)
    from ..search.cost_model import CostModel
    from ..search.policy import SketchPolicy
    from ..tune.options import TuningOptions
    from ..tune.results import TuneResult

# The function SearchTask.tune runs: the tuning session sits above the task, so autosched.tune installs it
# when it is imported (set_tuning_session), as the core's OpenCL device query is installed (cpp/task/target.h).
_tuning_session: Optional[Callable[..., Any]] = None


def set_tuning_session(tune: Callable[..., Any]) -> None:
    """Installs tune(task, options, search_policy, cost_model, *, time_budget, time_budget_s) -> TuneResult, what
    SearchTask.tune calls."""
    global _tuning_session
    _tuning_session = tune


class SearchTask(_core.SearchTask):
    """A tuning task.

        SearchTask(func=matmul, args=(512, 512, 512, "float32"), target="llvm")
        SearchTask(compute_dag=dag, target=Target("opencl -device=mali"))

    hardware_params=None takes the target's defaults (see HardwareParams). constant_args: positions in
    compute_dag.tensors of the inputs that are constants where the kernel is deployed (a network's weights;
    extract_tasks sets them): the stages computed only from them (a packed copy of a weight) are then timed
    apart from the kernel, once, as graph.build runs them. cold_constants=True evicts those inputs (and their
    packed copies) from the CPU's caches before each timed run, as a network whose weights exceed the last-level
    cache reads them (extract_tasks sets it for such networks). network_caches=True starts each timed run with
    the caches as a network leaves them: every core's private caches refilled with other data, then the inputs
    that are not constants rewritten by the CPU's threads in equal shares, as the kernel before would have
    written them (extract_tasks sets it on CPU targets). The workload key is the DAG's
    structural key unless one is given. to_json()/from_json() carry the DAG, so a task is re-created in another
    process with or without the workload function.
    """

    def __init__(self, func: Any = None, args: Sequence[Any] = (), compute_dag: Optional[ComputeDAG] = None,
                 workload_key: Optional[str] = None, target: Union[str, Target, None] = None,
                 hardware_params: Optional[HardwareParams] = None, desc: str = "",
                 constant_args: Sequence[int] = (), cold_constants: bool = False,
                 network_caches: bool = False) -> None:
        if target is None:
            raise TypeError("SearchTask needs target= (e.g. 'llvm' for the host CPU)")
        target = check_target("SearchTask", target)
        check_hardware_params("SearchTask", hardware_params)
        check_type("SearchTask", "desc", desc, str, "a str")
        check_type("SearchTask", "workload_key", workload_key or "", str, "a str or None")
        self.workload = None  # {"name", "args", "module"} when built from a registered function
        if func is not None:
            if compute_dag is not None:
                raise TypeError("SearchTask takes func= (with args=) or compute_dag=, not both")
            name = func if isinstance(func, str) else workload.workload_name(func)
            args = tuple(args)
            module = None if isinstance(func, str) else getattr(func, "__module__", None)
            self.workload = {"name": name, "args": workload.args_to_json(args, name), "module": module}
            compute_dag = ComputeDAG(workload.build_workload(name, args, module))
            desc = desc or name
        elif compute_dag is None:
            raise TypeError("SearchTask needs func= (with args=) or compute_dag=")
        elif not isinstance(compute_dag, ComputeDAG):
            raise TypeError(f"SearchTask: compute_dag must be a ComputeDAG, got {type(compute_dag).__name__}")
        if isinstance(constant_args, (str, bytes)) or not all(
                isinstance(p, int) and not isinstance(p, bool) for p in constant_args):
            raise TypeError(f"SearchTask: constant_args must be a sequence of ints, got {constant_args!r}")
        check_type("SearchTask", "cold_constants", cold_constants, bool, "True or False")
        check_type("SearchTask", "network_caches", network_caches, bool, "True or False")
        call_core("SearchTask", super().__init__, compute_dag, target, workload_key or "", hardware_params, desc,
                  list(constant_args), cold_constants, network_caches)

    def to_json(self):
        doc = json.loads(super().to_json())
        if self.workload is not None:
            doc["workload"] = self.workload
        return json.dumps(doc)

    @classmethod
    def from_json(cls, text):
        """Re-creates a task; uses the workload function when it is registered (or its module imports) and
        still builds the same DAG, else the DAG stored in the JSON (with a warning when the function exists but
        fails or builds another DAG)."""
        core = _core.SearchTask._core_from_json(text)
        stored = _stored_workload(json.loads(text).get("workload"))
        dag = core.compute_dag
        if stored:
            rebuilt = _rebuild_workload(stored)
            if rebuilt is not None and rebuilt.workload_key() == dag.workload_key():
                dag = rebuilt
            elif rebuilt is not None:
                warnings.warn(f"workload '{stored['name']}' now builds a different DAG than the one "
                              "recorded; using the recorded DAG")
        task = cls(compute_dag=dag, workload_key=core.workload_key, target=core.target,
                   hardware_params=core.hardware_params, desc=core.desc, constant_args=core.constant_args,
                   cold_constants=core.cold_constants, network_caches=core.network_caches)
        task.workload = stored
        return task

    def __reduce__(self):
        return (type(self).from_json, (self.to_json(),))

    def __repr__(self):
        return f"SearchTask({self.desc or 'dag'}, key={self.workload_key}, target=\"{self.target.text}\")"

    # ---- tuning (python/autosched/tune/, which installs the session: set_tuning_session) ----
    @checked_keywords("SearchTask.tune")
    def tune(self, options: "TuningOptions", search_policy: Optional["SketchPolicy"] = None,
             cost_model: Union[str, "CostModel", None] = None, *, time_budget: TimeBudget = None,
             time_budget_s: TimeBudget = None) -> "TuneResult":
        """Tunes the task in a session of its own (see autosched.tune.session); returns a TuneResult.

        options: TuningOptions. time_budget: this call's time budget in seconds or as a
        text such as "10m" (time_budget_s: its alias), in place of the options'. cost_model: a CostModel or
        its name ("auto", "scratch", "pretrained", "xgb", "random"; not with search_policy)."""
        if _tuning_session is None:
            raise RuntimeError("SearchTask.tune needs the tuning session: import autosched.tune")
        return _tuning_session(self, options, search_policy, cost_model, time_budget=time_budget,
                               time_budget_s=time_budget_s)

    def apply_best(self, log_file: Union[str, "os.PathLike[str]"]) -> BestState:
        """The fastest verified schedule of this task (workload key and target) in the log, as a State of
        this task's DAG (records whose schedule does not replay on it are skipped, see
        records.load_best_state). Raises ValueError when the log has none. It also unpacks as TVM's pair:
        ``sch, args = task.apply_best(log)``, then ``autosched.build(sch, args)`` (see state.BestState)."""
        check_path("SearchTask.apply_best", log_file, "log_file")
        state, _ = load_best_state(log_file, self)
        if state is None:
            raise ValueError(f"record log '{log_file}' has no successful measurement of task "
                             f"'{self.desc or self.workload_key}' (workload key {self.workload_key}, target "
                             f"'{self.target.text}')")
        return BestState(state, self.compute_dag.tensors)

    def print_best(self, log_file: Union[str, "os.PathLike[str]"], print_mode: str = "schedule") -> str:
        """The best schedule in the log as text: "schedule" the Python steps that make it, "loops" its loop
        nest, "lowered" the lowered loop-nest IR."""
        state = self.apply_best(log_file)
        if print_mode == "schedule":
            return state.print_python_steps()
        if print_mode == "loops":
            return str(state)
        if print_mode == "lowered":
            return lower(state)
        raise ValueError(f"print_mode must be 'schedule', 'loops' or 'lowered', got {print_mode!r}")

    def build_best(self, log_file: Union[str, "os.PathLike[str]"]) -> Any:
        """The best schedule in the log, compiled for the task's target (a callable module)."""
        return build(self, self.apply_best(log_file))


def _stored_workload(stored):
    """The "workload" record of a task's JSON ({"name", "args", "module"}), checked; None when absent."""
    if stored is None:
        return None
    well_formed = (isinstance(stored, dict) and isinstance(stored.get("name"), str)
                   and isinstance(stored.get("args"), list) and isinstance(stored.get("module"), (str, type(None))))
    if not well_formed:
        raise ValueError("search task JSON: field 'workload' must be an object {\"name\": str, \"args\": list, "
                         f"\"module\": str or null}}, got {json.dumps(stored)}")
    return stored


def _rebuild_workload(stored):
    """The DAG the registered function builds from the recorded args; None when the function is not available
    here (the recorded DAG is then the task) or fails on those args (a warning names why)."""
    name = stored["name"]
    try:
        workload.lookup_workload(name, stored.get("module"))
    except ValueError:
        return None
    try:
        args = workload.args_from_json(stored["args"])
        return ComputeDAG(workload.build_workload(name, args, stored.get("module")))
    except Exception as err:  # noqa: BLE001  (any failure of user code: the recorded DAG still holds)
        warnings.warn(f"workload '{name}' could not be rebuilt from its recorded args {stored['args']} "
                      f"({type(err).__name__}: {err}); using the recorded DAG")
        return None


__all__ = ["SearchTask", "Target", "HardwareParams", "set_tuning_session"]
