// The OpenCL ICD loader opened at run time (builds with
// AUTOSCHED_OPENCL_DLOPEN, such as the self-contained wheel): this file
// defines the OpenCL entry points the runtime calls, each forwarding to
// libOpenCL.so.1 found by dlopen on first use. A machine without the loader
// then still imports autosched; it sees no OpenCL platform, and selecting a
// device says which package brings the loader. Builds linked to the loader
// (the source build) get only OpenCLLoaderProblem(), which is always empty.
#include "runtime/opencl/opencl_device.h"

#ifdef AUTOSCHED_OPENCL_DLOPEN
#include <dlfcn.h>

#include <mutex>
#endif

namespace autosched {

#ifndef AUTOSCHED_OPENCL_DLOPEN

std::string OpenCLLoaderProblem() { return ""; }

#else

namespace {

struct Loader {
  void* handle = nullptr;
  std::string problem;
};

const Loader& TheLoader() {
  static Loader loader = [] {
    Loader l;
    l.handle = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (l.handle) return l;
    const char* error = dlerror();
    const std::string why = error ? error : "not found";
    l.problem = "the OpenCL ICD loader libOpenCL.so.1 could not be opened (" + why +
                "): install it with a driver (Debian/Ubuntu: apt install ocl-icd-libopencl1 pocl-opencl-icd; "
                "Fedora: dnf install ocl-icd pocl)";
    return l;
  }();
  return loader;
}

// The loader's function `name`, or nullptr without a loader (or a loader too
// old to have it).
void* Symbol(const char* name) {
  const Loader& l = TheLoader();
  return l.handle ? dlsym(l.handle, name) : nullptr;
}

}  // namespace

std::string OpenCLLoaderProblem() { return TheLoader().problem; }

#endif

}  // namespace autosched

#ifdef AUTOSCHED_OPENCL_DLOPEN

