// What the build phase (builder.h) and the run phase (runner.h) share: the
// bookkeeping of one batch of candidates and the pool of worker processes.
//
// A candidate moves ToBuild -> Built (its module lives in one worker) -> Done.
// When a worker dies or is killed, the candidates it had built but not run go
// back to ToBuild (they are rebuilt in a fresh worker, not failed); only the
// candidate it was busy with gets the error.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "measure/measure.h"
#include "measure/worker_process.h"

namespace autosched {

using SteadyClock = std::chrono::steady_clock;

// Thrown by Measure when the interrupt check asks to stop (e.g. Ctrl-C in
// Python); every worker has been killed by then.
class MeasureInterrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "measurement interrupted"; }
};

// Called every ~100 ms while waiting; true stops the measurement.
using InterruptCheck = std::function<bool()>;

struct Candidate {
  enum class Phase : uint8_t { ToBuild, Built, Done };
  nlohmann::json steps;        // State::ToJson
  std::string fault = "none";  // a FaultInjection kind ("wrong_result", "crash", ...) or "none"
  Phase phase = Phase::ToBuild;
  MeasureResult result;
  double seconds = 0;  // wall time spent on it so far (builds and run)
  int requeues = 0;    // modules lost with a worker it was not to blame for
  // It met a device resource error once and was sent to a fresh worker; a
  // second one is its own error.
  bool resource_retried = false;
};

// No deadline: a batch is measured to its end.
constexpr SteadyClock::time_point kNoDeadline = SteadyClock::time_point::max();

// Sets the result and marks the candidate done.
void Finish(Candidate* c, MeasureError error, const std::string& msg, std::vector<double> costs = {});
// Sends a candidate whose module was lost back to ToBuild (Unknown error after
// too many losses, so a batch always ends).
void Requeue(Candidate* c);

// Waits for one reply until `deadline`, checking `interrupt` every 100 ms.
WorkerProcess::Status WaitReply(WorkerProcess* proc, SteadyClock::time_point deadline, nlohmann::json* reply,
                                const InterruptCheck& interrupt);

class WorkerPool {
 public:
  WorkerPool(std::string worker_path, int size);

  int size() const { return static_cast<int>(slots_.size()); }
  // The init message (worker.h) every worker gets; workers that served
  // another task are re-initialised when next prepared.
  void SetTask(nlohmann::json init_msg);
  // Starts and initialises the given workers (in parallel). False when the
  // task cannot be prepared; *error and *msg say why (every candidate of the
  // batch gets that error). A worker not ready at `deadline` is killed and
  // left not ready, which is no error. Throws Error when the executable
  // cannot start.
  bool Prepare(const std::vector<int>& slots, MeasureError* error, std::string* msg,
               const InterruptCheck& interrupt, SteadyClock::time_point deadline = kNoDeadline);
  bool ready(int i) const { return slots_[i].ready; }
  WorkerProcess* proc(int i) { return slots_[i].proc.get(); }
  // Candidates whose module worker i holds, in build order.
  std::vector<int>& built(int i) { return slots_[i].built; }
  // Worker i died or was killed: forgets it, returns the candidates it had built.
  std::vector<int> Lose(int i);
  void KillAll();
  int processes_started() const { return started_; }

 private:
  struct Slot {
    std::unique_ptr<WorkerProcess> proc;
    bool ready = false;
    std::vector<int> built;
  };
  std::string path_;
  std::vector<Slot> slots_;
  nlohmann::json init_msg_;
  int started_ = 0;
};

}  // namespace autosched
