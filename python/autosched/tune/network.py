"""Timing the network built from the best schedules: a phase of the tuning session (session.py runs it between
rounds when it is due), which scales each task's latency by what its kernels take in the network.

The network and how to time it come from the caller as an object (graph.NetworkTiming, made by graph/ or the
command line: its due(elapsed_s) and measure(tasks, states, costs, elapsed_s) -> graph.NetworkTimes); the tuning
layer never imports graph/.
"""
import collections
import time

from ..core.text import format_durations

__all__ = ["NetworkTimingPhase", "SCALE_TIMINGS"]

# A task's latency scale is the least of its last this many network timings: a machine shared with other work
# can run everything at half speed for tens of seconds, and a timing that falls in such a spell would
# otherwise double a task's latency until the next one.
SCALE_TIMINGS = 3


class NetworkTimingPhase:
    """The network timing of one session: `timing` (a graph.NetworkTiming), the tasks and their weights."""

    def __init__(self, timing, tasks, weights):
        self.timing = timing
        self.tasks = tasks
        self.weights = weights
        self._recent_scales = {}  # task index -> its scales of the last SCALE_TIMINGS network timings
        self._recent_between = collections.deque(maxlen=SCALE_TIMINGS)

    def run(self, session):
        """When the timing is due and every task not done has a valid schedule: builds the network from the best
        schedules, times its kernels in it, and scales each task's latency (the estimate and the rounds) by
        what its kernels took there per second of its tuner-timed latency, the least of its last
        SCALE_TIMINGS timings; the time between the kernels (the least of as many) replaces outside_kernels_s.
        A failure is reported once and ends the timing, never the session. A timing expected to end after the
        session's time budget is skipped (timing_seconds), and the stop reason says so."""
        timing, result = self.timing, session.result
        elapsed = time.monotonic() - session.start
        if timing is None or not timing.due(elapsed):
            return
        tuned = [tt.result for tt in session.tuners]
        # Every task that may still get one has a valid schedule (one given up runs its baseline there).
        if any(r.best_state is None and i not in result.done for i, r in enumerate(tuned)):
            return
        budget = session.budget
        expected = self.timing_seconds(session) if budget.seconds is not None else 0.0
        if not budget.fits(expected):
            budget.note("network timing", f"the network timing due at {elapsed:.0f} s was skipped: it takes about "
                                          f"{expected:.1f} s, {max(0.0, budget.seconds_left()):.1f} s were left")
            return
        try:
            times = timing.measure(self.tasks, [r.best_state for r in tuned], [r.best_cost for r in tuned],
                                   elapsed_s=elapsed)
        except Exception as err:  # a network that does not build must not end the tuning
            session.reporter.warning(f"Network timing failed ({type(err).__name__}: {err}); the estimate keeps "
                                     "the kernels' tuner-timed latencies from now on")
            self.timing = None
            return
        timed = kernels = 0.0  # of the tasks scaled: tuner-timed and in-network seconds
        for i, (w, r, seconds) in enumerate(zip(self.weights, tuned, times.task_seconds)):
            if seconds is not None and seconds > 0 and r.best_cost:
                recent = self._recent_scales.setdefault(i, collections.deque(maxlen=SCALE_TIMINGS))
                recent.append(seconds / (w * r.best_cost))
                result.latency_scales[i] = min(recent)
                timed, kernels = timed + w * r.best_cost, kernels + seconds
        self._recent_between.append(times.between_s)
        result.outside_kernels_s = min(self._recent_between)
        kernel_scale = kernels / timed if timed else 1.0
        result.network_timings.append(dict(at_s=elapsed, run_s=times.run_s, between_s=times.between_s,
                                           kernel_scale=kernel_scale, seconds=times.seconds))
        if session.verbose:  # a detail of the estimate: verbose 2
            run_text, between_text = format_durations(times.run_s, times.between_s)
            session.reporter.debug(
                f"Network timing at {elapsed:.0f} s: the network built from the best schedules runs in "
                f"{run_text}; its kernels take {kernel_scale:.2f}x their tuner-timed latency there, {between_text} "
                f"between them (built and timed in {times.seconds:.1f} s)")

    def timing_seconds(self, session):
        """The seconds a network timing is expected to take: the last one's, or before the first, a build of
        each task's kernel (what a measurement of the task took, on average) and the timed runs of the network
        at twice the estimated latency (its kernels are slower in the network, see graph/network_timing.py)."""
        if session.result.network_timings:
            return session.result.network_timings[-1]["seconds"]
        builds = 0.0
        for tt in session.tuners:
            measured = tt.result.trials - tt.result.resumed_trials
            builds += tt.result.seconds["measure"] / measured if measured > 0 else 0.0
        latency, _ = session.estimated_latency()
        timing = self.timing
        runs = (getattr(timing, "number", 10) * getattr(timing, "repeat", 3) + 2) * 2 * latency
        return builds + runs
