#include "runtime/opencl/opencl_module.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/opencl/opencl_device.h"
#include "support/error.h"

namespace autosched {
namespace {

std::string Dims(const std::array<int64_t, 3>& d) {
  return std::to_string(d[0]) + " x " + std::to_string(d[1]) + " x " + std::to_string(d[2]);
}

std::atomic<bool> launch_fault{false};

// The device's limits and the caller's, checked before the program is built
// (a compiler may reject an oversized reqd_work_group_size with a less telling
// message).
void CheckDeviceLimits(const OpenCLProgramSpec& spec, const OpenCLDevice& device,
                       const DeviceLimits& limits) {
  auto check = [](bool ok, const std::string& msg) {
    if (!ok) throw DeviceLimitError(msg);
  };
  for (const OpenCLKernelSpec& k : spec.kernels) {
    const int64_t items = k.group_size[0] * k.group_size[1] * k.group_size[2];
    std::ostringstream ss;
    ss << "kernel '" << k.name << "' needs work groups of " << items << " work items (threadIdx extents "
       << Dims(k.group_size) << "), more than ";
    check(items <= device.max_work_group_size, ss.str() + device.Describe() + " allows (" +
                                                   std::to_string(device.max_work_group_size) +
                                                   "): bind smaller threadIdx loops");
    check(limits.max_threads_per_block <= 0 || items <= limits.max_threads_per_block,
          ss.str() + "the task's hardware parameters allow (max_threads_per_block " +
              std::to_string(limits.max_threads_per_block) + "): bind smaller threadIdx loops");
    for (int d = 0; d < 3; ++d) {
      check(k.group_size[d] <= device.max_work_item_sizes[d],
            "kernel '" + k.name + "' needs " + std::to_string(k.group_size[d]) + " work items in dimension " +
                std::to_string(d) + " (threadIdx." + "xyz"[d] + "), more than " + device.Describe() +
                " allows (" + std::to_string(device.max_work_item_sizes[d]) + ")");
    }
    const std::string local = "kernel '" + k.name + "' needs " + std::to_string(k.local_memory_bytes) +
                              " bytes of __local (shared) memory, more than ";
    check(k.local_memory_bytes <= device.local_memory_bytes,
          local + device.Describe() + " has (" + std::to_string(device.local_memory_bytes) + ")");
    check(limits.max_local_memory_bytes <= 0 || k.local_memory_bytes <= limits.max_local_memory_bytes,
          local + "the task's hardware parameters allow (max_shared_memory_per_block " +
              std::to_string(limits.max_local_memory_bytes) + ")");
  }
  AS_CHECK(
      !spec.uses_fp64 || device.HasExtension("cl_khr_fp64"),
      "the kernel computes in float64, which " << device.Describe() << " does not support (no cl_khr_fp64)");
}

// What the driver says is the most work items per group `kernel` runs with
// (CL_KERNEL_WORK_GROUP_SIZE). The environment variable
// AUTOSCHED_TEST_OPENCL_KERNEL_WORK_GROUP_LIMIT, where set, caps it: tests
// on a device whose kernels all run with the device's maximum (PoCL) see a
// kernel limited as a register-heavy one is on a GPU.
int64_t KernelMaxWorkGroupSize(cl_kernel kernel, const OpenCLDevice& device, const std::string& name) {
  size_t most = 0;
  CheckCL(
      clGetKernelWorkGroupInfo(kernel, device.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof(most), &most, nullptr),
      "querying the work-group size of kernel '" + name + "'");
  int64_t limit = static_cast<int64_t>(most);
  if (const char* cap = std::getenv("AUTOSCHED_TEST_OPENCL_KERNEL_WORK_GROUP_LIMIT"); cap && *cap) {
    const long long n = std::atoll(cap);
    if (n > 0) limit = std::min<int64_t>(limit, n);
  }
  return limit;
}

// Buffers of one OpenCL device for a KernelSequence (runtime/module.h),
// copied and used on the device's in-order queue, which every kernel of the
// device shares.
class OpenCLArena : public DeviceArena {
 public:
  explicit OpenCLArena(const OpenCLDevice& device) : device_(device), queue_(OpenCLQueue(device)) {}

