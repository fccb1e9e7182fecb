// SketchPolicy: the search policy of autosched, after Ansor's. It generates
// the sketches of a task, samples random states from them, and runs one round
// of the evolutionary search guided by a cost model per batch of states to
// measure; measured results come back to it (and its cost model).
//
//   SketchPolicy policy(task, model);                 // CPU rules, default params
//   std::vector<State> batch = policy.ContinueSearchOneRound(64);
//   ... measure the batch ...
//   policy.RecordMeasured(batch, results);            // never proposed again
//
// See sketch_rules.h for the rules and their order, init_rules.h for sampling,
// mutation_rules.h and evolutionary_search.h for the search.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "cost_model/cost_model.h"
#include "measure/measure.h"
#include "search/evolution/evolutionary_search.h"
#include "search/evolution/transfer_seeds.h"
#include "search/expert/expert_schedule.h"
#include "search/rules/init_rules.h"
#include "search/rules/sketch_rules.h"
#include "search/search_params.h"
#include "task/search_task.h"

namespace autosched {

// What the last round did and where its time went.
struct SearchRoundStats {
  int64_t sampled = 0;                          // random states in the initial population
  int64_t seeded_measured = 0;                  // measured states added to it
  std::map<std::string, int64_t> sample_drops;  // dropped sampling attempts by reason
  EvolutionStats evolution;                     // summed over the round's tries
  int64_t picked_best = 0;                      // states picked from the search's best
  int64_t picked_random = 0;                    // states picked at random (epsilon-greedy)
  int64_t transfer_seeds = 0;                   // seeds of similar tasks in the initial population
  int64_t carried = 0;                          // states of the round before's last generation in it
  int64_t picked_transfer = 0;                  // seeds measured directly (transfer_seeds_measured)
  int tries = 0;                                // 1 + retries of a round that found nothing new
  bool cut_at_deadline = false;                 // the policy's deadline passed: the round returned nothing
  double sample_seconds = 0;                    // sketches and sampling
  // Search time without the cost model: sampling, breeding, mutation, checks.
  double search_seconds() const { return sample_seconds + evolution.search_seconds; }
  double cost_model_seconds() const { return evolution.cost_model_seconds; }
};

class SketchPolicy {
 public:
  // A policy with a RandomModel seeded with `seed`. Throws Error for a target
  // without sketch rules yet (only llvm has them).
  explicit SketchPolicy(SearchTask task, SearchParams params = {}, uint64_t seed = 0);
  // A policy guided by cost_model (shared: the caller may keep using it).
  SketchPolicy(SearchTask task, std::shared_ptr<CostModel> cost_model, SearchParams params = {},
               uint64_t seed = 0);

