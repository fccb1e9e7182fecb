"""Trains the cost model shipped in the package from record logs of scripts/make_cost_model_records.py.

    python3 scripts/train_pretrained_model.py --corpus DIR_OR_LOG ... [--holdout-network bert_layer]
        [--holdout-task TEXT ...] [--fixture tests/records/pretrained_holdout.json.gz] [--no-write]

1. Reads the successful records of llvm targets in the corpus (folders: their records_*.json[.gz] logs). A
   task is a workload on one CPU (the CPU is named by the log's file name, records_<cpu>_job<k>.json, else by
   the hardware parameters of its records): the labels of the cost model are normalised per task, so the
   timings of two CPUs are never compared.
2. Holds out the tasks of --holdout-network (the task's description starts with the network's name) and of
   --holdout-task (a text in the description), trains on the others, and prints the pairwise accuracy on each
   held-out task's records (pairs of records with different costs that the scores order right), their mean,
   and RandomModel's; the same for the --fixture log (a task in no corpus: tests/records/).
3. Trains on every task and writes the model into python/autosched/data/ (cost_model_llvm.<feature set>.json,
   the feature set being autosched.pretrained.feature_set_id()) with its entry in pretrained_models.json: the
   feature set, the file's SHA-256 (the package verifies the file by it before XGBoost reads it), the corpus
   (records, tasks, CPUs), the date, the parameters and the accuracies of step 2.
   --no-write stops after step 2.
"""
import argparse
import datetime
import glob
import gzip
import json
import os
import re
import shutil
import sys
import tempfile
import time
import types
import warnings

from autosched import _core
from autosched.search import pretrained
from autosched.search.cost_model import RandomModel, XGBModel, pairwise_accuracy
from autosched.core.record_log import RecordWarning, read_log

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FIXTURE = os.path.join(ROOT, "tests", "records", "pretrained_holdout.json.gz")
# The shipped model is smaller than the session's (max_depth 10): it must generalise across tasks and stay a
# small file in the package.
MODEL_PARAMS = dict(max_depth=4, eta=0.05, min_child_weight=2, max_rounds=1500, early_stopping_rounds=30,
                    validation_fraction=0.1, num_warmup_samples=0, subsample=0.8, colsample_bytree=0.8,
                    label_octaves=4.0, label_weight_power=1.0)


class Group:
    """The records of one task on one CPU."""

    def __init__(self, key, cpu, desc, task):
        self.key, self.cpu, self.desc = key, cpu, desc
        # The workload key names the CPU too, so that labels are normalised per CPU.
        self.task = _core.SearchTask(task.compute_dag, task.target, f"{key}|{cpu}", task.hardware_params, desc)
        self.states, self.results = [], []

    @property
    def costs(self):
        return [r.mean_cost for r in self.results]

    def name(self):
        return f"{self.desc or self.key} [{self.cpu}]"


