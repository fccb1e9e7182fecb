#include "bind.h"

namespace py = pybind11;

namespace autosched::bindings {

void bind_dag(py::module_& m) {}

}  // namespace autosched::bindings