  const SearchTask& task() const { return task_; }
  const SearchParams& params() const { return params_; }
  // The evolutionary search's population from the next round on (at least
  // 1): a session that keeps the search to a share of its time sizes each
  // round's search with it.
  void SetPopulation(int64_t population);
  // The generations of selection and mutation per round from the next round
  // on (at least 0), and whether a round goes on from the last generation of
  // the round before (SearchParams::evolutionary_search_carry_over).
  void SetGenerations(int64_t num_iters);
  void SetCarryOver(bool carry_over);
  // Rounds stop searching at `deadline` (a time budget's end; the default,
  // time_point::max(), is none): sampling, breeding and scoring are cut
  // short there, and a round cut so returns no state, none counted as
  // measured (last_round().cut_at_deadline).
  void SetDeadline(std::chrono::steady_clock::time_point deadline) { deadline_ = deadline; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  // The ordered rules: the preloaded custom rules, then the built-in ones.
  SketchRuleList& sketch_rules() { return sketch_rules_; }
  const SketchRuleList& sketch_rules() const { return sketch_rules_; }
  InitRuleList& init_rules() { return init_rules_; }
  const InitRuleList& init_rules() const { return init_rules_; }
  // The mutation rules with their probabilities (mutation_rules.h).
  MutationRuleList& mutation_rules() { return mutation_rules_; }
  const MutationRuleList& mutation_rules() const { return mutation_rules_; }
  CostModel& cost_model() { return *cost_model_; }
  // Adds a custom sketch rule before the built-in rules, after the custom
  // rules added before it; sketches are generated again on the next round.
  // Throws Error when a rule of that name is already in the list.
  void PreloadSketchRule(std::shared_ptr<const SketchRule> rule);

  // Every sketch of the task, without duplicates, in generation order. A rule
  // whose apply throws is skipped for that partial sketch and recorded in
  // rule_failures(), unless the rule says otherwise (RecordsFailures()):
  // what it throws then propagates. Throws Error when a rule returns a next
  // stage id out of range or a state of another DAG, or when generation does
  // not finish (a rule returning the state and stage it was given, or
  // branching or revisiting without end).
  std::vector<State> GenerateSketches();
  const std::vector<std::string>& rule_failures() const { return rule_failures_; }
  // Partial sketches one generation visits at most (the built-in rules visit
  // tens): beyond, some rule keeps branching or sending states back.
  static constexpr size_t kMaxPartialSketches = 100000;

  // The expert schedule of the task made from this policy's sketches
  // (expert_schedule.h), computed once; every round's initial population
  // holds its state, and tuning measures it with the baselines.
  const ExpertSchedule& Expert();

  // The best states of similar tasks (transfer_seeds.h), best first:
  // re-fitted to this task (those that do not fit are dropped and counted),
  // they replace the seeds given before. Every round's initial population
  // holds them, as it holds the expert schedule, and a round measures up to
  // params().transfer_seeds_measured of those not measured yet first. At
  // most max_seeds are kept.
  TransferReport SetTransferSeeds(const std::vector<State>& sources, int64_t max_seeds = 16);
  const std::vector<State>& transfer_seeds() const { return transfer_seeds_; }

  // Up to n distinct random states from GenerateSketches(); reproducible
  // for a seed.
  InitPopulation SampleInitPopulation(int n, uint32_t seed);

  // One round of the search: up to num_measure distinct states never
  // measured (nor returned by an earlier round), mostly the best the
  // evolutionary search found, eps_greedy of them random sampled states.
  // They count as measured from now on. Fewer, or none, when the search
  // finds nothing new even after retry_search_one_round_on_empty retries:
  // the search space is exhausted. Throws Error when num_measure < 1.
  std::vector<State> ContinueSearchOneRound(int num_measure);
  const SearchRoundStats& last_round() const { return last_round_; }

  // Measured states and their results (from this policy's rounds, a record
  // log being resumed, or elsewhere): never proposed again, the fastest seed
  // later populations, and the cost model is updated with them. Throws Error
  // when the lengths differ.
  void RecordMeasured(const std::vector<State>& states, const std::vector<MeasureResult>& results);
  //
  // A result refused by its kernel's own work-group maximum
  // (MeasureResult::kernel_max_threads) teaches the policy a limit: its
  // task's hardware_params.max_threads_per_block becomes at most the largest
  // such maximum reported so far. From then on the GPU init and mutation
  // rules draw work groups within it, the states kept from before (the last
  // generation, the transfer seeds, the expert schedule) that exceed it are
  // dropped, and a tuning round records it in its records' task
  // (tune/tuning_round.h), so that no larger work group is proposed again.
  bool IsMeasured(const State& state) const;
  // The work-group limit learned from the measurements (0: none yet).
  int64_t learned_max_threads_per_block() const { return learned_max_threads_; }
  size_t num_measured() const { return measured_keys_.size(); }
  // Seconds the cost model's updates took so far.
  double model_update_seconds() const { return model_update_seconds_; }

 private:
  void ApplyRules(const State& state, int stage_id, std::vector<std::pair<State, int>>* next);
  void CheckRuleResults(const SketchRule& rule, const State& state, int stage_id,
                        const std::vector<std::pair<State, int>>& results) const;
  const std::vector<State>& Sketches();
  std::vector<State> InitialPopulation(std::vector<State>* random_states, std::vector<LoweredPtr>* lowered);
  std::vector<State> PickEpsGreedy(const std::vector<State>& best, const std::vector<State>& random,
                                   int num_measure);
  std::vector<State> PickTransferSeeds(int num_measure);
  void DropStatesBeyondLimits();

  SearchTask task_;
  SearchParams params_;
  uint64_t seed_ = 0;
  SketchRuleList sketch_rules_;
  size_t num_custom_sketch_rules_ = 0;
  InitRuleList init_rules_;
  MutationRuleList mutation_rules_;
  std::shared_ptr<CostModel> cost_model_;
  std::vector<std::string> rule_failures_;
  std::optional<std::vector<State>> sketches_;  // generated on the first round
  std::optional<ExpertSchedule> expert_;        // made on the first round
  std::vector<State> transfer_seeds_;           // re-fitted seeds of similar tasks
  Generation last_generation_;                  // of the last round's search
  std::unordered_set<std::string> measured_keys_;
  std::vector<std::pair<double, State>> measured_good_;  // (throughput, state) of successful measurements
  std::unordered_set<std::string> good_keys_;            // their keys
  uint64_t rounds_ = 0;
  SearchRoundStats last_round_;
  double model_update_seconds_ = 0;
  int64_t learned_max_threads_ = 0;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
};

// What a tuning run measures before searching: the plain loop nest of the
// task's DAG, and the same with the init rules "parallel" and "vectorize"
// applied (outer loops parallel, inner loops vectorized). Distinct states
// that pass bound inference and lowering, the plain one first. On OpenCL:
// the plain nest and the one with reductions interchanged, both run with the
// default GPU schedule (the CPU variants would run in one work item).
std::vector<State> BaselineStates(const SearchTask& task, const SearchParams& params = {});

// The expert schedule (expert/expert_schedule.h) of the sketches the task's
// policy generates with its default rules. Never throws for a task it cannot
// handle: the reason says why.
ExpertSchedule MakeExpertSchedule(const SearchTask& task, const SearchParams& params = {});
// GpuExpertAlternatives of those sketches on a GPU target with the expert
// on; empty otherwise (and where the sketches cannot be generated).
std::vector<std::pair<std::string, State>> ExpertAlternatives(const SearchTask& task,
                                                              const SearchParams& params = {});

}  // namespace autosched
