// Python view of Target, HardwareParams and SearchTask. HardwareParams takes
// every field as an optional keyword; python/autosched/task.py adds the
// workload registry on top of SearchTask.
#include <pybind11/stl.h>

#include <iterator>
#include <optional>

#include "bind.h"
#include "ir/serialize.h"
#include "support/error.h"
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

// A hardware parameter given from Python: an int in [0, 2^63), or -1 for
// "take it from the target" (TypeError / Error naming the field otherwise),
// for the arguments and the setters alike.
int64_t HardwareParamValue(const char* name, py::handle value) {
  AS_TYPE_CHECK(py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value),
                "HardwareParams: " << name << " must be an int");
  const std::string text = py::str(value).cast<std::string>();
  if (text == "-1") return kHardwareParamFromTarget;
  const bool negative = value.cast<py::int_>() < py::int_(0);
  AS_CHECK(!negative, "HardwareParams: "
                          << name << " must not be negative (or -1: take it from the target), got " << text);
  try {
    return value.cast<int64_t>();
  } catch (const py::cast_error&) {
    AS_CHECK(false, "HardwareParams: " << name << " is too large, got " << text);
  }
  return 0;
}

// The fields that may be given by position, in the order of the well-known
// mobile-GPU tutorials: num_cores, vector_unit_bytes, cache_line_bytes, then
// the five GPU limits.
constexpr const char* kPositionalFields[] = {"num_cores",
                                             "vector_unit_bytes",
                                             "cache_line_bytes",
                                             "max_shared_memory_per_block",
                                             "max_local_memory_per_block",
                                             "max_threads_per_block",
                                             "max_vthread_extent",
                                             "warp_size"};

void SetHardwareParam(HardwareParams* p, const std::string& key, py::handle value) {
  bool known = false;
#define AUTOSCHED_FIELD_FROM_KWARG(name, default_value, doc) \
  if (key == #name) {                                        \
    p->name = HardwareParamValue(#name, value);              \
    known = true;                                            \
  }
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_FROM_KWARG)
#undef AUTOSCHED_FIELD_FROM_KWARG
  AS_TYPE_CHECK(known, "HardwareParams got an unknown keyword '" << key << "'");
}

