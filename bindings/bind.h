// One bind_<area> function per area of the core, each in bind_<area>.cc;
// module.cc calls them in order.
#pragma once

#include <pybind11/pybind11.h>

namespace autosched::bindings {

void bind_ir(pybind11::module_& m);          // dtypes, expressions, tensors
void bind_dag(pybind11::module_& m);         // ComputeDAG, reference evaluator
void bind_task(pybind11::module_& m);        // Target, HardwareParams, SearchTask
void bind_schedule(pybind11::module_& m);    // State, steps
void bind_lower(pybind11::module_& m);       // lowering a state, LoweredFunc
void bind_runtime(pybind11::module_& m);     // build, modules, time evaluator
void bind_search(pybind11::module_& m);      // search params, sketch policy, search rounds
void bind_measure(pybind11::module_& m);     // measurement in worker processes, records
void bind_cost_model(pybind11::module_& m);  // program features, cost models

}  // namespace autosched::bindings
