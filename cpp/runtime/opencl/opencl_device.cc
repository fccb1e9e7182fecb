#include "runtime/opencl/opencl_device.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

#include "support/error.h"
#include "task/opencl_devices.h"

namespace autosched {
namespace {

struct ErrorName {
  cl_int code;
  const char* name;
};

// Every error code of the OpenCL 3.0 headers, and those of the ICD loader.
constexpr ErrorName kErrorNames[] = {
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-69, "CL_INVALID_PIPE_SIZE"},
    {-70, "CL_INVALID_DEVICE_QUEUE"},
    {-71, "CL_INVALID_SPEC_ID"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1000, "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR"},
    {-9999, "CL_NV_ILLEGAL_MEMORY_ACCESS (NVIDIA: a kernel accessed memory out of bounds)"},
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  clGetPlatformInfo(p, what, size, text.data(), nullptr);
  text.resize(text.find('\0') == std::string::npos ? size : text.find('\0'));
  return text;
}

std::string DeviceString(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  clGetDeviceInfo(d, what, size, text.data(), nullptr);
  text.resize(text.find('\0') == std::string::npos ? size : text.find('\0'));
  return text;
}

template <typename T>
int64_t DeviceValue(cl_device_id d, cl_device_info what) {
  T value{};
  if (clGetDeviceInfo(d, what, sizeof(T), &value, nullptr) != CL_SUCCESS) return 0;
  return static_cast<int64_t>(value);
}

OpenCLDevice Describe(cl_platform_id p, cl_device_id d, int index) {
  OpenCLDevice dev;
  dev.index = index;
  dev.platform = p;
  dev.id = d;
  dev.name = DeviceString(d, CL_DEVICE_NAME);
  dev.vendor = DeviceString(d, CL_DEVICE_VENDOR);
  dev.version = DeviceString(d, CL_DEVICE_VERSION);
  dev.driver_version = DeviceString(d, CL_DRIVER_VERSION);
  dev.extensions = DeviceString(d, CL_DEVICE_EXTENSIONS);
  dev.platform_name = PlatformString(p, CL_PLATFORM_NAME);
  dev.platform_vendor = PlatformString(p, CL_PLATFORM_VENDOR);
  const int64_t type = DeviceValue<cl_device_type>(d, CL_DEVICE_TYPE);
  dev.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  dev.is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  dev.compute_units = DeviceValue<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  dev.max_work_group_size = DeviceValue<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  size_t sizes[3] = {0, 0, 0};
  if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(sizes), sizes, nullptr) == CL_SUCCESS) {
    for (int k = 0; k < 3; ++k) dev.max_work_item_sizes[k] = static_cast<int64_t>(sizes[k]);
  }
  dev.local_memory_bytes = DeviceValue<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  dev.global_memory_bytes = DeviceValue<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  dev.clock_mhz = DeviceValue<cl_uint>(d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  dev.cache_line_bytes = DeviceValue<cl_uint>(d, CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE);
  dev.preferred_float_vector_width = DeviceValue<cl_uint>(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
  constexpr cl_device_info kNvWarpSize = 0x4003;  // CL_DEVICE_WARP_SIZE_NV
  if (dev.HasExtension("cl_nv_device_attribute_query")) dev.warp_size = DeviceValue<cl_uint>(d, kNvWarpSize);
  if (dev.warp_size <= 0) dev.warp_size = 1;
  return dev;
}

std::vector<OpenCLDevice> QueryDevices() {
  std::vector<OpenCLDevice> devices;
  cl_uint num_platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &num_platforms) != CL_SUCCESS || num_platforms == 0) return devices;
  std::vector<cl_platform_id> platforms(num_platforms);
  if (clGetPlatformIDs(num_platforms, platforms.data(), nullptr) != CL_SUCCESS) return devices;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
    std::vector<cl_device_id> ids(n);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : ids) devices.push_back(Describe(p, d, static_cast<int>(devices.size())));
  }
  return devices;
}

