// autosched_worker: the process that builds and runs candidates for the
// measurement supervisor (see measure/worker.h). Built by CMake next to the
// extension module _core, where runner.cc looks for it.
#include "measure/worker.h"

int main(int argc, char** argv) { return autosched::WorkerMain(argc, argv); }
