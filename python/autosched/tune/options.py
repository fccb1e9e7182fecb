"""TuningOptions: how long and how to tune, for task.tune and TaskScheduler.tune (the session, session.py).

    opts = ans.TuningOptions(num_measure_trials=200, time_budget="10m",
                             measure_callbacks=[ans.RecordToFile("mm.json")])
"""
import os
from typing import Any, Callable, Dict, Iterable, Optional, Union

from .. import _core
from ..core.keywords import TimeBudget, checked_keywords, time_budget_seconds
from ..measure.local import LocalBuilder, LocalRunner

__all__ = ["TuningOptions", "TUNING_PARAMS_KEYWORDS"]

# The keywords of TuningOptions that are the core's TuningParams fields (cpp/tune/tuning_params.h), under the
# names TuningOptions takes them by: the core's time_budget_s is time_budget (its alias time_budget_s is kept).
# tests/python/test_api_typing.py checks them against TuningParams.field_names and its defaults.
TUNING_PARAMS_KEYWORDS = {name: "time_budget" if name == "time_budget_s" else name
                          for name in _core.TuningParams.field_names}

MeasureCallback = Callable[..., Any]
PathText = Union[str, "os.PathLike[str]"]


class TuningOptions(_core.TuningParams):
    """How long and how to tune. The scalar fields, their defaults and checks are those of the core's
    TuningParams (cpp/tune/tuning_params.h; ``TuningParams.field_names``, each property's doc):

    num_measure_trials: schedules to measure in all (a resumed log's records count).
    num_measures_per_round: schedules per search round.
    early_stopping: stop a task after this many trials without a better schedule (None: never).
    time_budget: the tuning call's wall time, in seconds or as a text such as "90s", "10m", "1h" (None: no
        limit); ``time_budget_s`` is its alias (the attribute holds the seconds; give one of the two).
    verbose: 0 warnings only, 1 a progress bar and the summary, 2 also a line per round.
    peak_gflops: the target's peak for "% of peak" (None: the core's estimate).
    search_time_share: the share of tuning time the search and the cost model may take beside measuring.
    transfer_seeds: seed each task's search with the best states of similar tasks.

    This class adds the fields that hold Python objects:

    builder, runner: a LocalBuilder and a LocalRunner (None: their defaults).
    measure_callbacks: called as callback(policy, inputs, results) after every batch (e.g. RecordToFile).
    transfer_logs: record logs whose successful records of the task's target train the cost model before the
        search starts (the task's own records in a resumed log are left to resume).
    """

    @checked_keywords("TuningOptions")
    def __init__(self, *, num_measure_trials: int = 64, num_measures_per_round: int = 64,
                 early_stopping: Optional[int] = None, time_budget: TimeBudget = None, verbose: int = 1,
                 peak_gflops: Optional[float] = None, search_time_share: float = 0.15, transfer_seeds: bool = True,
                 builder: Optional[LocalBuilder] = None, runner: Optional[LocalRunner] = None,
                 measure_callbacks: Iterable[MeasureCallback] = (),
                 transfer_logs: Union[PathText, Iterable[PathText]] = (),
                 time_budget_s: TimeBudget = None) -> None:
        given: Dict[str, Any] = dict(num_measure_trials=num_measure_trials, num_measures_per_round=num_measures_per_round,
                     early_stopping=early_stopping, verbose=verbose, peak_gflops=peak_gflops,
                     search_time_share=search_time_share, transfer_seeds=transfer_seeds,
                     time_budget=time_budget_seconds("TuningOptions", time_budget, time_budget_s))
        try:
            super().__init__(**{name: given[keyword] for name, keyword in TUNING_PARAMS_KEYWORDS.items()})
        except (TypeError, ValueError) as e:  # name the class the user made
            raise type(e)(str(e).replace("TuningParams", "TuningOptions", 1)) from None
        if builder is not None and not isinstance(builder, LocalBuilder):
            raise TypeError(f"TuningOptions: builder must be a LocalBuilder, got {type(builder).__name__}")
        if runner is not None and not isinstance(runner, LocalRunner):
            raise TypeError(f"TuningOptions: runner must be a LocalRunner, got {type(runner).__name__}")
        self.builder = builder
        self.runner = runner
        self.measure_callbacks = list(measure_callbacks or ())
        for cb in self.measure_callbacks:
            if not callable(cb):
                raise TypeError(f"TuningOptions: measure callback {cb!r} is not callable")
        if isinstance(transfer_logs, (str, os.PathLike)):
            transfer_logs = [transfer_logs]
        self.transfer_logs = [os.fspath(p) for p in transfer_logs or ()]
        for path in self.transfer_logs:
            if not os.path.exists(path):
                raise ValueError(f"TuningOptions: transfer log '{path}' does not exist")
            if not os.path.isfile(path):
                raise ValueError(f"TuningOptions: transfer log '{path}' is not a regular file")

    @property
    def time_budget(self) -> Optional[float]:
        """The time budget in seconds (None: no limit); set it in seconds or as a text such as "10m"."""
        seconds: Optional[float] = self.time_budget_s
        return seconds

    @time_budget.setter
    def time_budget(self, value: TimeBudget) -> None:
        self.time_budget_s = time_budget_seconds("TuningOptions", value)

    def __eq__(self, other):
        return _core.TuningParams.__eq__(self, other) and self.__dict__ == getattr(other, "__dict__", None)

    def __ne__(self, other):
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    # The core's pickling keeps the scalar fields; the Python ones travel beside them.
    def __getstate__(self):
        return _core.TuningParams.__getstate__(self), dict(self.__dict__)

    def __setstate__(self, state):
        fields, extra = state
        _core.TuningParams.__setstate__(self, fields)
        self.__dict__.update(extra)
