#include "measure/worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "measure/build_state.h"
#include "measure/protocol.h"
#include "measure/verifier.h"
#include "schedule/constant_stages.h"
#include "support/error.h"
#ifdef AUTOSCHED_HAS_OPENCL
#include "runtime/opencl/opencl_device.h"
#include "runtime/opencl/opencl_module.h"
#endif

namespace autosched {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs a repeat times with network caches (SearchTask::network_caches).
constexpr int kNetworkCachesRuns = 20;
// Bytes each pool thread writes to refill its core's private caches: four
// times L2 (caches are not strictly LRU), 8 MiB where L2's size is unknown.
constexpr int64_t kRefillPerL2 = 4;
constexpr size_t kRefillUnknownL2Bytes = size_t{8} << 20;

int64_t ArgBytes(const CallArg& arg) {
  int64_t elements = 1;
  for (int64_t extent : arg.shape) elements *= extent;
  return elements * arg.dtype.bytes();
}

// A built candidate. With constant arguments (SearchTask::constant_args), the
// stages computed only from them are split off as the deployed network does:
// `prepacks` compute them once per run request, before the kernel is timed.
struct Candidate {
  Module kernel;
  struct Prepack {
    Module module;
    std::vector<int> args;  // positions of its inputs among the task's tensors
  };
  std::vector<Prepack> prepacks;
};

class Worker {
 public:
  json Handle(const json& msg);

 private:
  json Init(const json& msg);
  json BuildOne(const json& msg);
  json RunOne(const json& msg);
  BuiltCandidate Build(const State& state, std::vector<Candidate::Prepack>* prepacks);
  void SetNetworkCaches(const std::vector<CallArg>& args, TimeOptions* options) const;
  std::vector<double> Time(const Module& mod, const std::vector<CallArg>& args, const json& msg,
                           double first_run_seconds);
  std::string FirstRun(const Candidate& c, std::vector<AlignedBuffer>* packed, std::vector<CallArg>* args,
                       const std::string& fault, double* seconds, bool* resource);

  std::optional<SearchTask> task_;
  std::unique_ptr<TestData> data_;
  std::map<int64_t, Candidate> modules_;
  bool out_of_resources_ = false;  // the injected fault resource_error happened here
};

// What the process writes to its stdout and stderr while it lives: a device's
// compiler prints its diagnostics there ("1 error generated."), which from a
// worker would reach the terminal of the tuning session. They go to a
// temporary file instead, and Take() returns them (the first kMaxBytes).
class CapturedOutput {
 public:
  static constexpr size_t kMaxBytes = 4096;

  CapturedOutput() {
    file_ = std::tmpfile();
    if (file_ == nullptr) return;  // nowhere to capture to: the output goes where it went
    Flush();
    saved_out_ = dup(STDOUT_FILENO);
    saved_err_ = dup(STDERR_FILENO);
    if (saved_out_ < 0 || saved_err_ < 0) {  // no descriptor left to restore them from
      if (saved_out_ >= 0) close(saved_out_);
      if (saved_err_ >= 0) close(saved_err_);
      std::fclose(file_);
      file_ = nullptr;
      return;
    }
    dup2(fileno(file_), STDOUT_FILENO);
    dup2(fileno(file_), STDERR_FILENO);
  }
  ~CapturedOutput() { Take(); }
  CapturedOutput(const CapturedOutput&) = delete;
  CapturedOutput& operator=(const CapturedOutput&) = delete;

