// Measurer: what a tuning round (tune/tuning_round.h) measures its states
// with. LocalMeasurer (runner.h) builds and runs them in this machine's
// worker processes; a runner whose devices are elsewhere (RayRunner, in
// Python, through bindings/bind_tune.cc's trampoline) implements it too, so
// every round is the same core call whoever measures.
//
//   class Remote : public Measurer {
//     std::vector<MeasureResult> Measure(const SearchTask& task, const std::vector<State>& states,
//                                        SteadyClock::time_point deadline,
//                                        std::vector<bool>* measured) override;
//   };
#pragma once

#include <vector>

#include "measure/measure.h"
#include "measure/supervisor.h"
#include "task/search_task.h"

namespace autosched {

class Measurer {
 public:
  virtual ~Measurer() = default;

  // One result per state, in order. Nothing starts after `deadline`: the
  // states not measured by then get a result saying so and false in
  // *measured (one flag per state, when given; left empty, every state
  // counts as measured). Throws for a problem of the setup, never for a
  // candidate (a candidate's failure is its result's error).
  virtual std::vector<MeasureResult> Measure(const SearchTask& task, const std::vector<State>& states,
                                             SteadyClock::time_point deadline = kNoDeadline,
                                             std::vector<bool>* measured = nullptr) = 0;

  // The task's best time so far in seconds (0: none yet), set by the round
  // before measuring (RoundParams::best_seconds): a measurer may time
  // candidates many times slower by one run (RunnerOptions::cut_short_factor).
  double best_seconds_hint = 0;
};

}  // namespace autosched
