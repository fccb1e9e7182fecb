#include "cost_model/gpu_access.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace autosched {
namespace {

// The loops bound to threadIdx.x, .y and .z (-1 where none) and their extents.
struct ThreadLoops {
  std::array<int, 3> loop{-1, -1, -1};
  std::array<int64_t, 3> extent{1, 1, 1};
  int64_t count() const { return extent[0] * extent[1] * extent[2]; }
};

ThreadLoops FindThreadLoops(const std::vector<LoopInfo>& loops) {
  ThreadLoops t;
  for (size_t l = 0; l < loops.size(); ++l) {
    int axis = loops[l].kind == ForKind::ThreadIdxX   ? 0
               : loops[l].kind == ForKind::ThreadIdxY ? 1
               : loops[l].kind == ForKind::ThreadIdxZ ? 2
                                                      : -1;
    if (axis < 0) continue;
    t.loop[axis] = static_cast<int>(l);
    t.extent[axis] = std::max<int64_t>(loops[l].extent, 1);
  }
  return t;
}

// Byte addresses of every lane of `a` for each work item of the warp.
std::vector<int64_t> WarpAddresses(const RawAccess& a, const ThreadLoops& threads, int64_t warp,
                                   IndexEvaluator* ev) {
  const int64_t elem_bytes = std::max(a.buffer->dtype.bytes(), 1);
  int64_t lanes = 1, lane_stride = 0;
  if (const auto* ramp = a.index.as<RampNode>()) {
    lanes = ramp->lanes;
    lane_stride = ramp->stride;
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(warp * lanes));
  for (int64_t item = 0; item < warp; ++item) {
    int64_t rest = item;
    for (int axis = 0; axis < 3; ++axis) {
      if (threads.loop[axis] >= 0) ev->Set(threads.loop[axis], rest % threads.extent[axis]);
      rest /= threads.extent[axis];
    }
    const int64_t base = ev->Eval(a.index);
    for (int64_t lane = 0; lane < lanes; ++lane) out.push_back((base + lane * lane_stride) * elem_bytes);
  }
  for (int axis = 0; axis < 3; ++axis) {
    if (threads.loop[axis] >= 0) ev->Set(threads.loop[axis], 0);
  }
  return out;
}

// The fewest sectors that could carry the warp's distinct bytes, over the sectors it touches.
double SectorEfficiency(const std::vector<int64_t>& addresses, int64_t elem_bytes, double* sectors) {
  std::set<int64_t> distinct(addresses.begin(), addresses.end());
  std::set<int64_t> touched;
  for (int64_t a : distinct) {
    for (int64_t s = a / kGpuSectorBytes; s <= (a + elem_bytes - 1) / kGpuSectorBytes; ++s) touched.insert(s);
  }
  const double needed = static_cast<double>(
      (static_cast<int64_t>(distinct.size()) * elem_bytes + kGpuSectorBytes - 1) / kGpuSectorBytes);
  *sectors = static_cast<double>(touched.size());
  return touched.empty() ? 1.0 : needed / *sectors;
}

// Distinct words the busiest bank serves, over the requests the words need at
// the least (one per kGpuNumBanks words): 1 without conflicts.
double BankConflict(const std::vector<int64_t>& addresses, int64_t elem_bytes) {
  std::set<int64_t> words;
  for (int64_t a : addresses) {
    for (int64_t w = a / kGpuBankWordBytes; w <= (a + elem_bytes - 1) / kGpuBankWordBytes; ++w)
      words.insert(w);
  }
  if (words.empty()) return 1.0;
  std::map<int64_t, int64_t> per_bank;
  int64_t busiest = 0;
  for (int64_t w : words) {
    int64_t bank = ((w % kGpuNumBanks) + kGpuNumBanks) % kGpuNumBanks;
    busiest = std::max(busiest, ++per_bank[bank]);
  }
  const auto requests = static_cast<int64_t>((words.size() + kGpuNumBanks - 1) / kGpuNumBanks);
  return static_cast<double>(busiest) / static_cast<double>(std::max<int64_t>(requests, 1));
}

}  // namespace

GpuAccessStats AnalyzeGpuAccesses(const std::vector<RawAccess>& accesses, const std::vector<LoopInfo>& loops,
                                  const std::vector<LetBinding>& lets, int64_t warp_size) {
  GpuAccessStats out;
  const ThreadLoops threads = FindThreadLoops(loops);
  const int64_t warp = std::min(warp_size > 0 ? warp_size : 32, threads.count());
  IndexEvaluator ev(loops, lets);
  double worst_efficiency = 1.0;
  bool any_global = false;
  for (const RawAccess& a : accesses) {
    if (a.buffer->scope == MemScope::Local) continue;  // registers
    const int64_t elem_bytes = std::max(a.buffer->dtype.bytes(), 1);
    const std::vector<int64_t> addresses = WarpAddresses(a, threads, warp, &ev);
    const double access_bytes =
        static_cast<double>(addresses.size() / std::max<int64_t>(warp, 1) * elem_bytes);
    if (a.buffer->scope == MemScope::Global) {
      double sectors = 0;
      worst_efficiency = std::min(worst_efficiency, SectorEfficiency(addresses, elem_bytes, &sectors));
      out.global_sectors += sectors;
      out.global_access_bytes = std::max(out.global_access_bytes, access_bytes);
      any_global = true;
    } else {
      out.shared_access_bytes = std::max(out.shared_access_bytes, access_bytes);
      out.bank_conflict = std::max(out.bank_conflict, BankConflict(addresses, elem_bytes));
    }
  }
  out.global_efficiency = any_global ? worst_efficiency : 0;
  return out;
}

}  // namespace autosched
