#include "measure/worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "measure/build_state.h"
#include "measure/protocol.h"
#include "measure/verifier.h"
#include "support/error.h"
#ifdef AUTOSCHED_HAS_OPENCL
#include "runtime/opencl/opencl_module.h"
#endif

namespace autosched {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class Worker {
 public:
  json Handle(const json& msg);

 private:
  json Init(const json& msg);
  json BuildOne(const json& msg);
  json RunOne(const json& msg);
  std::vector<double> Time(const Module& mod, const json& msg, double first_run_seconds);
  std::string FirstRun(const Module& mod, const std::string& fault, double* seconds);

  std::optional<SearchTask> task_;
  std::unique_ptr<TestData> data_;
  std::map<int64_t, Module> modules_;
};

json Reply(const json& id, MeasureError error, const std::string& msg) {
  return {{"id", id}, {"error", MeasureErrorName(error)}, {"msg", msg}};
}

json Worker::Handle(const json& msg) {
  const std::string cmd = msg.value("cmd", "");
  if (cmd == "init") return Init(msg);
  if (cmd == "build") return BuildOne(msg);
  if (cmd == "run") return RunOne(msg);
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
  BuiltCandidate built = LowerAndBuild(*state, task_->target, task_->hardware_params);
  json reply = Reply(id, built.error, built.error_msg);
  if (built.module) modules_.insert_or_assign(id.get<int64_t>(), std::move(*built.module));
  reply["seconds"] = SecondsSince(start);
  return reply;
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
std::vector<double> Worker::Time(const Module& mod, const json& msg, double first_run_seconds) {
  int64_t number = std::max<int64_t>(1, msg.at("number").get<int64_t>());
  int repeat = std::max(1, msg.at("repeat").get<int>());
  const double min_ms = msg.at("min_repeat_ms").get<double>();
  int64_t max_number = std::max<int64_t>(number, msg.at("max_repeat").get<int64_t>());
  if (task_->target.kind == TargetKind::OpenCL) {
    const int64_t cap = std::max<int64_t>(1, msg.value("max_device_runs", int64_t{1000}));
    repeat = static_cast<int>(std::min<int64_t>(repeat, cap));
    max_number = std::min<int64_t>(max_number, std::max<int64_t>(1, cap / repeat));
    number = std::min(number, max_number);
  }
  const bool flush = msg.at("flush_cache").get<bool>();
  if (first_run_seconds * 1e3 >= min_ms) number = 1;
  // Many times slower than the task's best: the verification run is its
  // time (timing it in full would only confirm it is slow).
  const double cut_short = msg.value("cut_short_seconds", 0.0);
  const bool cpu = task_->target.kind != TargetKind::OpenCL;  // a GPU's times are its events', not wall time
  if (cpu && cut_short > 0 && first_run_seconds > cut_short) return {first_run_seconds};
  std::vector<CallArg> args = data_->CallArgs();
  std::vector<double> costs;
  while (static_cast<int>(costs.size()) < repeat) {
    TimeOptions options;
    options.number = static_cast<int>(number);
    options.flush_cache = flush;
    options.warm_up = false;
    double per_run = mod.TimeEvaluate(args, options).at(0);
    double ms = per_run * static_cast<double>(number) * 1e3;
    if (ms < min_ms && number < max_number) {
      double scale = ms > 0 ? min_ms / ms * 1.1 : 10.0;
      number = std::min<int64_t>(max_number, static_cast<int64_t>(std::ceil(number * std::max(scale, 2.0))));
      continue;
    }
    costs.push_back(per_run);
  }
  return costs;
}

// Runs the kernel once on poisoned outputs (the verification run). "" when it
// ran, else why it failed.
std::string Worker::FirstRun(const Module& mod, const std::string& fault, double* seconds) {
#ifdef AUTOSCHED_HAS_OPENCL
  struct LaunchFault {  // on for this run only
    explicit LaunchFault(bool on) { SetOpenCLLaunchFaultForTesting(on); }
    ~LaunchFault() { SetOpenCLLaunchFaultForTesting(false); }
  } launch_fault(fault == "launch_error");
#endif
  try {
    data_->PoisonOutputs();
    const auto call_start = Clock::now();
    mod.Call(data_->CallArgs());
    *seconds = SecondsSince(call_start);
  } catch (const std::exception& e) {
    return std::string("the kernel failed: ") + e.what();
  }
  return "";
}

json Worker::RunOne(const json& msg) {
  const json& id = msg.at("id");
  auto it = modules_.find(id.get<int64_t>());
  AS_CHECK(it != modules_.end(), "run of candidate " << id.dump() << ", which this worker has not built");
  Module mod = std::move(it->second);
  modules_.erase(it);
  const std::string fault = msg.value("fault", "none");
  AS_CHECK(fault != "launch_error" || task_->target.kind == TargetKind::OpenCL,
           "the launch_error fault needs an OpenCL target");
  if (fault == "hang") {
    volatile uint64_t spins = 0;
    while (true) spins = spins + 1;
  }
  double first_run_seconds = 0;
  std::string failed = FirstRun(mod, fault, &first_run_seconds);
  if (!failed.empty()) {
    json reply = Reply(id, MeasureError::Runtime, failed);
    // A failed OpenCL run may leave the context unusable (an out-of-bounds
    // access on NVIDIA does): the supervisor replaces this worker.
    if (task_->target.kind == TargetKind::OpenCL) reply["restart"] = true;
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
    std::vector<double> costs = Time(mod, msg, first_run_seconds);
    if (fault == "zero_time") costs.assign(costs.size(), 0.0);
    if (fault == "near_zero_time") costs.assign(costs.size(), 1e-18);
    reply["costs"] = costs;
  } catch (const std::exception& e) {
    reply = Reply(id, MeasureError::Runtime, std::string("timing failed: ") + e.what());
    if (task_->target.kind == TargetKind::OpenCL) reply["restart"] = true;
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
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // crashing candidates leave no core files
  return RunWorker(fd);
}

}  // namespace autosched
