#include "codegen/opencl/build_opencl.h"

#include <chrono>
#include <unordered_set>

#include "codegen/opencl/codegen_opencl.h"
#include "lower/stmt_functor.h"
#include "lower/stmt_printer.h"
#include "runtime/opencl/opencl_module.h"
#include "task/target_kind.h"

namespace autosched {

Module BuildOpenCL(const LoweredFunc& f, const Target& target, const DeviceLimits& limits) {
  auto start = std::chrono::steady_clock::now();
  OpenCLProgramSpec spec = GenerateOpenCL(f);
  std::unordered_set<const BufferNode*> stored;
  PostOrderVisitStmt(f.body, [&](const Stmt& s) {
    if (const auto* store = s.as<BufferStoreNode>()) stored.insert(store->buffer.get());
  });
  std::vector<ArgSpec> args;
  std::vector<bool> written;
  for (const Buffer& b : f.args) {
    args.push_back({b->name, b->dtype, b->shape, stored.count(b.get()) > 0});
    written.push_back(args.back().written);
  }
  ModuleSources sources;
  sources.Add("cl", spec.source);
  sources.Add("lowered", ToString(f));
  std::shared_ptr<Kernel> kernel = MakeOpenCLKernel(target, std::move(spec), std::move(written), limits);
  // The device compiler's binary of the program (PTX text on NVIDIA), read when asked.
  sources.AddLazy("binary", [kernel] { return ExportOpenCLKernel(*kernel).binary; });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Module(f.name, std::move(args), std::move(kernel), std::move(sources), seconds);
}

namespace {

// The opencl kind's builder (task/target_kind.h), there when this file is
// linked in (a build with the OpenCL runtime).
const bool kBuilderRegistered = [] {
  SetTargetKindBuilder("opencl", [](const LoweredFunc& f, const Target& target, const DeviceLimits& limits) {
    return BuildOpenCL(f, target, limits);
  });
  return true;
}();

}  // namespace

}  // namespace autosched
