// Program features for the cost model: one row of NumFeatures() floats per
// buffer store statement of a state's lowered loop nest -- the same loop nest
// that code generation compiles, so the model sees what runs.
//
// The features are defined once, in the table of features.cc: each entry is a
// name and an extractor from the statement's analysis (feature_analysis.h).
// Row order, FeatureNames() and the list saved with a model all come from it.
// Families, in order (docs/cost_model.md describes every feature):
//   computation  16  operations by kind, times the trip count
//   loops        15  vectorize / unroll / parallel: number, product, length,
//                    position, over a reduction
//   machine fit   5  vector fill and partial vector, core usage, work per
//                    parallel task, innermost loop extent
//   gpu           9  is_gpu, blockIdx / threadIdx extents, vthread, shared
//                    memory bytes per block
//   gpu memory   12  threads, warp fill, groups per compute unit, private
//                    bytes and registers against the device's limits, shared
//                    memory against its limit; one warp's accesses: fetch
//                    width, sector efficiency (coalescing), sectors, shared
//                    access width, bank conflicts
//   statement     6  reduction update, guards, buffers accessed; the
//                    accumulator tile: vectors, unrolled, reduction extent
//   buffers      90  5 buffers (largest by bytes) x 18: access type, bytes,
//                    unique bytes, lines, unique lines, reuse type, distance
//                    and count, per-reuse ratios, stride
//   intensity    10  arithmetic intensity curve over loop levels
//   allocation    4  size, loops outside / inside the allocation, local
//   outer scope   3  loop trip product, loop depth, auto-unroll step
//   target        8  the loop nest relative to the target's vector lanes,
//                    vector registers, L1 and L2 sizes (carry across CPUs)
// Every value x goes through sign(x) * log2(1 + |x|).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "schedule/state.h"
#include "task/target.h"

namespace autosched {

constexpr int kNumBufferSlots = 5;

// Names of the features in row order, e.g. "float_mad", "B0.bytes".
const std::vector<std::string>& FeatureNames();
int NumFeatures();

// The features of one program.
struct ProgramFeatures {
  int rows = 0;               // buffer stores
  std::vector<float> values;  // rows x NumFeatures(), row-major
  std::string error;          // why there are no rows (the state failed to lower); empty otherwise
  bool ok() const { return error.empty(); }
};

// Features of a lowered function; raw values without the log transform when
// log_transform is false (for tests and inspection).
ProgramFeatures ExtractFeatures(const LoweredFunc& f, const HardwareParams& hardware,
                                bool log_transform = true);
// Lowers the state first. A state that fails to lower gives no rows and the
// reason in `error`; no exception leaves.
ProgramFeatures ExtractFeatures(const State& state, const HardwareParams& hardware);
// Every state on up to num_threads threads (0: one per hardware thread), in
// order; a state whose lowered[i] is given and not null is not lowered again.
// Touches no Python object, so callers may release the GIL.
std::vector<ProgramFeatures> ExtractFeaturesParallel(const std::vector<State>& states,
                                                     const HardwareParams& hardware, int num_threads = 0,
                                                     const std::vector<LoweredPtr>& lowered = {});

// Runs fn(i) for i in [0, n) on up to num_threads threads (0: one per
// hardware thread), handing out indices one at a time. fn must not throw.
// The calling thread polls for an interrupt (support/interrupt.h) between its
// items: the loop then stops handing out indices and rethrows it once the
// other threads have finished theirs.
void ParallelFor(size_t n, int num_threads, const std::function<void(size_t)>& fn);

}  // namespace autosched
