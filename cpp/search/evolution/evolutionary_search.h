// The evolutionary search: from an initial population (random states sampled
// from the sketches plus some of the best measured states), num_iters
// generations of selection and mutation guided by the cost model, keeping the
// best states not measured yet.
//
// One generation:
//   1. score the population with the cost model (each distinct state once);
//   2. keep the best num_out states that are neither measured nor kept
//      already in a heap (states are keyed by their steps' JSON, StateKey);
//   3. breed the next population: each slot picks a parent with probability
//      proportional to max(score, 0) (by rank when no score is positive),
//      then mutates it with probability evolutionary_search_mutation_prob
//      (mutation_rules.h) or copies it; a slot whose mutation fails tries
//      again with another parent, and after a few failures copies its parent.
// After the last generation the heap is returned, best first. Breeding and
// the checks of mutated states (bound inference, lowering) run on all cores;
// each slot draws from its own generator, seeded from (seed, generation,
// slot), so a seed gives the same states with any number of threads. The
// cost model is called from the calling thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "cost_model/cost_model.h"
#include "search/rules/mutation_rules.h"

namespace autosched {

struct EvolutionStats {
  int generations = 0;                                  // generations scored
  int64_t scored = 0;                                   // distinct states scored by the cost model
  int64_t mutated = 0;                                  // successful mutations
  int64_t copied = 0;                                   // states copied unchanged into the next generation
  int64_t attempts = 0;                                 // mutations tried
  std::map<std::string, int64_t> failures;              // failed mutations by reason (MutateState)
  std::map<std::string, std::string> failure_messages;  // the first message per reason
  double best_score = kInvalidScore;                    // highest score seen
  double search_seconds = 0;                            // breeding, mutation and checks
  double cost_model_seconds = 0;                        // CostModel::Predict
};

// The last generation a search scored, with what each state lowers to (null
// where not known): where a later search may go on from.
struct Generation {
  std::vector<State> states;
  std::vector<LoweredPtr> lowered;
};

// Up to num_out distinct states whose keys are not in `measured`, best
// predicted first. init_lowered[i], where given and not null, is what
// init_population[i] lowers to; like the states that mutation makes (and
// lowers to check them), the cost model then reads it instead of lowering
// the state again. *last, where given, receives the last generation scored
// when it was bred (empty when the search bred none). At `deadline` (a time
// budget's end) the search stops within one mutation or one slice of
// scoring: the states it returns then are those scored before it.
// Throws Error when num_out < 1.
std::vector<State> EvolutionarySearch(
    const SketchContext& ctx, const std::vector<State>& init_population, int num_out, CostModel* model,
    const std::unordered_set<std::string>& measured, const MutationRuleList& rules, uint64_t seed,
    EvolutionStats* stats, const std::vector<LoweredPtr>& init_lowered = {}, Generation* last = nullptr,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// Selection weights of a population from its scores: max(score, 0) for
// finite scores; when none is positive, the rank among the finite scores
// (1 = lowest). Non-finite scores weigh 0. All zero: nothing to select.
std::vector<double> SelectionWeights(const std::vector<double>& scores);

}  // namespace autosched