  int Allocate(size_t bytes) override {
    cl_int err = CL_SUCCESS;
    bytes = std::max<size_t>(1, bytes);
    buffers_.emplace_back(clCreateBuffer(OpenCLContext(device_), CL_MEM_READ_WRITE, bytes, nullptr, &err));
    CheckCL(err,
            "allocating " + std::to_string(bytes) + " bytes of a network's memory on " + device_.Describe());
    return static_cast<int>(buffers_.size()) - 1;
  }
  void Upload(int buffer, const void* host, size_t bytes) override {
    if (bytes == 0) return;
    CheckCL(clEnqueueWriteBuffer(queue_, buffers_.at(buffer).get(), CL_FALSE, 0, bytes, host, 0, nullptr,
                                 nullptr),
            "copying " + std::to_string(bytes) + " bytes to " + device_.Describe());
  }
  void Download(int buffer, void* host, size_t bytes) override {
    if (bytes == 0) return;
    CheckCL(
        clEnqueueReadBuffer(queue_, buffers_.at(buffer).get(), CL_FALSE, 0, bytes, host, 0, nullptr, nullptr),
        "copying " + std::to_string(bytes) + " bytes from " + device_.Describe());
  }
  void Finish() override { CheckCL(clFinish(queue_), "running OpenCL kernels on " + device_.Describe()); }

  const OpenCLDevice& device() const { return device_; }
  cl_mem buffer(int index) const { return buffers_.at(index).get(); }

 private:
  const OpenCLDevice& device_;
  cl_command_queue queue_;
  std::vector<CLMemHandle> buffers_;
};

class OpenCLKernel : public Kernel {
 public:
  OpenCLKernel(const OpenCLDevice& device, CLProgramRef program, OpenCLProgramSpec spec, std::string options)
      : device_(device),
        spec_(std::move(spec)),
        options_(std::move(options)),
        queue_(OpenCLQueue(device)),
        program_(std::move(program)) {
    for (const OpenCLKernelSpec& k : spec_.kernels) {
      cl_int err = CL_SUCCESS;
      kernels_.emplace_back(clCreateKernel(program_.get(), k.name.c_str(), &err));
      CheckCL(err, "creating OpenCL kernel '" + k.name + "'");
      const int64_t most = KernelMaxWorkGroupSize(kernels_.back().get(), device, k.name);
      const int64_t items = k.group_size[0] * k.group_size[1] * k.group_size[2];
      if (items > most) {
        std::ostringstream ss;
        ss << "kernel '" << k.name << "' needs work groups of " << items << " work items (threadIdx extents "
           << Dims(k.group_size) << "), but " << device.Describe() << " runs it with at most " << most
           << " (CL_KERNEL_WORK_GROUP_SIZE): bind smaller threadIdx loops";
        throw DeviceLimitError(ss.str(), most);
      }
    }
    written_.assign(spec_.buffers.size(), false);
  }

  // The kernels, buffers and program go with their handles.
  ~OpenCLKernel() override = default;

  void SetWritten(std::vector<bool> written) { written_ = std::move(written); }

  const OpenCLDevice& device() const { return device_; }
  const OpenCLProgramSpec& spec() const { return spec_; }
  const std::string& options() const { return options_; }
  cl_program program() const { return program_.get(); }

  int32_t Run(void** args) override {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      Upload(args);
      for (size_t k = 0; k < kernels_.size(); ++k) Launch(k, nullptr);
      Download(args);
    } catch (const Error&) {
      clFinish(queue_);  // copies already queued must not outlive the caller's arrays
      throw;
    }
    return kKernelOk;
  }

  bool HasDeviceMemory() const override { return true; }
  std::unique_ptr<DeviceArena> MakeArena() const override { return std::make_unique<OpenCLArena>(device_); }

