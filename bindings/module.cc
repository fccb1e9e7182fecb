// The extension module autosched._core: the C++ core, area by area.
#include "bind.h"
#include "support/error.h"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "autosched C++ core";
  // Errors of the core become Python exceptions carrying the core's message:
  // bad input is ValueError / TypeError, a failed invariant (a bug in
  // autosched) is autosched.InternalError, a RuntimeError.
  py::register_exception<autosched::InternalError>(m, "InternalError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (autosched::bindings::PythonInterrupt& e) {
      e.error.restore();
    } catch (const autosched::Interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const autosched::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const autosched::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  // Test hooks: each raises one family of core error, so tests can check how
  // it arrives in Python.
  py::module_ testing = m.def_submodule("_testing", "hooks for autosched's own tests");
  testing.def("fail_internal_check", [] { AS_ICHECK(1 + 1 == 3, "raised on purpose by a test"); });
  testing.def("fail_user_check", [] { AS_CHECK(false, "bad input raised on purpose by a test"); });
  autosched::bindings::bind_ir(m);
  autosched::bindings::bind_dag(m);
  autosched::bindings::bind_task(m);
  autosched::bindings::bind_schedule(m);
  autosched::bindings::bind_lower(m);
  autosched::bindings::bind_runtime(m);
  autosched::bindings::bind_deploy(m);
  autosched::bindings::bind_search(m);
  autosched::bindings::bind_measure(m);
  autosched::bindings::bind_cost_model(m);
  autosched::bindings::bind_tune(m);
}
