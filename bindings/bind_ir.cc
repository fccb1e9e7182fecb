#include "bind.h"
#include "ir/dtype.h"

namespace py = pybind11;

namespace autosched::bindings {

void bind_ir(py::module_& m) {
  py::class_<DataType>(m, "DataType")
      .def_static("parse", &DataType::Parse)
      .def_property_readonly("bits", [](const DataType& t) { return t.bits; })
      .def_property_readonly("lanes", [](const DataType& t) { return t.lanes; })
      .def("__str__", &DataType::str)
      .def("__repr__", [](const DataType& t) { return "DataType(" + t.str() + ")"; })
      .def("__eq__", &DataType::operator==);
}

}  // namespace autosched::bindings
