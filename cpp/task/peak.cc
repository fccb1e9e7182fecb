#include "task/peak.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "task/host_cpu.h"

namespace autosched {
namespace {

constexpr double kFlopPerFma = 2;

std::string Format(double value, int precision) {
  std::ostringstream ss;
  ss.precision(precision);
  ss << value;
  return ss.str();
}

PeakFlops CpuPeak(const HardwareParams& hw, int element_bytes, PeakUse use) {
  const bool bound = use == PeakUse::kUpperBound;
  const double cores = hw.num_cores > 0
                           ? static_cast<double>(hw.num_cores)
                           : static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
  const double fma_units =
      bound ? static_cast<double>(std::max<int64_t>(hw.fma_units, 2)) : (hw.fma_units > 0 ? hw.fma_units : 2);
  const int64_t vector_bytes = bound ? std::max<int64_t>(hw.vector_unit_bytes, 16) : hw.vector_unit_bytes;
  const double lanes = std::max<double>(1, static_cast<double>(vector_bytes / std::max(1, element_bytes)));
  const double clock = bound ? 6e9 : ReportedCpuClockHz();
  PeakFlops p;
  p.flops = cores * fma_units * kFlopPerFma * lanes * clock;
  const std::string n = std::to_string(static_cast<int64_t>(cores));
  const std::string product = n + " cores x " +
                              std::to_string(static_cast<int64_t>(fma_units * kFlopPerFma * lanes)) +
                              " FLOP/cycle x " + Format(clock * 1e-9, 3) + " GHz";
  p.how = bound ? "derived for a CPU of " + n + " cores: " + product + " (above any CPU's clock)"
                : product + ", the clock the OS reports";
  return p;
}

PeakFlops GpuPeak(const Target& target, const PeakModel& model, const HardwareParams& hw, int element_bytes,
                  PeakUse use) {
  const double units = static_cast<double>(std::max<int64_t>(1, hw.num_cores));
  const double lanes = model.fp32_lanes_per_unit * (element_bytes <= 2 ? 2 : 1);
  PeakFlops p;
  double clock = static_cast<double>(hw.clock_mhz) * 1e6;
  std::string clock_origin = hw.clock_mhz > 0 ? "" : " (clock_mhz unknown: assumed)";
  if (hw.clock_mhz <= 0 && use == PeakUse::kEstimate) {
    // Tuning measures on a device of this machine: where the target selects
    // one (a family name such as nvidia has no clock of its own), its clock.
    if (target.kind->query_device != nullptr) {
      try {
        clock = static_cast<double>(target.kind->query_device(target).clock_mhz) * 1e6;
        clock_origin = " (the clock of the device the target selects on this machine)";
      } catch (const std::exception&) {  // no such device here
      }
    }
    if (clock <= 0) {
      p.how =
          "unknown: the device's clock_mhz is not known (set HardwareParams(clock_mhz=...) or "
          "TuningOptions(peak_gflops=...))";
      return p;
    }
  } else if (hw.clock_mhz <= 0) {
    clock = model.assumed_clock_hz;
  }
  p.flops = units * lanes * kFlopPerFma * clock;
  p.how = "derived for " + std::to_string(hw.num_cores) + " compute units at " + Format(clock * 1e-6, 6) +
          " MHz" + clock_origin + ": " + std::to_string(hw.num_cores) + " x " +
          std::to_string(static_cast<int64_t>(lanes * kFlopPerFma)) + " FLOP/cycle";
  return p;
}

}  // namespace

int NarrowestElementBytes(const ComputeDAG& dag) {
  int bytes = 8;
  for (const Tensor& t : dag.ops()) bytes = std::min(bytes, t->dtype.bytes());
  return std::max(bytes, 1);
}

double ReportedCpuClockHz() {
  {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    double khz = 0;
    if (f >> khz && khz > 0) return khz * 1e3;
  }
  double best_mhz = 0;
  for (const std::string& mhz : CpuinfoValues({"cpu MHz"})) {
    try {
      best_mhz = std::max(best_mhz, std::stod(mhz));
    } catch (const std::exception&) {  // a malformed line: the others may do
    }
  }
  return best_mhz > 0 ? best_mhz * 1e6 : 3e9;
}

PeakModel TargetPeakModel(const Target& target) {
  return target.kind->peak_model != nullptr ? target.kind->peak_model(target) : PeakModel{};
}

bool TargetRunsOnCpu(const Target& target) { return TargetPeakModel(target).on_host_cpu; }

PeakFlops EstimatePeakFlops(const SearchTask& task, PeakUse use) {
  const HardwareParams& hw = task.hardware_params;
  if (hw.peak_gflops > 0) {
    return {static_cast<double>(hw.peak_gflops) * 1e9,
            "the task's hardware parameters (peak_gflops " + std::to_string(hw.peak_gflops) + ")"};
  }
  const int element_bytes = NarrowestElementBytes(task.compute_dag);
  const PeakModel model = TargetPeakModel(task.target);
  return model.on_host_cpu ? CpuPeak(hw, element_bytes, use)
                           : GpuPeak(task.target, model, hw, element_bytes, use);
}

}  // namespace autosched
