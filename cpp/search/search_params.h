// SearchParams: the knobs of the search, one typed field each with its default
// and what it does. Sketch generation and sampling of the initial population
// read the first group; the evolutionary search and the rounds of the
// sketch policy read the second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autosched {

struct SearchParams {
  // ---- sketches and the initial population ----

  // Tiling structure of multi-level tiling on CPUs: one letter per loop level,
  // outermost first; S = a level of every spatial axis, R = a level of every
  // reduce axis. "SSRSRS" splits each spatial axis in 4 and each reduce axis
  // in 2 and orders the parts S0 S1 R0 S2 R1 S3.
  std::string cpu_tiling_structure = "SSRSRS";

  // Tiling structure on GPUs (OpenCL targets): "SSSRRSRS" splits each spatial
  // axis in 5 and each reduce axis in 3; the first three spatial levels are
  // bound to blockIdx.x, vthread and threadIdx.x (gpu_rules.h).
  std::string gpu_tiling_structure = "SSSRRSRS";

  // Largest length of the innermost part of a sampled split.
  int64_t max_innermost_split_factor = 64;

  // Largest extent of a vectorized loop (after fusing innermost iterators).
  // The target bounds it too: at most vector_lanes_factor SIMD registers of
  // the stage's dtype (HardwareParams::vector_unit_bytes / dtype bytes * factor).
  // The vector axis of a register block (register_block.h) is vectorized
  // whole instead: up to max_innermost_split_factor lanes, 4 registers.
  int64_t max_vectorize_size = 16;
  int64_t vector_lanes_factor = 2;

  // Outer spatial loops of a root stage are fused and run in parallel until
  // they make more than parallel_iterations_per_core * num_cores iterations
  // (or every outer spatial loop is taken).
  int64_t parallel_iterations_per_core = 16;

  // Values of the auto_unroll_max_step pragma that sampling picks from (0: no
  // unrolling), put on stages with a reduction.
  std::vector<int64_t> auto_unroll_candidates = {0, 16, 64, 512};
  // The same on GPUs (OpenCL targets).
  std::vector<int64_t> gpu_auto_unroll_candidates = {0, 16, 64, 512, 1024};

  // GPUs: vectorize inner loops also on devices other than mobile GPUs (on a
  // Mali device, "-device=mali", they always are).
  bool gpu_vectorize = false;

  // Share of the sampled states whose multi-level-tiled stages take their
  // innermost tiles from the register-block family (register_block.h:
  // blocks of accumulators that fit the target's register file, the vector
  // axis whole vectors, the main reduction's tile sized by L1, the level
  // above sized by L2); the others are drawn from all divisors. Tile-size
  // mutations keep to the family (or move into it) with the same share.
  double register_block_share = 0.75;

  // Iterators that index constant tensors are unrolled by the
  // simplify-compute-with-const-tensor rule only when their extents multiply
  // to at most this.
  int64_t max_const_unroll = 256;

  // Sampling of the initial population stops after n * this many attempts
  // even when fewer than n states were found (few distinct states exist for
  // small or element-wise tasks).
  int64_t sample_init_attempts_per_state = 8;

  // ---- evolutionary search (evolutionary_search.h, sketch_policy.h) ----

  // States per generation of the evolutionary search; the initial population
  // is about as large (random states plus measured ones).
  int64_t evolutionary_search_population = 2048;
  // Generations of selection and mutation per round.
  int64_t evolutionary_search_num_iters = 4;
  // Chance that a selected parent is mutated rather than copied.
  double evolutionary_search_mutation_prob = 0.85;
  // Random states sampled at least for a round's initial population.
  int64_t sample_init_min_population = 50;
  // Share of the population seeded with the best measured states (by
  // throughput), at most all of them.
  double sample_init_use_measured_ratio = 0.2;
  // Share of each round's measurements picked at random among the sampled
  // states instead of by the cost model (epsilon-greedy).
  double eps_greedy = 0.05;
  // States measured per round (the tuner's TuningOptions overrides it).
  int64_t num_measures_per_round = 64;
  // Rounds tried again (with another seed) when a round finds no state that
  // was not measured yet; after that, the search space counts as exhausted.
  int64_t retry_search_one_round_on_empty = 1;
  // Threads for sampling, mutation and the checks of states; 0: one per
  // hardware thread.
  int64_t num_threads = 0;
};

}  // namespace autosched
