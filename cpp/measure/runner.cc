#include "measure/runner.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "measure/builder.h"
#include "support/error.h"

namespace autosched {
namespace {

void Sleep(double seconds, const InterruptCheck& interrupt) {
  auto end = SteadyClock::now() +
             std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
  while (SteadyClock::now() < end) {
    if (interrupt && interrupt()) throw MeasureInterrupted();
    std::this_thread::sleep_for(
        std::min<SteadyClock::duration>(end - SteadyClock::now(), std::chrono::milliseconds(100)));
  }
}

nlohmann::json RunMessage(int id, const Candidate& c, const RunnerOptions& o, double best_seconds) {
  const double cut_short = best_seconds > 0 && o.cut_short_factor > 0 ? best_seconds * o.cut_short_factor : 0;
  return {{"cmd", "run"},
          {"cut_short_seconds", cut_short},
          {"id", id},
          {"fault", c.fault},
          {"number", o.number},
          {"repeat", o.repeat},
          {"min_repeat_ms", o.min_repeat_ms},
          {"max_repeat", o.max_repeat},
          {"max_device_runs", o.max_device_runs},
          {"flush_cache", o.flush_cache}};
}

// Applies the reply of a run to the candidate.
void TakeRunReply(const nlohmann::json& reply, const PlausibilityBound& bound, Candidate* c) {
  MeasureError error = ParseMeasureError(reply.value("error", "unknown"));
  if (error != MeasureError::None) return Finish(c, error, reply.value("msg", ""));
  std::vector<double> costs;
  for (const nlohmann::json& v : reply.value("costs", nlohmann::json::array())) {
    costs.push_back(v.is_number() ? v.get<double>() : NAN);
  }
  std::string why = CheckPlausible(costs, bound);
  Finish(c, why.empty() ? MeasureError::None : MeasureError::Implausible, why, std::move(costs));
}

// Runs the candidates built on worker w, one at a time. Returns when w holds
// none (all run, or w was lost and they went back to ToBuild).
void RunWorkerCandidates(WorkerPool* pool, int w, const RunnerOptions& options,
                         const PlausibilityBound& bound, std::vector<Candidate>* batch,
                         const InterruptCheck& interrupt, double best_seconds,
                         SteadyClock::time_point deadline) {
  auto lose = [&] {
    for (int other : pool->Lose(w)) Requeue(&(*batch)[other]);
  };
  while (!pool->built(w).empty()) {
    if (SteadyClock::now() >= deadline) return;  // the rest stay built, not measured
    int id = pool->built(w).front();
    Candidate& c = (*batch)[id];
    if (options.cooldown_s > 0) {
      const double left = std::chrono::duration<double>(deadline - SteadyClock::now()).count();
      Sleep(std::min(options.cooldown_s, left), interrupt);
      if (SteadyClock::now() >= deadline) return;
    }
    auto start = SteadyClock::now();
    if (!pool->proc(w)->Send(RunMessage(id, c, options, best_seconds)))
      return lose();  // died while idle: no blame
    nlohmann::json reply;
    auto reply_by = start + std::chrono::duration_cast<SteadyClock::duration>(
                                std::chrono::duration<double>(options.timeout));
    WorkerProcess::Status status = WaitReply(pool->proc(w), std::min(reply_by, deadline), &reply, interrupt);
    if (status == WorkerProcess::Status::Timeout && SteadyClock::now() < reply_by) {
      // The deadline passed during the run: it is abandoned (the worker killed),
      // and the candidate with those the worker had built is not measured.
      for (int other : pool->Lose(w)) (*batch)[other].phase = Candidate::Phase::ToBuild;
      return;
    }
    c.seconds += std::chrono::duration<double>(SteadyClock::now() - start).count();
    pool->built(w).erase(pool->built(w).begin());
    if (status == WorkerProcess::Status::Ok) {
      // The device ran out of resources in this worker: the candidate is
      // built and run again in a fresh one before the error counts as its own.
      if (reply.value("resource_error", false) && !c.resource_retried) {
        c.resource_retried = true;
        c.phase = Candidate::Phase::ToBuild;
      } else {
        TakeRunReply(reply, bound, &c);
      }
      // The worker asks to be replaced (a failed OpenCL run may leave its
      // context unusable): its other candidates are built again elsewhere,
      // which is not their loss, so no requeue is counted.
      if (reply.value("restart", false)) {
        for (int other : pool->Lose(w)) (*batch)[other].phase = Candidate::Phase::ToBuild;
        return;
      }
      continue;
    }
    if (status == WorkerProcess::Status::Closed) {
      Finish(&c, MeasureError::Runtime,
             "the worker process " + pool->proc(w)->ExitDescription() + " while running the candidate");
    } else {
      std::ostringstream ss;
      ss << "verifying and timing took longer than the runner's timeout of " << options.timeout << " s";
      Finish(&c, MeasureError::RunTimeout, ss.str());
    }
    return lose();
  }
}

int WorkerCount(const BuilderOptions& b) {
  CheckFields(b);
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return b.n_parallel > 0 ? b.n_parallel : cores;
}

}  // namespace

void RunBuilt(WorkerPool* pool, const RunnerOptions& options, const PlausibilityBound& bound,
              std::vector<Candidate>* batch, const InterruptCheck& interrupt, double best_seconds,
              SteadyClock::time_point deadline) {
  for (int w = 0; w < pool->size(); ++w)
    RunWorkerCandidates(pool, w, options, bound, batch, interrupt, best_seconds, deadline);
}

namespace {

// After the deadline: the workers drop the modules of candidates that will
// not run (a worker that does not answer is replaced).
void DropBuilt(WorkerPool* pool, std::vector<Candidate>* batch, const InterruptCheck& interrupt) {
  for (int w = 0; w < pool->size(); ++w) {
    if (pool->built(w).empty()) continue;
    for (int id : pool->built(w)) (*batch)[id].phase = Candidate::Phase::ToBuild;
    nlohmann::json reply;
    const bool ok = pool->proc(w)->Send({{"cmd", "drop"}}) &&
                    WaitReply(pool->proc(w), SteadyClock::now() + std::chrono::seconds(10), &reply,
                              interrupt) == WorkerProcess::Status::Ok &&
                    reply.value("ok", false);
    if (ok) {
      pool->built(w).clear();
    } else {
      pool->Lose(w);
    }
  }
}

}  // namespace

LocalMeasurer::LocalMeasurer(BuilderOptions builder, RunnerOptions runner, std::string worker_path)
    : builder_(builder),
      runner_((CheckFields(runner), runner)),
      worker_path_(worker_path.empty() ? DefaultWorkerPath() : std::move(worker_path)),
      pool_(worker_path_, WorkerCount(builder)) {}

LocalMeasurer::~LocalMeasurer() { pool_.KillAll(); }

// A low-discrepancy (Weyl) sequence u_k = frac(offset + k * (golden ratio - 1))
// spreads the candidates evenly over [0, 1): any run of candidates gets each
// fault close to its share, so even short test batches see every kind.
std::string LocalMeasurer::FaultFor(uint64_t sequence) const {
  const FaultInjection& f = runner_.faults;
  if (!f.any()) return "none";
  uint64_t z = runner_.fault_seed * 0x9e3779b97f4a7c15ull + 0x94d049bb133111ebull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z ^= z >> 31;
  double offset = static_cast<double>(z >> 11) / static_cast<double>(1ull << 53);
  double u = std::fmod(offset + static_cast<double>(sequence) * 0.6180339887498949, 1.0);
  for (const auto& [p, name] : f.Shares()) {
    if (u < p) return name;
    u -= p;
  }
  return "none";
}

std::vector<MeasureResult> LocalMeasurer::Measure(const SearchTask& task, const std::vector<State>& states,
                                                  SteadyClock::time_point deadline,
                                                  std::vector<bool>* measured) {
  std::lock_guard<std::mutex> lock(mutex_);
  AS_CHECK(
      runner_.faults.launch_error == 0 || !task.target.kind->runs_in_host_process,
      "the injected fault launch_error needs an OpenCL target (or another whose kernels are launched on a "
      "device), got '"
          << task.target.str() << "'");
  const VerifyOptions v = runner_.verify();
  pool_.SetTask(
      {{"cmd", "init"},
       {"task", task.ToJson()},
       {"verify",
        {{"seed", v.seed}, {"whole_output_work", v.whole_output_work}, {"num_points", v.num_points}}}});
  PlausibilityBound bound = DerivePlausibilityBound(task, runner_.peak_flops, runner_.peak_bandwidth);
  std::vector<Candidate> batch(states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    batch[i].steps = states[i].ToJson();
    batch[i].fault = FaultFor(sequence_++);
  }
  auto pending = [&] {
    for (const Candidate& c : batch) {
      if (c.phase != Candidate::Phase::Done) return true;
    }
    return false;
  };
  try {
    while (pending() && SteadyClock::now() < deadline) {
      BuildBatch(&pool_, builder_, &batch, interrupt, deadline);
      RunBuilt(&pool_, runner_, bound, &batch, interrupt, best_seconds_hint, deadline);
    }
    DropBuilt(&pool_, &batch, interrupt);
  } catch (...) {
    pool_.KillAll();  // workers may hold half-done requests
    throw;
  }
  std::vector<MeasureResult> results;
  if (measured) measured->clear();
  for (Candidate& c : batch) {
    const bool done = c.phase == Candidate::Phase::Done;
    if (!done) Finish(&c, MeasureError::Unknown, "not measured: the deadline passed before its turn");
    if (measured) measured->push_back(done);
    results.push_back(std::move(c.result));
  }
  return results;
}

}  // namespace autosched
