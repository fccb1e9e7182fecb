#include "search/rules/gpu_state.h"

#include <algorithm>
#include <sstream>

#include "codegen/opencl/codegen_opencl.h"
#include "lower/stmt_functor.h"
#include "search/rules/search_util.h"

namespace autosched {
namespace {

// A shared stage or a register tile of the GPU sketches: a copy computed
// inside another stage's loops.
bool IsCacheCopy(const Stage& st) {
  return (st.scope == MemScope::Shared || st.scope == MemScope::Local) && st.loc == ComputeLocKind::At &&
         !HasReduceIter(st);
}

// Bytes of the private buffers allocated inside the kernels (allocations
// outside every loop are device buffers between kernels).
int64_t PrivateBytes(const Stmt& s, bool in_kernel) {
  if (!s.defined()) return 0;
  int64_t total = 0;
  if (const auto* a = s.as<AllocateNode>(); a && in_kernel && a->buffer->scope != MemScope::Shared)
    total += BufferBytes(*a->buffer);
  const bool inside = in_kernel || s.as<ForNode>() != nullptr;
  if (const auto* f = s.as<ForNode>()) return total + PrivateBytes(f->body, inside);
  if (const auto* a = s.as<AllocateNode>()) return total + PrivateBytes(a->body, inside);
  if (const auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->seq) total += PrivateBytes(x, inside);
    return total;
  }
  if (const auto* c = s.as<IfThenElseNode>())
    return total + PrivateBytes(c->then_case, inside) + PrivateBytes(c->else_case, inside);
  if (const auto* l = s.as<LetStmtNode>()) return total + PrivateBytes(l->body, inside);
  if (const auto* p = s.as<PragmaNode>()) return total + PrivateBytes(p->body, inside);
  return total;
}

int64_t MaxVThreadExtent(const Stmt& body) {
  int64_t most = 0;
  PostOrderVisitStmt(body, [&](const Stmt& x) {
    int64_t extent = 0;
    if (const auto* f = x.as<ForNode>();
        f && f->for_kind == ForKind::VThread && GetConstInt(f->extent, &extent))
      most = std::max(most, extent);
  });
  return most;
}

}  // namespace

std::vector<int> SharedStageSteps(const State& s, bool splits) {
  std::vector<int> ids;
  State r(s.init_dag());
  for (int j = 0; j < static_cast<int>(s.steps().size()); ++j) {
    const Step& step = s.steps()[j];
    const auto* sp = std::get_if<SplitStep>(&step);
    const auto* sa = std::get_if<StorageAlignStep>(&step);
    const int stage = sp ? sp->stage_id : sa ? sa->stage_id : -1;
    const bool kind = splits ? sp != nullptr && sp->lengths.size() == 1 : sa != nullptr;
    if (kind && IsCacheCopy(r.stage(stage))) ids.push_back(j);
    r = r.Apply(step);
  }
  return ids;
}

std::map<std::string, std::vector<int>> GpuTileSplits(const SketchContext& ctx, const State& s) {
  const std::string& structure = ctx.params.gpu_tiling_structure;
  const auto levels = std::count(structure.begin(), structure.end(), 'S');
  std::map<std::string, std::vector<int>> out;
  if (levels <= kThreadTileLevel) return out;
  const size_t lengths = static_cast<size_t>(levels - 1);
  State r(s.init_dag());
  for (int j = 0; j < static_cast<int>(s.steps().size()); ++j) {
    const auto* sp = std::get_if<SplitStep>(&s.steps()[j]);
    if (sp != nullptr && sp->inner_to_outer && sp->lengths.size() == lengths &&
        r.stage(sp->stage_id).iter(sp->iter_id).kind == IteratorKind::Spatial)
      out[r.stage(sp->stage_id).name()].push_back(j);
    r = r.Apply(s.steps()[j]);
  }
  return out;
}

int64_t TileThreads(const std::vector<Step>& steps, const std::vector<int>& split_ids) {
  int64_t threads = 1;
  for (int id : split_ids)
    threads *= std::get<SplitStep>(steps[id]).lengths[kThreadTileLevel - 1].value_or(1);
  return threads;
}

std::string CheckGpuState(const SketchContext& ctx, const State&, const LoweredFunc& f,
                          std::string* message) {
  if (!ctx.task.target.kind->is_gpu) return "";
  OpenCLProgramSpec spec;
  try {
    spec = GenerateOpenCL(f);
  } catch (const std::exception& e) {
    *message = e.what();
    return "codegen";
  }
  const HardwareParams& hw = ctx.task.hardware_params;
  std::ostringstream why;
  for (const OpenCLKernelSpec& k : spec.kernels) {
    const int64_t threads = k.group_size[0] * k.group_size[1] * k.group_size[2];
    if (hw.max_threads_per_block > 0 && threads > hw.max_threads_per_block) {
      why << "kernel " << k.name << " runs " << threads << " work items per group, more than "
          << "max_threads_per_block " << hw.max_threads_per_block;
    } else if (hw.max_shared_memory_per_block > 0 && k.local_memory_bytes > hw.max_shared_memory_per_block) {
      why << "kernel " << k.name << " uses " << k.local_memory_bytes << " bytes of shared memory, more than "
          << "max_shared_memory_per_block " << hw.max_shared_memory_per_block;
    }
    if (!why.str().empty()) break;
  }
  const int64_t vthreads = MaxVThreadExtent(f.body), private_bytes = PrivateBytes(f.body, false);
  if (why.str().empty() && hw.max_vthread_extent > 0 && vthreads > hw.max_vthread_extent)
    why << "a vthread loop of extent " << vthreads << " exceeds max_vthread_extent " << hw.max_vthread_extent;
  if (why.str().empty() && hw.max_local_memory_per_block > 0 && private_bytes > hw.max_local_memory_per_block)
    why << private_bytes << " bytes of private memory per work item exceed max_local_memory_per_block "
        << hw.max_local_memory_per_block;
  if (why.str().empty()) return "";
  *message = why.str();
  return "device_limits";
}

}  // namespace autosched
