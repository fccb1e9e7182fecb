#include "search/rules/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "support/interrupt.h"

namespace autosched {

int SearchThreads(int num_threads) {
  if (num_threads > 0) return num_threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void RunParallel(int64_t n, int num_threads, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  const int threads = static_cast<int>(std::min<int64_t>(SearchThreads(num_threads), n));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (;;) {
      const int64_t i = next.fetch_add(1);
      if (i >= n || failed.load()) return;
      try {
        fn(i);
        PollInterrupt();  // the calling thread only: workers have no check
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();  // the calling thread takes part
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

uint64_t SeedFor(uint64_t base, uint64_t a, uint64_t b) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(base) ^ a) ^ b);
}

}  // namespace autosched
