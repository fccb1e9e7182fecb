#include "measure/supervisor.h"

#include <algorithm>
#include <sstream>

#include "support/error.h"

namespace autosched {
namespace {

// Preparing a task computes the reference in each worker; the whole-output
// reference is bounded by VerifyOptions::whole_output_work, the sampled one by
// the number of points, so this is generous.
constexpr double kPrepareTimeoutS = 300;
constexpr int kMaxRequeues = 3;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void Finish(Candidate* c, MeasureError error, const std::string& msg, std::vector<double> costs) {
  c->result.error = error;
  c->result.error_msg = msg;
  c->result.costs = std::move(costs);
  c->result.all_cost = c->seconds;
  c->result.timestamp = Now();
  c->phase = Candidate::Phase::Done;
}

void Requeue(Candidate* c) {
  if (++c->requeues > kMaxRequeues) {
    Finish(c, MeasureError::Unknown,
           "its worker process was lost " + std::to_string(c->requeues) + " times before it could run");
    return;
  }
  c->phase = Candidate::Phase::ToBuild;
}

WorkerProcess::Status WaitReply(WorkerProcess* proc, SteadyClock::time_point deadline, nlohmann::json* reply,
                                const InterruptCheck& interrupt) {
  while (true) {
    auto slice = std::min(deadline, SteadyClock::now() + std::chrono::milliseconds(100));
    WorkerProcess::Status status = proc->Receive(slice, reply);
    if (status != WorkerProcess::Status::Timeout || SteadyClock::now() >= deadline) return status;
    if (interrupt && interrupt()) throw MeasureInterrupted();
  }
}

WorkerPool::WorkerPool(std::string worker_path, int size) : path_(std::move(worker_path)), slots_(size) {
  AS_CHECK(size >= 1, "a worker pool needs at least one worker, got " << size);
}

void WorkerPool::SetTask(nlohmann::json init_msg) {
  if (init_msg == init_msg_) return;
  init_msg_ = std::move(init_msg);
  for (Slot& s : slots_) {
    AS_ICHECK(s.built.empty());
    s.ready = false;
  }
}

bool WorkerPool::Prepare(const std::vector<int>& slots, MeasureError* error, std::string* msg,
                         const InterruptCheck& interrupt, SteadyClock::time_point deadline) {
  std::vector<int> pending;
  for (int i : slots) {
    Slot& s = slots_[i];
    if (s.proc && !s.proc->Alive()) {
      AS_ICHECK(s.built.empty());
      s.proc.reset();
    }
    if (s.ready && s.proc) continue;
    if (!s.proc) {
      s.proc = std::make_unique<WorkerProcess>(path_);
      ++started_;
    }
    s.ready = false;
    s.proc->Send(init_msg_);  // a worker already gone shows as Closed below
    pending.push_back(i);
  }
  // Every pending worker's reply is read, even after a failure, so that none
  // is left in the socket to be taken for the reply of a later request.
  const auto timeout = SteadyClock::now() + std::chrono::seconds(static_cast<int64_t>(kPrepareTimeoutS));
  bool ok = true;
  for (int i : pending) {
    Slot& s = slots_[i];
    nlohmann::json reply;
    WorkerProcess::Status status = WaitReply(s.proc.get(), std::min(timeout, deadline), &reply, interrupt);
    if (status == WorkerProcess::Status::Ok && reply.value("ok", false)) {
      s.ready = true;
      continue;
    }
    if (status == WorkerProcess::Status::Timeout && SteadyClock::now() < timeout) {
      s.proc.reset();  // the deadline passed first: killed, not the task's fault
      continue;
    }
    std::string why;
    MeasureError kind = MeasureError::Unknown;
    if (status == WorkerProcess::Status::Ok) {
      kind = ParseMeasureError(reply.value("error", "unknown"));
      why = reply.value("msg", "");
    } else if (status == WorkerProcess::Status::Closed) {
      why = "the measurement worker " + s.proc->ExitDescription() + " while preparing the task";
    } else {
      std::ostringstream ss;
      ss << "preparing the task (inputs and reference) took longer than " << kPrepareTimeoutS << " s";
      why = ss.str();
    }
    s.proc.reset();  // kills it
    if (ok) {
      *error = kind;
      *msg = why;
    }
    ok = false;
  }
  return ok;
}

std::vector<int> WorkerPool::Lose(int i) {
  Slot& s = slots_[i];
  if (s.proc) s.proc->Kill();
  s.proc.reset();
  s.ready = false;
  std::vector<int> lost;
  lost.swap(s.built);
  return lost;
}

void WorkerPool::KillAll() {
  for (int i = 0; i < size(); ++i) Lose(i);
}

}  // namespace autosched
