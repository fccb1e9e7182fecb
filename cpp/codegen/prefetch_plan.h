// Which loops of a CPU kernel prefetch the next iteration's slice of the
// arrays they stream.
//
// Inside a network a kernel's weights come from memory, not from the caches
// that a kernel timed alone in a loop finds them in. A typical tiled kernel
// reads a block of weights in a reduction loop's iteration and then reuses it
// from L1 for several passes, so the memory is busy during the first pass
// only and the hardware prefetcher (which follows misses, within a page)
// stops at every block. Code generation therefore picks, per loop nest, the
// outermost serial loop whose iteration streams a mid-sized slice of read-only
// arguments with enough arithmetic per element, and each vector load of that
// slice also prefetches (into L2) what it reads one iteration later, in the
// first pass over it of the loops inside. The slice then arrives while the
// current one is being computed on.
#pragma once

#include <cstdint>
#include <unordered_set>

#include "lower/stmt.h"

namespace autosched {

struct PrefetchPlan {
  // Loops whose next iteration is prefetched.
  std::unordered_set<const ForNode*> loops;
  // The loads inside them that prefetch: contiguous vector loads (of at least
  // kMinPrefetchLoadBytes) of arguments the kernel only reads, whose index
  // moves with the prefetched loop and with every serial loop around it (a
  // load that an outer loop repeats finds its slice in the caches after the
  // first pass).
  std::unordered_set<const BufferLoadNode*> loads;
};

constexpr int64_t kMinPrefetchLoadBytes = 32;

// Bytes of the slice one iteration streams: below it the hardware prefetcher
// keeps up; above it the next slice would push the current one out of L2
// (Zen 3's 512 KiB included).
constexpr int64_t kMinPrefetchSliceBytes = 4 << 10;
constexpr int64_t kMaxPrefetchSliceBytes = 128 << 10;
// Vector lanes of arithmetic per element of the slice below which a loop is
// a copy, whose stream the hardware prefetcher already follows.
constexpr int64_t kMinLanesPerSliceElement = 8;

PrefetchPlan PlanPrefetches(const LoweredFunc& f);

}  // namespace autosched
