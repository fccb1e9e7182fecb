#include "bind.h"

namespace py = pybind11;

namespace autosched::bindings {

void bind_runtime(py::module_& m) {}

}  // namespace autosched::bindings
