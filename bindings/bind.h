// One bind_<area> function per area of the core, each in bind_<area>.cc;
// module.cc calls them in order.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "dag/compute_dag.h"
#include "schedule/state.h"
#include "support/interrupt.h"
#include "task/target.h"

namespace autosched {
struct TransferReport;  // search/transfer_seeds.h
}  // namespace autosched

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

// SketchPolicy::SetTransferSeeds's report as a dict {given, kept, drops, messages}.
pybind11::dict TransferReportDict(const TransferReport& report);

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

// The Python class a core type is handed out as: the bound class, or the
// subclass python/autosched defines on top of it for Python sugar (State,
// ComputeDAG), once that module registered it with _core._hand_out_as. Every
// value of such a type the core returns is then an object of the subclass, so
// Python code never wraps nor unwraps core objects. A strong reference, kept
// for the life of the process.
template <typename T>
struct HandOutClass {
  static inline PyObject* cls = nullptr;
};

}  // namespace autosched::bindings

namespace pybind11::detail {

// Casts values of T to Python as HandOutClass<T>::cls when one is registered:
// a new object of that class whose C++ value is a copy (the types handed out
// so are handles to immutable nodes, copied in O(1)). Loading is the bound
// class's, which subclasses pass.
template <typename T>
struct hand_out_caster : type_caster_base<T> {
  static handle cast(const T& src, return_value_policy, handle parent) {
    return HandOut(type_caster_base<T>::cast(src, return_value_policy::copy, parent));
  }
  static handle cast(T&& src, return_value_policy, handle parent) {
    return HandOut(type_caster_base<T>::cast(std::move(src), return_value_policy::move, parent));
  }
  static handle cast(const T* src, return_value_policy policy, handle parent) {
    if (src == nullptr) return none().release();
    return cast(*src, policy, parent);
  }

 private:
  // `core` (a new reference to an object of the bound class) as an object of
  // the registered subclass: made by the subclass's __new__ and initialised
  // by the bound class's copy constructor, so the subclass's own __init__
  // (which may take other arguments) is not called.
  static handle HandOut(handle core) {
    PyObject* cls = autosched::bindings::HandOutClass<T>::cls;
    if (cls == nullptr || !core) return core;
    object owned = reinterpret_steal<object>(core);
    object out = reinterpret_borrow<object>(cls).attr("__new__")(reinterpret_borrow<object>(cls));
    type::of<T>().attr("__init__")(out, owned);
    return out.release();
  }
};

template <>
struct type_caster<autosched::State> : hand_out_caster<autosched::State> {};
template <>
struct type_caster<autosched::ComputeDAG> : hand_out_caster<autosched::ComputeDAG> {};

// Wherever a Target is expected, a string is taken as its text: a malformed
// one raises the parser's ValueError (naming what is wrong) rather than
// pybind11's "incompatible function arguments". Declared here, where every
// bind_<area>.cc sees it.
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
