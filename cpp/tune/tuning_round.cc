#include "tune/tuning_round.h"

#include <algorithm>
#include <chrono>

#include "cost_model/xgboost_model.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The task as this round's records store it: with the work-group limit the
// round was measured and searched under, where the policy learned a lower one
// from the device's refusals than the task gives (SketchPolicy::RecordMeasured).
// The workload key and target, which records are matched by, stay the same.
nlohmann::json TaskInForce(const nlohmann::json& task_json, const SketchPolicy& policy) {
  const int64_t limit = policy.task().hardware_params.max_threads_per_block;
  if (policy.learned_max_threads_per_block() <= 0 || !task_json.contains("hardware_params")) return task_json;
  const nlohmann::json& hw = task_json["hardware_params"];
  if (!hw.is_object() || hw.value("max_threads_per_block", int64_t{0}) == limit) return task_json;
  nlohmann::json in_force = task_json;
  in_force["hardware_params"]["max_threads_per_block"] = limit;
  return in_force;
}

// Gives the policy a deadline for the scope of one round.
class PolicyDeadline {
 public:
  PolicyDeadline(SketchPolicy* policy, SteadyClock::time_point deadline)
      : policy_(policy), before_(policy->deadline()) {
    policy_->SetDeadline(deadline);
  }
  ~PolicyDeadline() { policy_->SetDeadline(before_); }
  PolicyDeadline(const PolicyDeadline&) = delete;
  PolicyDeadline& operator=(const PolicyDeadline&) = delete;

 private:
  SketchPolicy* policy_;
  SteadyClock::time_point before_;
};

// Gives states and results to the policy; past the deadline an XGBModel keeps
// the programs for its next update rather than training now (true then).
bool LearnRound(SketchPolicy& policy, const TuningRound& round, SteadyClock::time_point deadline) {
  auto* xgb = dynamic_cast<XGBModel*>(&policy.cost_model());
  const bool defer = xgb != nullptr && !xgb->defer_training() && SteadyClock::now() >= deadline;
  if (defer) xgb->set_defer_training(true);
  try {
    policy.RecordMeasured(round.states, round.results);
  } catch (...) {
    if (defer) xgb->set_defer_training(false);
    throw;
  }
  if (defer) xgb->set_defer_training(false);
  return defer;
}

}  // namespace

TuningRound MeasureRound(SketchPolicy& policy, std::vector<State> states, const RoundIo& io) {
  AS_ICHECK(io.measurer != nullptr, "a tuning round needs a measurer");
  if (states.empty()) return TuningRound{};
  auto start = std::chrono::steady_clock::now();
  std::vector<bool> measured;
  std::vector<MeasureResult> results = io.measurer->Measure(policy.task(), states, io.deadline, &measured);
  const double measure_seconds = SecondsSince(start);
  AS_ICHECK(results.size() == states.size(), "one result per measured state");
  int skipped = 0;
  if (std::find(measured.begin(), measured.end(), false) != measured.end()) {
    // The states the deadline left out are neither recorded nor learned from.
    std::vector<State> kept_states;
    std::vector<MeasureResult> kept_results;
    for (size_t i = 0; i < measured.size(); ++i) {
      if (!measured[i]) continue;
      kept_states.push_back(std::move(states[i]));
      kept_results.push_back(std::move(results[i]));
    }
    skipped = static_cast<int>(states.size() - kept_states.size());
    states = std::move(kept_states);
    results = std::move(kept_results);
  }
  TuningRound round = RecordRound(policy, std::move(states), std::move(results), io);
  round.measure_seconds = measure_seconds;
  round.skipped = skipped;
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
  const nlohmann::json task_json = TaskInForce(io.task_json, policy);
  for (RecordWriter* writer : io.writers) {
    for (size_t i = 0; i < round.states.size(); ++i)
      writer->Write(task_json, round.states[i], round.results[i]);
    for (std::string& notice : writer->TakeNotices()) round.notices.push_back(std::move(notice));
  }
  const double update_before = policy.model_update_seconds();
  round.training_deferred = LearnRound(policy, round, io.deadline);
  round.cost_model_seconds += policy.model_update_seconds() - update_before;
  round.keys.reserve(round.states.size());
  for (const State& s : round.states) round.keys.push_back(StateKey(s));
  return round;
}

TuningRound SearchRound(SketchPolicy& policy, int num_measure, const RoundIo& io) {
  std::vector<State> states;
  {
    PolicyDeadline deadline(&policy, std::min(io.deadline, policy.deadline()));
    states = policy.ContinueSearchOneRound(num_measure);
  }
  const SearchRoundStats& stats = policy.last_round();
  const double search = stats.search_seconds(), model = stats.cost_model_seconds();
  TuningRound round = MeasureRound(policy, std::move(states), io);
  round.searched = true;
  round.search_cut = stats.cut_at_deadline;
  round.search_seconds += search;
  round.cost_model_seconds += model;
  return round;
}

}  // namespace autosched