  void LaunchIn(DeviceArena& arena, const std::vector<int>& buffers) override {
    auto* on = dynamic_cast<OpenCLArena*>(&arena);
    AS_CHECK(on != nullptr && &on->device() == &device_,
             "an OpenCL kernel of " << device_.Describe() << " runs in an arena of its own device only");
    AS_CHECK(buffers.size() == spec_.num_args,
             "OpenCL kernel: " << buffers.size() << " buffers for " << spec_.num_args << " arguments");
    std::lock_guard<std::mutex> lock(mutex_);
    EnsureTemporaries();
    for (size_t k = 0; k < kernels_.size(); ++k) {
      BindArgs(k, [&](int p) {
        return static_cast<size_t>(p) < spec_.num_args ? on->buffer(buffers[p]) : temporaries_[p].get();
      });
      Launch(k, nullptr);
    }
    args_are_own_ = false;
  }

  int32_t Synchronize() override {
    CheckCL(clFinish(queue_), "running OpenCL kernels on " + device_.Describe());
    return kKernelOk;
  }

  // The span from the start of the first kernel to the end of the last:
  // copies before and after are not counted.
  double DeviceSeconds(void** args, int number) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kernels_.empty()) return 0;
    CLEventHandle first, last;
    try {
      Upload(args);
      for (int i = 0; i < number; ++i) {
        for (size_t k = 0; k < kernels_.size(); ++k) {
          const bool is_first = i == 0 && k == 0, is_last = i == number - 1 && k + 1 == kernels_.size();
          cl_event event = nullptr;
          Launch(k, is_first || is_last ? &event : nullptr);
          if (is_first) first.reset(event);
          if (is_last) {
            if (is_first) clRetainEvent(event);
            last.reset(event);
          }
        }
      }
      Download(args);
    } catch (const Error&) {
      clFinish(queue_);
      throw;
    }
    cl_int err = clFinish(queue_);
    cl_ulong start = 0, end = 0;
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(first.get(), CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(last.get(), CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
    CheckCL(err, "timing OpenCL kernels on " + device_.Describe());
    return end > start ? static_cast<double>(end - start) * 1e-9 : 0.0;
  }

 private:
  // Sets kernel k's arguments to the buffers `memory_of` gives by buffer
  // index.
  void BindArgs(size_t k, const std::function<cl_mem(int)>& memory_of) {
    const std::vector<int>& params = spec_.kernels[k].buffers;
    for (size_t i = 0; i < params.size(); ++i) {
      cl_mem m = memory_of(params[i]);
      CheckCL(clSetKernelArg(kernels_[k].get(), static_cast<cl_uint>(i), sizeof(cl_mem), &m),
              "setting argument " + std::to_string(i) + " of kernel '" + spec_.kernels[k].name + "'");
    }
  }

  // Device buffers for the temporaries alone (a launch in an arena brings
  // the arguments').
  void EnsureTemporaries() {
    if (!temporaries_.empty()) return;
    std::vector<CLMemHandle> memory(spec_.buffers.size());
    for (size_t i = spec_.num_args; i < spec_.buffers.size(); ++i) {
      cl_int err = CL_SUCCESS;
      const size_t bytes = static_cast<size_t>(std::max<int64_t>(1, BufferBytes(*spec_.buffers[i])));
      memory[i].reset(clCreateBuffer(OpenCLContext(device_), CL_MEM_READ_WRITE, bytes, nullptr, &err));
      CheckCL(err, "allocating " + std::to_string(bytes) + " bytes for buffer '" + spec_.buffers[i]->name +
                       "' on " + device_.Describe());
    }
    temporaries_ = std::move(memory);
  }

  // Device buffers for every argument and temporary, made on the first run
  // and bound to the kernels (again after launches in an arena).
  void EnsureBuffers() {
    if (!args_are_own_ && !memory_.empty()) {
      for (size_t k = 0; k < kernels_.size(); ++k) BindArgs(k, [&](int p) { return memory_[p].get(); });
      args_are_own_ = true;
    }
    if (!memory_.empty() || spec_.buffers.empty()) return;
    cl_context context = OpenCLContext(device_);
    std::vector<CLMemHandle> memory;
    for (const Buffer& b : spec_.buffers) {
      cl_int err = CL_SUCCESS;
      const size_t bytes = static_cast<size_t>(std::max<int64_t>(1, BufferBytes(*b)));
      memory.emplace_back(clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &err));
      CheckCL(err, "allocating " + std::to_string(bytes) + " bytes for buffer '" + b->name + "' on " +
                       device_.Describe());
    }
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const std::vector<int>& params = spec_.kernels[k].buffers;
      for (size_t i = 0; i < params.size(); ++i) {
        cl_mem m = memory[params[i]].get();
        CheckCL(clSetKernelArg(kernels_[k].get(), static_cast<cl_uint>(i), sizeof(cl_mem), &m),
                "setting argument " + std::to_string(i) + " of kernel '" + spec_.kernels[k].name + "'");
      }
    }
    memory_ = std::move(memory);  // only once every argument is bound: a failure leaves none
    args_are_own_ = true;
  }

  void Upload(void** args) {
    EnsureBuffers();
    for (size_t i = 0; i < spec_.num_args; ++i) {
      CheckCL(clEnqueueWriteBuffer(queue_, memory_[i].get(), CL_FALSE, 0, BufferBytes(*spec_.buffers[i]),
                                   args[i], 0, nullptr, nullptr),
              "copying argument '" + spec_.buffers[i]->name + "' to " + device_.Describe());
    }
  }

  void Download(void** args) {
    for (size_t i = 0; i < spec_.num_args; ++i) {
      if (!written_[i]) continue;
      CheckCL(clEnqueueReadBuffer(queue_, memory_[i].get(), CL_FALSE, 0, BufferBytes(*spec_.buffers[i]),
                                  args[i], 0, nullptr, nullptr),
              "copying argument '" + spec_.buffers[i]->name + "' from " + device_.Describe());
    }
  }

  void Launch(size_t k, cl_event* event) {
    const OpenCLKernelSpec& spec = spec_.kernels[k];
    size_t global[3], local[3];
    for (int d = 0; d < 3; ++d) {
      global[d] = static_cast<size_t>(spec.num_groups[d] * spec.group_size[d]);
      local[d] = static_cast<size_t>(spec.group_size[d]);
    }
    if (launch_fault.load()) {  // SetOpenCLLaunchFaultForTesting
      local[0] = static_cast<size_t>(device_.max_work_group_size) + 1;
      local[1] = local[2] = 1;
      global[0] = local[0] * static_cast<size_t>(spec.num_groups[0]);
    }
    CheckCL(clEnqueueNDRangeKernel(queue_, kernels_[k].get(), 3, nullptr, global, local, 0, nullptr, event),
            "launching kernel '" + spec.name + "' (" + Dims(spec.num_groups) + " groups of " +
                Dims({static_cast<int64_t>(local[0]), static_cast<int64_t>(local[1]),
                      static_cast<int64_t>(local[2])}) +
                " work items) on " + device_.Describe());
  }

  const OpenCLDevice& device_;
  OpenCLProgramSpec spec_;
  std::string options_;
  cl_command_queue queue_;
  CLProgramRef program_;
  std::vector<CLKernelHandle> kernels_;
  std::vector<CLMemHandle> memory_;
  std::vector<CLMemHandle> temporaries_;  // for launches in an arena
  bool args_are_own_ = false;             // the kernels' arguments are memory_'s
  std::vector<bool> written_;
  std::mutex mutex_;
};

}  // namespace

