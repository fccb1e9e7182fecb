// SketchPolicy: the search policy of autosched, after Ansor's. This part
// generates the sketches of a task and samples the initial population from
// them; the evolutionary search, measurement and the cost model come later.
//
//   SketchPolicy policy(task);                       // CPU rules, default params
//   std::vector<State> sketches = policy.GenerateSketches();
//   InitPopulation pop = policy.SampleInitPopulation(64, /*seed=*/1);
//
// See sketch_rules.h for the rules and their order, init_rules.h for sampling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/init_rules.h"
#include "search/search_params.h"
#include "search/sketch_rules.h"
#include "task/search_task.h"

namespace autosched {

class SketchPolicy {
 public:
  // Throws Error for a target without sketch rules yet (only llvm has them).
  explicit SketchPolicy(SearchTask task, SearchParams params = {});

  const SearchTask& task() const { return task_; }
  const SearchParams& params() const { return params_; }
  // The ordered rules; a custom rule is inserted at the front.
  SketchRuleList& sketch_rules() { return sketch_rules_; }
  const SketchRuleList& sketch_rules() const { return sketch_rules_; }
  InitRuleList& init_rules() { return init_rules_; }
  const InitRuleList& init_rules() const { return init_rules_; }

  // Every sketch of the task, without duplicates, in generation order. A rule
  // whose apply throws is skipped for that partial sketch and recorded in
  // rule_failures().
  std::vector<State> GenerateSketches();
  const std::vector<std::string>& rule_failures() const { return rule_failures_; }

  // Up to n distinct random states from GenerateSketches(); reproducible
  // for a seed.
  InitPopulation SampleInitPopulation(int n, uint32_t seed);

 private:
  void ApplyRules(const State& state, int stage_id, std::vector<std::pair<State, int>>* next);

  SearchTask task_;
  SearchParams params_;
  SketchRuleList sketch_rules_;
  InitRuleList init_rules_;
  std::vector<std::string> rule_failures_;
};

}  // namespace autosched
