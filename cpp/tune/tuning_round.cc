#include "tune/tuning_round.h"

#include <chrono>

#include "search/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TuningRound MeasureRound(SketchPolicy& policy, std::vector<State> states, const RoundIo& io) {
  AS_ICHECK(io.measurer != nullptr, "a tuning round needs a measurer");
  if (states.empty()) return TuningRound{};
  auto start = std::chrono::steady_clock::now();
  std::vector<MeasureResult> results = io.measurer->Measure(policy.task(), states);
  const double measure_seconds = SecondsSince(start);
  TuningRound round = RecordRound(policy, std::move(states), std::move(results), io);
  round.measure_seconds = measure_seconds;
  return round;
}

TuningRound RecordRound(SketchPolicy& policy, std::vector<State> states, std::vector<MeasureResult> results,
                        const RoundIo& io) {
  AS_CHECK(results.size() == states.size(), "a tuning round needs one result per measured state, got "
                                                << results.size() << " results for " << states.size()
                                                << " states");
  TuningRound round;
  round.states = std::move(states);
  round.results = std::move(results);
  if (round.states.empty()) return round;
  // Records first: a session killed during the model's update keeps them.
  for (RecordWriter* writer : io.writers) {
    for (size_t i = 0; i < round.states.size(); ++i)
      writer->Write(io.task_json, round.states[i], round.results[i]);
    for (std::string& notice : writer->TakeNotices()) round.notices.push_back(std::move(notice));
  }
  const double update_before = policy.model_update_seconds();
  policy.RecordMeasured(round.states, round.results);
  round.cost_model_seconds += policy.model_update_seconds() - update_before;
  round.keys.reserve(round.states.size());
  for (const State& s : round.states) round.keys.push_back(StateKey(s));
  return round;
}

TuningRound SearchRound(SketchPolicy& policy, int num_measure, const RoundIo& io) {
  std::vector<State> states = policy.ContinueSearchOneRound(num_measure);
  const SearchRoundStats& stats = policy.last_round();
  const double search = stats.search_seconds(), model = stats.cost_model_seconds();
  TuningRound round = MeasureRound(policy, std::move(states), io);
  round.searched = true;
  round.search_seconds += search;
  round.cost_model_seconds += model;
  return round;
}

}  // namespace autosched
