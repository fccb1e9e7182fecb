"""Keeps the search and the cost model of a tuning session to a share of its time (TuningOptions.search_time_share).

Measuring is what finds fast schedules; the evolutionary search and the cost model's training only decide what
to measure. With the defaults of the search (a population of up to 2048 states, 4 generations, every state
lowered and scored) and a training of the cost model after every round, a network's session spent half its
wall time choosing. SearchShare budgets that time: of every second spent measuring, share / (1 - share)
seconds may go to choosing, split between two accounts:

- the search: each round's population is sized to what is left of the search's account (round_params: the
  round's _core.RoundParams, for that round only; the policy's own SearchParams never change), from
  the seconds per state the task's last rounds took (at least POPULATION_FLOOR states, or 3 per state to
  measure, and at most the population the policy was made with). A round the account affords only at that
  floor goes on from the task's last generation (SearchParams.evolutionary_search_carry_over: a quarter of the
  population sampled anew instead of all of it) with the generations the account affords, at least one;
- the cost model: an XGBModel trains only when its account covers the training (its last one, scaled by the
  data grown since) or when a quarter more programs than it was trained on wait (STALE_GROWTH), so it never
  falls far behind. The model defers training meanwhile (XGBModel.defer_training) and takes it up again after
  the session. These trainings run between rounds, while the
  workers wait, so they use every core (train_pending(threads=0)). Near the end of the session's time budget
  (budget.TimeBudget) a training starts only when its estimate fits in what is left, and its boosting stops at
  the end (the programs then wait for the model's next training); the stop reason says so.

An account may go below zero (a floor-sized search, a forced training); the next rounds then pay it back. The
time of resuming logs and of transfer (before the first round) is not counted.
"""

import time

from .. import _core
from ..search.policy import SearchParams

__all__ = ["SearchShare", "POPULATION_FLOOR", "TRAINING_PART", "STALE_GROWTH", "round_search_params",
           "ROUND_POPULATION_PER_STATE", "ROUND_POPULATION_MIN", "CARRIED_FIRST_GENERATION"]

# The evolutionary search of a round measuring n states keeps a population of n * ROUND_POPULATION_PER_STATE
# states, at least ROUND_POPULATION_MIN and at most the SearchParams default (2048): a round of 16 searches
# 512 states instead of 2048 (docs/notes/task_scheduler_figures.md has the measurements behind these numbers).
ROUND_POPULATION_PER_STATE = 32
ROUND_POPULATION_MIN = 512

# The smallest population a round's search is given, whatever is left of the account.
POPULATION_FLOOR = 48
# A round at the floor goes on from the task's last generation (SearchParams.evolutionary_search_carry_over): its
# initial population (that generation, a quarter of it sampled anew, measured seeds) is about this many
# generations' worth of states.
CARRIED_FIRST_GENERATION = 1.5
# The cost model's part of the share (training); the search gets the rest.
TRAINING_PART = 0.25
# A deferred model trains anyway when this share more programs than it was trained on wait.
STALE_GROWTH = 0.25


def round_search_params(num_measures_per_round):
    """The SearchParams of the default search policy for rounds of `num_measures_per_round` states: the
    defaults, with the evolutionary search's population sized to the round (see ROUND_POPULATION_PER_STATE)."""
    params = SearchParams(num_measures_per_round=num_measures_per_round)
    wanted = max(ROUND_POPULATION_MIN, num_measures_per_round * ROUND_POPULATION_PER_STATE)
    params.evolutionary_search_population = min(params.evolutionary_search_population, wanted)
    return params


