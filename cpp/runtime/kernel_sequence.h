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
//
// Kernels of a device with memory of its own (Kernel::HasDeviceMemory: OpenCL)
// run with every slot resident in one arena of that device: a slot no call
// writes is copied in on the first run (a constant) or on every run (a slot
// marked per_run: an input); a slot some call writes is copied out after
// every run if it is per_run (an output) and stays on the device otherwise
// (an intermediate buffer, whose host array is then not written). A run of a
// network moves its inputs and outputs, not its weights and activations.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/module.h"

namespace autosched {

class KernelSequence {
 public:
  // Adds a slot holding `arg` (its memory stays the caller's); returns its
  // index. per_run: the caller rebinds or reads it around every run (an
  // input or an output), which decides its copies on a device.
  int AddSlot(const CallArg& arg, bool per_run = false);
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
  // Whether the calls run in a device arena (their kernels make one).
  bool resident() const { return resident_; }
  // Bytes copied to and from the device by the last run (0 on host memory).
  int64_t bytes_uploaded() const { return uploaded_bytes_; }
  int64_t bytes_downloaded() const { return downloaded_bytes_; }

 private:
  void RunResident(std::vector<double>* call_seconds) const;

  struct Call {
    Module module;
    std::vector<int> args;
  };
  std::vector<CallArg> ArgsOf(const Call& call) const;
  void CheckSlot(int slot) const;

  std::vector<CallArg> slots_;
  std::vector<bool> per_run_, written_;
  bool resident_ = false;
  std::vector<std::vector<int>> users_;  // per slot, the calls that read or write it
  std::vector<Call> calls_;
  // The device arena of resident runs, its buffer per slot, and whether a
  // constant slot has been copied in (made on the first run).
  mutable std::mutex arena_mutex_;
  mutable std::unique_ptr<DeviceArena> arena_;
  mutable std::vector<int> device_buffer_;
  mutable std::vector<bool> on_device_;
  mutable int64_t uploaded_bytes_ = 0, downloaded_bytes_ = 0;
};

}  // namespace autosched