  // Restores stdout and stderr; what was written meanwhile.
  std::string Take() {
    if (file_ == nullptr) return "";
    Flush();
    dup2(saved_out_, STDOUT_FILENO);
    dup2(saved_err_, STDERR_FILENO);
    close(saved_out_);
    close(saved_err_);
    std::string text(kMaxBytes, '\0');
    const ssize_t n = pread(fileno(file_), text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    std::fclose(file_);
    file_ = nullptr;
    return text;
  }

 private:
  static void Flush() {
    std::fflush(stdout);
    std::fflush(stderr);
  }

  std::FILE* file_ = nullptr;
  int saved_out_ = -1, saved_err_ = -1;
};

json Reply(const json& id, MeasureError error, const std::string& msg) {
  return {{"id", id}, {"error", MeasureErrorName(error)}, {"msg", msg}};
}

json Worker::Handle(const json& msg) {
  const std::string cmd = msg.value("cmd", "");
  if (cmd == "init") return Init(msg);
  if (cmd == "build") return BuildOne(msg);
  if (cmd == "run") return RunOne(msg);
  if (cmd == "drop") {  // the candidates built here will not run (the round's deadline passed)
    const size_t n = modules_.size();
    modules_.clear();
    return {{"ok", true}, {"dropped", n}};
  }
  throw Error("unknown worker command '" + cmd + "'");
}

json Worker::Init(const json& msg) {
  auto start = Clock::now();
  modules_.clear();
  data_.reset();
  task_.reset();
  try {
    task_ = SearchTask::FromJson(msg.at("task"));
    const json& v = msg.at("verify");
    VerifyOptions options;
    options.seed = v.at("seed").get<uint64_t>();
    options.whole_output_work = v.at("whole_output_work").get<double>();
    options.num_points = v.at("num_points").get<int>();
    data_ = std::make_unique<TestData>(task_->compute_dag, options);
  } catch (const std::exception& e) {
    task_.reset();
    return {
        {"ok", false}, {"error", "unknown"}, {"msg", std::string("preparing the task failed: ") + e.what()}};
  }
  return {{"ok", true}, {"whole", data_->whole()}, {"seconds", SecondsSince(start)}};
}

json Worker::BuildOne(const json& msg) {
  auto start = Clock::now();
  const json& id = msg.at("id");
  AS_CHECK(task_.has_value(), "build before init");
  std::optional<State> state;
  try {
    state = State::FromJson(task_->compute_dag, msg.at("state"));
  } catch (const std::exception& e) {
    return Reply(id, MeasureError::Instantiation, std::string("the steps do not apply: ") + e.what());
  }
  if (msg.value("fault", "") == "resource_error") out_of_resources_ = true;
  BuiltCandidate built;
  std::vector<Candidate::Prepack> prepacks;
  if (out_of_resources_) {  // as a driver out of host memory fails every later request
    built.error = MeasureError::Compile;
    built.error_msg =
        "the device ran out of resources: building an OpenCL program: OpenCL error "
        "CL_OUT_OF_HOST_MEMORY (-6) (injected fault resource_error)";
    built.resource_error = true;
  } else {
    CapturedOutput output;
    built = Build(*state, &prepacks);
    const std::string printed = output.Take();
    // The compiler's messages belong to the candidate's error, not the terminal.
    if (built.error != MeasureError::None && printed.find_first_not_of(" \n") != std::string::npos)
      built.error_msg += "\nprinted by the device's compiler:\n" + printed;
  }
  json reply = Reply(id, built.error, built.error_msg);
  if (built.kernel_max_threads > 0) reply["kernel_max_threads"] = built.kernel_max_threads;
  if (built.resource_error) reply["restart"] = true;
  if (built.module) {
    modules_.insert_or_assign(id.get<int64_t>(), Candidate{std::move(*built.module), std::move(prepacks)});
  }
  reply["seconds"] = SecondsSince(start);
  return reply;
}

// The candidate's kernel; on a CPU target with constant arguments, without
// the stages computed only from them, each of which gets a module of its own
// (the initial schedule of its computation: it runs once per request).
BuiltCandidate Worker::Build(const State& state, std::vector<Candidate::Prepack>* prepacks) {
  const Target& target = task_->target;
  // Prepacking runs the constant stages in this process before the kernel.
  if (task_->constant_args.empty() || !target.kind->runs_in_host_process) {
    return LowerAndBuild(state, target, task_->hardware_params);
  }
  std::optional<ConstantStageSplit> split_or;
  try {
    split_or = SplitConstantStages(state, task_->constant_args);
  } catch (const std::exception& e) {
    BuiltCandidate failed;
    failed.error = MeasureError::Lower;
    failed.error_msg = std::string("splitting off the stages of constant inputs failed: ") + e.what();
    return failed;
  }
  const ConstantStageSplit& split = *split_or;
  for (size_t i = 0; i < split.prepack.size(); ++i) {
    BuiltCandidate pack = LowerAndBuild(State(split.prepack[i]), target, task_->hardware_params);
    if (!pack.module) {
      pack.error_msg =
          "the stage of constant inputs '" + state.stage(split.stage_ids[i]).name() + "': " + pack.error_msg;
      return pack;
    }
    prepacks->push_back({std::move(*pack.module), split.prepack_args[i]});
  }
  return LowerAndBuild(split.state, target, task_->hardware_params);
}

// The caches as a network leaves them before each run: the private caches
// refilled, and the task's inputs that are neither constants nor outputs
// (the previous kernels' results) rewritten by the pool's threads.
void Worker::SetNetworkCaches(const std::vector<CallArg>& args, TimeOptions* options) const {
  const int64_t l2 = task_->hardware_params.l2_cache_bytes;
  options->refill_private_caches_bytes =
      l2 > 0 ? static_cast<size_t>(kRefillPerL2 * l2) : kRefillUnknownL2Bytes;
  const auto& tensors = task_->compute_dag.tensors();
  const auto& constants = task_->constant_args;
  for (size_t i = 0; i < tensors.size() && i < args.size(); ++i) {
    if (!tensors[i]->is_placeholder()) continue;
    if (std::binary_search(constants.begin(), constants.end(), static_cast<int>(i))) continue;
    options->produce_before_run.emplace_back(args[i].data, static_cast<size_t>(ArgBytes(args[i])));
  }
}

// Seconds per run, one per repeat; `number` grows until a repeat lasts
// min_repeat_ms (at most max_repeat runs). The verification run, which took
// first_run_seconds, was the warm-up; a kernel that alone fills min_repeat_ms
// is timed one run per repeat, so slow candidates fit in the timeout; one
// whose verification run passed the message's cut_short_seconds is timed by
// that run alone.
//
// On an OpenCL target the runs of all repeats together are capped at
// max_device_runs (RunnerOptions): `repeat` at it, each repeat at
// max(1, max_device_runs / repeat) runs.
//
// A task timed with network caches (SearchTask::network_caches) times each
// run alone after setting the caches up, kNetworkCachesRuns runs a repeat:
// growing `number` to min_repeat_ms would repeat the set-up (a few hundred
// microseconds) thousands of times for a small kernel.
std::vector<double> Worker::Time(const Module& mod, const std::vector<CallArg>& args, const json& msg,
                                 double first_run_seconds) {
  int64_t number = std::max<int64_t>(1, msg.at("number").get<int64_t>());
  int repeat = std::max(1, msg.at("repeat").get<int>());
  const double min_ms = msg.at("min_repeat_ms").get<double>();
  int64_t max_number = std::max<int64_t>(number, msg.at("max_repeat").get<int64_t>());
  const TargetKind& kind = *task_->target.kind;
  if (kind.timing == RunTiming::kDeviceEvents) {
    const int64_t cap = std::max<int64_t>(1, msg.value("max_device_runs", int64_t{1000}));
    repeat = static_cast<int>(std::min<int64_t>(repeat, cap));
    max_number = std::min<int64_t>(max_number, std::max<int64_t>(1, cap / repeat));
    number = std::min(number, max_number);
  }
  const bool flush = msg.at("flush_cache").get<bool>();
  // Caches around runs can be set up only where the kernel runs in this process.
  const bool network_caches = kind.runs_in_host_process && task_->network_caches;
  if (network_caches) number = kNetworkCachesRuns;
  if (first_run_seconds * 1e3 >= min_ms) number = 1;
  // Many times slower than the task's best: the verification run is its
  // time (timing it in full would only confirm it is slow).
  const double cut_short = msg.value("cut_short_seconds", 0.0);
  // (The verification run's wall time is a run's time only where runs are timed by the wall clock.)
  if (kind.timing == RunTiming::kHostWallClock && cut_short > 0 && first_run_seconds > cut_short)
    return {first_run_seconds};
  // Cold constants: the task's constant arguments and the arrays prepacked
  // from them (after the task's own arguments) leave the caches before each run.
  std::vector<std::pair<const void*, size_t>> evict;
  if (kind.runs_in_host_process && task_->cold_constants) {
    const size_t own_args = task_->compute_dag.tensors().size();
    for (size_t i = 0; i < args.size(); ++i) {
      bool constant = i >= own_args || std::binary_search(task_->constant_args.begin(),
                                                          task_->constant_args.end(), static_cast<int>(i));
      if (constant) evict.emplace_back(args[i].data, static_cast<size_t>(ArgBytes(args[i])));
    }
  }
  TimeOptions options;
  options.flush_cache = flush;
  options.warm_up = false;
  options.evict_before_run = evict;
  if (network_caches) SetNetworkCaches(args, &options);
  std::vector<double> costs;
  while (static_cast<int>(costs.size()) < repeat) {
    options.number = static_cast<int>(number);
    double per_run = mod.TimeEvaluate(args, options).at(0);
    double ms = per_run * static_cast<double>(number) * 1e3;
    if (ms < min_ms && number < max_number && !network_caches) {
      double scale = ms > 0 ? min_ms / ms * 1.1 : 10.0;
      number = std::min<int64_t>(max_number, static_cast<int64_t>(std::ceil(number * std::max(scale, 2.0))));
      continue;
    }
    costs.push_back(per_run);
  }
  return costs;
}

// Computes the candidate's prepacked arrays into `packed`, then runs the
// kernel once on poisoned outputs (the verification run); `args` are the
// kernel's arguments. "" when it ran, else why it failed.
std::string Worker::FirstRun(const Candidate& c, std::vector<AlignedBuffer>* packed,
                             std::vector<CallArg>* args, const std::string& fault, double* seconds,
                             bool* resource) {
#ifdef AUTOSCHED_HAS_OPENCL
  struct LaunchFault {  // on for this run only
    explicit LaunchFault(bool on) { SetOpenCLLaunchFaultForTesting(on); }
    ~LaunchFault() { SetOpenCLLaunchFaultForTesting(false); }
  } launch_fault(fault == "launch_error");
#endif
  try {
    *args = data_->CallArgs();
    const std::vector<CallArg> task_args = *args;
    for (const Candidate::Prepack& pack : c.prepacks) {
      std::vector<CallArg> pack_args;
      for (int position : pack.args) pack_args.push_back(task_args.at(position));
      const ArgSpec& result = pack.module.args().back();
      int64_t elements = 1;
      for (int64_t extent : result.shape) elements *= extent;
      packed->emplace_back(
          AlignedAlloc(static_cast<size_t>(std::max<int64_t>(1, elements)) * result.dtype.bytes()));
      CallArg out;
      out.data = packed->back().get();
      out.dtype = result.dtype;
      out.shape = result.shape;
      pack_args.push_back(out);
      pack.module.Call(pack_args);
      args->push_back(out);
    }
    data_->PoisonOutputs();
    const auto call_start = Clock::now();
    c.kernel.Call(*args);
    *seconds = SecondsSince(call_start);
  } catch (const DeviceResourceError& e) {
    *resource = true;
    return std::string("the device ran out of resources: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("the kernel failed: ") + e.what();
  }
  return "";
}

json Worker::RunOne(const json& msg) {
  const json& id = msg.at("id");
  auto it = modules_.find(id.get<int64_t>());
  AS_CHECK(it != modules_.end(), "run of candidate " << id.dump() << ", which this worker has not built");
  Candidate candidate = std::move(it->second);
  modules_.erase(it);
  const std::string fault = msg.value("fault", "none");
  AS_CHECK(
      fault != "launch_error" || !task_->target.kind->runs_in_host_process,
      "the launch_error fault needs an OpenCL target (or another whose kernels are launched on a device)");
  if (fault == "hang") {
    volatile uint64_t spins = 0;
    while (true) spins = spins + 1;
  }
  double first_run_seconds = 0;
  bool resource = false;
  std::vector<AlignedBuffer> packed;  // outlives every call of the kernel below
  std::vector<CallArg> args;
  std::string failed = FirstRun(candidate, &packed, &args, fault, &first_run_seconds, &resource);
  if (!failed.empty()) {
    json reply = Reply(id, MeasureError::Runtime, failed);
    // A failed GPU run may leave the context unusable (an out-of-bounds
    // access on NVIDIA does): the supervisor replaces this worker. After a
    // resource error the candidate is tried again in the fresh one.
    if (task_->target.kind->fault_restarts_worker || resource) reply["restart"] = true;
    if (resource) reply["resource_error"] = true;
    return reply;
  }
  if (fault == "crash") {  // after the first run: the device's context and buffers are in use
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  }
  if (fault == "wrong_result") data_->PerturbOutputs();
  std::string mismatch = data_->Compare(task_->target.HasOption("fast-math"));
  if (!mismatch.empty()) return Reply(id, MeasureError::WrongAnswer, mismatch);
  json reply = Reply(id, MeasureError::None, "");
  try {
    std::vector<double> costs = Time(candidate.kernel, args, msg, first_run_seconds);
    if (fault == "zero_time") costs.assign(costs.size(), 0.0);
    if (fault == "near_zero_time") costs.assign(costs.size(), 1e-18);
    reply["costs"] = costs;
  } catch (const DeviceResourceError& e) {
    reply = Reply(id, MeasureError::Runtime,
                  std::string("timing failed: the device ran out of resources: ") + e.what());
    reply["restart"] = true;
    reply["resource_error"] = true;
  } catch (const std::exception& e) {
    reply = Reply(id, MeasureError::Runtime, std::string("timing failed: ") + e.what());
    if (task_->target.kind->fault_restarts_worker) reply["restart"] = true;
  }
  return reply;
}

}  // namespace

int RunWorker(int fd) {
  Worker worker;
  std::string buffer;
  json msg;
  while (true) {
    try {
      while (!DecodeMessage(&buffer, &msg)) {
        if (!ReadSome(fd, &buffer, -1)) return 0;  // the supervisor is gone
      }
    } catch (const std::exception& e) {
      return 2;  // a malformed frame: the stream cannot be trusted any more
    }
    if (msg.value("cmd", "") == "exit") return 0;
    json reply;
    try {
      reply = worker.Handle(msg);
    } catch (const std::exception& e) {
      reply = {{"id", msg.value("id", json())}, {"ok", false}, {"error", "unknown"}, {"msg", e.what()}};
    }
    if (!WriteAll(fd, EncodeMessage(reply))) return 0;
  }
}

namespace {

// Ends this worker as soon as the supervisor's process ends, even while a
// candidate hangs: a thread waits on a pidfd of the supervisor (where the
// kernel has none, it checks the parent every 100 ms) and exits the process.
// Not PR_SET_PDEATHSIG, which fires when the *thread* that spawned the worker
// exits: the supervisor's threads come and go (a runner used from one Python
// thread, then another) while its process and its workers live on.
// Returns false when the supervisor has already ended.
bool WatchSupervisor(pid_t parent) {
  int pidfd = -1;
#ifdef SYS_pidfd_open
  pidfd = static_cast<int>(syscall(SYS_pidfd_open, parent, 0));
#endif
  // Checked after opening: a pidfd opened while the supervisor was still our
  // parent refers to it, never to a later process given its pid.
  if (getppid() != parent) return false;
  std::thread([pidfd, parent] {
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      while (poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
    }
    while (getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    _exit(0);
  }).detach();
  return true;
}

}  // namespace

int WorkerMain(int argc, char** argv) {
  int fd = 3;
  long parent = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--fd") == 0) fd = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--parent") == 0) parent = std::atol(argv[i + 1]);
  }
  if (parent != 0 && !WatchSupervisor(static_cast<pid_t>(parent))) return 0;
#ifdef AUTOSCHED_HAS_OPENCL
  // Every candidate's program is its own: kept only while its module lives,
  // so a worker holds the programs of the candidates it has built, not yet
  // run, and no more.
  SetOpenCLProgramCacheCapacity(0);
#endif
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // crashing candidates leave no core files
  return RunWorker(fd);
}

}  // namespace autosched
