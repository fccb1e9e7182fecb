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

// Set while this thread runs a piece, so nested parallel loops run serially.
thread_local bool in_parallel_chunk = false;

// Start of part `index` when n iterations are cut into `parts` near-equal
// contiguous parts (index == parts gives n).
int64_t PartBegin(int64_t n, int64_t parts, int64_t index) {
  int64_t base = n / parts, extra = n % parts;
  return index * base + std::min<int64_t>(index, extra);
}

std::atomic<int> pieces_per_task{ThreadPool::kDefaultPiecesPerTask};
}  // namespace

int ThreadPool::PiecesPerTask() { return pieces_per_task.load(std::memory_order_relaxed); }

void ThreadPool::SetPiecesPerTask(int pieces) { pieces_per_task.store(std::max(1, pieces)); }

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
  const int task = worker_index + 1;  // task 0 is the caller
  while (true) {
    std::shared_ptr<Job> job;
    if (!SpinUntil(has_news)) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleeping_workers_;
      start_cv_.wait(lock, has_news);
      --sleeping_workers_;
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen = generation_.load(std::memory_order_acquire);
      job = job_;
    }
    if (job == nullptr || task >= job->num_tasks) continue;
    RunPieces(*job, task);
  }
}

void ThreadPool::RunPieces(Job& job, int task) {
  in_parallel_chunk = true;
  for (int k = 0; k < job.num_tasks; ++k) {
    PieceCounter& share = job.shares[(task + k) % job.num_tasks];
    int64_t piece;
    while ((piece = share.next.fetch_add(1, std::memory_order_relaxed)) < share.end) {
      (*job.fn)(PartBegin(job.total, job.num_pieces, piece), PartBegin(job.total, job.num_pieces, piece + 1));
      // The caller may be asleep waiting for the last piece: take the lock so
      // the wake-up cannot fall between its check and its wait.
      // (Sequentially consistent with the caller's store of caller_sleeping_
      // and its load of pieces_done: one of the two sees the other.)
      if (job.pieces_done.fetch_add(1) + 1 == job.num_pieces && task != 0 && caller_sleeping_.load()) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_cv_.notify_one();
      }
    }
  }
  in_parallel_chunk = false;
}

void ThreadPool::ParallelFor(int64_t n, int num_tasks, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int tasks = num_tasks > 0 ? std::min(num_tasks, max_tasks()) : max_tasks();
  tasks = static_cast<int>(std::min<int64_t>(tasks, n));
  if (tasks <= 1 || in_parallel_chunk) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> job_lock(job_mutex_);
  std::shared_ptr<Job> job;
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The last job's state is reused unless a worker still holds it.
    if (job_ == nullptr || job_.use_count() > 1) job_ = std::make_shared<Job>(max_tasks());
    job = job_;
    job->fn = &fn;
    job->num_tasks = tasks;
    job->total = n;
    job->num_pieces = std::min<int64_t>(n, static_cast<int64_t>(tasks) * PiecesPerTask());
    job->pieces_done.store(0, std::memory_order_relaxed);
    for (int t = 0; t < tasks; ++t) {
      job->shares[t].next.store(PartBegin(job->num_pieces, tasks, t), std::memory_order_relaxed);
      job->shares[t].end = PartBegin(job->num_pieces, tasks, t + 1);
    }
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_workers_ > 0;
  }
  if (wake) start_cv_.notify_all();
  RunPieces(*job, 0);
  // Done when every piece is, whether or not each worker got to start: the
  // caller never waits for a thread its core has not run yet.
  auto done = [&] { return job->pieces_done.load() == job->num_pieces; };
  if (!SpinUntil(done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_.store(true);
    done_cv_.wait(lock, done);
    caller_sleeping_.store(false);
  }
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
