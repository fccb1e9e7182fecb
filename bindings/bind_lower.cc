// Lowering a state to its loop nest, and the lowered function: its name, its
// arguments (one buffer per DAG argument) and its loop nest as text. The
// compiled form is bind_runtime.cc's.
#include <pybind11/stl.h>

#include "bind.h"
#include "lower/lower.h"
#include "lower/lower_state.h"
#include "lower/stmt_printer.h"

namespace py = pybind11;

namespace autosched::bindings {

void bind_lower(py::module_& m) {
  m.attr("BufferArg") =
      py::module_::import("collections").attr("namedtuple")("BufferArg", "name dtype shape");
  py::class_<LoweredFunc>(m, "LoweredFunc", "A lowered loop nest and its arguments (buffers).")
      .def_readonly("name", &LoweredFunc::name)
      .def_property_readonly(
          "args",
          [](const LoweredFunc& f) {
            py::object buffer_arg = py::module_::import("autosched._core").attr("BufferArg");
            py::list args;
            for (const Buffer& b : f.args) {
              args.append(buffer_arg(b->name, b->dtype.str(), py::tuple(py::cast(b->shape))));
            }
            return args;
          })
      .def("__str__", py::overload_cast<const LoweredFunc&>(&ToString))
      .def("__repr__", [](const LoweredFunc& f) { return "LoweredFunc(" + f.name + ")"; });
  m.def("lower_state", &LowerStateToStmt, py::arg("state"), py::call_guard<py::gil_scoped_release>(),
        "The loop nest of a state as it comes from the state, before the lowering passes.");
  m.def(
      "lower", [](const State& state) { return Lower(state); }, py::arg("state"),
      py::call_guard<py::gil_scoped_release>(), "The loop nest of a state after every lowering pass.");
}

}  // namespace autosched::bindings
