"""TuningOptions: how long and how to tune, for task.tune and TaskScheduler.tune (the session, session.py).

    opts = ans.TuningOptions(num_measure_trials=200, time_budget_s=600,
                             measure_callbacks=[ans.RecordToFile("mm.json")])
"""
import os

from .. import _core
from ..measure.local import LocalBuilder, LocalRunner

__all__ = ["TuningOptions"]


class TuningOptions(_core.TuningParams):
    """How long and how to tune. The scalar fields, their defaults and checks are those of the core's
    TuningParams (cpp/tune/tuning_params.h; ``TuningParams.field_names``, each property's doc):
    num_measure_trials, num_measures_per_round, early_stopping, time_budget_s, verbose, peak_gflops,
    transfer_seeds. This class adds the fields that hold Python objects:

    builder, runner: a LocalBuilder and a LocalRunner (None: their defaults).
    measure_callbacks: called as callback(policy, inputs, results) after every batch (e.g. RecordToFile).
    transfer_logs: record logs whose successful records of the task's target train the cost model before the
        search starts (the task's own records in a resumed log are left to resume).
    """

    def __init__(self, builder=None, runner=None, measure_callbacks=(), transfer_logs=(), **fields):
        try:
            super().__init__(**fields)
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

    def __eq__(self, other):
        return _core.TuningParams.__eq__(self, other) and self.__dict__ == getattr(other, "__dict__", None)

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    # The core's pickling keeps the scalar fields; the Python ones travel beside them.
    def __getstate__(self):
        return _core.TuningParams.__getstate__(self), dict(self.__dict__)

    def __setstate__(self, state):
        fields, extra = state
        _core.TuningParams.__setstate__(self, fields)
        self.__dict__.update(extra)
