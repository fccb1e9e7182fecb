// One round of tuning a task, all in the core: the search proposes states
// never measured (or the caller names them: the baselines), a Measurer
// measures them (this machine's workers, or a runner elsewhere implementing
// the interface), their records are appended to the logs, and the search
// policy and its cost model learn from them. python/autosched/tune/session.py
// drives a tuning session (one task or many) a round at a time, so a round
// crosses from Python into the core once, whoever measures, and its states
// stay core states throughout.
//
//   RoundIo io{&measurer, {&writer}, task_json};
//   RoundParams params;
//   params.num_measure = 64;
//   params.population = 512;                              // this round's search only
//   TuningRound r = SearchRound(policy, params, io);      // r.states empty: nothing new
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "measure/records.h"
#include "search/sketch_policy.h"

namespace autosched {

// What the session decides for one round (python/autosched/tune/share.py
// sizes the search, tune/transfer.py picks the seeds). The search runs with
// them for this round only: the policy's SearchParams are the same after the
// round as before it, and a field left unset is the policy's own.
struct RoundParams {
  int num_measure = 0;                 // states the search proposes at most (SearchRound)
  std::optional<int64_t> population;   // SearchParams::evolutionary_search_population
  std::optional<int64_t> generations;  // SearchParams::evolutionary_search_num_iters
  std::optional<bool> carry_over;      // SearchParams::evolutionary_search_carry_over
  // The best states of similar tasks, best first: given, they replace the
  // policy's seeds before the search (SketchPolicy::SetTransferSeeds, at most
  // max_transfer_seeds; its report in TuningRound::transfer). Unset: the
  // policy keeps the seeds it has.
  std::optional<std::vector<State>> transfer_seeds;
  int64_t max_transfer_seeds = 16;
  // The task's best time so far (0: none), the measurer's best_seconds_hint.
  double best_seconds = 0;
  // A time budget's end: the search stops there (SketchPolicy::SetDeadline),
  // measurements in progress are abandoned (Measurer::Measure), and the cost
  // model's training after it is deferred.
  SteadyClock::time_point deadline = kNoDeadline;
};

// What a round measured and where its time went.
struct TuningRound {
  std::vector<State> states;           // measured, in order
  std::vector<MeasureResult> results;  // one per state
  std::vector<std::string> keys;       // StateKey of each state
  bool searched = false;               // the states came from the search
  int64_t population = 0;              // the population the search ran with (0: no search)
  double search_seconds = 0;           // the search without its cost model
  double cost_model_seconds = 0;       // the cost model: scoring in the search, then its update
  double measure_seconds = 0;          // building, verifying and timing
  std::vector<std::string> notices;    // the record writers' (a log removed or replaced meanwhile)
  // What SetTransferSeeds kept of RoundParams::transfer_seeds (unset when
  // none were given).
  std::optional<TransferReport> transfer;
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

// The order in which rounds of several tasks run at once in threads (a
// scheduler's parallel_tasks, with measurers elsewhere) search and record:
// their policies share cost models and their records share logs, so each
// round searches, then records and learns, in its turn (the order the turns
// were taken in: the scheduler's ranking), while their measurements overlap.
// A round that ends early (an exception) gives its turns up.
class RoundTurns {
 public:
  int64_t Take();
  void WaitToSearch(int64_t turn) { Wait(turn, next_search_); }
  void Searched(int64_t turn) { Pass(turn, &searched_, &next_search_); }
  void WaitToRecord(int64_t turn) { Wait(turn, next_record_); }
  void Recorded(int64_t turn) { Pass(turn, &recorded_, &next_record_); }

 private:
  void Wait(int64_t turn, const int64_t& next);
  void Pass(int64_t turn, std::set<int64_t>* passed, int64_t* next);

  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t taken_ = 0;
  int64_t next_search_ = 0;
  int64_t next_record_ = 0;
  std::set<int64_t> searched_;  // turns passed out of order, waiting for those before them
  std::set<int64_t> recorded_;
};

// Where a round's measurements go: the measurer, the logs that record them
// (none: not recorded), and the task as the records store it.
struct RoundIo {
  Measurer* measurer = nullptr;
  std::vector<RecordWriter*> writers;
  nlohmann::json task_json;
  // Rounds run at once in several threads: this round's turn among them
  // (nullptr: rounds run one at a time).
  RoundTurns* turns = nullptr;
  int64_t turn = 0;
};

// Up to params.num_measure states from policy.ContinueSearchOneRound (with
// the round's search parameters and seeds, searching until params.deadline
// at most), measured, recorded and learned from as MeasureRound does. An
// exhausted search measures nothing: states is empty, and
// policy.last_round() says why (search_cut: the deadline passed). Throws
// Error for parameters out of range (a population below 1, negative
// generations), before anything is searched.
TuningRound SearchRound(SketchPolicy& policy, const RoundParams& params, const RoundIo& io);

// Measures `states` of the policy's task (those measured before
// params.deadline; the others only count in `skipped`), appends one record
// per state to every writer, then gives states and results to
// policy.RecordMeasured (the cost model's update; an XGBModel defers its
// training once params.deadline has passed). Throws what the measurer throws,
// before anything is recorded, and Error when it returns another number of
// results than states.
TuningRound MeasureRound(SketchPolicy& policy, std::vector<State> states, const RoundParams& params,
                         const RoundIo& io);

}  // namespace autosched
