"""autosched: an auto-scheduler for tensor programs with a C++ core."""
import inspect as _inspect
import os as _os
import sys as _sys
import typing as _typing

# Running from a CMake build tree instead of an installed package: point
# AUTOSCHED_BUILD_DIR at the folder holding _core*.so.
if _os.environ.get("AUTOSCHED_BUILD_DIR"):
    __path__.append(_os.environ["AUTOSCHED_BUILD_DIR"])  # noqa: F821

from . import _core  # noqa: E402
from .core import target as _target  # noqa: E402,F401  (checks and TVM spellings of Target)
from .core import te  # noqa: E402
from ._core import HardwareParams, InternalError, Target  # noqa: E402
from .core.compute_dag import ComputeDAG  # noqa: E402
from .core.evaluate import evaluate, evaluate_points  # noqa: E402
from .core.task import SearchTask  # noqa: E402
from .core.state import State  # noqa: E402
from .core.workload import register_workload  # noqa: E402
from .core.build import build  # noqa: E402
from .deploy import opencl  # noqa: E402
from . import plot  # noqa: E402  (matplotlib is imported when a plot is drawn)
from .deploy import runtime  # noqa: E402
from . import graph  # noqa: E402
from . import frontends  # noqa: E402
from .graph import extract_tasks  # noqa: E402
from .measure import LocalBuilder, LocalRunner, MeasureInput, MeasureResult  # noqa: E402
from .measure.ray_runner import RayRunner  # noqa: E402
from .records import ApplyHistoryBest, RecordReader, RecordToFile, load_records, load_best_record  # noqa: E402
from .search.cost_model import RandomModel, XGBModel  # noqa: E402
from .search import SearchParams, SketchPolicy  # noqa: E402
from . import tune  # noqa: E402  (installs SearchTask.tune's session)
from .tune import TaskScheduler, TaskSchedulerResult, TuneResult, TuningOptions  # noqa: E402

from .frontends import torch_compile as _torch_backend  # noqa: E402
from .search import cost_model, pretrained  # noqa: E402
from .deploy import torch_module  # noqa: E402
from .core import text  # noqa: E402
from .core import keywords as _keywords  # noqa: E402

# Module paths of the flat package that came before the layers (docs/architecture.md): `from
# autosched.cost_model import XGBModel` and the like keep working.
for _old_name, _module in {"te": te, "text": text, "cost_model": cost_model, "pretrained": pretrained, "runtime": runtime,
                           "torch_module": torch_module, "opencl": opencl}.items():
    _sys.modules[f"{__name__}.{_old_name}"] = _module

# What inspect.signature (and so an IDE's completion at run time) shows for the core's options classes: their
# fields, from their field lists (_core.pyi types them for static checkers).
_TARGET_KEYWORD = _inspect.Parameter("target", _inspect.Parameter.KEYWORD_ONLY, default=None,
                                     annotation=_typing.Union[str, Target, None])
for _options_class, _signature in [
        (HardwareParams, _keywords.options_signature(HardwareParams, positional=_keywords.HARDWARE_PARAMS_POSITIONAL,
                                                     extra=[_TARGET_KEYWORD])),
        (SearchParams, _keywords.options_signature(SearchParams)),
        (LocalBuilder, _keywords.options_signature(LocalBuilder))]:
    setattr(_options_class, "__signature__", _signature)


def _explicit_then_fields(function, options_class, skip=("faults",)):
    """The explicit parameters of `function` (an __init__ taking **options; self and the ** left out), then
    the fields of `options_class` it passes them to, by keyword."""
    explicit = [p for name, p in _inspect.signature(function).parameters.items()
                if name != "self" and p.kind is not _inspect.Parameter.VAR_KEYWORD]
    fields = [p for p in _keywords.options_signature(options_class).parameters.values()
              if p.name not in skip and p.name not in {e.name for e in explicit}]
    return _inspect.Signature(explicit + fields)


# Runners and XGBModel take the fields of the core's options classes (RunnerOptions, XGBModelParams) as keywords.
_LOCAL_RUNNER_SIGNATURE = _explicit_then_fields(LocalRunner.__init__, _core.RunnerOptions)
setattr(LocalRunner, "__signature__", _LOCAL_RUNNER_SIGNATURE)
setattr(RayRunner, "__signature__", _inspect.Signature(
    [p for name, p in _inspect.signature(RayRunner.__init__).parameters.items()
     if name != "self" and p.kind is not _inspect.Parameter.VAR_KEYWORD]
    + list(_LOCAL_RUNNER_SIGNATURE.parameters.values())))
setattr(XGBModel, "__signature__", _explicit_then_fields(XGBModel.__init__, _core.XGBModelParams))

# torch.compile(backend="autosched"): registered when TorchDynamo's registry loads (torch is not imported here).
_torch_backend.register()

__version__ = "0.1.0"

__all__ = ["te", "InternalError", "ComputeDAG", "evaluate", "evaluate_points", "register_workload", "SearchTask", "Target",
           "HardwareParams", "State", "build", "LocalBuilder", "LocalRunner", "RayRunner", "MeasureInput", "MeasureResult",
           "RecordToFile", "RecordReader", "ApplyHistoryBest", "load_records", "load_best_record", "RandomModel", "XGBModel",
           "SearchParams", "SketchPolicy", "TuningOptions", "TuneResult", "TaskScheduler", "TaskSchedulerResult", "opencl",
           "plot", "runtime", "graph", "tune",
           "frontends", "extract_tasks"]
