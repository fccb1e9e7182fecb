"""Trains the cost model shipped in the package from record logs of scripts/make_cost_model_records.py.

    python3 scripts/train_pretrained_model.py --corpus DIR_OR_LOG ... [--holdout-family F ... | all]
        [--holdout-network NAME] [--holdout-task TEXT ...] [--objective regression|rank]
        [--fixture tests/records/pretrained_holdout.json.gz] [--no-write] [--kind llvm|opencl]

1. Reads the successful records of llvm targets in the corpus (folders: their records_*.json[.gz] logs). A
   task is a workload on one CPU (the CPU is named by the log's file name, records_<cpu>_job<k>.json, else by
   the hardware parameters of its records): the labels of the cost model are normalised per task, so the
   timings of two CPUs are never compared.
2. Holds out the tasks of --holdout-network (the task's description starts with the network's name) and of
   --holdout-task (a text in the description), trains on the others, and prints the pairwise accuracy on each
   held-out task's records (pairs of records with different costs that the scores order right), their mean,
   and RandomModel's; the same for the --fixture log (a task in no corpus: tests/records/).
   --holdout-family F holds out a whole family of the corpus (the families of each task are in the corpus
   folder's task_families.json: cnn, mobile, vit, encoder, decoder, ops): every task tagged with F, and with
   it every task of another family or CPU with the same workload key. Repeated, each family is held out in
   turn (one training each); "all" holds out every family of the corpus in turn (leave one family out).
   Each prints the pairwise accuracy per held-out task, per task kind (softmax, layer_norm, dense, matmul,
   conv, depthwise, pooling, ...) and its mean with RandomModel's.
   The default corpus is tests/records/corpus (the records the shipped model is trained on, README.md there).
   --kind opencl reads the records of OpenCL targets instead (a GPU's: "CPU" above is then the device, named by
   the log's file name), by default from tests/records/gpu_corpus (records of an H100, README.md there).
3. Trains on every task and writes the model into python/autosched/data/ (cost_model_<kind>.<feature set>.json,
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
# small file in the package. It ranks (objective "rank"): on the families held out of tests/records/corpus it
# ordered the programs better than the regression did (docs/cost_model.md).
MODEL_PARAMS = dict(objective="rank", max_depth=4, eta=0.05, min_child_weight=2.0, max_rounds=1500,
                    early_stopping_rounds=30, validation_fraction=0.1, num_warmup_samples=0, subsample=0.8, colsample_bytree=0.8,
                    label_octaves=4.0, label_weight_power=1.0)


# Task kinds, by the first of these words found in a task's description (after its model's name).
KINDS = (("softmax", "softmax"), ("layer_norm", "layer_norm"), ("rms_norm", "norm"), ("depthwise", "depthwise"),
         ("winograd", "conv_winograd"), ("conv", "conv"), ("pool", "pooling"), ("batch_matmul", "matmul"),
         ("matmul", "matmul"), ("dense", "dense"), ("layout_transform", "layout"), ("take", "gather"))


def task_kind(desc):
    """The kind of a task from its description ("resnet18.3 conv2d_nchwc_relu 1x8x56x56x8" -> "conv")."""
    words = desc.split()
    op = words[1] if len(words) > 1 and "." in words[0] and words[0].rsplit(".", 1)[1].isdigit() else \
        (words[0] if words else "")
    return next((kind for word, kind in KINDS if word in op), "elementwise")


class Group:
    """The records of one task on one CPU."""

    def __init__(self, key, cpu, desc, task):
        self.key, self.cpu, self.desc = key, cpu, desc
        self.families = ()  # the corpus's family tags of the workload (task_families.json)
        self.kind = task_kind(desc)
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


def read_families(paths):
    """workload key -> families, from the task_families.json of each corpus folder (or beside each log)."""
    families = {}
    folders = {p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p)) for p in paths}
    for folder in sorted(folders):
        path = os.path.join(folder, "task_families.json")
        if os.path.exists(path):
            with open(path) as f:
                for key, entry in json.load(f).items():
                    families[key] = sorted(set(families.get(key, ())) | set(entry["families"]))
    return families


def held_out(groups, families):
    """The groups of tasks tagged with any of `families`, and of every other task (another family's, another
    CPU's) with the workload key of one of those: the model must never have seen the held-out programs."""
    keys = {g.key for g in groups if set(g.families) & set(families)}
    return [g for g in groups if g.key in keys]


def cpu_of(path, hw):
    match = re.match(r"records_(.+?)_(holdout_)?job\d+\.json", os.path.basename(path))
    if match:
        return match.group(1)
    return f"vec{hw.vector_unit_bytes}-l1_{hw.l1_cache_bytes}-l2_{hw.l2_cache_bytes}"


def load_groups(files, kind="llvm"):
    """Groups of successful records of `kind` targets by (workload key, CPU or device), in file order; and counts
    of what was skipped."""
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
            if task.target.kind != kind:
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


# Pairs whose costs differ by less than this ratio are within the timing noise of a loaded machine: the share
# of the others ordered right tells what the model knows apart from the noise.
CLEAR_RATIO = 1.1


def clear_accuracy(scores, costs):
    """Pairwise accuracy over the pairs whose costs differ by more than CLEAR_RATIO (None: no such pair)."""
    right = total = 0
    for i in range(len(costs)):
        for j in range(i + 1, len(costs)):
            lo, hi = sorted((costs[i], costs[j]))
            if hi > lo * CLEAR_RATIO:
                total += 1
                fast, slow = (i, j) if costs[i] < costs[j] else (j, i)
                right += 1 if scores[fast] > scores[slow] else 0.5 if scores[fast] == scores[slow] else 0
    return right / total if total else None


def evaluate(model, groups, label, per_task=True):
    """Per group pairwise accuracy of `model` and of RandomModel; returns (mean, random mean, rows)."""
    rows, clear = [], []
    for g in groups:
        scores = model.predict(g.task, g.states)
        rows.append((g.name(), len(g.states), pairwise_accuracy(scores, g.costs), accuracy(RandomModel(seed=1), g),
                     g.kind))
        clear.append(clear_accuracy(scores, g.costs))
    if not rows:
        return None, None, rows
    print(f"  {label}: {'records':>7}  {'model':>6}  {'random':>6}  model on pairs > {CLEAR_RATIO}x apart")
    if per_task:
        for (name, n, acc, rnd, _), c in zip(rows, clear):
            print(f"    {name[:70]:<70} {n:>7}  {acc:6.3f}  {rnd:6.3f}  " + ("-" if c is None else f"{c:6.3f}"))
    mean = sum(r[2] for r in rows) / len(rows)
    rnd = sum(r[3] for r in rows) / len(rows)
    clear = [c for c in clear if c is not None]
    print(f"    mean over {len(rows)} tasks: model {mean:.3f}, random {rnd:.3f}; on pairs > {CLEAR_RATIO}x apart "
          + (f"{sum(clear) / len(clear):.3f}" if clear else "-"))
    return mean, rnd, rows


def by_kind(rows):
    """kind -> (tasks, mean accuracy, mean random accuracy) of evaluate's rows; printed."""
    kinds = {}
    for _, _, acc, rnd, kind in rows:
        kinds.setdefault(kind, []).append((acc, rnd))
    out = {}
    for kind, values in sorted(kinds.items()):
        out[kind] = (len(values), sum(a for a, _ in values) / len(values), sum(r for _, r in values) / len(values))
        print(f"    kind {kind:<14} {out[kind][0]:>4} tasks  model {out[kind][1]:.3f}  random {out[kind][2]:.3f}")
    return out


def holdout_families(groups, families, params, save_dir=None):
    """Holds out each family of `families` in turn: trains on the rest, prints the accuracy per task and kind.
    Returns family -> {"tasks", "pairwise_accuracy", "random", "kinds"}."""
    report = {}
    for family in families:
        held = held_out(groups, [family])
        rest = [g for g in groups if g not in held]
        if not held:
            print(f"family {family}: no task of the corpus is tagged with it")
            continue
        print(f"family {family} held out: {len(held)} tasks ({sum(len(g.states) for g in held)} records), "
              f"training on {len(rest)}")
        model = train(rest, params)
        if save_dir:  # e.g. for bench/bench_pretrained_curves.py: a model that never saw the family
            os.makedirs(save_dir, exist_ok=True)
            model.save(os.path.join(save_dir, f"cost_model_without_{family}.json"))
        mean, rnd, rows = evaluate(model, held, f"held-out family {family}")
        kinds = by_kind(rows)
        report[family] = {"tasks": len(held), "pairwise_accuracy": round(mean, 4), "random": round(rnd, 4),
                          "kinds": {k: {"tasks": n, "pairwise_accuracy": round(a, 4), "random": round(r, 4)}
                                    for k, (n, a, r) in kinds.items()}}
    if report:
        accs = [r["pairwise_accuracy"] for r in report.values()]
        print(f"held-out families {', '.join(report)}: mean pairwise accuracy {sum(accs) / len(accs):.3f} "
              f"(random {sum(r['random'] for r in report.values()) / len(report):.3f})")
    return report


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


def write_model(model, groups, report, out_dir, kind="llvm"):
    os.makedirs(out_dir, exist_ok=True)
    fid = pretrained.feature_set_id()
    name = f"cost_model_{kind}.{fid}.json"
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
    old = manifest.get(kind, {}).get("file") if isinstance(manifest.get(kind), dict) else None
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
    manifest[kind] = {
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
    p.add_argument("--kind", default="llvm", choices=("llvm", "opencl"), help="the target kind whose records count")
    p.add_argument("--corpus", nargs="+", default=None,
                   help="folders of logs (make_cost_model_records.py --out) or logs (default: tests/records/corpus, "
                        "with --kind opencl tests/records/gpu_corpus)")
    p.add_argument("--holdout-network", default="", help="a network whose tasks are held out ('' none)")
    p.add_argument("--holdout-family", action="append", default=[],
                   help="a family of the corpus held out in turn (task_families.json; 'all': every one)")
    p.add_argument("--holdout-task", action="append", default=[], help="a text of held-out tasks' descriptions")
    p.add_argument("--fixture", default=None,
                   help="a log of a task in no corpus, also evaluated (default: tests/records/"
                        "pretrained_holdout.json.gz for llvm, none for opencl)")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "python", "autosched", "data"))
    p.add_argument("--exclude-cpu", action="append", default=[],
                   help="leave out the records of this CPU (e.g. a corpus timed on a loaded machine)")
    p.add_argument("--no-write", action="store_true", help="evaluate only")
    p.add_argument("--save-holdout-models", default=None,
                   help="a folder to save each --holdout-family model in (cost_model_without_<family>.json)")
    for name, value in MODEL_PARAMS.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    args = p.parse_args(argv)
    if args.objective not in ("regression", "rank"):
        p.error(f"--objective must be regression or rank, got {args.objective!r}")
    if args.corpus is None:
        args.corpus = [os.path.join(ROOT, "tests", "records", "corpus" if args.kind == "llvm" else "gpu_corpus")]
    if args.fixture is None:
        args.fixture = DEFAULT_FIXTURE if args.kind == "llvm" else ""
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    params = {k: getattr(args, k) for k in MODEL_PARAMS}
    files = log_files(args.corpus)
    if not files:
        raise SystemExit("no record logs in the corpus")
    groups, skipped = load_groups(files, args.kind)
    families = read_families(args.corpus)
    for g in groups:
        g.families = families.get(g.key, ())
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
        fixture, _ = load_groups([args.fixture], args.kind)
        keys = {g.key for g in fixture}
        rest = [g for g in rest if g.key not in keys]  # never train on the fixture's task
    report = {"excluded_cpus": args.exclude_cpu, "objective": args.objective,
              "corpus": [os.path.relpath(os.path.abspath(p), ROOT) for p in args.corpus]}
    if args.holdout_family:
        known = sorted({f for g in groups for f in g.families})
        wanted = known if "all" in args.holdout_family else args.holdout_family
        unknown = [f for f in wanted if f not in known]
        if unknown:
            raise SystemExit(f"--holdout-family: no task of the corpus is tagged {', '.join(unknown)} (its "
                             f"families: {', '.join(known) or 'none: no task_families.json beside the logs'})")
        fixture_keys = set()
        if args.fixture and os.path.exists(args.fixture):
            fixture_keys = {g.key for g in load_groups([args.fixture], args.kind)[0]}
        report["holdout_families"] = holdout_families([g for g in groups if g.key not in fixture_keys], wanted,
                                                      params, args.save_holdout_models)
    if held or fixture:
        print(f"held out: {len(held)} tasks; training on {len(rest)}")
        model = train(rest, params)
        mean, rnd, _ = evaluate(model, held, "held-out tasks")
        fmean, frnd, _ = evaluate(model, fixture, f"fixture {os.path.relpath(args.fixture, ROOT)}")
        if held:
            report["holdout"] = {"network": args.holdout_network, "tasks": [g.name() for g in held],
                                 "pairwise_accuracy": round(mean, 4), "random": round(rnd, 4)}
        if fixture:
            report["fixture"] = {"file": os.path.relpath(args.fixture, ROOT), "pairwise_accuracy": round(fmean, 4),
                                 "random": round(frnd, 4)}
    if args.no_write:
        return 0
    print("final model: every task of the corpus")
    final_groups = [g for g in groups if g.key not in {f.key for f in fixture}]
    model = train(final_groups, params)
    write_model(model, final_groups, report, args.out_dir, args.kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())
