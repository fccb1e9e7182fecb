// TuningParams: the scalar knobs of a tuning session, in one field list
// (support/fields.h). python/autosched/tuner.py's TuningOptions is the Python
// subclass of its binding that adds the fields holding Python objects
// (builder, runner, measure callbacks, transfer logs). An optional field is
// std::optional: None in Python, "no limit" to the session.
#pragma once

#include <cstdint>
#include <optional>

#include "support/fields.h"

namespace autosched {

using OptionalInt64 = std::optional<int64_t>;
using OptionalDouble = std::optional<double>;

// clang-format off
#define AUTOSCHED_TUNING_PARAMS_FIELDS(X)                                                                     \
  X(int64_t, num_measure_trials, 64, AtLeast(0), "schedules to measure in all (a resumed log's records count)") \
  X(int64_t, num_measures_per_round, 64, AtLeast(1), "schedules per search round")                            \
  X(OptionalInt64, early_stopping, std::nullopt, AtLeast(1),                                                  \
    "stop a task after this many trials without a better schedule (None: never)")                            \
  X(OptionalDouble, time_budget_s, std::nullopt, Positive(),                                                  \
    "the tuning call's wall time in seconds, from the call to its summary (None: no limit): no round "       \
    "starts after it, a round's search, builds and runs stop at it (the states left are not measured, "      \
    "recorded nor counted), trainings and network timings that would end after it are skipped, and the "     \
    "stop reason says what it cut")                                                                           \
  X(int64_t, verbose, 1, AtLeast(0),                                                                          \
    "0 warnings only, 1 a progress bar and the summary, 2 also a line per round and the search's own "       \
    "statistics (logging levels WARNING, INFO, DEBUG of the \"autosched\" logger)")                          \
  X(OptionalDouble, peak_gflops, std::nullopt, Positive(),                                                    \
    "the target's peak for \"% of peak\" (None: the core's estimate, see autosched.peak_gflops)")            \
  X(double, search_time_share, 0.15, Share(),                                                                \
    "the share of tuning time the search and the cost model may take beside measuring: each round's "         \
    "evolutionary search gets a population sized to what is left of it (down to a floor), and the cost "      \
    "model retrains when its part covers a training (or a quarter more programs wait). 1: no limit (the "     \
    "SearchParams population every round, a training after every round)")                                     \
  X(bool, transfer_seeds, true, AnyValue(),                                                                   \
    "seed each task's search with the best states of similar tasks (the session's others, and records in "   \
    "the logs it reads), re-fitted to its extents (see autosched.transfer)")
// clang-format on

struct TuningParams {
  AUTOSCHED_OPTIONS_FIELDS(TuningParams, AUTOSCHED_TUNING_PARAMS_FIELDS)
};

}  // namespace autosched
