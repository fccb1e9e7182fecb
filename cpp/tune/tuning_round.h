// One round of tuning a task, all in the core: the search proposes states
// never measured (or the caller names them: the baselines), the workers
// measure them, their records are appended to the logs, and the search policy
// and its cost model learn from them. python/autosched/tuner.py drives a
// tuning session (one task or many) a round at a time, so a round crosses from
// Python into the core once and its states stay core states throughout.
//
//   RoundIo io{&measurer, {&writer}, task_json};
//   TuningRound r = SearchRound(policy, 64, io);   // r.states empty: nothing new
#pragma once

#include <string>
#include <vector>

#include "measure/records.h"
#include "measure/runner.h"
#include "search/sketch_policy.h"

namespace autosched {

// What a round measured and where its time went.
struct TuningRound {
  std::vector<State> states;           // measured, in order
  std::vector<MeasureResult> results;  // one per state
  std::vector<std::string> keys;       // StateKey of each state
  bool searched = false;               // the states came from the search
  double search_seconds = 0;           // the search without its cost model
  double cost_model_seconds = 0;       // the cost model: scoring in the search, then its update
  double measure_seconds = 0;          // building, verifying and timing
  std::vector<std::string> notices;    // the record writers' (a log removed or replaced meanwhile)
  // States proposed but not measured: the deadline passed first. They are
  // not recorded, not counted and may be proposed again.
  int skipped = 0;
  // The deadline passed during the search: it was cut short and proposed
  // nothing (not an exhausted search space).
  bool search_cut = false;
  // The deadline had passed when the cost model learned the round: an
  // XGBModel kept the programs for its next update instead of training now.
  bool training_deferred = false;
};

// Where a round's measurements go: the workers that measure, the logs that
// record them (none: not recorded), and the task as the records store it.
struct RoundIo {
  LocalMeasurer* measurer = nullptr;
  std::vector<RecordWriter*> writers;
  nlohmann::json task_json;
  // A time budget's end: the search stops there (SketchPolicy::SetDeadline),
  // builds and runs in progress are abandoned (LocalMeasurer::Measure), and
  // the cost model's training after it is deferred.
  SteadyClock::time_point deadline = kNoDeadline;
};

// Up to num_measure states from policy.ContinueSearchOneRound (searching
// until io.deadline at most), measured, recorded and learned from
// (MeasureRound). An exhausted search measures nothing: states is empty,
// and policy.last_round() says why (search_cut: the deadline passed).
TuningRound SearchRound(SketchPolicy& policy, int num_measure, const RoundIo& io);

// Measures `states` of the policy's task (those measured before io.deadline;
// the others only count in `skipped`), appends one record per state to
// every writer, then gives states and results to policy.RecordMeasured (the
// cost model's update; an XGBModel defers its training once io.deadline has
// passed). Throws what LocalMeasurer::Measure throws, before anything is
// recorded.
TuningRound MeasureRound(SketchPolicy& policy, std::vector<State> states, const RoundIo& io);

// The second half of MeasureRound, for states measured elsewhere (a runner
// whose devices are not this process's workers): appends one record per state
// to every writer, then gives states and results to policy.RecordMeasured.
// io.measurer is not used; measure_seconds stays 0.
TuningRound RecordRound(SketchPolicy& policy, std::vector<State> states, std::vector<MeasureResult> results,
                        const RoundIo& io);

}  // namespace autosched
