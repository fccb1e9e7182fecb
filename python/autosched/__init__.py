"""autosched: an auto-scheduler for tensor programs with a C++ core."""
import os as _os

# Running from a CMake build tree instead of an installed package: point
# AUTOSCHED_BUILD_DIR at the folder holding _core*.so.
if _os.environ.get("AUTOSCHED_BUILD_DIR"):
    __path__.append(_os.environ["AUTOSCHED_BUILD_DIR"])  # noqa: F821

from . import _core  # noqa: E402
from . import _target  # noqa: E402,F401  (checks and TVM spellings of Target)
from . import te  # noqa: E402
from ._core import HardwareParams, InternalError, Target  # noqa: E402
from .compute_dag import ComputeDAG  # noqa: E402
from ._evaluate import evaluate, evaluate_points  # noqa: E402
from .task import SearchTask  # noqa: E402
from .state import State  # noqa: E402
from .workload import register_workload  # noqa: E402
from .build_module import build  # noqa: E402
from . import opencl  # noqa: E402
from . import plot  # noqa: E402  (matplotlib is imported when a plot is drawn)
from . import runtime  # noqa: E402
from . import graph  # noqa: E402
from . import frontends  # noqa: E402
from .graph import extract_tasks  # noqa: E402
from .measure import LocalBuilder, LocalRunner, MeasureInput, MeasureResult  # noqa: E402
from .ray_runner import RayRunner  # noqa: E402
from .records import ApplyHistoryBest, RecordReader, RecordToFile, load_records, load_best_record  # noqa: E402
from .cost_model import RandomModel, XGBModel  # noqa: E402
from .search import SearchParams, SketchPolicy  # noqa: E402
from . import tune  # noqa: E402  (installs SearchTask.tune's session)
from .tune import TaskScheduler, TaskSchedulerResult, TuneResult, TuningOptions  # noqa: E402

from . import torch_backend as _torch_backend  # noqa: E402

# torch.compile(backend="autosched"): registered when TorchDynamo's registry loads (torch is not imported here).
_torch_backend.register()

__version__ = "0.1.0"

__all__ = ["te", "InternalError", "ComputeDAG", "evaluate", "evaluate_points", "register_workload", "SearchTask", "Target",
           "HardwareParams", "State", "build", "LocalBuilder", "LocalRunner", "RayRunner", "MeasureInput", "MeasureResult",
           "RecordToFile", "RecordReader", "ApplyHistoryBest", "load_records", "load_best_record", "RandomModel", "XGBModel",
           "SearchParams", "SketchPolicy", "TuningOptions", "TuneResult", "TaskScheduler", "TaskSchedulerResult", "opencl",
           "plot", "runtime", "graph", "tune",
           "frontends", "extract_tasks"]