class SearchShare:
    """The budget of one TuningSession (its tuners); inactive (every method a no-op) when share >= 1. time_budget:
    the session's budget.TimeBudget (None: no time budget)."""

    def __init__(self, tuners, share, time_budget=None):
        self.tuners = tuners
        self.time_budget = time_budget
        self.active = share < 1
        self.ratio = share / (1 - share) if self.active else float("inf")
        # the seconds already spent (resume, transfer) are not the rounds' to pay back
        self.measure0 = self._measure_seconds()
        self.choose0 = self._choose_seconds()
        self.trials0 = sum(tt.result.trials for tt in tuners)
        self.train_s = 0.0  # deferred trainings this session
        self.seconds_per_state = {}  # id(tuner) -> seconds per state and generation of its last searched round
        self.models = []
        self.trained_at = {}  # id(model) -> (programs, seconds) of its last training
        self.rounds = self.floor_rounds = self.trainings = self.forced_trainings = 0
        if not self.active:
            return
        for tt in tuners:
            model = tt.policy.cost_model
            if hasattr(model, "defer_training") and not any(m is model for m in self.models):
                model.defer_training = True
                self.models.append(model)

    def close(self):
        """Ends the deferral: each model trains at its next update, as outside a session."""
        for model in self.models:
            model.defer_training = False

    def summary(self):
        """A line on what the budget did, for the session's summary (None when inactive)."""
        if not self.active:
            return None
        measured = self._measure_seconds() - self.measure0
        chosen = self._choose_seconds() - self.choose0
        return (f"{chosen:.1f}s of search and cost model for {measured:.1f}s of measuring "
                f"({chosen / max(measured + chosen, 1e-9):.0%} of both; the share allows "
                f"{self.ratio / (1 + self.ratio):.0%}); {self.floor_rounds} of {self.rounds} sized rounds at the "
                f"floor population, going on from their task's last generation; {self.trainings} trainings ({self.forced_trainings} forced by waiting "
                f"programs) took {self.train_s:.1f}s")

    def _measure_seconds(self):
        return sum(tt.result.seconds["measure"] for tt in self.tuners)

    def _choose_seconds(self):
        return sum(tt.result.seconds["search"] + tt.result.seconds["cost_model"] for tt in self.tuners)

    def _allowed(self, part, extra_measure_s=0.0):
        """Seconds the account of `part` (a share of the whole) may still spend."""
        measured = self._measure_seconds() - self.measure0 + extra_measure_s
        return self.ratio * measured * part

    def round_params(self, tt, n):
        """The _core.RoundParams of task `tt`'s next round of n measurements: the population, generations and
        carry-over its search can afford (unset where the policy's own apply: inactive, or nothing searched
        yet). The policy's SearchParams are not changed: the round applies these for itself."""
        params = _core.RoundParams(num_measure=int(n))
        if not self.active:
            return params
        own = tt.policy.params
        limit, num_iters = own.evolutionary_search_population, own.evolutionary_search_num_iters
        floor = min(limit, max(POPULATION_FLOOR, 3 * n))
        rate = self.seconds_per_state.get(id(tt))
        if rate is None and self.seconds_per_state:
            rate = sorted(self.seconds_per_state.values())[len(self.seconds_per_state) // 2]
        if rate is None:
            return params  # nothing searched yet: the policy's own population
        trials = sum(t.result.trials for t in self.tuners) - self.trials0
        per_trial = (self._measure_seconds() - self.measure0) / max(1, trials)
        spent = self._choose_seconds() - self.choose0 - self.train_s
        left = self._allowed(1 - TRAINING_PART, n * per_trial) - spent
        population = int(left / (rate * (num_iters + 1))) if left > 0 else 0
        self.rounds += 1
        if population > floor:
            params.population = min(limit, population)
            return params
        # A round the account affords only at the floor goes on from the task's last generation instead of
        # sampling and breeding anew, with as many generations as the account affords (at least one, at most
        # the policy's own).
        self.floor_rounds += 1
        affordable = int(left / (rate * floor) - CARRIED_FIRST_GENERATION) if left > 0 else 0
        params.population = floor
        params.generations = min(num_iters, max(1, affordable))
        params.carry_over = True
        return params

    def after_round(self, tt, population):
        """Learns the seconds per state of task `tt`'s round (searched with `population` states), then trains
        the models whose turn it is."""
        if not self.active:
            return
        stats = tt.policy.last_round
        generations = max(1, stats["generations"])
        seconds = stats["search_seconds"] + stats["cost_model_seconds"]
        if stats["sampled"] and seconds > 0 and population:
            self.seconds_per_state[id(tt)] = seconds / (population * generations)
        for model in self.models:
            self._maybe_train(model, tt)

    def _maybe_train(self, model, tt):
        pending = model.untrained_programs
        if not pending:
            return
        total = model.num_samples
        trained, last_s = self.trained_at.get(id(model), (0, 0.0))
        estimate = last_s * total / trained if trained else 0.0
        left = self._allowed(TRAINING_PART) - self.train_s
        if trained and estimate > left and pending < STALE_GROWTH * trained:
            return
        forced = bool(trained) and estimate > left
        budget = self.time_budget
        if budget is not None and not budget.fits(estimate):
            budget.note("training", "a cost model's training that would end after it was deferred to the model's "
                                    "next update")
            return
        t0 = time.monotonic()
        # Between rounds nothing else runs here: the training takes every core. Its boosting stops at the end
        # of the time budget (the programs then wait for the model's next training).
        if model.train_pending(threads=0, deadline_s=None if budget is None else budget.seconds_left()):
            spent = time.monotonic() - t0
            self.train_s += spent
            self.trainings += 1
            self.forced_trainings += forced
            tt.result.seconds["cost_model"] += spent
            if model.last_training.cut_at_deadline:  # not a whole training: no estimate of the next
                budget.note("training", f"the budget's end stopped a cost model's training after "
                                        f"{model.last_training.rounds} boosting rounds")
                return
            self.trained_at[id(model)] = (total, spent)