void SetOpenCLLaunchFaultForTesting(bool on) { launch_fault.store(on); }

std::shared_ptr<Kernel> MakeOpenCLKernel(const Target& target, OpenCLProgramSpec spec,
                                         std::vector<bool> written, const DeviceLimits& limits) {
  const OpenCLDevice& device = SelectOpenCLDevice(target);
  CheckDeviceLimits(spec, device, limits);
  std::string options = target.fast_math ? "-cl-fast-relaxed-math" : "";
  CLProgramRef program = GetOpenCLProgram(device, spec.source, options);
  written.resize(spec.buffers.size(), false);
  auto kernel =
      std::make_shared<OpenCLKernel>(device, std::move(program), std::move(spec), std::move(options));
  kernel->SetWritten(std::move(written));
  return kernel;
}

OpenCLKernelExport ExportOpenCLKernel(const Kernel& kernel) {
  const auto* cl = dynamic_cast<const OpenCLKernel*>(&kernel);
  AS_CHECK(cl != nullptr, "the module is not an OpenCL module");
  const OpenCLProgramSpec& spec = cl->spec();
  nlohmann::json j;
  j["source"] = spec.source;
  j["options"] = cl->options();
  j["num_args"] = spec.num_args;
  j["uses_fp64"] = spec.uses_fp64;
  j["device"] = {{"name", cl->device().name},
                 {"driver_version", cl->device().driver_version},
                 {"platform", cl->device().platform_name}};
  for (const Buffer& b : spec.buffers) {
    j["buffers"].push_back(
        {{"name", b->name}, {"dtype", b->dtype.str()}, {"shape", b->shape}, {"strides", b->strides}});
  }
  for (const OpenCLKernelSpec& k : spec.kernels) {
    j["kernels"].push_back({{"name", k.name},
                            {"buffers", k.buffers},
                            {"num_groups", k.num_groups},
                            {"group_size", k.group_size},
                            {"local_memory_bytes", k.local_memory_bytes}});
  }
  return {j.dump(), OpenCLProgramBinary(cl->program())};
}

