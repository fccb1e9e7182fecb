// The extension module autosched._core: the C++ core, area by area.
#include "bind.h"
#include "ir/error.h"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "autosched C++ core";
  // Errors of the core become Python exceptions carrying the core's message.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const autosched::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const autosched::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  autosched::bindings::bind_ir(m);
  autosched::bindings::bind_dag(m);
  autosched::bindings::bind_task(m);
  autosched::bindings::bind_schedule(m);
  autosched::bindings::bind_runtime(m);
  autosched::bindings::bind_cost_model(m);
}
