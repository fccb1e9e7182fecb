"""Transfer seeds: a task's search starts from the best schedules of similar tasks.

Two tasks are similar when their DAGs have the same compute structure (`ComputeDAG.structure_key()`: the same
ops, stages and access patterns, other shapes) and their targets the same kind (llvm, opencl). Before each
search round of a task, a tuning session (session.TuningSession, with TuningOptions(transfer_seeds=True), the
default) gives the round (its _core.RoundParams.transfer_seeds) the best states of the similar tasks it knows,
closest in FLOPs first, when they changed since the task's last round:

- the best schedule so far of every other task of the session (so the second convolution of a ResNet starts
  where the first ended, and follows it as it improves);
- the fastest records of other tasks in the logs the session reads: the resumed logs (the options'
  RecordToFile logs, a scheduler's load_log_file) and TuningOptions.transfer_logs.

The core re-fits each to the task (cpp/search/transfer_seeds.h: the steps replayed on the task's DAG, split
lengths that no longer divide the new extents replaced by the nearest that do, the result checked as any
searched state is) and drops those that do not fit; the seeds join every round's initial population, and the
first few not measured yet are measured at once (SearchParams.transfer_seeds_measured).

    from autosched.tune import transfer
    state, failure, message = transfer.refit(task, state_of_a_similar_task)   # None, "padding", "..."
"""
import math

from .. import _core
from ..core.record_log import read_logs

__all__ = ["similarity_key", "refit", "seeds_text", "note_seeds_measured", "SeedSources", "MAX_SEEDS",
           "RECORDS_PER_TASK"]

# Seeds a task's policy holds at most, and the fastest records of each other task a log contributes.
MAX_SEEDS = 8
RECORDS_PER_TASK = 2


def similarity_key(task):
    """(compute structure key, target kind): tasks with the same key share schedules."""
    return task.compute_dag.structure_key(), task.target.kind


def refit(task, state, params=None):
    """The schedule `state` of a similar task re-fitted to `task`: (State or None, failure, message); failure
    is "" on success, "dissimilar" for another compute structure, else why the re-fitted schedule was
    refused ("replay", "infer_bound", "padding", "lower")."""
    refit, failure, message = _core.refit_state(task, state, params)
    return refit, failure, message


def _flop_distance(a, b):
    return abs(math.log(max(a, 1.0) / max(b, 1.0)))


class SeedSources:
    """The sources of transfer seeds of one session: its tuners (their best states as they improve) and the
    records of the logs it read. seeds_for(i): the seeds of tuner i's next round when they changed since its
    last round (the round gives them to its policy), else None."""

    def __init__(self, tuners, records=(), max_seeds=MAX_SEEDS):
        self.tuners = tuners
        self.max_seeds = max_seeds
        self.keys = [similarity_key(tt.task) for tt in tuners]
        own = {(tt.task.workload_key, tt.task.target.text) for tt in tuners}
        # similarity key -> [(workload key, target text, flop, cost, core state)], the fastest records of each
        # task that is not one of the session's
        by_task = {}
        for _, rec in records:
            task = rec.task
            if not rec.result.ok or (task.workload_key, task.target.text) in own:
                continue
            by_task.setdefault((task.workload_key, task.target.text), []).append(rec)
        self.logged = {}
        for (key, target), recs in by_task.items():
            recs.sort(key=lambda r: r.result.mean_cost)
            task = recs[0].task
            for rec in recs[:RECORDS_PER_TASK]:
                self.logged.setdefault(similarity_key(task), []).append(
                    (key, target, task.compute_dag.flop_ct, rec.result.mean_cost, rec.state))
        self.given = [None] * len(tuners)  # per tuner: the source keys its policy has

    @classmethod
    def of_session(cls, session, records):
        """The sources of a session.TuningSession whose options ask for transfer seeds (else None): its tuners
        and `records` (what it resumed) with those of its options' transfer_logs."""
        if not session.options.transfer_seeds:
            return None
        return cls(session.tuners, list(records) + read_logs(session.options.transfer_logs, stacklevel=4))

    def sources(self, i):
        """The states of tasks similar to tuner i, best first: the same target before another of its kind,
        then the closest in FLOPs, then the fastest."""
        tt = self.tuners[i]
        flop, target = tt.task.compute_dag.flop_ct, tt.task.target.text
        found = []
        for j, other in enumerate(self.tuners):
            best = other.result.best_state
            if j == i or self.keys[j] != self.keys[i] or best is None:
                continue
            found.append((other.task.workload_key, other.task.target.text, other.task.compute_dag.flop_ct,
                          other.result.best_cost, best))
        found += self.logged.get(self.keys[i], [])
        found.sort(key=lambda s: (s[1] != target, _flop_distance(s[2], flop), s[3]))
        return found[:self.max_seeds]

    def seeds_for(self, i):
        """The states of tuner i's next round's transfer seeds (_core.RoundParams.transfer_seeds) when they
        changed since they were last given, else None (the policy keeps the seeds it has)."""
        found = self.sources(i)
        ident = [(s[0], s[1], _core.state_key(s[4])) for s in found]
        if ident == self.given[i]:
            return None
        self.given[i] = ident
        return [s[4] for s in found]


def note_seeds_given(tuner, report, reporter=None, label=""):
    """After a round given seeds: the count in the tuner's TuneResult, and a line through `reporter` (a
    progress.Progress; DEBUG: shown at verbose 2). label: how the line names the task ("" for a task alone)."""
    r = tuner.result
    r.transfer_seeds = report["kept"]
    if reporter is not None and report["given"]:
        drops = ", ".join(f"{k} {v}" for k, v in sorted(report["drops"].items()))
        line = f"Transfer:{label} {report['kept']} seeds of similar tasks in its search" + (
            f" (dropped: {drops})" if drops else "")
        reporter.debug(line)


def note_seeds_measured(tuner, rnd):
    """After a search round of a task_tuner.TaskTuner: counts the seeds the round measured (its batch starts with
    them) and whether the task's best schedule is one of the seeds measured."""
    picked = tuner.policy.last_round["picked_transfer"]
    r = tuner.result
    if picked:
        r.transfer_seeds_measured += picked
        r.transfer_seed_keys.update(rnd.keys[:picked])
    if r.transfer_seed_keys and r.best_state is not None:
        r.best_from_transfer = _core.state_key(r.best_state) in r.transfer_seed_keys


def seeds_text(results):
    """'3 tasks got 7 seeds of similar tasks, 5 measured; the best schedule of 1 task is a seed' (of
    TuneResults)."""
    seeded = [r for r in results if r.transfer_seeds or r.transfer_seeds_measured]
    if not seeded:
        return "none (no similar task with a schedule)"
    seeds = sum(r.transfer_seeds for r in seeded)
    measured = sum(r.transfer_seeds_measured for r in seeded)
    best = sum(1 for r in seeded if r.best_from_transfer)
    which = "" if len(results) == 1 else f"{len(seeded)} task{'s' if len(seeded) > 1 else ''} got "
    text = f"{which}{seeds} seed{'s' if seeds != 1 else ''} of similar tasks, {measured} measured"
    if best:
        text += (f"; the best schedule of {best} task{'s' if best > 1 else ''} is a seed" if len(results) > 1
                 else "; the best schedule is one")
    return text