std::shared_ptr<Kernel> LoadOpenCLKernel(const Target& target, const std::string& spec_json,
                                         const std::string& binary, std::vector<bool> written) {
  OpenCLProgramSpec spec;
  nlohmann::json j;
  std::string device_name, driver;
  std::string options;
  try {
    j = nlohmann::json::parse(spec_json);
    spec.source = j.at("source").get<std::string>();
    options = j.at("options").get<std::string>();
    spec.num_args = j.at("num_args").get<size_t>();
    spec.uses_fp64 = j.at("uses_fp64").get<bool>();
    device_name = j.at("device").at("name").get<std::string>();
    driver = j.at("device").at("driver_version").get<std::string>();
    for (const nlohmann::json& b : j.value("buffers", nlohmann::json::array())) {
      spec.buffers.push_back(MakeBuffer(b.at("name").get<std::string>(),
                                        DataType::Parse(b.at("dtype").get<std::string>()),
                                        b.at("shape").get<std::vector<int64_t>>(), MemScope::Global,
                                        b.at("strides").get<std::vector<int64_t>>()));
    }
    for (const nlohmann::json& k : j.value("kernels", nlohmann::json::array())) {
      OpenCLKernelSpec ks;
      ks.name = k.at("name").get<std::string>();
      ks.buffers = k.at("buffers").get<std::vector<int>>();
      ks.num_groups = k.at("num_groups").get<std::array<int64_t, 3>>();
      ks.group_size = k.at("group_size").get<std::array<int64_t, 3>>();
      ks.local_memory_bytes = k.at("local_memory_bytes").get<int64_t>();
      spec.kernels.push_back(std::move(ks));
    }
  } catch (const nlohmann::json::exception& e) {
    AS_CHECK(false, "malformed exported OpenCL program: " << e.what());
  }
  const OpenCLDevice& device = SelectOpenCLDevice(target);
  CheckDeviceLimits(spec, device, DeviceLimits{});
  const bool same_driver = !binary.empty() && device.name == device_name && device.driver_version == driver;
  CLProgramRef program = same_driver ? GetOpenCLProgramFromBinary(device, binary, options)
                                     : GetOpenCLProgram(device, spec.source, options);
  written.resize(spec.buffers.size(), false);
  auto kernel =
      std::make_shared<OpenCLKernel>(device, std::move(program), std::move(spec), std::move(options));
  kernel->SetWritten(std::move(written));
  return kernel;
}

}  // namespace autosched
