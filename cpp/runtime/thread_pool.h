// The CPU thread pool that parallel loops of generated code run on.
//
// One process-wide pool of workers: one thread per core this process may run
// on (HostCores(), which is also the default num_cores of an llvm Target; a
// kernel asks for its target's num_cores tasks, and a target with more cores
// than the machine runs on the machine's). ParallelFor gives each task a
// contiguous share of [0, n), cut into pieces (PiecesPerTask()); a task runs
// its own pieces in order and then takes the pieces another task has not
// started yet. On cores that run at the same speed this is a static split;
// when one core is slowed (another process on it, a VM's vCPU descheduled by
// its host), the others finish its share instead of waiting for it. The
// calling thread is the first task; it returns when every piece is done,
// without waiting for a worker that has not started. A ParallelFor issued
// from inside a running piece (a nested parallel loop) runs serially on the
// calling thread: pools never nest. A child process started by fork() gets a
// pool of its own on first use (the parent's workers do not exist there).
//
// Waking a sleeping thread costs tens of microseconds on a VM, as much as a
// small kernel's whole run, so threads spin before they sleep: a worker that
// finished its pieces polls for the next job, and the caller polls for the
// workers' pieces, for up to kSpinMicroseconds each; then they block on a
// condition variable. Back-to-back kernels (a network, a timing loop) thus
// start without a wake-up; an idle pool sleeps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
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

  // Threads that can run pieces at once (workers plus the caller).
  int max_tasks() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over pieces covering [0, n), using at most num_tasks
  // threads (0 = max_tasks()). Returns when every piece is done.
  void ParallelFor(int64_t n, int num_tasks, const std::function<void(int64_t, int64_t)>& fn);

  // Pieces each task's share is cut into (process-wide; 1: a static split
  // with no stealing). The default is kDefaultPiecesPerTask.
  static constexpr int kDefaultPiecesPerTask = 8;
  static int PiecesPerTask();
  static void SetPiecesPerTask(int pieces);

 private:
  // The next piece of one task's share; one cache line each, so that a task
  // taking its own pieces does not contend with the others.
  struct alignas(64) PieceCounter {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  // One ParallelFor. Workers hold it by shared_ptr: one that starts late
  // finds no piece left and must still be able to look, after the caller
  // has returned.
  struct Job {
    explicit Job(int max_tasks) : shares(max_tasks) {}
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int num_tasks = 0;
    int64_t total = 0, num_pieces = 0;
    std::vector<PieceCounter> shares;     // one per task
    std::atomic<int64_t> pieces_done{0};  // fn's writes are published by it (release)
  };

  void WorkerLoop(int worker_index);
  // Runs task `task`'s own pieces of `job`, then the pieces left of the
  // others' shares, nearest first.
  void RunPieces(Job& job, int task);

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // one job at a time
  // Guards job_ and the sleeping side: a change of generation_ or stopping_
  // and the wake-ups are made under it, so no sleeper misses one.
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  std::shared_ptr<Job> job_;  // the current or last job (guarded by mutex_)
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
};

}  // namespace autosched

// Entry points for generated code (resolved by the JIT by name).
extern "C" {
// Runs body(begin, end, closure) over pieces of [0, n) with at most num_tasks
// threads (0 = all). Returns 0, or the first non-zero status a piece returned.
int32_t autosched_parallel_for(int64_t n, int32_t num_tasks, int32_t (*body)(int64_t, int64_t, void*),
                               void* closure);
}
