// The peak arithmetic rate of a task's hardware, computed in one place: the
// tuner's "% of peak" (progress lines and summary) and the measurement's
// plausibility bound (measure/verifier.h) both come from here.
//
//   CPU: cores x FMA units x 2 FLOP x SIMD lanes x clock, the lanes those of
//        the narrowest element type the DAG computes (vector_unit_bytes /
//        element bytes).
//   GPU: compute units x FP32 lanes per unit (the target kind's PeakModel:
//        an NVIDIA SM has 128, a Mali core is counted as 64; 16-bit data
//        twice as many) x 2 FLOP x clock (HardwareParams::clock_mhz; for the
//        estimate, where it is 0, the clock of the device the target selects
//        on this machine, if its kind can query one).
// Which formula applies is the kind's answer (TargetKind::peak_model).
//   HardwareParams::peak_gflops, when set, is the peak.
#pragma once

#include <string>

#include "task/search_task.h"

namespace autosched {

enum class PeakUse {
  // What the hardware sustains at the clock the OS reports (a CPU under a
  // hypervisor may report its base clock and run faster); the FMA units the
  // hardware parameters name (2 where unknown). A GPU without clock_mhz has
  // no estimate (0).
  kEstimate,
  // What no run can beat, for the plausibility check: a clock of 6 GHz for a
  // CPU, at least 2 FMA units and 16-byte vectors; for a GPU without
  // clock_mhz, the PeakModel's assumed clock (3 GHz; Mali: 1.5 GHz).
  kUpperBound,
};

struct PeakFlops {
  double flops = 0;  // FLOP/s; 0 where it cannot be estimated
  // How it was found, e.g. "2 cores x 64 FLOP/cycle x 2.6 GHz, the clock the OS reports".
  std::string how;
};

// The peak of `task`'s hardware.
PeakFlops EstimatePeakFlops(const SearchTask& task, PeakUse use);

// The target kind's answer (a CPU's where the kind gives none).
PeakModel TargetPeakModel(const Target& target);
// Whether the target's code runs on the host's CPU cores: llvm targets, and
// OpenCL targets of a CPU device (task/opencl_devices.h).
bool TargetRunsOnCpu(const Target& target);

// Bytes of the narrowest element type among the DAG's operations (8 at most).
int NarrowestElementBytes(const ComputeDAG& dag);

// The CPU clock the OS reports, in Hz: the highest frequency cpufreq gives,
// else the highest "cpu MHz" of /proc/cpuinfo, else 3 GHz.
double ReportedCpuClockHz();

}  // namespace autosched
