#include "measure/builder.h"

#include <poll.h>

#include <deque>
#include <sstream>

#include "support/error.h"

namespace autosched {
namespace {

struct InFlight {
  int id = -1;  // the candidate being built, -1: idle
  SteadyClock::time_point start, deadline;
};

class BuildPhase {
 public:
  BuildPhase(WorkerPool* pool, const BuilderOptions& options, std::vector<Candidate>* batch,
             const InterruptCheck& interrupt, SteadyClock::time_point deadline)
      : pool_(pool), options_(options), batch_(*batch), interrupt_(interrupt), deadline_(deadline) {}

  void Run();

 private:
  // Starts and initialises the given idle workers at once (those not ready
  // already); false when the task cannot be prepared (every ToBuild
  // candidate then has the error).
  bool PrepareIdle(const std::vector<int>& workers);
  bool Dispatch(int w);  // false when the task cannot be prepared
  // At the deadline: the builds in progress are abandoned (their workers
  // killed; the candidates stay ToBuild, as do those the workers had built).
  void AbandonAtDeadline();
  void WaitForReplies();
  void Collect(int w);
  void LoseWorker(int w) {
    for (int id : pool_->Lose(w)) {
      Requeue(&batch_[id]);
      if (batch_[id].phase == Candidate::Phase::ToBuild) queue_.push_back(id);
    }
  }

  WorkerPool* pool_;
  const BuilderOptions& options_;
  std::vector<Candidate>& batch_;
  const InterruptCheck& interrupt_;
  SteadyClock::time_point deadline_;
  std::deque<int> queue_;
  std::vector<InFlight> flight_;
};

void BuildPhase::Run() {
  for (size_t i = 0; i < batch_.size(); ++i) {
    if (batch_[i].phase == Candidate::Phase::ToBuild) queue_.push_back(static_cast<int>(i));
  }
  int n = std::min<int>(pool_->size(), static_cast<int>(queue_.size()));
  flight_.assign(n, InFlight{});
  std::vector<int> all(n);
  for (int w = 0; w < n; ++w) all[w] = w;
  if (!PrepareIdle(all)) return;
  auto busy = [&] {
    for (const InFlight& f : flight_) {
      if (f.id >= 0) return true;
    }
    return false;
  };
  while (!queue_.empty() || busy()) {
    if (interrupt_ && interrupt_()) throw MeasureInterrupted();
    if (SteadyClock::now() >= deadline_) return AbandonAtDeadline();  // they stay ToBuild: not measured
    for (int w = 0; w < n; ++w) {
      if (flight_[w].id < 0 && !queue_.empty() && !Dispatch(w)) return;
    }
    WaitForReplies();
    for (int w = 0; w < n; ++w) {
      if (flight_[w].id >= 0) Collect(w);
    }
  }
}

void BuildPhase::AbandonAtDeadline() {
  queue_.clear();
  for (int w = 0; w < static_cast<int>(flight_.size()); ++w) {
    if (flight_[w].id < 0) continue;
    flight_[w].id = -1;
    for (int id : pool_->Lose(w)) batch_[id].phase = Candidate::Phase::ToBuild;
  }
}

bool BuildPhase::PrepareIdle(const std::vector<int>& workers) {
  std::vector<int> slots;
  for (int w : workers) {
    if (pool_->ready(w) && !pool_->proc(w)->Alive()) LoseWorker(w);
    if (!pool_->ready(w)) slots.push_back(w);
  }
  MeasureError error = MeasureError::Unknown;
  std::string msg;
  if (slots.empty() || pool_->Prepare(slots, &error, &msg, interrupt_, deadline_)) return true;
  // The task itself cannot be prepared: no candidate of it can be measured.
  for (Candidate& c : batch_) {
    if (c.phase == Candidate::Phase::ToBuild) Finish(&c, error, msg);
  }
  for (int v = 0; v < static_cast<int>(flight_.size()); ++v) {
    if (flight_[v].id >= 0) LoseWorker(v);
  }
  queue_.clear();
  return false;
}

bool BuildPhase::Dispatch(int w) {
  if (!pool_->ready(w) || !pool_->proc(w)->Alive()) {
    if (!PrepareIdle({w})) return false;
    if (!pool_->ready(w)) return true;  // the deadline passed while preparing it
  }
  int id = queue_.front();
  queue_.pop_front();
  nlohmann::json msg = {{"cmd", "build"}, {"id", id}, {"state", batch_[id].steps}};
  if (batch_[id].fault == "resource_error") msg["fault"] = "resource_error";
  if (!pool_->proc(w)->Send(msg)) {  // the worker died while idle: not this candidate's fault
    queue_.push_front(id);
    LoseWorker(w);
    return true;
  }
  auto now = SteadyClock::now();
  flight_[w] = {id, now,
                now + std::chrono::duration_cast<SteadyClock::duration>(
                          std::chrono::duration<double>(options_.timeout))};
  return true;
}

void BuildPhase::WaitForReplies() {
  std::vector<pollfd> fds;
  auto wake = std::min(deadline_, SteadyClock::now() + std::chrono::milliseconds(100));
  for (const InFlight& f : flight_) {
    if (f.id < 0) continue;
    wake = std::min(wake, f.deadline);
  }
  for (int w = 0; w < static_cast<int>(flight_.size()); ++w) {
    if (flight_[w].id >= 0) fds.push_back(pollfd{pool_->proc(w)->fd(), POLLIN, 0});
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - SteadyClock::now()).count();
  poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, ms) + 1));
}

void BuildPhase::Collect(int w) {
  InFlight& f = flight_[w];
  Candidate& c = batch_[f.id];
  nlohmann::json reply;
  auto now = SteadyClock::now();
  WorkerProcess::Status status = pool_->proc(w)->Receive(now, &reply);
  if (status == WorkerProcess::Status::Timeout && now < f.deadline) return;
  c.seconds += std::chrono::duration<double>(now - f.start).count();
  int id = f.id;
  f.id = -1;
  if (status == WorkerProcess::Status::Ok) {
    MeasureError error = ParseMeasureError(reply.value("error", "unknown"));
    if (error == MeasureError::None) {
      c.phase = Candidate::Phase::Built;
      pool_->built(w).push_back(id);
    } else if (reply.value("restart", false) && !c.resource_retried) {
      // The device ran out of resources in this worker: the candidate goes
      // to a fresh one, and so do those this worker had built.
      c.resource_retried = true;
      queue_.push_back(id);
    } else {
      Finish(&c, error, reply.value("msg", ""));
      c.result.kernel_max_threads = reply.value("kernel_max_threads", int64_t{0});
    }
    if (reply.value("restart", false)) {
      for (int other : pool_->Lose(w)) {
        batch_[other].phase = Candidate::Phase::ToBuild;
        queue_.push_back(other);
      }
    }
    return;
  }
  if (status == WorkerProcess::Status::Closed) {
    Finish(&c, MeasureError::Compile,
           "the worker process " + pool_->proc(w)->ExitDescription() + " while lowering and compiling");
  } else {
    std::ostringstream ss;
    ss << "lowering and compiling took longer than the builder's timeout of " << options_.timeout << " s";
    Finish(&c, MeasureError::BuildTimeout, ss.str());
  }
  LoseWorker(w);
}

}  // namespace

void BuildBatch(WorkerPool* pool, const BuilderOptions& options, std::vector<Candidate>* batch,
                const InterruptCheck& interrupt, SteadyClock::time_point deadline) {
  BuildPhase(pool, options, batch, interrupt, deadline).Run();
}

}  // namespace autosched
