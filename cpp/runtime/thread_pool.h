// The CPU thread pool that parallel loops of generated code run on.
//
// One process-wide pool of workers: one thread per core this process may run
// on (HostCores(), which is also the default num_cores of an llvm Target; a
// kernel asks for its target's num_cores tasks, and a target with more cores
// than the machine runs on the machine's). ParallelFor
// splits [0, n) into static contiguous chunks, one per task; the calling
// thread runs the first chunk and waits for the rest. A ParallelFor issued
// from inside a running chunk (a nested parallel loop) runs serially on the
// calling thread: pools never nest. A child process started by fork() gets a
// pool of its own on first use (the parent's workers do not exist there).
//
// Waking a sleeping thread costs tens of microseconds on a VM, as much as a
// small kernel's whole run, so threads spin before they sleep: a worker that
// finished a chunk polls for the next job, and the caller polls for the
// workers' chunks, for up to kSpinMicroseconds each; then they block on a
// condition variable. Back-to-back kernels (a network, a timing loop) thus
// start without a wake-up; an idle pool sleeps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace autosched {

class ThreadPool {
 public:
  static constexpr int64_t kSpinMicroseconds = 1000;

  explicit ThreadPool(int num_workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The shared pool, with one thread per core of HostCores() (the caller
  // counts as one); made on first use, and again in a forked child.
  static ThreadPool& Global();

  // Threads that can run chunks at once (workers plus the caller).
  int max_tasks() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over static chunks covering [0, n), using at most
  // num_tasks threads (0 = max_tasks()). Returns when every chunk is done.
  void ParallelFor(int64_t n, int num_tasks, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop(int worker_index);

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // one job at a time
  // Guards the sleeping side: a change of generation_ or stopping_ and the
  // wake-ups are made under it, so no sleeper misses one.
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  // The job: written before generation_ is raised (release), read after a
  // worker sees the new generation (acquire).
  int num_chunks_ = 0;
  int64_t total_ = 0;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> pending_{0};  // workers' chunks not finished
  std::atomic<int> sleeping_workers_{0};
};

}  // namespace autosched

// Entry points for generated code (resolved by the JIT by name).
extern "C" {
// Runs body(begin, end, closure) over chunks of [0, n) with at most num_tasks
// threads (0 = all). Returns 0, or the first non-zero status a chunk returned.
int32_t autosched_parallel_for(int64_t n, int32_t num_tasks, int32_t (*body)(int64_t, int64_t, void*),
                               void* closure);
}