std::string DeviceList(const std::vector<OpenCLDevice>& devices) {
  std::string text;
  for (const OpenCLDevice& d : devices) text += (text.empty() ? "" : "; ") + d.Describe();
  return text.empty() ? "none" : text;
}

bool Matches(const OpenCLDevice& d, const std::string& word, bool platform_only) {
  const std::string w = Lower(word);
  auto has = [&](const std::string& s) { return Lower(s).find(w) != std::string::npos; };
  if (has(d.platform_name) || has(d.platform_vendor)) return true;
  return !platform_only && (has(d.name) || has(d.vendor));
}

struct DeviceState {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

std::mutex& StateMutex() {
  static std::mutex mutex;
  return mutex;
}

DeviceState& StateOf(const OpenCLDevice& device) {
  static std::map<cl_device_id, DeviceState> states;
  DeviceState& s = states[device.id];
  if (s.context) return s;
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(device.platform), 0};
  // A worker that replaces one stopped mid-kernel may ask for its context
  // while the driver still frees the old process's device memory: on an H200
  // one context in about a thousand candidates failed with
  // CL_OUT_OF_HOST_MEMORY. Waiting a moment and asking again rides that out.
  for (int attempt = 0;; ++attempt) {
    s.context = clCreateContext(props, 1, &device.id, nullptr, nullptr, &err);
    const bool short_of_memory = err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES;
    if (err == CL_SUCCESS || !short_of_memory || attempt == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250 << attempt));
  }
  CheckCL(err, "creating an OpenCL context for " + device.Describe());
  s.queue = clCreateCommandQueue(s.context, device.id, CL_QUEUE_PROFILING_ENABLE, &err);
  CheckCL(err, "creating an OpenCL command queue for " + device.Describe());
  return s;
}

std::string BuildLog(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || std::isspace(static_cast<unsigned char>(log.back()))))
    log.pop_back();
  return log;
}

}  // namespace

const char* OpenCLErrorName(cl_int code) {
  for (const ErrorName& e : kErrorNames) {
    if (e.code == code) return e.name;
  }
  return "unknown OpenCL error";
}

bool IsOpenCLResourceError(cl_int code) {
  return code == CL_OUT_OF_HOST_MEMORY || code == CL_OUT_OF_RESOURCES ||
         code == CL_MEM_OBJECT_ALLOCATION_FAILURE;
}

void CheckCL(cl_int code, const std::string& what) {
  if (code == CL_SUCCESS) return;
  const std::string msg =
      what + ": OpenCL error " + OpenCLErrorName(code) + " (" + std::to_string(code) + ")";
  if (IsOpenCLResourceError(code)) throw DeviceResourceError(msg);
  throw Error(msg);
}

bool OpenCLDevice::HasExtension(const std::string& ext) const {
  std::istringstream words(extensions);
  for (std::string w; words >> w;) {
    if (w == ext) return true;
  }
  return false;
}

std::string OpenCLDevice::Describe() const {
  return "[" + std::to_string(index) + "] " + name + " (" + platform_name + ")";
}

const std::vector<OpenCLDevice>& ListOpenCLDevices() {
  static const std::vector<OpenCLDevice> devices = QueryDevices();
  return devices;
}

