// The extension module autosched._core: the C++ core, area by area.
#include "bind.h"
#include "support/error.h"

namespace py = pybind11;

namespace {

// _hand_out_as(cls): from now on the core hands values of cls's bound base
// class out as cls (see HandOutClass in bind.h). Called once per class by the
// module of python/autosched that defines it.
template <typename T>
bool Register(const py::type& cls) {
  if (!PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                        reinterpret_cast<PyTypeObject*>(py::type::of<T>().ptr()))) {
    return false;
  }
  PyObject*& slot = autosched::bindings::HandOutClass<T>::cls;
  Py_XDECREF(slot);
  slot = cls.inc_ref().ptr();
  return true;
}

void HandOutAs(const py::type& cls) {
  AS_TYPE_CHECK(Register<autosched::State>(cls) || Register<autosched::ComputeDAG>(cls),
                "_hand_out_as: " << py::str(cls).cast<std::string>()
                                 << " derives from no core class that is handed out as a subclass "
                                    "(LoopState, ComputeDAG)");
}

}  // namespace

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
  m.def("_hand_out_as", &HandOutAs, py::arg("cls"),
        "Hands values of cls's core base class (LoopState, ComputeDAG) out as cls from now on.");
}
