// One bind_<area> function per area of the core, each in bind_<area>.cc;
// module.cc calls them in order.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "support/interrupt.h"
#include "task/target.h"

namespace autosched::bindings {

void bind_ir(pybind11::module_& m);          // dtypes, expressions, tensors
void bind_dag(pybind11::module_& m);         // ComputeDAG, reference evaluator
void bind_task(pybind11::module_& m);        // Target, HardwareParams, SearchTask
void bind_schedule(pybind11::module_& m);    // State, steps
void bind_lower(pybind11::module_& m);       // lowering a state, LoweredFunc
void bind_runtime(pybind11::module_& m);     // build, modules, time evaluator
void bind_deploy(pybind11::module_& m);      // exported kernel libraries, loading them
void bind_search(pybind11::module_& m);      // search params, sketch policy, search rounds
void bind_measure(pybind11::module_& m);     // measurement in worker processes, records
void bind_cost_model(pybind11::module_& m);  // program features, cost models
void bind_tune(pybind11::module_& m);        // a tuning round in one call, the peak estimate

// The Python error a signal handler raised, carried out of the core as an
// Interrupted (which the core's failure handlers let pass); module.cc's
// translator sets it again.
struct PythonInterrupt : Interrupted {
  pybind11::error_already_set error;
};

// What a call into the core that may run for long holds: the GIL released,
// and a check (support/interrupt.h) that lets the core's loops ask Python for
// pending signals, so that Ctrl-C ends the call with KeyboardInterrupt (or
// whatever the signal's Python handler raises) within a fraction of a second.
// Use as py::call_guard<InterruptibleRelease>() or as a local.
class InterruptibleRelease {
 public:
  InterruptibleRelease() : scope_(CheckSignals) {}

 private:
  static void CheckSignals() {
    pybind11::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw PythonInterrupt{{}, pybind11::error_already_set()};
  }

  InterruptScope scope_;
  pybind11::gil_scoped_release release_;
};

// The target a text names, as Target(text) makes it (bind_task.cc): throws
// Error for a malformed text; warns about CPU features this host lacks.
Target TargetFromText(const std::string& text);

}  // namespace autosched::bindings

// Wherever a Target is expected, a string is taken as its text: a malformed
// one raises the parser's ValueError (naming what is wrong) rather than
// pybind11's "incompatible function arguments". Declared here, where every
// bind_<area>.cc sees it.
namespace pybind11::detail {
template <>
struct type_caster<autosched::Target> : type_caster_base<autosched::Target> {
  bool load(handle src, bool convert) {
    if (type_caster_base<autosched::Target>::load(src, convert)) return true;
    if (!isinstance<str>(src)) return false;
    parsed_ = autosched::bindings::TargetFromText(src.cast<std::string>());
    value = &parsed_;
    return true;
  }

 private:
  autosched::Target parsed_;
};
}  // namespace pybind11::detail