def log_files(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(glob.glob(os.path.join(path, "records_*.json")) +
                            glob.glob(os.path.join(path, "records_*.json.gz")))
        elif os.path.isfile(path):
            files.append(path)
        else:
            print(f"corpus: '{path}' does not exist, skipped")
    return files


def cpu_of(path, hw):
    match = re.match(r"records_(.+?)_(holdout_)?job\d+\.json", os.path.basename(path))
    if match:
        return match.group(1)
    return f"vec{hw.vector_unit_bytes}-l1_{hw.l1_cache_bytes}-l2_{hw.l2_cache_bytes}"


def load_groups(files):
    """Groups of successful llvm records by (workload key, CPU), in file order; and counts of what was skipped."""
    groups, skipped = {}, {"other_kind": 0, "failed": 0}
    for path in files:
        with warnings.catch_warnings(), tempfile.TemporaryDirectory() as tmp:
            warnings.simplefilter("ignore", RecordWarning)
            log = path
            if path.endswith(".gz"):  # the record reader reads plain logs
                log = os.path.join(tmp, "log.json")
                with gzip.open(path, "rb") as src, open(log, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            records = read_log(log).records
        for rec in records:
            task = rec.task
            if task.target.kind != "llvm":
                skipped["other_kind"] += 1
                continue
            if not rec.result.ok:
                skipped["failed"] += 1
                continue
            cpu = cpu_of(path, task.hardware_params)
            key = (task.workload_key, cpu)
            if key not in groups:
                groups[key] = Group(task.workload_key, cpu, task.desc, task)
            groups[key].states.append(rec.state)
            groups[key].results.append(rec.result)
    return [g for g in groups.values() if len(g.states) >= 2], skipped


def train(groups, params):
    model = XGBModel(**params)
    inputs = [types.SimpleNamespace(task=g.task, state=s) for g in groups for s in g.states]
    results = [r for g in groups for r in g.results]
    t0 = time.monotonic()
    model.update(inputs, results)
    print(f"  trained on {len(inputs)} records of {len(groups)} tasks in {time.monotonic() - t0:.1f} s: "
          f"{model.last_training}")
    return model


def accuracy(model, group):
    return pairwise_accuracy(model.predict(group.task, group.states), group.costs)


def evaluate(model, groups, label):
    """Per group pairwise accuracy of `model` and of RandomModel; returns (mean, random mean, rows)."""
    rows = []
    for g in groups:
        rows.append((g.name(), len(g.states), accuracy(model, g), accuracy(RandomModel(seed=1), g)))
    if not rows:
        return None, None, rows
    print(f"  {label}: {'records':>7}  {'model':>6}  {'random':>6}")
    for name, n, acc, rnd in rows:
        print(f"    {name[:70]:<70} {n:>7}  {acc:6.3f}  {rnd:6.3f}")
    mean = sum(r[2] for r in rows) / len(rows)
    rnd = sum(r[3] for r in rows) / len(rows)
    print(f"    mean over {len(rows)} tasks: model {mean:.3f}, random {rnd:.3f}")
    return mean, rnd, rows


def compact(path):
    """Zeroes what XGBoost keeps per node for training and explanations only (gains, hessian sums, node
    weights; predictions read the split conditions, where leaves keep their values): a smaller file, the same
    scores (write_model checks)."""
    with open(path) as f:
        doc = json.load(f)

    def trees(booster):
        return booster["learner"]["gradient_booster"]["model"]["trees"] if booster else []

    for tree in trees(doc.get("booster")) + trees((doc.get("base") or {}).get("booster")):
        for field in ("loss_changes", "sum_hessian", "base_weights"):
            tree[field] = [0.0] * len(tree[field])  # XGBoost reads numbers, not integers
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(path + ".tmp", path)


def write_model(model, groups, report, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    fid = pretrained.feature_set_id()
    name = f"cost_model_llvm.{fid}.json"
    path = os.path.join(out_dir, name)
    model.save(path)
    before = [model.predict(g.task, g.states[:20]) for g in groups]
    compact(path)
    loaded = XGBModel()
    loaded.load(path)
    for g, scores in zip(groups, before):
        if max(abs(a - b) for a, b in zip(scores, loaded.predict(g.task, g.states[:20]))) > 1e-5:
            raise SystemExit(f"the compacted model scores {g.name()} differently")
    manifest_path = os.path.join(out_dir, os.path.basename(pretrained.MANIFEST))
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
        if not isinstance(manifest, dict):  # a damaged manifest: written anew
            manifest = {}
    old = manifest.get("llvm", {}).get("file") if isinstance(manifest.get("llvm"), dict) else None
    if isinstance(old, str) and old and os.path.basename(old) == old and old != name and os.path.exists(os.path.join(out_dir, old)):
        os.remove(os.path.join(out_dir, old))
    cpus = {}
    for g in groups:
        hw = g.task.hardware_params
        entry = cpus.setdefault(g.cpu, {"records": 0, "tasks": 0, "vector_unit_bytes": hw.vector_unit_bytes,
                                        "num_vector_registers": hw.num_vector_registers,
                                        "l1_cache_bytes": hw.l1_cache_bytes, "l2_cache_bytes": hw.l2_cache_bytes})
        entry["records"] += len(g.states)
        entry["tasks"] += 1
    manifest["llvm"] = {
        "file": name, "feature_set": fid, "num_features": len(_core.feature_names()),
        "records": sum(len(g.states) for g in groups), "tasks": len(groups), "cpus": cpus,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "params": {k: getattr(model.params, k) for k in MODEL_PARAMS}, "size_bytes": os.path.getsize(path),
        "sha256": pretrained.file_sha256(path), **report}
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.2f} MB) and {manifest_path}")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", nargs="+", required=True,
                   help="folders of logs (make_cost_model_records.py --out) or logs")
    p.add_argument("--holdout-network", default="bert_layer", help="a network whose tasks are held out ('' none)")
    p.add_argument("--holdout-task", action="append", default=[], help="a text of held-out tasks' descriptions")
    p.add_argument("--fixture", default=DEFAULT_FIXTURE, help="a log of a task in no corpus, also evaluated")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "python", "autosched", "data"))
    p.add_argument("--exclude-cpu", action="append", default=[],
                   help="leave out the records of this CPU (e.g. a corpus timed on a loaded machine)")
    p.add_argument("--no-write", action="store_true", help="evaluate only")
    for name, value in MODEL_PARAMS.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    params = {k: getattr(args, k) for k in MODEL_PARAMS}
    files = log_files(args.corpus)
    if not files:
        raise SystemExit("no record logs in the corpus")
    groups, skipped = load_groups(files)
    left_out = sum(len(g.states) for g in groups if g.cpu in args.exclude_cpu)
    groups = [g for g in groups if g.cpu not in args.exclude_cpu]
    print(f"corpus: {len(files)} logs, {sum(len(g.states) for g in groups)} records of {len(groups)} tasks on "
          f"CPUs {sorted({g.cpu for g in groups})}; skipped {skipped['failed']} failed, "
          f"{skipped['other_kind']} of other target kinds, {left_out} of the excluded CPUs {args.exclude_cpu}")
    held = [g for g in groups if (args.holdout_network and g.desc.startswith(args.holdout_network + "."))
            or any(t in g.desc for t in args.holdout_task)]
    # The same workload timed on another CPU (whose log may describe it without the network's name) is held
    # out too: training on it would tell the model the held-out programs' structure.
    held_keys = {g.key for g in held}
    held = [g for g in groups if g.key in held_keys]
    rest = [g for g in groups if g not in held]
    fixture = []
    if args.fixture and os.path.exists(args.fixture):
        fixture, _ = load_groups([args.fixture])
        keys = {g.key for g in fixture}
        rest = [g for g in rest if g.key not in keys]  # never train on the fixture's task
    report = {"excluded_cpus": args.exclude_cpu}
    if held or fixture:
        print(f"held out: {len(held)} tasks; training on {len(rest)}")
        model = train(rest, params)
        mean, rnd, _ = evaluate(model, held, "held-out tasks")
        fmean, frnd, _ = evaluate(model, fixture, f"fixture {os.path.relpath(args.fixture, ROOT)}")
        report["holdout"] = {"network": args.holdout_network, "tasks": [g.name() for g in held],
                             "pairwise_accuracy": mean and round(mean, 4), "random": rnd and round(rnd, 4)}
        if fixture:
            report["fixture"] = {"file": os.path.relpath(args.fixture, ROOT), "pairwise_accuracy": round(fmean, 4),
                                 "random": round(frnd, 4)}
    if args.no_write:
        return 0
    print("final model: every task of the corpus")
    final_groups = [g for g in groups if g.key not in {f.key for f in fixture}]
    model = train(final_groups, params)
    write_model(model, final_groups, report, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
