// A fixed order of kernel calls over a table of arrays: a network's kernels,
// each reading and writing arrays named by their index in the table ("slots").
//
// Every call's arguments are checked when the call is added, as Module::Call
// checks them, and again for the calls that use a slot when the slot is bound
// to other memory; a run then only gathers data pointers and runs the
// kernels. Called from Python, a run of the whole sequence is one call that
// holds no lock between kernels: per kernel it saves the argument conversion
// and checks of a Module call (a few microseconds, as long as a small
// kernel's run).
#pragma once

#include <vector>

#include "runtime/module.h"

namespace autosched {

class KernelSequence {
 public:
  // Adds a slot holding `arg` (its memory stays the caller's); returns its index.
  int AddSlot(const CallArg& arg);
  // Points a slot at other memory of the same dtype and shape; re-checks the
  // calls that use it (an output must not overlap another argument).
  void BindSlot(int slot, const CallArg& arg);
  // Appends a call of `module` on the slots `args`, checked now.
  void AddCall(const Module& module, const std::vector<int>& args);
  // Runs the calls in order; throws the Error of the first that fails.
  // With `call_seconds` (num_calls() entries), adds each call's wall time
  // to its entry: what each kernel takes inside the network, with the caches
  // as the calls before it leave them.
  void Run(std::vector<double>* call_seconds = nullptr) const;

  int num_slots() const { return static_cast<int>(slots_.size()); }
  int num_calls() const { return static_cast<int>(calls_.size()); }

 private:
  struct Call {
    Module module;
    std::vector<int> args;
  };
  std::vector<CallArg> ArgsOf(const Call& call) const;
  void CheckSlot(int slot) const;

  std::vector<CallArg> slots_;
  std::vector<std::vector<int>> users_;  // per slot, the calls that read or write it
  std::vector<Call> calls_;
};

}  // namespace autosched
