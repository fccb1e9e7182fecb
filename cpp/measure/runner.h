// The run phase and LocalMeasurer, the supervisor of measurement.
//
// LocalMeasurer::Measure(task, states):
//   1. every worker of the pool gets the task once (worker.h "init": inputs
//      and reference are prepared there);
//   2. build phase (builder.h): all candidates compile in parallel;
//   3. run phase (RunBuilt): the built candidates are verified and timed ONE AT
//      A TIME, worker after worker, never while a build or another run is in
//      progress; a worker that dies while running takes only that candidate
//      with it ("runtime", naming the signal), one that passes the timeout is
//      killed ("run_timeout"); the candidates it had built go back to step 2;
//   4. times that are not plausible (verifier.h) become "implausible".
// A worker that reports a device resource error (an OpenCL driver out of host
// memory or resources) is replaced, and the candidate measured once more in
// the fresh one before the error counts as its own.
// No candidate ends the session: every failure is recorded as the candidate's
// typed error and the batch goes on. Workers live across calls while the task
// stays the same, and are re-initialised for a new task.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "measure/measurer.h"
#include "measure/supervisor.h"
#include "measure/verifier.h"

namespace autosched {

// best_seconds: the task's best time so far (0: none), for cut_short_factor.
// Stops before a run that would start after `deadline` (a cooldown ends
// there too); the candidates left stay built. A run in progress at the
// deadline is abandoned: its worker is killed, and it and the candidates that
// worker had built go back to ToBuild.
void RunBuilt(WorkerPool* pool, const RunnerOptions& options, const PlausibilityBound& bound,
              std::vector<Candidate>* batch, const InterruptCheck& interrupt, double best_seconds = 0,
              SteadyClock::time_point deadline = kNoDeadline);

class LocalMeasurer : public Measurer {
 public:
  // An empty worker_path takes DefaultWorkerPath(). Throws Error for invalid
  // options (the message names the option).
  LocalMeasurer(BuilderOptions builder, RunnerOptions runner, std::string worker_path = "");
  ~LocalMeasurer() override;

  // One result per state, in order. Throws Error only for problems of the
  // setup (the worker cannot start), MeasureInterrupted when `interrupt` asks.
  // No build or run starts after `deadline`, and those in progress then are
  // abandoned (their workers killed; so is the preparation of a worker):
  // the states not measured by then get an Unknown error saying so, and
  // false in *measured (one flag per state, when given).
  std::vector<MeasureResult> Measure(const SearchTask& task, const std::vector<State>& states,
                                     SteadyClock::time_point deadline = kNoDeadline,
                                     std::vector<bool>* measured = nullptr) override;

  const BuilderOptions& builder_options() const { return builder_; }
  const RunnerOptions& runner_options() const { return runner_; }
  const std::string& worker_path() const { return worker_path_; }
  // Worker processes started so far (restarts included).
  int processes_started() const { return pool_.processes_started(); }

  InterruptCheck interrupt;
  // best_seconds_hint (Measurer): with RunnerOptions::cut_short_factor,
  // candidates many times slower than it are timed by their verification
  // run alone.

 private:
  std::string FaultFor(uint64_t sequence) const;

  BuilderOptions builder_;
  RunnerOptions runner_;
  std::string worker_path_;
  WorkerPool pool_;
  uint64_t sequence_ = 0;  // candidates measured so far (decides injected faults)
  std::mutex mutex_;
};

}  // namespace autosched
