// Building states into native modules and calling them on numpy arrays
// without copies. python/autosched/build_module.py adds the Pythonic layer
// (ans.build, mod(*arrays), mod.time_evaluator(...)).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>

#include "bind.h"
#include "codegen/build.h"
#include "lower/lower.h"
#include "lower/stmt_printer.h"
#include "runtime/kernel_sequence.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "schedule/state.h"
#include "support/error.h"
#ifdef AUTOSCHED_HAS_OPENCL
#include "runtime/opencl/opencl_device.h"
#endif

namespace py = pybind11;

namespace autosched::bindings {
namespace {

// The element type of a numpy dtype in native byte order, read from its
// descriptor; nullopt for anything else. str(dtype) would run numpy's Python
// code, a few microseconds per argument: as long as a small kernel runs.
std::optional<DataType> NativeDataType(const py::dtype& dtype) {
  if (dtype.byteorder() != '=' && dtype.byteorder() != '|') return std::nullopt;
  const int bits = static_cast<int>(dtype.itemsize()) * 8;
  switch (dtype.kind()) {
    case 'b':
      if (bits == 8) return DataType::Bool();
      break;
    case 'i':
      if (bits == 8 || bits == 16 || bits == 32 || bits == 64) return DataType::Int(bits);
      break;
    case 'u':
      if (bits == 8) return DataType::UInt(8);
      break;
    case 'f':
      if (bits == 16 || bits == 32 || bits == 64) return DataType::Float(bits);
      break;
    default: break;
  }
  return std::nullopt;
}

// A view of a numpy array as a kernel argument; TypeError names argument i
// when it is not an array of a supported dtype.
// `kind` and `i` name the array in errors ("argument 2", "slot 5").
CallArg ToCallArg(const py::handle& obj, size_t i, const char* kind = "argument") {
  AS_TYPE_CHECK(py::isinstance<py::array>(obj), kind << " " << i << " must be a numpy.ndarray, got "
                                                     << py::str(py::type::of(obj)).cast<std::string>());
  auto arr = py::reinterpret_borrow<py::array>(obj);
  CallArg arg;
  if (std::optional<DataType> dtype = NativeDataType(arr.dtype())) {
    arg.dtype = *dtype;
  } else {
    std::string dtype_name = py::str(arr.dtype()).cast<std::string>();
    try {
      arg.dtype = DataType::Parse(dtype_name);
    } catch (const Error&) {
      AS_TYPE_CHECK(false, kind << " " << i << " has unsupported dtype " << dtype_name);
    }
  }
  arg.data = const_cast<void*>(arr.data());
  for (py::ssize_t d = 0; d < arr.ndim(); ++d) arg.shape.push_back(arr.shape(d));
  arg.c_contiguous = (arr.flags() & py::array::c_style) != 0;
  arg.writeable = arr.writeable();
  return arg;
}

std::vector<CallArg> ToCallArgs(const py::args& arrays) {
  std::vector<CallArg> args;
  for (size_t i = 0; i < arrays.size(); ++i) args.push_back(ToCallArg(arrays[i], i));
  return args;
}

// Lowering and compiling take no Python object, so other Python threads run
// meanwhile (and builds from several threads run at once).
Module BuildStateUnlocked(const State& state, const Target& target) {
  py::gil_scoped_release release;
  return BuildCandidate(state, target);
}

std::string LoweredText(const State& state, bool log_passes) {
  py::gil_scoped_release release;
  std::ostringstream log;
  LowerOptions options;
  if (log_passes) options.log = &log;
  LoweredFunc f = Lower(state, options);
  return log_passes ? log.str() : ToString(f);
}

// The OpenCL devices as dicts (empty without OpenCL or without a platform).
py::list OpenCLDevices() {
  py::list out;
#ifdef AUTOSCHED_HAS_OPENCL
  for (const OpenCLDevice& d : ListOpenCLDevices()) {
    py::dict info;
    info["index"] = d.index;
    info["name"] = d.name;
    info["vendor"] = d.vendor;
    info["version"] = d.version;
    info["driver_version"] = d.driver_version;
    info["platform"] = d.platform_name;
    info["platform_vendor"] = d.platform_vendor;
    info["is_gpu"] = d.is_gpu;
    info["is_cpu"] = d.is_cpu;
    info["compute_units"] = d.compute_units;
    info["max_work_group_size"] = d.max_work_group_size;
    info["max_work_item_sizes"] =
        py::make_tuple(d.max_work_item_sizes[0], d.max_work_item_sizes[1], d.max_work_item_sizes[2]);
    info["local_memory_bytes"] = d.local_memory_bytes;
    info["global_memory_bytes"] = d.global_memory_bytes;
    info["clock_mhz"] = d.clock_mhz;
    info["cache_line_bytes"] = d.cache_line_bytes;
    info["preferred_float_vector_width"] = d.preferred_float_vector_width;
    info["warp_size"] = d.warp_size;
    info["extensions"] = d.extensions;
    out.append(info);
  }
#endif
  return out;
}

HardwareParams OpenCLDeviceParams(const Target& target) {
  AS_CHECK(target.kind->query_device != nullptr || !target.kind->runs_in_host_process,
           "hardware parameters of an OpenCL device need an opencl target, got '" << target.str() << "'");
  return QueryTargetDevice(target);
}

// A KernelSequence with the arrays of its slots kept alive.
struct PyKernelSequence {
  KernelSequence sequence;
  std::vector<py::object> arrays;
};

}  // namespace

void bind_runtime(py::module_& m) {
  py::class_<Module>(m, "Module", "A compiled kernel; call it on numpy arrays (results written in place).")
      .def_property_readonly("name", &Module::name)
      .def_property_readonly("compile_seconds", &Module::compile_seconds)
      .def_property_readonly(
          "arg_specs",
          [](const Module& mod) {
            py::list specs;
            for (const ArgSpec& a : mod.args()) {
              specs.append(py::make_tuple(a.name, a.dtype.str(), py::tuple(py::cast(a.shape))));
            }
            return specs;
          })
      .def("__call__",
           [](const Module& mod, const py::args& arrays) {
             std::vector<CallArg> args = ToCallArgs(arrays);
             py::gil_scoped_release release;
             mod.Call(args);
           })
      .def(
          "time_evaluate",
          [](const Module& mod, const py::list& arrays, int number, int repeat, double min_repeat_ms,
             bool flush_cache) {
            std::vector<CallArg> args = ToCallArgs(py::args(py::tuple(arrays)));
            py::gil_scoped_release release;
            return mod.TimeEvaluate(args, {number, repeat, min_repeat_ms, flush_cache});
          },
          py::arg("arrays"), py::arg("number") = 1, py::arg("repeat") = 1, py::arg("min_repeat_ms") = 0.0,
          py::arg("flush_cache") = false)
      .def("get_source", &Module::GetSource, py::arg("format") = "ll")
      .def(
          "object_code", [](const Module& mod) { return py::bytes(mod.sources().Get("obj")); },
          "the object file of a module cross-compiled for another architecture (source format 'obj')")
      .def(
          "device_binary", [](const Module& mod) { return py::bytes(mod.sources().Get("binary")); },
          "the device compiler's binary of an OpenCL module's program (source format 'binary')")
      .def_property_readonly("source_formats", [](const Module& mod) { return mod.sources().Formats(); })
      .def_property_readonly("cannot_run", &Module::cannot_run,
                             "Why this module cannot run on this host ('' when it can).")
      .def("__repr__", [](const Module& mod) { return "Module(" + mod.name() + ")"; });

  py::class_<PyKernelSequence>(m, "KernelSequence",
                               "Kernel calls in a fixed order over a table of arrays (slots), checked when "
                               "added and when a slot is rebound; run() runs them all without the GIL.")
      .def(py::init<>())
      .def(
          "add_slot",
          [](PyKernelSequence& self, const py::object& array, bool per_run) {
            int slot = self.sequence.AddSlot(ToCallArg(array, self.sequence.num_slots(), "slot"), per_run);
            self.arrays.push_back(array);
            return slot;
          },
          py::arg("array"), py::arg("per_run") = false,
          "Adds a slot; per_run: an input or output, rebound or read around every run (on a device it is "
          "copied in, or out, every run; other slots are copied in once, or stay there).")
      .def(
          "bind",
          [](PyKernelSequence& self, int slot, const py::object& array) {
            self.sequence.BindSlot(slot, ToCallArg(array, slot, "slot"));
            self.arrays[slot] = array;
          },
          py::arg("slot"), py::arg("array"))
      .def(
          "add_call",
          [](PyKernelSequence& self, const Module& module, const std::vector<int>& slots) {
            self.sequence.AddCall(module, slots);
          },
          py::arg("module"), py::arg("slots"))
      .def("run",
           [](const PyKernelSequence& self) {
             py::gil_scoped_release release;
             self.sequence.Run();
           })
      .def(
          "run_timed",
          [](const PyKernelSequence& self, int runs) {
            if (runs < 1)
              throw py::value_error("run_timed: runs must be at least 1, got " + std::to_string(runs));
            std::vector<double> seconds(static_cast<size_t>(self.sequence.num_calls()), 0.0);
            {
              py::gil_scoped_release release;
              for (int r = 0; r < runs; ++r) self.sequence.Run(&seconds);
            }
            for (double& s : seconds) s /= runs;
            return seconds;
          },
          py::arg("runs") = 1,
          "Runs the sequence `runs` times; returns each call's mean wall time in seconds, in call order.")
      .def_property_readonly("num_slots",
                             [](const PyKernelSequence& self) { return self.sequence.num_slots(); })
      .def_property_readonly("num_calls",
                             [](const PyKernelSequence& self) { return self.sequence.num_calls(); })
      .def_property_readonly(
          "resident", [](const PyKernelSequence& self) { return self.sequence.resident(); },
          "Whether the calls run with their slots in a device's memory (OpenCL).")
      .def_property_readonly(
          "last_run_transfers",
          [](const PyKernelSequence& self) {
            return py::make_tuple(self.sequence.bytes_uploaded(), self.sequence.bytes_downloaded());
          },
          "(bytes copied to the device, bytes copied back) by the last run; (0, 0) on host memory.");

  m.def("build_state", &BuildStateUnlocked, py::arg("state"), py::arg("target"),
        "Lowers a state and compiles it for the target (a Target).");
  m.def("lowered_text", &LoweredText, py::arg("state"), py::arg("log_passes") = false,
        "The fully lowered loop nest of a state (with log_passes: after every pass).");
  m.def(
      "set_parallel_pieces_per_task",
      [](int pieces) {
        if (pieces < 1)
          throw py::value_error("pieces per task must be at least 1, got " + std::to_string(pieces));
        int previous = ThreadPool::PiecesPerTask();
        ThreadPool::SetPiecesPerTask(pieces);
        return previous;
      },
      py::arg("pieces"),
      "Sets the pieces each thread's share of a parallel loop is cut into (1: a static split); returns the "
      "previous value.");
  m.def("has_llvm", &HasLLVMBackend, "True when this build can compile for 'llvm' targets.");
  m.def("has_opencl", &HasOpenCLBackend, "True when this build has the OpenCL runtime.");
  m.def("opencl_devices", &OpenCLDevices, "The OpenCL devices of this machine, as dicts.");
  m.def("opencl_hardware_params", &OpenCLDeviceParams, py::arg("target"),
        "HardwareParams queried from the OpenCL device a target selects.");
  const char* dropped_doc =
      "CPU features (LLVM names) that the target's -mcpu / -mattr ask for but that this host lacks, so that "
      "built code does without them (Target.dropped_features).";
  m.def(
      "dropped_cpu_features", [](const std::string& text) { return Target::Parse(text).cpu.dropped; },
      py::arg("target"), dropped_doc);
  m.def(
      "dropped_cpu_features", [](const Target& target) { return target.cpu.dropped; }, py::arg("target"),
      dropped_doc);
}

}  // namespace autosched::bindings
