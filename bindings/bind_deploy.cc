// Exporting built modules and loading them without a compiler:
// python/autosched/runtime.py writes and reads the artifact around these
// (a shared library of the kernels with the metadata appended).
#include <pybind11/stl.h>

#include "bind.h"
#include "runtime/library_module.h"
#include "runtime/module.h"
#include "support/error.h"
#include "task/host_cpu.h"
#ifdef AUTOSCHED_HAS_LLVM
#include "codegen/export.h"
#include "codegen/llvm/codegen_llvm.h"
#endif
#ifdef AUTOSCHED_HAS_OPENCL
#include "runtime/opencl/opencl_device.h"
#include "runtime/opencl/opencl_module.h"
#endif

namespace py = pybind11;

namespace autosched::bindings {
namespace {

using ArgTuple = std::tuple<std::string, std::string, std::vector<int64_t>, bool>;

std::vector<ArgSpec> ToArgSpecs(const std::vector<ArgTuple>& args) {
  std::vector<ArgSpec> specs;
  for (const auto& [name, dtype, shape, written] : args)
    specs.push_back({name, DataType::Parse(dtype), shape, written});
  return specs;
}

ModuleSources ToSources(const std::map<std::string, std::string>& texts) {
  ModuleSources sources;
  for (const auto& [format, text] : texts) sources.Add(format, text);
  return sources;
}

py::bytes EmitLibraryObject(const std::vector<const Module*>& modules,
                            const std::vector<std::string>& symbols, const Target& target) {
#ifdef AUTOSCHED_HAS_LLVM
  std::string object;
  {
    py::gil_scoped_release release;
    object = EmitKernelLibraryObject(modules, symbols, target);
  }
  return py::bytes(object);
#else
  throw Error("exporting CPU modules needs the LLVM backend, which this autosched was built without");
#endif
}

py::dict CompileCounts() {
  py::dict counts;
#ifdef AUTOSCHED_HAS_LLVM
  counts["llvm_jit"] = JitCompilations();
#else
  counts["llvm_jit"] = 0;
#endif
#ifdef AUTOSCHED_HAS_OPENCL
  OpenCLProgramBuilds builds = OpenCLProgramBuildCounts();
  counts["opencl_source"] = builds.from_source;
  counts["opencl_binary"] = builds.from_binary;
#else
  counts["opencl_source"] = 0;
  counts["opencl_binary"] = 0;
#endif
  return counts;
}

py::tuple ExportOpenCL(const Module& mod) {
#ifdef AUTOSCHED_HAS_OPENCL
  AS_CHECK(mod.kernel() != nullptr, "module '" << mod.name() << "' cannot be exported: " << mod.cannot_run());
  OpenCLKernelExport out = ExportOpenCLKernel(*mod.kernel());
  return py::make_tuple(out.spec_json, py::bytes(out.binary));
#else
  throw Error("this autosched was built without OpenCL");
#endif
}

Module LoadOpenCL(const Target& target, const std::string& name, const std::vector<ArgTuple>& args,
                  const std::map<std::string, std::string>& sources, const std::string& spec_json,
                  const py::bytes& binary) {
#ifdef AUTOSCHED_HAS_OPENCL
  std::vector<ArgSpec> specs = ToArgSpecs(args);
  std::vector<bool> written;
  for (const ArgSpec& a : specs) written.push_back(a.written);
  std::string bytes = binary;
  std::shared_ptr<Kernel> kernel;
  {
    py::gil_scoped_release release;
    kernel = LoadOpenCLKernel(target, spec_json, bytes, std::move(written));
  }
  return Module(name, std::move(specs), std::move(kernel), ToSources(sources), 0.0);
#else
  throw Error("loading an OpenCL module needs the OpenCL runtime, which this autosched was built without");
#endif
}

}  // namespace

void bind_deploy(py::module_& m) {
  py::class_<KernelLibrary, std::shared_ptr<KernelLibrary>>(
      m, "KernelLibrary", "A shared library of exported kernels, opened with dlopen (no compiler).")
      .def_static(
          "load",
          [](const py::bytes& image, const std::string& name, const std::string& copy) {
            static const std::map<std::string, LibraryCopy> copies = {{"auto", LibraryCopy::kAuto},
                                                                      {"memfd", LibraryCopy::kMemoryFile},
                                                                      {"file", LibraryCopy::kTempFile}};
            auto it = copies.find(copy);
            AS_CHECK(it != copies.end(), "copy must be 'auto', 'memfd' or 'file', got '" << copy << "'");
            return KernelLibrary::Load(std::string(image), name, it->second);
          },
          py::arg("image"), py::arg("name"), py::arg("copy") = "auto",
          "The library whose bytes are `image`, named `name` in messages, loaded from a private copy (copy: "
          "'memfd' a memory file, 'file' a temporary file unlinked after dlopen, 'auto' the first that "
          "works), "
          "so a library re-exported under a name this process loaded before gives its new code.")
      .def_static("open", &KernelLibrary::Open, py::arg("path"), "load() of the bytes of the file at `path`.")
      .def_property_readonly("path", &KernelLibrary::path);
  m.def(
      "load_library_module",
      [](const std::shared_ptr<KernelLibrary>& library, const std::string& symbol, const std::string& name,
         const std::vector<ArgTuple>& args, const std::map<std::string, std::string>& sources) {
        return LoadLibraryModule(library, symbol, name, ToArgSpecs(args), ToSources(sources));
      },
      py::arg("library"), py::arg("symbol"), py::arg("name"), py::arg("args"), py::arg("sources"),
      "The module of the kernel `symbol` of an opened library; args: (name, dtype, shape, written) each.");
  m.def("emit_library_object", &EmitLibraryObject, py::arg("modules"), py::arg("symbols"), py::arg("target"),
        "Object code (bytes) of llvm modules linked together, kernel i exported as symbols[i].");
  m.def(
      "module_arg_info",
      [](const Module& mod) {
        std::vector<ArgTuple> out;
        for (const ArgSpec& a : mod.args()) out.emplace_back(a.name, a.dtype.str(), a.shape, a.written);
        return out;
      },
      py::arg("module"), "(name, dtype, shape, written) of every argument of a module.");
  m.def(
      "host_detectable_cpu_features", &HostDetectableFeatures,
      "CPU features (LLVM names) whose presence this host's detection reports: instruction sets, not tuning "
      "flags.");
  m.def("compile_counts", &CompileCounts,
        "Kernels this process compiled: {'llvm_jit', 'opencl_source', 'opencl_binary'} (program builds).");
  m.def("export_opencl", &ExportOpenCL, py::arg("module"),
        "(spec JSON, driver binary or b'') of an OpenCL module, for export.");
  m.def("load_opencl_module", &LoadOpenCL, py::arg("target"), py::arg("name"), py::arg("args"),
        py::arg("sources"), py::arg("spec_json"), py::arg("binary"),
        "The module of an exported OpenCL program on the device the target selects.");
}

}  // namespace autosched::bindings