const OpenCLDevice& SelectOpenCLDevice(const Target& target) {
  const std::vector<OpenCLDevice>& devices = ListOpenCLDevices();
  const std::string loader_problem = OpenCLLoaderProblem();
  AS_CHECK(loader_problem.empty(), "target '" << target.str() << "': " << loader_problem);
  AS_CHECK(!devices.empty(), "target '" << target.str()
                                        << "': no OpenCL platform was found (install an OpenCL driver: PoCL "
                                           "for the CPU, pocl-opencl-icd; see docs/opencl.md)");
  std::vector<const OpenCLDevice*> candidates;
  for (const OpenCLDevice& d : devices) {
    if (target.platform.empty() || Matches(d, target.platform, true)) candidates.push_back(&d);
  }
  AS_CHECK(!candidates.empty(), "target '" << target.str() << "': no OpenCL platform matches -platform="
                                           << target.platform << " (devices: " << DeviceList(devices) << ")");
  const std::string& want = target.device;
  if (want.empty()) {
    for (const OpenCLDevice* d : candidates) {
      if (d->is_gpu) return *d;
    }
    return *candidates.front();
  }
  if (const std::string kind = Lower(want); kind == "gpu" || kind == "cpu") {
    for (const OpenCLDevice* d : candidates) {
      if (kind == "gpu" ? d->is_gpu : d->is_cpu) return *d;
    }
    AS_CHECK(false, "target '" << target.str() << "': no OpenCL device here is a "
                               << (kind == "gpu" ? "GPU" : "CPU") << " (devices: " << DeviceList(devices)
                               << ")");
  }
  if (std::all_of(want.begin(), want.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const size_t k = want.size() > 6 ? devices.size() : std::stoul(want);
    AS_CHECK(k < devices.size(), "target '" << target.str() << "': there is no OpenCL device " << want << " ("
                                            << devices.size() << " device" << (devices.size() == 1 ? "" : "s")
                                            << ": " << DeviceList(devices) << ")");
    return devices[k];
  }
  for (const OpenCLDevice* d : candidates) {
    if (Matches(*d, want, false)) return *d;
  }
  AS_CHECK(false, "target '" << target.str() << "': no OpenCL device matches -device=" << want
                             << " (devices: " << DeviceList(devices) << ")");
  return devices.front();
}

cl_context OpenCLContext(const OpenCLDevice& device) {
  std::lock_guard<std::mutex> lock(StateMutex());
  return StateOf(device).context;
}

cl_command_queue OpenCLQueue(const OpenCLDevice& device) {
  std::lock_guard<std::mutex> lock(StateMutex());
  return StateOf(device).queue;
}

namespace {

// The program cache: most recently used first.
struct ProgramCache {
  std::mutex mutex;
  size_t capacity = 16;
  std::list<std::pair<std::tuple<cl_device_id, std::string, std::string>, CLProgramRef>> entries;

  void Trim() {
    while (entries.size() > capacity) entries.pop_back();
  }
};

ProgramCache& Programs() {
  static ProgramCache* cache = new ProgramCache;  // never destroyed: programs may outlive static teardown
  return *cache;
}

std::atomic<int64_t> builds_from_source{0}, builds_from_binary{0};

}  // namespace

OpenCLProgramBuilds OpenCLProgramBuildCounts() {
  return {builds_from_source.load(), builds_from_binary.load()};
}

CLProgramRef GetOpenCLProgramFromBinary(const OpenCLDevice& device, const std::string& binary,
                                        const std::string& options) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  size_t length = binary.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  CLProgramRef program(
      clCreateProgramWithBinary(OpenCLContext(device), 1, &device.id, &length, &bytes, &status, &err),
      CLReleaser());
  CheckCL(err != CL_SUCCESS ? err : status, "loading an OpenCL program binary on " + device.Describe());
  err = clBuildProgram(program.get(), 1, &device.id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    CheckCL(IsOpenCLResourceError(err) ? err : CL_SUCCESS,
            "building an OpenCL program binary on " + device.Describe());
    std::string log = BuildLog(program.get(), device.id);
    AS_CHECK(false, "the OpenCL driver of " << device.Describe() << " refused the exported program binary: "
                                            << OpenCLErrorName(err) << " (" << err << ")\nbuild log:\n"
                                            << (log.empty() ? "(empty)" : log));
  }
  builds_from_binary.fetch_add(1);
  return program;
}

