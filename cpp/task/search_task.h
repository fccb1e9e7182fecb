// SearchTask: one tuning problem, the DAG to compute plus where it will run.
//
// Its JSON form is self-contained (the DAG travels with it), so a task can be
// re-created in another process, e.g. a measurement worker, without the Python
// function that defined it:
//   {"version": 1, "workload_key": ..., "desc": ..., "target": "llvm -mcpu=...",
//    "hardware_params": {"num_cores": ..., ...}, "compute_dag": <ComputeDAG::ToJson>}
// Fields a reader does not know are ignored (the Python layer adds "workload").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dag/compute_dag.h"
#include "task/target.h"

namespace autosched {

struct SearchTask {
  static constexpr int kJsonVersion = 1;

  ComputeDAG compute_dag;
  std::string workload_key;  // the DAG's key unless the caller names another
  Target target;
  HardwareParams hardware_params;
  std::string desc;  // free text for logs, e.g. the workload function's name
  // Positions in compute_dag.tensors() of the inputs that are constants where
  // the kernel is deployed (a network's weights). Measurement then computes
  // the stages that read only them (a packed copy of a weight) once, before
  // timing, as graph.build does: the time tuned is the time deployed.
  std::vector<int> constant_args;
  // The constants are evicted from every cache level before each timed run
  // of the kernel (CPU targets): in a network whose weights exceed the
  // last-level cache, each inference reads a kernel's weights from memory,
  // and the schedule that is fastest with warm weights may not be fastest
  // with cold ones. extract_tasks sets it for such networks.
  bool cold_constants = false;
  // Each timed run starts with the caches as a network leaves them (CPU
  // targets): every core's private caches refilled with other data, then the
  // non-constant inputs written anew in equal shares by the pool's threads,
  // as the kernel before it wrote them. The weights are then in the shared
  // cache at best and the inputs split between the cores, where a warm
  // timing loop finds all of them in each core's L2. extract_tasks sets it.
  bool network_caches = false;

  // An empty workload_key takes the DAG's. Throws Error when a hardware
  // parameter is negative.
  SearchTask(ComputeDAG dag, std::string workload_key, Target target, HardwareParams hardware_params,
             std::string desc = "");
  // Hardware parameters from DefaultHardwareParams(target).
  SearchTask(ComputeDAG dag, Target target);

  // Throws Error when a position is out of range or not a placeholder;
  // sorts the positions and drops repeats.
  void SetConstantArgs(std::vector<int> positions);

  nlohmann::json ToJson() const;
  // Throws Error naming a missing or malformed field, or an unsupported version.
  static SearchTask FromJson(const nlohmann::json& doc);
};

// A field set to this value is taken from the target's defaults
// (DefaultHardwareParams: for an OpenCL device of this machine, queried from
// it) when a SearchTask is made; the -1 of the mobile-GPU tutorials.
inline constexpr int64_t kHardwareParamFromTarget = -1;
// `params` with every field equal to kHardwareParamFromTarget replaced by
// the target's default.
HardwareParams ResolveHardwareParams(const HardwareParams& params, const Target& target);

}  // namespace autosched