// One definition per entry point: (return type, name, parameters, arguments,
// value returned without the loader). Functions returning an object report
// CL_PLATFORM_NOT_FOUND_KHR through their error argument. Every OpenCL 1.2
// entry point the runtime may call is here; the worker executable links the
// same objects without allowing undefined symbols, so one missing from this
// list fails the build instead of the import.
#define AUTOSCHED_CL_STATUS(name, params, args)                                   \
  extern "C" CL_API_ENTRY cl_int CL_API_CALL name params {                        \
    static auto fn = reinterpret_cast<decltype(&name)>(autosched::Symbol(#name)); \
    return fn ? fn args : CL_PLATFORM_NOT_FOUND_KHR;                              \
  }
#define AUTOSCHED_CL_OBJECT(type, name, params, args)                             \
  extern "C" CL_API_ENTRY type CL_API_CALL name params {                          \
    static auto fn = reinterpret_cast<decltype(&name)>(autosched::Symbol(#name)); \
    if (fn) return fn args;                                                       \
    if (errcode_ret) *errcode_ret = CL_PLATFORM_NOT_FOUND_KHR;                    \
    return nullptr;                                                               \
  }

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

AUTOSCHED_CL_STATUS(clGetPlatformIDs, (cl_uint n, cl_platform_id* platforms, cl_uint* num),
                    (n, platforms, num))
AUTOSCHED_CL_STATUS(clGetPlatformInfo,
                    (cl_platform_id p, cl_platform_info what, size_t size, void* value, size_t* size_ret),
                    (p, what, size, value, size_ret))
AUTOSCHED_CL_STATUS(clGetDeviceIDs,
                    (cl_platform_id p, cl_device_type type, cl_uint n, cl_device_id* devices, cl_uint* num),
                    (p, type, n, devices, num))
AUTOSCHED_CL_STATUS(clGetDeviceInfo,
                    (cl_device_id d, cl_device_info what, size_t size, void* value, size_t* size_ret),
                    (d, what, size, value, size_ret))
AUTOSCHED_CL_OBJECT(cl_context, clCreateContext,
                    (const cl_context_properties* props, cl_uint n, const cl_device_id* devices,
                     void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*), void* user,
                     cl_int* errcode_ret),
                    (props, n, devices, notify, user, errcode_ret))
AUTOSCHED_CL_STATUS(clRetainContext, (cl_context c), (c))
AUTOSCHED_CL_STATUS(clReleaseContext, (cl_context c), (c))
AUTOSCHED_CL_OBJECT(cl_command_queue, clCreateCommandQueue,
                    (cl_context c, cl_device_id d, cl_command_queue_properties props, cl_int* errcode_ret),
                    (c, d, props, errcode_ret))
AUTOSCHED_CL_STATUS(clRetainCommandQueue, (cl_command_queue q), (q))
AUTOSCHED_CL_STATUS(clReleaseCommandQueue, (cl_command_queue q), (q))
AUTOSCHED_CL_OBJECT(cl_mem, clCreateBuffer,
                    (cl_context c, cl_mem_flags flags, size_t size, void* host, cl_int* errcode_ret),
                    (c, flags, size, host, errcode_ret))
AUTOSCHED_CL_STATUS(clRetainMemObject, (cl_mem m), (m))
AUTOSCHED_CL_STATUS(clReleaseMemObject, (cl_mem m), (m))
AUTOSCHED_CL_OBJECT(cl_program, clCreateProgramWithSource,
                    (cl_context c, cl_uint n, const char** strings, const size_t* lengths,
                     cl_int* errcode_ret),
                    (c, n, strings, lengths, errcode_ret))
AUTOSCHED_CL_OBJECT(cl_program, clCreateProgramWithBinary,
                    (cl_context c, cl_uint n, const cl_device_id* devices, const size_t* lengths,
                     const unsigned char** binaries, cl_int* status, cl_int* errcode_ret),
                    (c, n, devices, lengths, binaries, status, errcode_ret))
AUTOSCHED_CL_STATUS(clRetainProgram, (cl_program p), (p))
AUTOSCHED_CL_STATUS(clReleaseProgram, (cl_program p), (p))
AUTOSCHED_CL_STATUS(clBuildProgram,
                    (cl_program p, cl_uint n, const cl_device_id* devices, const char* options,
                     void(CL_CALLBACK* notify)(cl_program, void*), void* user),
                    (p, n, devices, options, notify, user))
AUTOSCHED_CL_STATUS(clGetProgramInfo,
                    (cl_program p, cl_program_info what, size_t size, void* value, size_t* size_ret),
                    (p, what, size, value, size_ret))
AUTOSCHED_CL_STATUS(clGetProgramBuildInfo,
                    (cl_program p, cl_device_id d, cl_program_build_info what, size_t size, void* value,
                     size_t* size_ret),
                    (p, d, what, size, value, size_ret))
AUTOSCHED_CL_OBJECT(cl_kernel, clCreateKernel, (cl_program p, const char* name, cl_int* errcode_ret),
                    (p, name, errcode_ret))
AUTOSCHED_CL_STATUS(clRetainKernel, (cl_kernel k), (k))
AUTOSCHED_CL_STATUS(clReleaseKernel, (cl_kernel k), (k))
AUTOSCHED_CL_STATUS(clSetKernelArg, (cl_kernel k, cl_uint index, size_t size, const void* value),
                    (k, index, size, value))
AUTOSCHED_CL_STATUS(clGetKernelInfo,
                    (cl_kernel k, cl_kernel_info what, size_t size, void* value, size_t* size_ret),
                    (k, what, size, value, size_ret))
AUTOSCHED_CL_STATUS(clGetKernelWorkGroupInfo,
                    (cl_kernel k, cl_device_id d, cl_kernel_work_group_info what, size_t size, void* value,
                     size_t* size_ret),
                    (k, d, what, size, value, size_ret))
AUTOSCHED_CL_STATUS(clWaitForEvents, (cl_uint n, const cl_event* events), (n, events))
AUTOSCHED_CL_STATUS(clGetEventInfo,
                    (cl_event e, cl_event_info what, size_t size, void* value, size_t* size_ret),
                    (e, what, size, value, size_ret))
AUTOSCHED_CL_STATUS(clRetainEvent, (cl_event e), (e))
AUTOSCHED_CL_STATUS(clReleaseEvent, (cl_event e), (e))
AUTOSCHED_CL_STATUS(clGetEventProfilingInfo,
                    (cl_event e, cl_profiling_info what, size_t size, void* value, size_t* size_ret),
                    (e, what, size, value, size_ret))
AUTOSCHED_CL_STATUS(clFlush, (cl_command_queue q), (q))
AUTOSCHED_CL_STATUS(clFinish, (cl_command_queue q), (q))
AUTOSCHED_CL_STATUS(clEnqueueReadBuffer,
                    (cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset, size_t size, void* ptr,
                     cl_uint n, const cl_event* wait, cl_event* e),
                    (q, m, blocking, offset, size, ptr, n, wait, e))
AUTOSCHED_CL_STATUS(clEnqueueWriteBuffer,
                    (cl_command_queue q, cl_mem m, cl_bool blocking, size_t offset, size_t size,
                     const void* ptr, cl_uint n, const cl_event* wait, cl_event* e),
                    (q, m, blocking, offset, size, ptr, n, wait, e))
AUTOSCHED_CL_STATUS(clEnqueueCopyBuffer,
                    (cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset,
                     size_t size, cl_uint n, const cl_event* wait, cl_event* e),
                    (q, src, dst, src_offset, dst_offset, size, n, wait, e))
AUTOSCHED_CL_STATUS(clEnqueueFillBuffer,
                    (cl_command_queue q, cl_mem m, const void* pattern, size_t pattern_size, size_t offset,
                     size_t size, cl_uint n, const cl_event* wait, cl_event* e),
                    (q, m, pattern, pattern_size, offset, size, n, wait, e))
AUTOSCHED_CL_STATUS(clEnqueueNDRangeKernel,
                    (cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset,
                     const size_t* global, const size_t* local, cl_uint n, const cl_event* wait, cl_event* e),
                    (q, k, dims, offset, global, local, n, wait, e))

#endif  // AUTOSCHED_OPENCL_DLOPEN
