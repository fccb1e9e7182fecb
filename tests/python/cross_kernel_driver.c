/* Runs one kernel of an autosched kernel library (the shared library at the head of an artifact) on buffers
   read from files, and writes them back after the call, standing in for the runtime on a machine without
   Python (tests/python/test_cli_tvmc.py runs it under qemu-user): driver LIBRARY SYMBOL FILE... (the
   kernel's arguments, in order). The runtime entry points are a serial parallel_for and aligned_alloc. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int32_t (*body_fn)(int64_t, int64_t, void*);
typedef int32_t (*kernel_fn)(void**);

static int32_t serial_for(int64_t n, int32_t num_tasks, body_fn body, void* closure) {
  (void)num_tasks;
  return n > 0 ? body(0, n, closure) : 0;
}
static void* alloc64(int64_t bytes) { return aligned_alloc(64, (size_t)((bytes + 63) / 64 * 64)); }

static int set_slot(void* lib, const char* name, void* fn) {
  void** slot = (void**)dlsym(lib, name);
  if (!slot) {
    fprintf(stderr, "no %s\n", name);
    return 1;
  }
  *slot = fn;
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: driver LIBRARY SYMBOL FILE...\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  if (set_slot(lib, "autosched_runtime_slot_autosched_parallel_for", (void*)serial_for) ||
      set_slot(lib, "autosched_runtime_slot_autosched_alloc", (void*)alloc64) ||
      set_slot(lib, "autosched_runtime_slot_autosched_free", (void*)free))
    return 1;
  kernel_fn kernel = (kernel_fn)dlsym(lib, argv[2]);
  if (!kernel) {
    fprintf(stderr, "no kernel %s\n", argv[2]);
    return 1;
  }
  int n = argc - 3;
  void** args = calloc(n + 1, sizeof(void*));
  long* sizes = calloc(n + 1, sizeof(long));
  for (int i = 0; i < n; ++i) {
    FILE* f = fopen(argv[3 + i], "rb");
    if (!f) {
      perror(argv[3 + i]);
      return 1;
    }
    fseek(f, 0, SEEK_END);
    sizes[i] = ftell(f);
    fseek(f, 0, SEEK_SET);
    args[i] = alloc64(sizes[i] > 0 ? sizes[i] : 1);
    if (fread(args[i], 1, sizes[i], f) != (size_t)sizes[i]) {
      perror(argv[3 + i]);
      return 1;
    }
    fclose(f);
  }
  int32_t status = kernel(args);
  if (status != 0) {
    fprintf(stderr, "kernel returned %d\n", status);
    return 1;
  }
  for (int i = 0; i < n; ++i) {
    FILE* f = fopen(argv[3 + i], "wb");
    if (!f || fwrite(args[i], 1, sizes[i], f) != (size_t)sizes[i]) {
      perror(argv[3 + i]);
      return 1;
    }
    fclose(f);
  }
  return 0;
}