void BindHardwareParams(py::module_& m) {
  py::class_<HardwareParams> cls(m, "HardwareParams",
                                 "Machine facts the search uses; every field can be given by keyword.");
  // Keywords default to None: a field not given keeps the default of `target`
  // (DefaultHardwareParams) when a target is passed, else the struct default.
  cls.def(py::init([](py::args args, py::kwargs kwargs) {
    constexpr size_t kMaxPositional = std::size(kPositionalFields);
    AS_TYPE_CHECK(args.size() <= kMaxPositional,
                  "HardwareParams takes at most "
                      << kMaxPositional << " positional arguments (num_cores, "
                      << "vector_unit_bytes, cache_line_bytes, "
                      << "max_shared_memory_per_block, max_local_memory_per_block, "
                      << "max_threads_per_block, max_vthread_extent, warp_size), got " << args.size());
    HardwareParams p;
    std::optional<Target> target;
    if (kwargs.contains("target") && !kwargs["target"].is_none()) {
      py::object t = kwargs["target"];
      target = t.cast<Target>();
      p = DefaultHardwareParams(*target);
    }
    for (size_t i = 0; i < args.size(); ++i) {
      AS_TYPE_CHECK(!kwargs.contains(kPositionalFields[i]),
                    "HardwareParams got " << kPositionalFields[i] << " both by position and by keyword");
      if (!args[i].is_none()) SetHardwareParam(&p, kPositionalFields[i], args[i]);
    }
    for (auto [key_handle, value] : kwargs) {
      std::string key = py::str(key_handle);
      if (key == "target" || value.is_none()) continue;
      SetHardwareParam(&p, key, value);
    }
    // With a target at hand, "take it from the target" is resolved now.
    return target ? ResolveHardwareParams(p, *target) : p;
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
      .def_static("from_json",
                  [](const std::string& text) {
                    return HardwareParamsFromJson(ParseJson(text, "HardwareParams.from_json"));
                  })
      .def(py::pickle([](const HardwareParams& p) { return py::make_tuple(HardwareParamsToJson(p).dump()); },
                      [](const py::tuple& state) {
                        return HardwareParamsFromJson(
                            ParseJson(state[0].cast<std::string>(), "HardwareParams pickle"));
                      }));
  m.def("default_hardware_params", &DefaultHardwareParams, py::arg("target"));
}

// A UserWarning naming the CPU features that the target's -mcpu / -mattr ask
// for and that code built for it goes without, as this host lacks them.
void WarnDroppedFeatures(const Target& t) {
  if (t.cpu.dropped.empty()) return;
  std::string names;
  for (const std::string& f : t.cpu.dropped) names += (names.empty() ? "" : ", ") + f;
  std::string message =
      "target '" + t.str() + "': this host lacks " + std::to_string(t.cpu.dropped.size()) +
      " CPU features that it asks for, and code built for it does without them: " + names +
      "; the search assumes vector_unit_bytes=" + std::to_string(DefaultHardwareParams(t).vector_unit_bytes) +
      ". Add -no-host-check to compile with them (the module can then be read with "
      "get_source, not run here).";
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}

}  // namespace

Target TargetFromText(const std::string& text) {
  Target t = Target::Parse(text);
  WarnDroppedFeatures(t);
  return t;
}

namespace {

void BindTarget(py::module_& m) {
  py::class_<Target>(
      m, "Target",
      "Where code runs, e.g. Target('llvm') (the host CPU) or Target('llvm -mcpu=sapphirerapids "
      "-num-cores=2'). str() is the target text followed by '  # ' and what it resolves to here; "
      "Target(str(t)) == t.")
      .def(py::init(&TargetFromText), py::arg("text"))
      .def_static("host", &Target::Host, "The host CPU as LLVM detects it, with all its cores.")
      .def_property_readonly("kind", [](const Target& t) { return TargetKindName(t.kind); })
      .def_readonly("mcpu", &Target::mcpu, "-mcpu as given ('' for the host CPU)")
      .def_readonly("mattr", &Target::mattr)
      .def_readonly("mtriple", &Target::mtriple)
      .def_readonly("opt_level", &Target::opt_level)
      .def_readonly("host_check", &Target::host_check, "False with -no-host-check")
      .def_readonly("device", &Target::device)
      .def_readonly("platform", &Target::platform)
      .def_readonly("num_cores", &Target::num_cores,
                    "llvm: -num-cores or the cores of this machine; opencl: -num-cores or 0 (the device's)")
      .def_readonly("fast_math", &Target::fast_math)
      .def_readonly("options", &Target::options)
      .def_property_readonly(
          "cpu", [](const Target& t) { return t.cpu.name; }, "the LLVM CPU name code is built for")
      .def_property_readonly(
          "features", [](const Target& t) { return t.cpu.features; }, "CPU features code uses (LLVM names)")
      .def_property_readonly(
          "dropped_features", [](const Target& t) { return t.cpu.dropped; },
          "features of -mcpu / -mattr turned off because this host lacks them")
      .def_property_readonly(
          "missing_features", [](const Target& t) { return t.cpu.missing; },
          "with -no-host-check: features code uses that this host lacks (such modules do not run here)")
      .def_property_readonly(
          "triple", [](const Target& t) { return t.cpu.triple; },
          "llvm: the LLVM triple code is built for (this host's, or a foreign -mtriple)")
      .def_property_readonly(
          "foreign", [](const Target& t) { return t.cpu.foreign; },
          "llvm: True when -mtriple names another architecture (cross-compiled, not run here)")
      .def_property_readonly("hardware_params", &DefaultHardwareParams,
                             "HardwareParams the search assumes for this target")
      .def_property_readonly("text", &Target::str, "the canonical target text (what records store)")
      .def("describe", &Target::Describe)
      .def("has_option", &Target::HasOption)
      .def("__eq__", &Target::operator==)
      .def("__hash__", [](const Target& t) { return std::hash<std::string>()(t.str()); })
      .def("__str__", [](const Target& t) { return t.str() + "  # " + t.Describe(); })
      .def("__repr__", [](const Target& t) { return "Target(\"" + t.str() + "\", " + t.Describe() + ")"; })
      .def(py::pickle([](const Target& t) { return py::make_tuple(t.str()); },
                      [](const py::tuple& state) { return Target::Parse(state[0].cast<std::string>()); }));
}

}  // namespace

void bind_task(py::module_& m) {
  BindTarget(m);
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
