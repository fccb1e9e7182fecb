// How one warp of a GPU kernel touches memory at a statement, for the cost
// model's GPU features (see feature_analysis.h for the roadmap): the width of
// each work item's access, how many 32-byte sectors a warp's access to global
// memory moves against the fewest that could carry the same bytes
// (coalescing), and how many distinct words one bank of local (shared) memory
// serves per request (bank conflicts).
//
// The warp is the first one of a work group: work items numbered along x,
// then y, then z, every other loop at its first iteration. Indices that depend
// on the loops in a way the evaluator cannot follow count as 0, as elsewhere
// in the analysis: the figures feed estimates, never code.
#pragma once

#include <vector>

#include "cost_model/buffer_access.h"

namespace autosched {

// Bytes of one sector of global memory traffic (NVIDIA's L1/L2 transaction
// unit, also a common cache-line fraction elsewhere) and of one bank word.
constexpr int64_t kGpuSectorBytes = 32;
constexpr int64_t kGpuBankWordBytes = 4;
constexpr int64_t kGpuNumBanks = 32;

// warp_size 0 (unknown) means 32.
GpuAccessStats AnalyzeGpuAccesses(const std::vector<RawAccess>& accesses, const std::vector<LoopInfo>& loops,
                                  const std::vector<LetBinding>& lets, int64_t warp_size);

}  // namespace autosched