std::string OpenCLProgramBinary(cl_program program) {
  cl_uint devices = 0;
  CheckCL(clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof(devices), &devices, nullptr),
          "querying an OpenCL program's devices");
  if (devices != 1) return "";
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) != CL_SUCCESS ||
      size == 0)
    return "";
  std::string binary(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(binary.data());
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr) != CL_SUCCESS) return "";
  return binary;
}

void SetOpenCLProgramCacheCapacity(size_t capacity) {
  ProgramCache& cache = Programs();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.capacity = capacity;
  cache.Trim();
}

size_t OpenCLProgramCacheSize() {
  ProgramCache& cache = Programs();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.entries.size();
}

CLProgramRef GetOpenCLProgram(const OpenCLDevice& device, const std::string& source,
                              const std::string& options) {
  ProgramCache& cache = Programs();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto key = std::make_tuple(device.id, source, options);
  for (auto it = cache.entries.begin(); it != cache.entries.end(); ++it) {
    if (it->first != key) continue;
    cache.entries.splice(cache.entries.begin(), cache.entries, it);
    return it->second;
  }
  cl_context context = OpenCLContext(device);
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int err = CL_SUCCESS;
  CLProgramRef program(clCreateProgramWithSource(context, 1, &text, &length, &err), CLReleaser());
  CheckCL(err, "creating an OpenCL program");
  err = clBuildProgram(program.get(), 1, &device.id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    CheckCL(IsOpenCLResourceError(err) ? err : CL_SUCCESS,
            "building an OpenCL program on " + device.Describe());
    std::string log = BuildLog(program.get(), device.id);
    AS_CHECK(false, "the OpenCL compiler of " << device.Describe() << " rejected the generated kernel: "
                                              << OpenCLErrorName(err) << " (" << err << ")\n"
                                              << "build log:\n"
                                              << (log.empty() ? "(empty)" : log));
  }
  builds_from_source.fetch_add(1);
  if (cache.capacity > 0) {
    cache.entries.emplace_front(std::move(key), program);
    cache.Trim();
  }
  return program;
}

HardwareParams OpenCLHardwareParams(const OpenCLDevice& device) {
  HardwareParams p;
  p.num_cores = std::max<int64_t>(1, device.compute_units);
  const int64_t width = device.preferred_float_vector_width;
  p.vector_unit_bytes = 4 * (width > 0 ? width : 4);
  p.cache_line_bytes = device.cache_line_bytes > 0 ? device.cache_line_bytes : 64;
  p.max_shared_memory_per_block = device.local_memory_bytes;
  // Not queryable (OpenCL reports no private-memory limit). A CPU device keeps
  // private arrays on its stack, where larger ones cost nothing extra.
  p.max_local_memory_per_block = device.is_gpu ? kGpuPrivateBytesPerWorkItem : 64 * 1024;
  p.max_threads_per_block = device.max_work_group_size;
  p.warp_size = device.warp_size;
  p.max_vthread_extent = device.warp_size >= 32 ? 8 : 4;
  p.clock_mhz = std::max<int64_t>(0, device.clock_mhz);
  // Not queryable either; a warp of 32 comes from NVIDIA's attributes, and
  // its threads address at most 255 registers. Elsewhere 0 (unknown).
  p.max_registers_per_thread = device.is_gpu && device.warp_size == 32 ? 255 : 0;
  return p;
}

namespace {
// Lets the task layer (the opencl kind's device description, task/
// opencl_devices.h) query devices of this machine without including the
// runtime: installed when this file is linked in.
const bool kDeviceQueryInstalled = [] {
  SetOpenCLDeviceQuery([](const Target& target) {
    const OpenCLDevice& device = SelectOpenCLDevice(target);
    return DescribeQueriedOpenCLDevice(
        device.name + " " + device.vendor + " " + device.platform_name + " " + device.platform_vendor,
        OpenCLHardwareParams(device), device.is_cpu);
  });
  return true;
}();
}  // namespace

}  // namespace autosched
