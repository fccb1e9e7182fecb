#include "runtime/kernel_sequence.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "support/error.h"

namespace autosched {

void KernelSequence::CheckSlot(int slot) const {
  AS_CHECK(slot >= 0 && slot < num_slots(),
           "kernel sequence: slot " << slot << " does not exist (there are " << num_slots() << ")");
}

int KernelSequence::AddSlot(const CallArg& arg, bool per_run) {
  AS_CHECK(!arena_, "kernel sequence: slots cannot be added after the first run on a device");
  slots_.push_back(arg);
  per_run_.push_back(per_run);
  written_.push_back(false);
  users_.emplace_back();
  return num_slots() - 1;
}

namespace {

int64_t SlotBytes(const CallArg& arg) {
  int64_t n = arg.dtype.bytes();
  for (int64_t d : arg.shape) n *= d;
  return n;
}

}  // namespace

std::vector<CallArg> KernelSequence::ArgsOf(const Call& call) const {
  std::vector<CallArg> args;
  args.reserve(call.args.size());
  for (int slot : call.args) args.push_back(slots_[slot]);
  return args;
}

void KernelSequence::BindSlot(int slot, const CallArg& arg) {
  CheckSlot(slot);
  const CallArg& old = slots_[slot];
  AS_TYPE_CHECK(arg.dtype == old.dtype, "kernel sequence: slot " << slot << " holds " << old.dtype.str()
                                                                 << ", got " << arg.dtype.str());
  AS_CHECK(arg.shape == old.shape, "kernel sequence: slot " << slot << " holds an array of another shape");
  const CallArg previous = old;
  slots_[slot] = arg;
  if (!per_run_[slot] && !on_device_.empty()) on_device_[slot] = false;  // a new constant: copied in again
  try {
    for (int user : users_[slot]) calls_[user].module.CheckArgs(ArgsOf(calls_[user]));
  } catch (...) {
    slots_[slot] = previous;  // the sequence stays runnable
    throw;
  }
}

void KernelSequence::AddCall(const Module& module, const std::vector<int>& args) {
  for (int slot : args) CheckSlot(slot);
  Call call{module, args};
  module.CheckRunnable();
  module.CheckArgs(ArgsOf(call));
  const bool on_device = module.kernel() && module.kernel()->HasDeviceMemory();
  AS_CHECK(calls_.empty() || on_device == resident_,
           "kernel sequence: module '" << module.name() << "' runs on "
                                       << (on_device ? "a device" : "the host") << ", the calls before it on "
                                       << (resident_ ? "a device" : "the host"));
  AS_CHECK(!arena_, "kernel sequence: calls cannot be added after the first run on a device");
  resident_ = on_device;
  for (size_t i = 0; i < args.size() && i < module.args().size(); ++i) {
    if (module.args()[i].written) written_[args[i]] = true;
  }
  const int index = num_calls();
  for (int slot : args) {
    std::vector<int>& users = users_[slot];
    if (std::find(users.begin(), users.end(), index) == users.end()) users.push_back(index);
  }
  calls_.push_back(std::move(call));
}

void KernelSequence::RunResident(std::vector<double>* call_seconds) const {
  std::lock_guard<std::mutex> lock(arena_mutex_);
  if (!arena_) {
    arena_ = calls_.front().module.kernel()->MakeArena();
    for (const CallArg& slot : slots_) device_buffer_.push_back(arena_->Allocate(SlotBytes(slot)));
    on_device_.assign(slots_.size(), false);
  }
  uploaded_bytes_ = downloaded_bytes_ = 0;
  try {
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (written_[s] || (on_device_[s] && !per_run_[s])) continue;
      arena_->Upload(device_buffer_[s], slots_[s].data, SlotBytes(slots_[s]));
      uploaded_bytes_ += SlotBytes(slots_[s]);
      on_device_[s] = true;
    }
    std::vector<int> buffers;
    for (size_t i = 0; i < calls_.size(); ++i) {
      buffers.clear();
      for (int slot : calls_[i].args) buffers.push_back(device_buffer_[slot]);
      const auto start = std::chrono::steady_clock::now();
      calls_[i].module.kernel()->LaunchIn(*arena_, buffers);
      if (call_seconds != nullptr) {  // each kernel timed to its end
        arena_->Finish();
        (*call_seconds)[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    }
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (!written_[s] || !per_run_[s]) continue;
      arena_->Download(device_buffer_[s], slots_[s].data, SlotBytes(slots_[s]));
      downloaded_bytes_ += SlotBytes(slots_[s]);
    }
    arena_->Finish();
  } catch (...) {
    try {
      arena_->Finish();  // no copy queued may outlive the caller's arrays
    } catch (const Error&) {
    }
    throw;
  }
}

void KernelSequence::Run(std::vector<double>* call_seconds) const {
  if (call_seconds != nullptr && call_seconds->size() != calls_.size())
    throw Error("KernelSequence::Run: " + std::to_string(call_seconds->size()) + " call times for " +
                std::to_string(calls_.size()) + " calls");
  if (resident_) {
    RunResident(call_seconds);
    return;
  }
  std::vector<void*> ptrs;
  for (size_t i = 0; i < calls_.size(); ++i) {
    const Call& call = calls_[i];
    ptrs.clear();
    for (int slot : call.args) ptrs.push_back(slots_[slot].data);
    if (call_seconds == nullptr) {  // a network's own runs read no clock
      call.module.RunPointers(ptrs.data());
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    call.module.RunPointers(ptrs.data());
    (*call_seconds)[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

}  // namespace autosched
