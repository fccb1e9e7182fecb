// Lowers a state and builds it for a target, telling apart where it failed.
#pragma once

#include <optional>
#include <string>

#include "measure/measure.h"
#include "runtime/module.h"

namespace autosched {

struct BuiltCandidate {
  std::optional<Module> module;  // set when error == None
  MeasureError error = MeasureError::None;
  std::string error_msg;
  // Refused by the kernel's own work-group maximum, known after building
  // (DeviceLimitError::kernel_max_threads); 0 otherwise.
  int64_t kernel_max_threads = 0;
  // The device ran out of resources (DeviceResourceError): the process's
  // device state is suspect, the candidate not necessarily to blame.
  bool resource_error = false;
};

// Never throws for a problem of the state: errors of lowering are Lower,
// errors of code generation (and a target this build cannot compile for) are
// Compile, with the message of the failing stage. On an OpenCL target a state
// without GPU bindings gets the default GPU schedule (as autosched.build), and
// a kernel beyond the device's limits or those of `params`
// (max_threads_per_block, max_shared_memory_per_block; 0: none) is refused
// before it is built: Compile, "refused: the candidate exceeds the device's
// limits: ...".
BuiltCandidate LowerAndBuild(const State& state, const Target& target,
                             const HardwareParams& params = HardwareParams());

}  // namespace autosched
