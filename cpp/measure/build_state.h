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
};

// Never throws for a problem of the state: errors of lowering are Lower,
// errors of code generation (and a target this build cannot compile for) are
// Compile, with the message of the failing stage.
BuiltCandidate LowerAndBuild(const State& state, const Target& target);

}  // namespace autosched
