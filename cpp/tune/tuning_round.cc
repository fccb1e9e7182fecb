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

// Gives the policy a round's deadline and search parameters for the scope of
// the round; its own come back however the round ends.
class RoundScope {
 public:
  RoundScope(SketchPolicy* policy, const RoundParams& params)
      : policy_(policy), before_(policy->params()), deadline_before_(policy->deadline()) {
    AS_CHECK(params.num_measure >= 1, "a search round measures at least 1 state, got " << params.num_measure);
    AS_CHECK(!params.population || *params.population >= 1,
             "a round's search population must be at least 1, got " << *params.population);
    AS_CHECK(!params.generations || *params.generations >= 0,
             "a round's search generations must be at least 0, got " << *params.generations);
    if (params.population) policy_->SetPopulation(*params.population);
    if (params.generations) policy_->SetGenerations(*params.generations);
    if (params.carry_over) policy_->SetCarryOver(*params.carry_over);
    policy_->SetDeadline(std::min(params.deadline, deadline_before_));
  }
  ~RoundScope() {
    policy_->SetPopulation(before_.evolutionary_search_population);
    policy_->SetGenerations(before_.evolutionary_search_num_iters);
    policy_->SetCarryOver(before_.evolutionary_search_carry_over);
    policy_->SetDeadline(deadline_before_);
  }
  RoundScope(const RoundScope&) = delete;
  RoundScope& operator=(const RoundScope&) = delete;

 private:
  SketchPolicy* policy_;
  SearchParams before_;
  SteadyClock::time_point deadline_before_;
};

// The turn of a round among rounds run at once (RoundTurns); a round that
// ends early passes its turns on, so that the rounds after it go on.
class Turn {
 public:
  explicit Turn(const RoundIo& io) : turns_(io.turns), turn_(io.turn) {}
  ~Turn() {
    if (turns_ == nullptr) return;
    if (!searched_) turns_->Searched(turn_);
    if (!recorded_) turns_->Recorded(turn_);
  }
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  void WaitToSearch() {
    if (turns_ != nullptr) turns_->WaitToSearch(turn_);
  }
  void Searched() {
    if (turns_ != nullptr && !searched_) turns_->Searched(turn_);
    searched_ = true;
  }
  void WaitToRecord() {
    Searched();
    if (turns_ != nullptr) turns_->WaitToRecord(turn_);
  }
  void Recorded() {
    if (turns_ != nullptr && !recorded_) turns_->Recorded(turn_);
    recorded_ = true;
  }

 private:
  RoundTurns* turns_;
  int64_t turn_;
  bool searched_ = false;
  bool recorded_ = false;
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

// The second half of a round: appends one record per state to every writer,
// then gives states and results to policy.RecordMeasured.
TuningRound RecordRound(SketchPolicy& policy, std::vector<State> states, std::vector<MeasureResult> results,
                        SteadyClock::time_point deadline, const RoundIo& io) {
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
  round.training_deferred = LearnRound(policy, round, deadline);
  round.cost_model_seconds += policy.model_update_seconds() - update_before;
  round.keys.reserve(round.states.size());
  for (const State& s : round.states) round.keys.push_back(StateKey(s));
  return round;
}

// Measures the states (at once with other rounds), then records and learns
// them (in the round's turn).
TuningRound MeasureAndRecord(SketchPolicy& policy, std::vector<State> states, const RoundParams& params,
                             const RoundIo& io, Turn* turn) {
  turn->Searched();
  AS_ICHECK(io.measurer != nullptr, "a tuning round needs a measurer");
  if (states.empty()) return TuningRound{};
  auto start = std::chrono::steady_clock::now();
  std::vector<bool> measured;
  io.measurer->best_seconds_hint = params.best_seconds;
  std::vector<MeasureResult> results =
      io.measurer->Measure(policy.task(), states, params.deadline, &measured);
  const double measure_seconds = SecondsSince(start);
  AS_CHECK(results.size() == states.size(), "a measurer must return one result per state, got "
                                                << results.size() << " results for " << states.size()
                                                << " states");
  AS_CHECK(measured.empty() || measured.size() == states.size(),
           "a measurer must flag every state measured or none, got " << measured.size() << " flags for "
                                                                     << states.size() << " states");
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
  turn->WaitToRecord();
  TuningRound round = RecordRound(policy, std::move(states), std::move(results), params.deadline, io);
  turn->Recorded();
  round.measure_seconds = measure_seconds;
  round.skipped = skipped;
  return round;
}

}  // namespace

int64_t RoundTurns::Take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return taken_++;
}

void RoundTurns::Wait(int64_t turn, const int64_t& next) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return next >= turn; });
}

void RoundTurns::Pass(int64_t turn, std::set<int64_t>* passed, int64_t* next) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    passed->insert(turn);
    while (passed->count(*next) != 0) passed->erase((*next)++);
  }
  changed_.notify_all();
}

TuningRound MeasureRound(SketchPolicy& policy, std::vector<State> states, const RoundParams& params,
                         const RoundIo& io) {
  Turn turn(io);
  return MeasureAndRecord(policy, std::move(states), params, io, &turn);
}

TuningRound SearchRound(SketchPolicy& policy, const RoundParams& params, const RoundIo& io) {
  std::vector<State> states;
  std::optional<TransferReport> transfer;
  SearchRoundStats stats;
  int64_t population = 0;
  Turn turn(io);
  {
    turn.WaitToSearch();
    RoundScope scope(&policy, params);
    if (params.transfer_seeds)
      transfer = policy.SetTransferSeeds(*params.transfer_seeds, params.max_transfer_seeds);
    population = policy.params().evolutionary_search_population;
    states = policy.ContinueSearchOneRound(params.num_measure);
    stats = policy.last_round();
  }
  TuningRound round = MeasureAndRecord(policy, std::move(states), params, io, &turn);
  round.searched = true;
  round.population = population;
  round.transfer = std::move(transfer);
  round.search_cut = stats.cut_at_deadline;
  round.search_seconds += stats.search_seconds();
  round.cost_model_seconds += stats.cost_model_seconds();
  return round;
}

}  // namespace autosched
