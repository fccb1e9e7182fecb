#include "measure/build_state.h"

#include <exception>

#include "codegen/build.h"
#include "ir/error.h"
#include "lower/lower.h"

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
  LoweredFunc f;
  try {
    f = Lower(state);
  } catch (const std::exception& e) {
    return Failed(MeasureError::Lower, "lowering failed", e);
  }
  try {
    BuiltCandidate out;
    out.module = Build(f, CodegenTarget::FromTarget(target));
    return out;
  } catch (const std::exception& e) {
    return Failed(MeasureError::Compile, "code generation failed", e);
  }
}

}  // namespace autosched
