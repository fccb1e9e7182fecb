"""Cost models: which candidate states are worth measuring.

    model = XGBModel()                      # or XGBModel(max_depth=8, num_warmup_samples=50)
    model.update(inputs, results)           # measured pairs: input.task, input.state; result.costs, .error_no
    scores = model.predict(task, states)    # one float per state, higher = faster
    model.save("model.json"); model.load("model.json")
    model = XGBModel().update_from_file("old.json", target="llvm")   # start from an earlier log

`update` accepts any objects with those attributes (measurement records, a loader's output, simple
namespaces): `costs` are seconds per run and `error_no` 0 means the measurement succeeded. A state that
cannot be lowered scores -inf. XGBModel gives uniform random scores until `num_warmup_samples` programs
have been measured, then retrains on all of its data at every update. RandomModel is the baseline.
`extract_features(task, states)` gives the feature rows the model sees (one per buffer store);
`feature_names()` names their columns.

`update_from_file` trains on the successful records of one target in a record log (the tasks tuned before:
transfer, or the task's own records: resume); records of other targets and failed ones are skipped and
counted (`model.last_file_update`). A model that holds records of one target refuses to tune a task of another.
"""
import os

from .. import _core
from . import pretrained as _pretrained
from ..core.record_log import read_log

__all__ = ["CostModel", "XGBModel", "RandomModel", "XGBModelParams", "FileUpdate", "feature_names",
           "extract_features", "pairwise_accuracy"]

XGBModelParams = _core.XGBModelParams


def feature_names():
    """Names of the feature columns, in order."""
    return list(_core.feature_names())


def extract_features(task, states, num_threads=0):
    """Per state: (rows x features float32 array, error); error says why a state has no rows."""
    return _core.extract_features(list(states), task.hardware_params, num_threads)


def pairwise_accuracy(scores, costs, groups=None):
    """Share of pairs (within a group; one group by default) with different costs that the scores rank
    right: a higher score for the lower cost. Failed programs can be given an infinite cost."""
    scores = [float(s) for s in scores]
    labels = [0.0 if c == float("inf") else 1.0 / float(c) for c in costs]
    groups = [0] * len(scores) if groups is None else list(groups)
    if not len(scores) == len(labels) == len(groups):
        raise ValueError(f"pairwise_accuracy: {len(scores)} scores, {len(labels)} costs and {len(groups)} groups")
    ids = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    return _core.pairwise_accuracy(scores, labels, [ids[g] for g in groups])


def _measured(inputs, results):
    """The four parallel lists of the core's update from (input, result) pairs."""
    inputs, results = list(inputs), list(results)
    if len(inputs) != len(results):
        raise ValueError(f"update: {len(inputs)} inputs but {len(results)} results")
    tasks, states, costs, ok = [], [], [], []
    for i, (inp, res) in enumerate(zip(inputs, results)):
        for obj, attrs, what in ((inp, ("task", "state"), "input"), (res, ("costs", "error_no"), "result")):
            missing = [a for a in attrs if not hasattr(obj, a)]
            if missing:
                raise TypeError(f"update: {what} {i} ({type(obj).__name__}) has no attribute {missing[0]!r}")
        tasks.append(inp.task)
        states.append(inp.state)
        succeeded = int(res.error_no) == 0
        costs.append([float(c) for c in res.costs] if succeeded else [])
        ok.append(succeeded)
    return tasks, states, costs, ok


def _target_text(target):
    """The canonical text of a target given as a Target, a SearchTask or a string."""
    target = getattr(target, "target", target)
    if isinstance(target, str):
        target = _core.Target(target)
    if not isinstance(target, _core.Target):
        raise TypeError(f"target must be a Target, a target string or a SearchTask, got {type(target).__name__}")
    return target.text


class FileUpdate:
    """What update_from_file took from a log: `used` records of `tasks` workload keys; skipped:
    `other_target` (records of another target), `failed` (measurements with an error), `excluded` (records
    of the workload keys the caller excluded)."""

    def __init__(self, path, target):
        self.path, self.target = path, target
        self.used = self.other_target = self.failed = self.excluded = 0
        self.tasks = 0

    def __repr__(self):
        return (f"FileUpdate(used={self.used} records of {self.tasks} tasks, skipped: {self.other_target} of "
                f"other targets, {self.failed} failed, {self.excluded} excluded; target '{self.target}', "
                f"'{self.path}')")


