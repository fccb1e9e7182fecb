// Init rules: turn a sketch into a complete random state (the initial
// population of the search).
//
// A sketch leaves split lengths unknown and loops unannotated. Each init rule
// of one ordered list (DefaultCpuInitRules) completes one aspect, using the
// random generator it is given:
//   fill-tile-size  every unknown split (and the provisional rfactor split,
//                   see IsRfactorSplit) gets lengths whose product divides the
//                   real extent, innermost at most max_innermost_split_factor;
//                   on CPUs, a multi-level-tiled stage mostly (SearchParams::
//                   register_block_share) gets a register block of the family
//                   innermost (register_block.h), which may leave a guarded
//                   tail where the extent is a prime above the lanes
//   parallel        outer spatial loops of root stages fused and run in parallel
//   unroll          an auto_unroll_max_step pragma on stages with a reduction
//   vectorize       innermost spatial loops fused and vectorized when their
//                   extent fits the vector bound; a register block of the
//                   family: its vector axis vectorized, its rows unrolled
// SampleInitPopulation applies them to random sketches, keeps the states that
// pass bound inference and lowering, drops duplicates, and counts every
// dropped attempt by reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "schedule/state.h"
#include "search/rules/sketch_rules.h"

namespace autosched {

class InitRule {
 public:
  virtual ~InitRule() = default;
  virtual std::string name() const = 0;
  // Throws Error when a step is refused (the attempt is then dropped).
  virtual State Apply(const SketchContext& ctx, const State& state, std::mt19937* rng) const = 0;
};

using InitRuleList = std::vector<std::shared_ptr<const InitRule>>;

// fill-tile-size, parallel, unroll, vectorize.
InitRuleList DefaultCpuInitRules();

std::shared_ptr<const InitRule> MakeFillTileSizeRule();
std::shared_ptr<const InitRule> MakeParallelRule();
std::shared_ptr<const InitRule> MakeUnrollRule();
std::shared_ptr<const InitRule> MakeVectorizeRule();

// The parallel and vectorize rules applied to `state` (outer loops parallel,
// inner loops vectorized): the default schedules' loop nests, and the expert
// of a task with nothing to tile. nullopt where a rule refuses a step.
std::optional<State> ParallelVectorized(const SketchContext& ctx, const State& state);

// `n` lengths (outer to inner) for a split of `extent`: each picked among the
// divisors of what the inner ones leave, innermost first and at most
// max_innermost, so their product divides extent.
std::vector<int64_t> SampleSplitLengths(int64_t extent, int n, int64_t max_innermost, std::mt19937* rng);

struct InitPopulation {
  std::vector<State> states;
  // What each state lowers to, beside it: the check lowered it, and the cost
  // model's features read it from here.
  std::vector<LoweredPtr> lowered;
  // Dropped attempts per reason: an init rule's name (it threw), "infer_bound",
  // "lower", or "duplicate" (a state already in the population).
  std::map<std::string, int64_t> drops;
  // The first message per reason (duplicates have none).
  std::map<std::string, std::string> drop_messages;
};

// Up to n distinct states from random sketches (at most
// n * params.sample_init_attempts_per_state attempts), on params.num_threads
// threads (0: all cores): attempt a draws from its own generator, seeded from
// (seed, a), and states are kept in attempt order, so a seed gives the same
// population with any number of threads, one included. No attempt starts
// after `deadline` (a time budget's end): the population is then what the
// attempts made before it kept. Throws Error when n < 1 or there is no
// sketch.
InitPopulation SampleInitPopulation(
    const SearchTask& task, const std::vector<State>& sketches, int n, uint64_t seed,
    const SearchParams& params = {}, const InitRuleList& rules = DefaultCpuInitRules(),
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace autosched
