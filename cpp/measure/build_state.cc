#include "measure/build_state.h"

#include <exception>

#include "codegen/build.h"
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

BuiltCandidate LowerAndBuild(const State& state, const Target& target, const HardwareParams& params) {
  LoweredFunc f;
  try {
    f = LowerCandidate(state, target);
  } catch (const std::exception& e) {
    return Failed(MeasureError::Lower, "lowering failed", e);
  }
  try {
    BuiltCandidate out;
    DeviceLimits limits;
    limits.max_threads_per_block = params.max_threads_per_block;
    limits.max_local_memory_bytes = params.max_shared_memory_per_block;
    out.module = Build(f, target, limits);
    return out;
  } catch (const DeviceLimitError& e) {
    BuiltCandidate out =
        Failed(MeasureError::Compile, "refused: the candidate exceeds the device's limits", e);
    out.kernel_max_threads = e.kernel_max_threads;
    return out;
  } catch (const DeviceResourceError& e) {
    BuiltCandidate out = Failed(MeasureError::Compile, "the device ran out of resources", e);
    out.resource_error = true;
    return out;
  } catch (const std::exception& e) {
    return Failed(MeasureError::Compile, "code generation failed", e);
  }
}

}  // namespace autosched
