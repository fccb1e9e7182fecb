// SearchParams: the knobs of the search, one typed field each with its
// default, the values it may take and what it does, in one list
// (support/fields.h: the struct, its checks and its Python keywords come from
// it). Sketch generation and sampling of the initial population read the
// first group; the evolutionary search and the rounds of the sketch policy
// read the second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/fields.h"

namespace autosched {

using Int64List = std::vector<int64_t>;

// clang-format off
#define AUTOSCHED_SEARCH_PARAMS_FIELDS(X)                                                                      \
  /* ---- sketches and the initial population ---- */                                                        \
  X(std::string, cpu_tiling_structure, "SSRSRS", AnyValue(),                                                  \
    "tiling structure of multi-level tiling on CPUs: one letter per loop level, outermost first; S = a level " \
    "of every spatial axis, R = a level of every reduce axis. 'SSRSRS' splits each spatial axis in 4 and "     \
    "each reduce axis in 2 and orders the parts S0 S1 R0 S2 R1 S3")                                            \
  X(std::string, gpu_tiling_structure, "SSSRRSRS", AnyValue(),                                                \
    "tiling structure on GPUs (OpenCL targets): 'SSSRRSRS' splits each spatial axis in 5 and each reduce "     \
    "axis in 3; the first three spatial levels are bound to blockIdx.x, vthread and threadIdx.x")              \
  X(int64_t, max_innermost_split_factor, 64, AtLeast(1), "largest length of the innermost part of a sampled split") \
  X(int64_t, max_vectorize_size, 16, AtLeast(1),                                                              \
    "largest extent of a vectorized loop (after fusing innermost iterators); the target bounds it too: at "   \
    "most vector_lanes_factor SIMD registers of the stage's dtype. The vector axis of a register block is "    \
    "vectorized whole instead: up to max_innermost_split_factor lanes, 4 registers")                          \
  X(int64_t, vector_lanes_factor, 2, AtLeast(1), "SIMD registers a vectorized loop may span")                 \
  X(int64_t, parallel_iterations_per_core, 16, AtLeast(1),                                                    \
    "outer spatial loops of a root stage are fused and run in parallel until they make more than this many "  \
    "iterations per core (or every outer spatial loop is taken)")                                              \
  X(Int64List, auto_unroll_candidates, (Int64List{0, 16, 64, 512}), AtLeast(0),                               \
    "values of the auto_unroll_max_step pragma that sampling picks from (0: no unrolling), put on stages "    \
    "with a reduction")                                                                                        \
  X(Int64List, gpu_auto_unroll_candidates, (Int64List{0, 16, 64, 512, 1024}), AtLeast(0),                     \
    "the same on GPUs (OpenCL targets)")                                                                       \
  X(bool, gpu_vectorize, false, AnyValue(),                                                                    \
    "GPUs: vectorize inner loops also on devices other than mobile GPUs (on a Mali device, "                  \
    "'-device=mali', they always are)")                                                                        \
  X(double, register_block_share, 0.75, Share(),                                                               \
    "share of the sampled states whose multi-level-tiled stages take their innermost tiles from the "         \
    "register-block family (register_block.h: blocks of accumulators that fit the target's register file, "   \
    "the vector axis whole vectors, the main reduction's tile sized by L1, the level above by L2); the "      \
    "others are drawn from all divisors. Tile-size mutations keep to the family (or move into it) with the "  \
    "same share")                                                                                              \
  X(bool, use_expert_schedule, true, AnyValue(),                                                               \
    "make the expert schedule (expert_schedule.h: the analytic schedule derived from the task's "            \
    "HardwareParams, on CPUs and GPUs), measure it among tuning's start states and seed it into every "       \
    "initial population; false: none is made, measured or seeded")                                           \
  X(int64_t, max_const_unroll, 1024, AtLeast(0),                                                               \
    "iterators that index constant tensors are unrolled by the simplify-compute-with-const-tensor rule only " \
    "when their extents multiply to at most this")                                                             \
  X(int64_t, sample_init_attempts_per_state, 8, AtLeast(1),                                                    \
    "sampling of the initial population stops after n * this many attempts even when fewer than n states "    \
    "were found (few distinct states exist for small or element-wise tasks)")                                 \
  /* ---- evolutionary search (evolutionary_search.h, sketch_policy.h) ---- */                                \
  X(int64_t, evolutionary_search_population, 2048, AtLeast(1),                                                 \
    "states per generation of the evolutionary search; the initial population is about as large (random "     \
    "states plus measured ones)")                                                                              \
  X(int64_t, evolutionary_search_num_iters, 4, AtLeast(0), "generations of selection and mutation per round") \
  X(double, evolutionary_search_mutation_prob, 0.85, Share(),                                                  \
    "chance that a selected parent is mutated rather than copied")                                             \
  X(bool, evolutionary_search_carry_over, false, AnyValue(),                                                   \
    "a round's initial population also holds the last generation of the task's round before (scored again "   \
    "by the cost model as it is then), and only carry_over_fresh_share of the population is sampled at "       \
    "random: the search goes on where it stopped instead of starting anew (a session that keeps the search "  \
    "to its share of the time does so in the rounds it can afford only at the floor population)")             \
  X(double, carry_over_fresh_share, 0.25, Share(),                                                             \
    "with evolutionary_search_carry_over, the share of the population sampled at random each round (at "      \
    "least one state)")                                                                                        \
  X(int64_t, sample_init_min_population, 50, AtLeast(0),                                                       \
    "random states sampled at least for a round's initial population")                                        \
  X(double, sample_init_use_measured_ratio, 0.2, Share(),                                                      \
    "share of the population seeded with the best measured states (by throughput), at most all of them")      \
  X(double, eps_greedy, 0.05, Share(),                                                                         \
    "share of each round's measurements picked at random among the sampled states instead of by the cost "    \
    "model (epsilon-greedy)")                                                                                  \
  X(int64_t, num_measures_per_round, 64, AtLeast(1),                                                           \
    "states measured per round (the tuner's TuningOptions overrides it)")                                      \
  X(int64_t, transfer_seeds_measured, 2, AtLeast(0),                                                         \
    "re-fitted best states of similar tasks (SketchPolicy::SetTransferSeeds) measured first in a round, at "  \
    "most this many (those not measured yet, best source first); every seed also joins the initial "          \
    "population of each round")                                                                               \
  X(int64_t, retry_search_one_round_on_empty, 1, AtLeast(0),                                                   \
    "rounds tried again (with another seed) when a round finds no state that was not measured yet; after "    \
    "that, the search space counts as exhausted")                                                              \
  X(int64_t, num_threads, 0, AtLeast(0),                                                                       \
    "threads for sampling, mutation and the checks of states; 0: one per hardware thread")
// clang-format on

struct SearchParams {
  AUTOSCHED_OPTIONS_FIELDS(SearchParams, AUTOSCHED_SEARCH_PARAMS_FIELDS)
};

}  // namespace autosched