class CostModel:
    """Scores states of a task (higher = faster), learning from measured programs. The Python half of every
    cost model: XGBModel and RandomModel are the core's models (subclasses of _core.CostModel, whose predict,
    num_samples and the like they keep) with this class mixed in first."""

    def __init__(self, *core_args):
        super().__init__(*core_args)  # the core model's constructor, next in the MRO
        self.targets = set()         # canonical texts of the targets of the programs given to update()
        self.last_file_update = None  # FileUpdate of the last update_from_file

    def update(self, inputs, results):
        """Adds measured (input, result) pairs and retrains."""
        tasks, states, costs, ok = _measured(inputs, results)
        super().update(tasks, states, costs, ok)
        self.targets.update(t.target.text for t in tasks)

    def update_from_file(self, path, target=None, exclude_workload_keys=()):
        """Adds the successful records of `target` in the record log at `path` and retrains; returns the model
        (so `task.tune(opts, cost_model=XGBModel().update_from_file(log))` reads well). Records of other
        targets, failed measurements and records of `exclude_workload_keys` are skipped and counted in
        `self.last_file_update` (a FileUpdate). target: a Target, a target string or a SearchTask (its
        target); None: the one target of the log's records (ValueError when the log holds several)."""
        records = read_log(path).records  # core records: their tasks and states as the core holds them
        texts = {rec.task.target.text for rec in records}
        if target is None:
            if len(texts) > 1:
                raise ValueError(f"update_from_file: '{path}' holds records of {len(texts)} targets "
                                 f"({', '.join(sorted(texts))}); name the one to train on with target=")
            text = next(iter(texts), "")
        else:
            text = _target_text(target)
        exclude = set(exclude_workload_keys)
        report = FileUpdate(str(path), text)
        inputs, results = [], []
        for rec in records:
            if rec.task.target.text != text:
                report.other_target += 1
            elif not rec.result.ok:
                report.failed += 1
            elif rec.task.workload_key in exclude:
                report.excluded += 1
            else:
                inputs.append(rec)  # a Record has the task and state update() reads
                results.append(rec.result)
        report.used = len(inputs)
        report.tasks = len({inp.task.workload_key for inp in inputs})
        if inputs:
            self.update(inputs, results)
        self.last_file_update = report
        return self

    def check_target(self, target):
        """Raises ValueError when the model holds records of another target than `target` (a Target, a target
        string or a SearchTask): timings of one target would mislead the search of another."""
        text = _target_text(target)
        foreign = set(self.targets) - {text}
        if foreign:
            raise ValueError(f"the cost model holds records of target '{sorted(foreign)[0]}', not of the target "
                             f"'{text}' it is asked to tune for: timings of another target would mislead the search")

    def predict(self, task, states):
        """One score per state, higher = faster; -inf for a state that cannot be lowered."""
        return super().predict(task, list(states))

    def save(self, path):
        super().save(str(path))

    def load(self, path):
        super().load(str(path))
        self.targets = set()  # the loaded model keeps no training data


class RandomModel(CostModel, _core.RandomModel):
    """Uniform random scores in [0, 1), seeded: the baseline."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)


class XGBModel(CostModel, _core.XGBModel):
    """Gradient-boosted trees over program features; a program scores the sum of its statements.

    Parameters are XGBModelParams fields, by keyword (see docs/cost_model.md), or params=XGBModelParams(...).
    pretrained: False (learn from this model's updates alone), True (start from the model shipped in the
    package for llvm targets, autosched.pretrained) or the path of a saved model file to start from: its trees
    score until the warm-up ends, then the model's own trees are boosted on top of them. Raises ValueError when
    autosched was built without XGBoost, or when the pretrained model is missing or was trained on other
    features.
    """

    def __init__(self, params=None, pretrained=False, **kwargs):
        if params is not None and kwargs:
            raise TypeError("XGBModel takes params= or keywords, not both")
        if params is None:
            params = XGBModelParams(**kwargs)
        elif not isinstance(params, XGBModelParams):
            raise TypeError(f"params must be an XGBModelParams, got {type(params).__name__}")
        super().__init__(params)
        self.base_path, self.base_kind = None, None  # the pretrained model started from, its target kind
        if pretrained is not False and pretrained is not None:
            self._set_base(pretrained)

    @classmethod
    def shipped(cls, kind="llvm", **kwargs):
        """An XGBModel starting from the model the package ships for targets of `kind` ("llvm", "opencl");
        ValueError where it ships none."""
        model = cls(**kwargs)
        path = _pretrained.model_path(kind)
        if path is None:
            raise ValueError(f"this package ships no pretrained cost model of '{kind}' targets")
        model.set_base(path)
        model.base_path, model.base_kind = path, kind
        return model

    def _set_base(self, pretrained):
        if pretrained is True:
            path, kind = _pretrained.model_path("llvm"), "llvm"
            if path is None:
                raise ValueError("XGBModel(pretrained=True): this package ships no pretrained cost model")
        elif isinstance(pretrained, (str, os.PathLike)):
            path, kind = os.fspath(pretrained), None
        else:
            raise TypeError(f"XGBModel: pretrained must be True, False or a model file path, got {pretrained!r}")
        self.set_base(path)
        self.base_path, self.base_kind = path, kind

    def check_target(self, target):
        super().check_target(target)
        kind = _core.Target(_target_text(target)).kind
        if self.base_kind is not None and kind != self.base_kind:
            raise ValueError(f"the pretrained cost model is for '{self.base_kind}' targets, not '{kind}': "
                             "use XGBModel() (or cost_model='scratch') for this target")
