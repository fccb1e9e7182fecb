"""The time budget of a tuning call (TuningOptions.time_budget_s): the wall time from the call to its last line.

    budget = TimeBudget(60, start=time.monotonic())
    budget.seconds_left()          # what the next round may take (the core's deadline_s)
    budget.note("cut", "...")      # what the budget's end cut or skipped, for the stop reason
    budget.stop_reason()           # "time budget of 60.0 s used (the budget's end cut ...)"

The clock starts at the call: TaskScheduler.tune and task.tune at their entry (making the cost models, reading
logs and transfer count), the command line `autosched tune` when its process started (process_start: loading
the model and extracting its tasks count too). Every phase of a session honours the end:

- a round is one core call with the end as its deadline (_core.tuning_round, RoundParams.deadline_s): its search
  stops there (sampling, breeding, scoring), builds and runs in progress are abandoned, and the cost model's
  training is deferred;
- between rounds, a training of a deferred cost model (share.SearchShare) and a timing of the network
  (network.NetworkTimingPhase) start only when their expected time fits in what is left;
- no round starts after the end, and the summary follows at once.

Whatever the end cut or skipped is said in the stop reason.
"""
import os
import time

__all__ = ["TimeBudget", "process_start"]

_IMPORTED = time.monotonic()


def process_start():
    """The time.monotonic() value at which this process started (Linux: from /proc/self/stat), or when this
    module was imported where that is unknown: the start of a command's budget."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command's name: field 3 (state) on
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime, in ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED
    if not 0 <= age < 86400 * 365:
        return _IMPORTED
    return min(_IMPORTED, time.monotonic() - age)


class TimeBudget:
    """The end of a tuning call's time budget (seconds None: no budget) and what that end cut."""

    def __init__(self, seconds, start=None):
        self.seconds = seconds
        self.start = time.monotonic() if start is None else start
        self.notes = {}  # kind -> text, in the order they came

    @property
    def end(self):
        return None if self.seconds is None else self.start + self.seconds

    def elapsed(self):
        return time.monotonic() - self.start

    def seconds_left(self):
        """Seconds to the end (negative past it); None without a budget."""
        return None if self.seconds is None else self.end - time.monotonic()

    def passed(self):
        return self.seconds is not None and time.monotonic() >= self.end

    def fits(self, seconds):
        """Whether something expected to take `seconds` ends before the end."""
        left = self.seconds_left()
        return left is None or seconds < left

    def note(self, kind, text):
        """Keeps what the end cut or skipped (once per kind: the first)."""
        self.notes.setdefault(kind, text)

    def note_search_cut(self, name):
        self.note("search", f"the budget's end cut the search of {name}'s round short (nothing measured)")

    def note_round(self, name, rnd):
        """What the end did to a core round of task `name` (a _core.TuningRound)."""
        if rnd.search_cut:
            self.note_search_cut(name)
        if rnd.skipped:
            self.note("measure", f"the budget's end stopped the measurements of {name}'s round: {rnd.skipped} "
                                 f"of {rnd.skipped + len(rnd.states)} states not measured")
        if rnd.training_deferred:
            self.note("training", "the cost model's training after the last round was deferred to the model's "
                                  "next update")

    def stop_reason(self):
        notes = "; ".join(self.notes.values())
        return f"time budget of {self.seconds} s used" + (f" ({notes})" if notes else "")
