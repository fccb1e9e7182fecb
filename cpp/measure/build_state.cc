#include "measure/build_state.h"

#include <exception>

#include "codegen/build.h"
#include "lower/lower.h"
#include "support/error.h"

namespace autosched {
namespace {

BuiltCandidate Failed(MeasureError error, const std::string& stage, const std::exception& e) {
  BuiltCandidate out;
  out.error = error;
  out.error_msg = stage + ": " + e.what();
  return out;
}

}  // namespace

BuiltCandidate LowerAndBuild(const State& state, const Target& target) {
  if (target.kind == TargetKind::OpenCL) {
    BuiltCandidate out;
    out.error = MeasureError::Compile;
    out.error_msg =
        "measuring OpenCL candidates is not supported yet (build them with autosched.build and time "
        "them with the module's time_evaluator)";
    return out;
  }
  LoweredFunc f;
  try {
    f = Lower(state);
  } catch (const std::exception& e) {
    return Failed(MeasureError::Lower, "lowering failed", e);
  }
  try {
    BuiltCandidate out;
    out.module = Build(f, target);
    return out;
  } catch (const std::exception& e) {
    return Failed(MeasureError::Compile, "code generation failed", e);
  }
}

}  // namespace autosched
