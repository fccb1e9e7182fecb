#include "runtime/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "task/host_cpu.h"

namespace autosched {
namespace {
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Set while this thread runs a chunk, so nested parallel loops run serially.
thread_local bool in_parallel_chunk = false;

// [begin, end) of chunk `index` out of `chunks` over n iterations.
std::pair<int64_t, int64_t> ChunkRange(int64_t n, int chunks, int index) {
  int64_t base = n / chunks, extra = n % chunks;
  int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}
}  // namespace

namespace {
// Polls `done` until it is true or kSpinMicroseconds have passed; returns
// whether it became true. After the first few microseconds each poll yields
// the core, so a thread the spinner waits for that shares its core (a
// loaded or oversubscribed machine) gets to run.
template <typename Done>
bool SpinUntil(const Done& done) {
  const auto start = std::chrono::steady_clock::now();
  const auto yield_after = start + std::chrono::microseconds(20);
  const auto deadline = start + std::chrono::microseconds(ThreadPool::kSpinMicroseconds);
  while (!done()) {
    for (int i = 0; i < 64; ++i) CpuRelax();
    if (done()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (now >= yield_after) std::this_thread::yield();
  }
  return true;
}
}  // namespace

ThreadPool::ThreadPool(int num_workers) {
  for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// The global pool. A child started by fork() has none of the parent's
// threads: it drops the parent's pool (never destroyed, as its workers are
// not there to join) and makes its own on first use. Reached from several
// threads at once, so the pointer is guarded; the child gets a fresh mutex,
// as fork() may copy it locked by a thread that does not exist there.
namespace {
std::mutex* global_mutex = new std::mutex;
std::atomic<ThreadPool*> global_pool{nullptr};

void ForgetPoolInChild() {
  global_mutex = new std::mutex;  // the old one is leaked with the old pool
  global_pool.store(nullptr);
}
}  // namespace

ThreadPool& ThreadPool::Global() {
  if (ThreadPool* pool = global_pool.load(std::memory_order_acquire)) return *pool;
  std::lock_guard<std::mutex> lock(*global_mutex);
  if (global_pool.load() == nullptr) {
    static const int registered = pthread_atfork(nullptr, nullptr, ForgetPoolInChild);
    (void)registered;
    // Never destroyed: at exit its workers still wait for work, and joining
    // them from a static destructor would race with the rest of shutdown.
    int workers = HostCores() - 1;
    global_pool.store(new ThreadPool(workers), std::memory_order_release);
  }
  return *global_pool.load();
}

void ThreadPool::WorkerLoop(int worker_index) {
  uint64_t seen = 0;
  auto has_news = [&] {
    return stopping_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
  };
  while (true) {
    if (!SpinUntil(has_news)) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleeping_workers_;
      start_cv_.wait(lock, has_news);
      --sleeping_workers_;
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    const int chunk = worker_index + 1;  // chunk 0 is the caller's
    if (chunk >= num_chunks_) continue;
    auto [begin, end] = ChunkRange(total_, num_chunks_, chunk);
    in_parallel_chunk = true;
    (*job_)(begin, end);
    in_parallel_chunk = false;
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may be asleep: take the lock so the wake-up cannot fall
      // between its check and its wait.
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, int num_tasks, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int tasks = num_tasks > 0 ? std::min(num_tasks, max_tasks()) : max_tasks();
  int chunks = static_cast<int>(std::min<int64_t>(tasks, n));
  if (chunks <= 1 || in_parallel_chunk) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> job_lock(job_mutex_);
  job_ = &fn;
  total_ = n;
  num_chunks_ = chunks;
  pending_.store(chunks - 1, std::memory_order_relaxed);
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_workers_ > 0;
  }
  if (wake) start_cv_.notify_all();
  auto [begin, end] = ChunkRange(n, chunks, 0);
  in_parallel_chunk = true;
  fn(begin, end);
  in_parallel_chunk = false;
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!SpinUntil(done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, done);
  }
  job_ = nullptr;
}

}  // namespace autosched

extern "C" int32_t autosched_parallel_for(int64_t n, int32_t num_tasks,
                                          int32_t (*body)(int64_t, int64_t, void*), void* closure) {
  std::atomic<int32_t> status{0};
  autosched::ThreadPool::Global().ParallelFor(n, num_tasks, [&](int64_t begin, int64_t end) {
    int32_t s = body(begin, end, closure);
    if (s != 0) status.store(s);
  });
  return status.load();
}
