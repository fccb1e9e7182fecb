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

int KernelSequence::AddSlot(const CallArg& arg) {
  slots_.push_back(arg);
  users_.emplace_back();
  return num_slots() - 1;
}

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
  const int index = num_calls();
  for (int slot : args) {
    std::vector<int>& users = users_[slot];
    if (std::find(users.begin(), users.end(), index) == users.end()) users.push_back(index);
  }
  calls_.push_back(std::move(call));
}

void KernelSequence::Run(std::vector<double>* call_seconds) const {
  if (call_seconds != nullptr && call_seconds->size() != calls_.size())
    throw Error("KernelSequence::Run: " + std::to_string(call_seconds->size()) + " call times for " +
                std::to_string(calls_.size()) + " calls");
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
