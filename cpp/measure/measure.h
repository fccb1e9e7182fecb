// Measurement of candidate schedules: the types every part of cpp/measure/
// shares.
//
// Roadmap of this directory:
//   measure.h      MeasureInput / MeasureResult, the error kinds and their names,
//                  the options of the builder and the runner.
//   build_state.h  lower a state and build it for a target (errors typed as
//                  lower / compile).
//   verifier.h     deterministic random inputs, the reference (whole outputs or
//                  sampled points), the comparison with a tolerance per dtype,
//                  and the plausibility bound on times.
//   protocol.h     length-prefixed JSON messages over a socket.
//   worker.h       what the worker executable (worker_main.cc) does with each
//                  message: init (task), build, run, exit.
//   worker_process.h  one worker process seen from the supervisor: spawn,
//                  send, receive with a deadline, kill.
//   runner.h       LocalMeasurer: the supervisor. Builds a batch in parallel
//                  over worker processes, then times the built candidates one
//                  at a time; restarts workers that crash or hang and records
//                  the candidate's typed error.
//   records.h      the record log (versioned JSON lines, docs/records.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/state.h"
#include "support/fields.h"
#include "task/search_task.h"

namespace autosched {

// Why a candidate has no valid time. Records and messages carry the names
// (MeasureErrorName), never the numbers.
enum class MeasureError : uint8_t {
  None,           // "none": verified and plausible; costs are real times
  Instantiation,  // "instantiation": the steps do not replay on the task's DAG
  Lower,          // "lower": lowering the state failed
  Compile,        // "compile": code generation failed, or the worker died while compiling
  Runtime,        // "runtime": the kernel failed or the worker died (any signal) while running it
  BuildTimeout,   // "build_timeout": lowering + compiling took longer than the builder's timeout
  RunTimeout,     // "run_timeout": verification + timing took longer than the runner's timeout
  WrongAnswer,    // "wrong_answer": the output differs from the reference; never timed
  Implausible,    // "implausible": a time that is zero, negative, NaN or faster than the hardware allows
  Unknown,        // "unknown": anything else (e.g. the reference could not be computed)
};
constexpr int kNumMeasureErrors = 10;

const char* MeasureErrorName(MeasureError e);
// Throws Error naming the string when it is not an error name.
MeasureError ParseMeasureError(const std::string& name);

struct MeasureInput {
  SearchTask task;
  State state;
};

struct MeasureResult {
  std::vector<double> costs;  // seconds per run, one per repeat; empty unless timed
  MeasureError error = MeasureError::None;
  std::string error_msg;
  double all_cost = 0;   // wall seconds the candidate took to build and run
  double timestamp = 0;  // seconds since the Unix epoch when the measurement ended

  bool ok() const { return error == MeasureError::None; }
  double mean_cost() const;  // mean of costs; +inf when there is none or error != None
};

nlohmann::json MeasureResultToJson(const MeasureResult& r);
// Throws Error naming a missing or malformed field.
MeasureResult MeasureResultFromJson(const nlohmann::json& doc);

// The options of measurement, one typed field each with its default, the
// values it may take and what it does (support/fields.h: the structs, their
// checks and their Python keywords come from these lists).

// clang-format off
#define AUTOSCHED_BUILDER_OPTIONS_FIELDS(X)                                                   \
  X(double, timeout, 15, Positive(), "seconds to lower and compile one candidate")           \
  X(int, n_parallel, 0, AtLeast(0), "worker processes that compile at once; 0: the number of cores")
// clang-format on

// Options of the build phase.
struct BuilderOptions {
  AUTOSCHED_OPTIONS_FIELDS(BuilderOptions, AUTOSCHED_BUILDER_OPTIONS_FIELDS)
};

// clang-format off
#define AUTOSCHED_FAULT_INJECTION_FIELDS(X)                                                                     \
  X(double, wrong_result, 0, Share(), "the output is perturbed before verification -> wrong_answer")          \
  X(double, crash, 0, Share(), "the worker raises SIGSEGV after the kernel's first run -> runtime")           \
  X(double, hang, 0, Share(), "the worker loops forever while running it -> run_timeout")                     \
  X(double, zero_time, 0, Share(), "the worker reports a time of 0 -> implausible")                           \
  X(double, near_zero_time, 0, Share(),                                                                         \
    "the worker reports 1e-18 s per run (positive, but faster than any hardware) -> implausible, by the peak " \
    "FLOP/s and bandwidth bound")                                                                               \
  X(double, launch_error, 0, Share(),                                                                           \
    "OpenCL targets only: the kernel is launched with a work group larger than the device allows, so the "     \
    "driver refuses the launch -> runtime")
// clang-format on

// Shares of candidates that get a fault injected (tests of the measurement
// itself), one field per kind of fault. Which candidates get one is decided
// from RunnerOptions::fault_seed and the candidate's sequence number (an even
// spread, see LocalMeasurer::FaultFor), so a run repeats exactly.
struct FaultInjection {
  AUTOSCHED_OPTIONS_FIELDS(FaultInjection, AUTOSCHED_FAULT_INJECTION_FIELDS)

