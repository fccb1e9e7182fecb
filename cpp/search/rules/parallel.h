// Parallel loops of the search: sampling, mutation and the checks of the
// population run on every core.
//
// Work items get their random generator from SeedFor(base, a, b), a function
// of the item's identity (the round, the generation, the slot), never of the
// thread that runs it, so a seed gives the same states whatever the number of
// threads.
#pragma once

#include <cstdint>
#include <functional>
#include <random>

namespace autosched {

// Threads a parallel loop uses: num_threads when > 0, else one per hardware
// thread.
int SearchThreads(int num_threads);

// Runs fn(i) for every i in [0, n) on up to SearchThreads(num_threads)
// threads, handing out indices one at a time. When fn throws, the loop stops
// handing out indices and the first exception is rethrown here; so does an
// interrupt (support/interrupt.h), polled by the calling thread between its
// items.
void RunParallel(int64_t n, int num_threads, const std::function<void(int64_t)>& fn);

// A well-mixed seed from a base seed and two counters (splitmix64).
uint64_t SeedFor(uint64_t base, uint64_t a, uint64_t b = 0);
inline std::mt19937 RngFor(uint64_t base, uint64_t a, uint64_t b = 0) {
  return std::mt19937(static_cast<uint32_t>(SeedFor(base, a, b) >> 32));
}

}  // namespace autosched
