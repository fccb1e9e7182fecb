// Python view of Target, HardwareParams and SearchTask. HardwareParams is
// bound from its field list (bind_options.h); python/autosched/task.py adds
// the workload registry on top of SearchTask.
#include <pybind11/stl.h>

#include <iterator>
#include <optional>

#include "bind.h"
#include "bind_options.h"
#include "ir/serialize.h"
#include "support/error.h"
#include "task/peak.h"
#include "task/search_task.h"
#include "task/target.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

nlohmann::json ParseJson(const std::string& text, const char* what) { return ParseJsonText(text, what); }

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

// HardwareParams(*positional, target=None, **fields): the fields by position
// (kPositionalFields) or keyword, checked as every options struct's are
// (bind_options.h); a field not given, or None, keeps the default of
// `target` (DefaultHardwareParams) when one is passed, else the host's
// (Target("llvm")'s, so that HardwareParams(num_cores=2) on an AVX-512 host
// keeps its 64-byte vectors). With a target at hand, -1 ("take it from the
// target") is resolved now.
HardwareParams MakeHardwareParams(const py::args& args, const py::kwargs& kwargs) {
  constexpr size_t kMaxPositional = std::size(kPositionalFields);
  AS_TYPE_CHECK(args.size() <= kMaxPositional, "HardwareParams takes at most "
                                                   << kMaxPositional
                                                   << " positional arguments (num_cores, vector_unit_bytes, "
                                                      "cache_line_bytes, max_shared_memory_per_block, "
                                                      "max_local_memory_per_block, max_threads_per_block, "
                                                      "max_vthread_extent, warp_size), got "
                                                   << args.size());
  std::optional<Target> target;
  py::dict fields;
  for (size_t i = 0; i < args.size(); ++i) {
    AS_TYPE_CHECK(!kwargs.contains(kPositionalFields[i]),
                  "HardwareParams got " << kPositionalFields[i] << " both by position and by keyword");
    fields[kPositionalFields[i]] = args[i];
  }
  for (auto [key, value] : kwargs) {
    if (py::str(key).cast<std::string>() != "target") {
      fields[key] = value;
    } else if (!value.is_none()) {
      target = value.cast<Target>();
    }
  }
  static const HardwareParams host_defaults = DefaultHardwareParams(Target::Host());
  const HardwareParams params = options_detail::FromMapping<HardwareParams>(
      fields, target ? DefaultHardwareParams(*target) : host_defaults);
  return target ? ResolveHardwareParams(params, *target) : params;
}

void BindHardwareParams(py::module_& m) {
  BindOptions<HardwareParams>(m, "HardwareParams",
                              "Machine facts the search uses (cpp/task/target.h): every field by keyword, "
                              "the first eight also by position; target= takes the defaults of a target; "
                              "-1 means 'take it from the target'.",
                              &MakeHardwareParams)
      .def("to_json", [](const HardwareParams& p) { return FieldsToJson(p).dump(); })
      .def_static("from_json", [](const std::string& text) {
        return FieldsFromJson<HardwareParams>(ParseJson(text, "HardwareParams.from_json"));
      });
  m.def("default_hardware_params", &DefaultHardwareParams, py::arg("target"));
  m.def("target_kinds", &RegisteredTargetKindNames,
        "The names of the registered target kinds (llvm, opencl, ...).");
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
      .def_property_readonly("kind", [](const Target& t) { return t.kind->name; })
      .def_property_readonly(
          "is_gpu", [](const Target& t) { return t.kind->is_gpu; },
          "True when the search uses the GPU sketches, rules and thread bindings (opencl)")
      .def_property_readonly(
          "runs_in_host_process", [](const Target& t) { return t.kind->runs_in_host_process; },
          "True when kernels are machine code called in this process (llvm): constant arguments are "
          "prepacked, caches set up around runs, code exported as a shared library and possibly "
          "cross-compiled; False when they are launched on a device (opencl)")
      .def_property_readonly(
          "runs_on_host_cpu", &TargetRunsOnCpu,
          "True when the code runs on this machine's CPU cores (llvm; opencl on a CPU device such as PoCL)")
      .def_property_readonly(
          "fault_restarts_worker", [](const Target& t) { return t.kind->fault_restarts_worker; },
          "True when a kernel's fault makes the measurement restart its worker (a GPU context is poisoned)")
      .def_property_readonly(
          "timed_by_device", [](const Target& t) { return t.kind->timing == RunTiming::kDeviceEvents; },
          "True when runs are timed by the device's events, False by the host's wall clock")
      .def_property_readonly(
          "has_backend", [](const Target& t) { return t.kind->build != nullptr; },
          "True when this build of autosched can compile code for the target's kind")
      .def("device_hardware_params", &QueryTargetDevice,
           "The HardwareParams of the device the target selects on this machine (ValueError when the kind "
           "has no device to query, or none matches)")
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
                       py::object hardware_params, const std::string& desc, std::vector<int> constant_args,
                       bool cold_constants, bool network_caches) {
             HardwareParams params = hardware_params.is_none() ? DefaultHardwareParams(target)
                                                               : hardware_params.cast<HardwareParams>();
             SearchTask task(dag, workload_key, target, params, desc);
             task.SetConstantArgs(std::move(constant_args));
             task.cold_constants = cold_constants;
             task.network_caches = network_caches;
             return task;
           }),
           py::arg("compute_dag"), py::arg("target"), py::arg("workload_key") = "",
           py::arg("hardware_params") = py::none(), py::arg("desc") = "",
           py::arg("constant_args") = std::vector<int>{}, py::arg("cold_constants") = false,
           py::arg("network_caches") = false)
      .def_readonly("compute_dag", &SearchTask::compute_dag)
      .def_readonly("workload_key", &SearchTask::workload_key)
      .def_readonly("target", &SearchTask::target)
      .def_readonly("hardware_params", &SearchTask::hardware_params)
      .def_readonly("desc", &SearchTask::desc)
      .def_readonly("constant_args", &SearchTask::constant_args,
                    "positions in compute_dag.tensors of the inputs constant where the kernel is deployed")
      .def_readonly("cold_constants", &SearchTask::cold_constants,
                    "the constants are evicted from the caches before each timed run")
      .def_readonly("network_caches", &SearchTask::network_caches,
                    "each timed run starts with the caches as a network leaves them")
      .def("to_json", [](const SearchTask& t) { return t.ToJson().dump(); })
      .def_static("_core_from_json", [](const std::string& text) {
        return SearchTask::FromJson(ParseJson(text, "SearchTask.from_json"));
      });
}

}  // namespace autosched::bindings