  // (share, name) per kind, in the order of the list.
  std::vector<std::pair<double, const char*>> Shares() const {
    std::vector<std::pair<double, const char*>> out;
    VisitFields(*this, [&](const char* name, double share, const FieldRange&, const char*) {
      out.emplace_back(share, name);
    });
    return out;
  }
  bool any() const {
    for (const auto& [share, name] : Shares()) {
      if (share > 0) return true;
    }
    return false;
  }
  void CheckTogether() const {
    double total = 0;
    for (const auto& [share, name] : Shares()) total += share;
    AS_CHECK(total <= 1 + 1e-12, "FaultInjection: the shares add up to more than 1, got " << total);
  }
};

// How outputs are checked before a time counts (verifier.h).
struct VerifyOptions {
  uint64_t seed = 0;  // the random inputs; the same in every worker
  // Tasks whose work (flop count + output elements) is at most this compare
  // every output element; larger ones compare `num_points` sampled points.
  // The reference evaluator interprets at about 10-20 MFLOP/s, so preparing a
  // task stays well under a second either way.
  double whole_output_work = 2e6;
  int num_points = 256;
};

// clang-format off
#define AUTOSCHED_RUNNER_OPTIONS_FIELDS(X)                                                                      \
  X(double, timeout, 10, Positive(), "seconds to verify and time one candidate")                               \
  X(int, number, 3, AtLeast(1), "runs per repeat (grown to reach min_repeat_ms)")                              \
  X(int, repeat, 1, AtLeast(1), "costs per candidate")                                                         \
  X(double, min_repeat_ms, 100, AtLeast(0), "number is grown until one repeat lasts this long")                \
  X(int64_t, max_repeat, 1000000, AtLeast(1), "the most runs one repeat may grow to while reaching min_repeat_ms") \
  X(int64_t, max_device_runs, 1000, AtLeast(1),                                                                  \
    "OpenCL targets: the most kernel runs the timing of one candidate may launch over all its repeats: repeat " \
    "is capped at it and each repeat at max(1, max_device_runs / repeat) runs (with max_repeat), so that a "    \
    "slow kernel or a long queue of tiny ones cannot hold the worker for minutes (the timeout still applies); " \
    "profiling events time the device itself, so few runs suffice")                                            \
  X(double, cooldown_s, 0, AtLeast(0), "pause before each candidate's run, in seconds")                        \
  X(double, cut_short_factor, 5, AtLeast(0),                                                                     \
    "a candidate whose verification run took this many times the task's best time (LocalMeasurer::"            \
    "best_seconds_hint) is timed by that run alone, as one repeat; 0: every candidate is timed in full")      \
  X(bool, flush_cache, false, AnyValue(), "overwrite a large buffer before each repeat")                       \
  X(double, peak_flops, 0, AtLeast(0),                                                                           \
    "FLOP/s no run can beat (0: derived from the task's hardware parameters, verifier.h); a time below what "  \
    "the peaks allow, over a margin of 1.5, is implausible")                                                    \
  X(double, peak_bandwidth, 0, AtLeast(0), "bytes/s no run can beat (0: derived from the task)")               \
  X(uint64_t, verify_seed, 0, AnyValue(), "seed of the random inputs; the same in every worker")               \
  X(double, whole_output_work, 2e6, AtLeast(0),                                                                  \
    "tasks of at most this much work (flop count + output elements) compare every output element, larger "     \
    "ones num_points sampled points")                                                                           \
  X(int, num_points, 256, AtLeast(1), "output points compared for tasks above whole_output_work")              \
  X(FaultInjection, faults, {}, AnyValue(), "shares of candidates that get a fault injected (for tests)")      \
  X(uint64_t, fault_seed, 0, AnyValue(), "which candidates get the injected faults")
// clang-format on

// Options of the run phase.
struct RunnerOptions {
  AUTOSCHED_OPTIONS_FIELDS(RunnerOptions, AUTOSCHED_RUNNER_OPTIONS_FIELDS)

  VerifyOptions verify() const { return {verify_seed, whole_output_work, num_points}; }
  void CheckTogether() const { CheckFields(faults); }
};

}  // namespace autosched
