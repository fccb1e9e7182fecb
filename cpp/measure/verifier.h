// Verification of a candidate's output, and the plausibility of its time.
//
// Correct before fast: a candidate is timed only after its output matched the
// reference on random inputs. TestData holds, in one worker, the arguments
// every candidate of a task runs on and the reference they are compared with:
//  - inputs are drawn from VerifyOptions::seed with a generator of our own, so
//    every worker (and every run) sees the same values. Floats are k/1024 for
//    a random k in [-1024, 1024) without 0 (exact in float16 too); signed
//    integers are in {-3..3} without 0 (no division by zero, no overflow of
//    small sums); unsigned in {1..3}; bool 0 or 1;
//  - the reference comes from the reference evaluator (dag/evaluator.h), which
//    shares nothing with lowering or codegen: every output element when the
//    task's work (flop count + output elements) is at most
//    VerifyOptions::whole_output_work, else num_points sampled points (the
//    first and last element of each output among them);
//  - outputs are filled with NaN (floats) or a byte pattern (integers) before
//    the candidate runs, so an element it does not write is caught.
// Tolerance per dtype: |got - want| <= rtol * (|want| + max(1, max |want|))
// with rtol float64 1e-9, float32 1e-4, float16 2e-2 (float16 kernels round
// every partial sum; the reference accumulates in double, which is at least as
// exact as a float32 accumulation, and rounds once); integers and bool exact.
// NaN positions must agree and infinities must be equal, except under
// -fast-math, where positions whose reference is not finite are skipped.
//
// Plausible before best: a time is implausible when it is not a positive
// finite number, or when it is shorter than the task needs on the best
// hardware it could run on: flop_ct / peak FLOP/s, or the bytes of all
// arguments / peak bandwidth, over a margin (kPeakMargin). The peaks are
// generous upper bounds derived from HardwareParams and the target (see
// DerivePlausibilityBound), or given.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "measure/measure.h"
#include "runtime/aligned_alloc.h"
#include "runtime/module.h"

namespace autosched {

class TestData {
 public:
  // Generates the inputs and computes the reference. Throws Error when the
  // reference evaluator fails (e.g. an index input out of bounds).
  TestData(const ComputeDAG& dag, const VerifyOptions& options);

  // One argument per tensor of the DAG, in dag.tensors() order.
  std::vector<CallArg> CallArgs() const;
  // Fills every output with NaN / 0xA5 bytes.
  void PoisonOutputs();
  // Changes every output element (fault injection: a wrong result).
  void PerturbOutputs();
  // "" when the outputs match the reference; else a message naming the
  // output, the first differing index, both values and how many differ.
  std::string Compare(bool fast_math) const;
  bool whole() const { return whole_; }

 private:
  struct Output {
    int arg = 0;                // position in dag.tensors()
    std::vector<int64_t> flat;  // checked elements (flat indices)
    std::vector<double> want;   // reference value per checked element
  };
  void ComputeWholeReference();
  void ComputeSampledReference(const VerifyOptions& options);

  ComputeDAG dag_;
  std::vector<AlignedBuffer> buffers_;  // one per tensor of the DAG
  std::vector<Output> outputs_;
  bool whole_ = true;
};

// A time below the shortest the peaks allow, divided by this margin, is
// impossible: the margin covers boost clocks and how flops are counted.
constexpr double kPeakMargin = 1.5;

struct PlausibilityBound {
  double flop_ct = 0;
  double min_bytes = 0;  // MinTouchedBytes of the DAG
  double peak_flops = 0;
  double peak_bandwidth = 0;
  std::string origin;  // where the peaks come from, for messages
  // The shortest time accepted: the time the peaks allow, over kPeakMargin.
  double min_seconds() const;
};

// Peak FLOP/s and bytes/s of the task's hardware. Given values win: the
// runner's peak_flops / peak_bandwidth (> 0), then the task's
// HardwareParams::peak_gflops / peak_bandwidth_gbs (> 0); otherwise derived
// (the FLOP/s by EstimatePeakFlops(task, PeakUse::kUpperBound), task/peak.h):
//  CPU (where the target kind's PeakModel says the code runs on the host CPU:
//    llvm, and OpenCL on a CPU device, task/opencl_devices.h): num_cores x max(2, fma_units) x 2 FLOP x
//    lanes x 6 GHz, lanes = vector_unit_bytes / the smallest element size of
//    the DAG; bandwidth max(1 TB/s, num_cores x 3 vectors per cycle (two loads and a
//    store from L1) x vector_unit_bytes x 6 GHz), since arguments may sit in
//    cache between runs.
//  GPU (other opencl): num_cores (compute units) x lanes per compute unit
//    (mali 64, others 128; x2 for 16-bit data) x 2 FLOP x clock; bandwidth
//    num_cores x 256 bytes per cycle x clock (arguments may sit in the L2
//    cache between runs). The clock is HardwareParams::clock_mhz (queried from
//    a device of this machine), else the PeakModel's assumed clock (mali
//    1.5 GHz, others 3 GHz).
// Bytes every run must move: its outputs, and each input that every read
// indexes whole (a dimension by a loop of its extent); an input read in
// part (a gather's table, a slice's source) is left out.
double MinTouchedBytes(const ComputeDAG& dag);

PlausibilityBound DerivePlausibilityBound(const SearchTask& task, double peak_flops = 0,
                                          double peak_bandwidth = 0);

// "" when every cost is plausible; else the reason for the first that is not.
std::string CheckPlausible(const std::vector<double>& costs, const PlausibilityBound& bound);

}  // namespace autosched
