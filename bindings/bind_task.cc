// Python view of Target, HardwareParams and SearchTask. HardwareParams takes
// every field as an optional keyword; python/autosched/task.py adds the
// workload registry on top of SearchTask.
#include <pybind11/stl.h>

#include "bind.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "task/search_task.h"
#include "task/target.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

nlohmann::json ParseJson(const std::string& text, const char* what) { return ParseJsonText(text, what); }

std::string HardwareParamsRepr(const HardwareParams& p) {
  std::string text = "HardwareParams(";
  bool first = true;
#define AUTOSCHED_FIELD_REPR(name, default_value, doc)                           \
  text += (first ? "" : ", ") + std::string(#name "=") + std::to_string(p.name); \
  first = false;
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_REPR)
#undef AUTOSCHED_FIELD_REPR
  return text + ")";
}

// A hardware parameter given from Python: an int in [0, 2^63) (TypeError /
// Error naming the field otherwise), for the keywords and the setters alike.
int64_t HardwareParamValue(const char* name, py::handle value) {
  AS_TYPE_CHECK(py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value),
                "HardwareParams: " << name << " must be an int");
  const bool negative = value.cast<py::int_>() < py::int_(0);
  AS_CHECK(!negative,
           "HardwareParams: " << name << " must not be negative, got " << py::str(value).cast<std::string>());
  try {
    return value.cast<int64_t>();
  } catch (const py::cast_error&) {
    AS_CHECK(false,
             "HardwareParams: " << name << " is too large, got " << py::str(value).cast<std::string>());
  }
  return 0;
}

void BindHardwareParams(py::module_& m) {
  py::class_<HardwareParams> cls(m, "HardwareParams",
                                 "Machine facts the search uses; every field can be given by keyword.");
  // Keywords default to None: a field not given keeps the default of `target`
  // (DefaultHardwareParams) when a target is passed, else the struct default.
  cls.def(py::init([](py::kwargs kwargs) {
    HardwareParams p;
    if (kwargs.contains("target") && !kwargs["target"].is_none()) {
      py::object target = kwargs["target"];
      p = DefaultHardwareParams(py::isinstance<py::str>(target) ? Target::Parse(target.cast<std::string>())
                                                                : target.cast<Target>());
    }
    for (auto [key_handle, value] : kwargs) {
      std::string key = py::str(key_handle);
      if (key == "target" || value.is_none()) continue;
      bool known = false;
#define AUTOSCHED_FIELD_FROM_KWARG(name, default_value, doc) \
  if (key == #name) {                                        \
    p.name = HardwareParamValue(#name, value);               \
    known = true;                                            \
  }
      AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_FROM_KWARG)
#undef AUTOSCHED_FIELD_FROM_KWARG
      AS_TYPE_CHECK(known, "HardwareParams got an unknown keyword '" << key << "'");
    }
    return p;
  }));
  // Setters refuse what the constructor refuses.
#define AUTOSCHED_FIELD_PROPERTY(name, default_value, doc)   \
  cls.def_property(                                          \
      #name, [](const HardwareParams& p) { return p.name; }, \
      [](HardwareParams& p, py::object value) { p.name = HardwareParamValue(#name, value); }, doc);
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_PROPERTY)
#undef AUTOSCHED_FIELD_PROPERTY
  cls.def("__eq__", &HardwareParams::operator==)
      .def("__repr__", &HardwareParamsRepr)
      .def("to_json", [](const HardwareParams& p) { return HardwareParamsToJson(p).dump(); })
      .def_static("from_json", [](const std::string& text) {
        return HardwareParamsFromJson(ParseJson(text, "HardwareParams.from_json"));
      });
  m.def("default_hardware_params", &DefaultHardwareParams, py::arg("target"));
}

}  // namespace

void bind_task(py::module_& m) {
  py::class_<Target>(m, "Target", "Where code runs, e.g. Target('llvm -mcpu=sapphirerapids -num-cores=2').")
      .def(py::init(&Target::Parse), py::arg("text"))
      .def_property_readonly("kind", [](const Target& t) { return TargetKindName(t.kind); })
      .def_readonly("mcpu", &Target::mcpu)
      .def_readonly("device", &Target::device)
      .def_readonly("num_cores", &Target::num_cores)
      .def_readonly("options", &Target::options)
      .def("has_option", &Target::HasOption)
      .def("__eq__", &Target::operator==)
      .def("__hash__", [](const Target& t) { return std::hash<std::string>()(t.str()); })
      .def("__str__", &Target::str)
      .def("__repr__", [](const Target& t) { return "Target(\"" + t.str() + "\")"; });
  py::implicitly_convertible<py::str, Target>();
  BindHardwareParams(m);

  py::class_<SearchTask>(m, "SearchTask", "A DAG to tune for a target.")
      .def(py::init([](const ComputeDAG& dag, const Target& target, const std::string& workload_key,
                       py::object hardware_params, const std::string& desc) {
             HardwareParams params = hardware_params.is_none() ? DefaultHardwareParams(target)
                                                               : hardware_params.cast<HardwareParams>();
             return SearchTask(dag, workload_key, target, params, desc);
           }),
           py::arg("compute_dag"), py::arg("target"), py::arg("workload_key") = "",
           py::arg("hardware_params") = py::none(), py::arg("desc") = "")
      .def_readonly("compute_dag", &SearchTask::compute_dag)
      .def_readonly("workload_key", &SearchTask::workload_key)
      .def_readonly("target", &SearchTask::target)
      .def_readonly("hardware_params", &SearchTask::hardware_params)
      .def_readonly("desc", &SearchTask::desc)
      .def("to_json", [](const SearchTask& t) { return t.ToJson().dump(); })
      .def_static("_core_from_json", [](const std::string& text) {
        return SearchTask::FromJson(ParseJson(text, "SearchTask.from_json"));
      });
}

}  // namespace autosched::bindings
