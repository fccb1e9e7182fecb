#include "measure/verifier.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include "dag/evaluator.h"
#include "ir/functor.h"
#include "support/error.h"
#include "task/peak.h"

namespace autosched {
namespace {

// ---- typed element access ----

double HalfToDouble(uint16_t h) {
  int sign = (h >> 15) ? -1 : 1;
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  if (exponent == 0x1f) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

// Round to nearest even.
uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exponent = (x >> 23) & 0xff;
  uint32_t mantissa = x & 0x7fffff;
  if (exponent == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  uint32_t h, rest, halfway;
  if (e <= 0) {  // subnormal half
    if (e < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    int shift = 14 - e;
    h = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1);
    halfway = 1u << (shift - 1);
  } else {
    h = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
    rest = mantissa & 0x1fff;
    halfway = 0x1000;
  }
  if (rest > halfway || (rest == halfway && (h & 1))) ++h;  // a carry may round up to infinity
  return static_cast<uint16_t>(sign | h);
}

template <typename T>
T Load(const void* p, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void Store(void* p, int64_t i, T v) {
  std::memcpy(static_cast<char*>(p) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

double ReadElement(const void* p, DataType t, int64_t i) {
  if (t.is_float()) {
    if (t.is_bfloat16()) return BFloat16BitsToFloat(Load<uint16_t>(p, i));
    if (t.bits == 16) return HalfToDouble(Load<uint16_t>(p, i));
    if (t.bits == 32) return Load<float>(p, i);
    return Load<double>(p, i);
  }
  if (t.is_bool()) return Load<uint8_t>(p, i) != 0;
  switch (t.bits) {
    case 8: return t.is_int() ? Load<int8_t>(p, i) : Load<uint8_t>(p, i);
    case 16: return t.is_int() ? Load<int16_t>(p, i) : Load<uint16_t>(p, i);
    // Not `cond ? int32 : uint32`: that converts both to uint32, and -1 would read as 4294967295.
    case 32:
      if (t.is_int()) return Load<int32_t>(p, i);
      return Load<uint32_t>(p, i);
    default:
      return t.is_int() ? static_cast<double>(Load<int64_t>(p, i))
                        : static_cast<double>(Load<uint64_t>(p, i));
  }
}

// Integers are stored as int64 wrapped to the dtype.
void WriteElement(void* p, DataType t, int64_t i, double v) {
  if (t.is_float()) {
    if (t.is_bfloat16()) return Store<uint16_t>(p, i, FloatToBFloat16Bits(static_cast<float>(v)));
    if (t.bits == 16) return Store<uint16_t>(p, i, FloatToHalf(static_cast<float>(v)));
    if (t.bits == 32) return Store<float>(p, i, static_cast<float>(v));
    return Store<double>(p, i, v);
  }
  if (t.is_bool()) return Store<uint8_t>(p, i, v != 0);
  auto x = static_cast<int64_t>(v);
  switch (t.bits) {
    case 8: return Store<uint8_t>(p, i, static_cast<uint8_t>(x));
    case 16: return Store<uint16_t>(p, i, static_cast<uint16_t>(x));
    case 32: return Store<uint32_t>(p, i, static_cast<uint32_t>(x));
    default: return Store<int64_t>(p, i, x);
  }
}

// ---- deterministic random numbers (splitmix64) ----

struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }
};

double RandomValue(Rng& rng, DataType t) {
  if (t.is_float()) {
    int64_t k = rng.Below(2047) - 1024;  // [-1024, 1022]
    return static_cast<double>(k >= 0 ? k + 1 : k) / 1024.0;
  }
  if (t.is_bool()) return static_cast<double>(rng.Below(2));
  if (t.is_uint()) return static_cast<double>(1 + rng.Below(3));
  int64_t k = rng.Below(6) - 3;  // {-3..2}
  return static_cast<double>(k >= 0 ? k + 1 : k);
}

double RelativeTolerance(DataType t) {
  if (!t.is_float()) return 0;
  if (t.bits == 16) return 2e-2;  // float16 and bfloat16 (one bfloat16 unit is 2^-8 to 2^-7 relative)
  if (t.bits == 32) return 1e-4;
  return 1e-9;
}

std::string IndexStr(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::ostringstream ss;
  ss << "(";
  for (size_t d = 0; d < idx.size(); ++d) ss << (d ? ", " : "") << idx[d];
  ss << (idx.size() == 1 ? ",)" : ")");
  return ss.str();
}

std::vector<int64_t> Unravel(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

size_t TensorBytes(const Tensor& t) { return static_cast<size_t>(t->num_elements() * t->dtype.bytes()); }

}  // namespace

// ---- TestData ----

TestData::TestData(const ComputeDAG& dag, const VerifyOptions& options) : dag_(dag) {
  const std::vector<Tensor>& tensors = dag.tensors();
  double output_elements = 0;
  for (size_t a = 0; a < tensors.size(); ++a) {
    const Tensor& t = tensors[a];
    buffers_.emplace_back(AlignedAlloc(TensorBytes(t)));
    if (t->is_compute()) {
      outputs_.push_back(Output{static_cast<int>(a), {}, {}});
      output_elements += static_cast<double>(t->num_elements());
      continue;
    }
    Rng rng{options.seed * 0x2545f4914f6cdd1dull + a + 1};
    for (int64_t i = 0; i < t->num_elements(); ++i) {
      WriteElement(buffers_[a].get(), t->dtype, i, RandomValue(rng, t->dtype));
    }
  }
  whole_ = dag.flop_ct() + output_elements <= options.whole_output_work;
  if (whole_) {
    ComputeWholeReference();
  } else {
    ComputeSampledReference(options);
  }
}

void TestData::ComputeWholeReference() {
  std::vector<HostTensor> args;
  for (size_t a = 0; a < dag_.tensors().size(); ++a) {
    const Tensor& t = dag_.tensors()[a];
    args.push_back(HostTensor{buffers_[a].get(), t->shape, t->dtype});
  }
  EvaluateReference(dag_, args);
  for (Output& out : outputs_) {
    const Tensor& t = dag_.tensors()[out.arg];
    for (int64_t i = 0; i < t->num_elements(); ++i) {
      out.flat.push_back(i);
      out.want.push_back(ReadElement(buffers_[out.arg].get(), t->dtype, i));
    }
  }
}

void TestData::ComputeSampledReference(const VerifyOptions& options) {
  std::vector<HostTensor> args;
  for (size_t a = 0; a < dag_.tensors().size(); ++a) {
    const Tensor& t = dag_.tensors()[a];
    args.push_back(HostTensor{t->is_placeholder() ? buffers_[a].get() : nullptr, t->shape, t->dtype});
  }
  int per_output =
      std::max<int>(32, options.num_points / std::max<int>(1, static_cast<int>(outputs_.size())));
  Rng rng{options.seed ^ 0x5851f42d4c957f2dull};
  for (Output& out : outputs_) {
    const Tensor& t = dag_.tensors()[out.arg];
    int64_t n = t->num_elements();
    out.flat = {0, n - 1};
    while (static_cast<int64_t>(out.flat.size()) < std::min<int64_t>(n, per_output))
      out.flat.push_back(rng.Below(n));
    std::sort(out.flat.begin(), out.flat.end());
    out.flat.erase(std::unique(out.flat.begin(), out.flat.end()), out.flat.end());
    std::vector<std::vector<int64_t>> points;
    for (int64_t f : out.flat) points.push_back(Unravel(t->shape, f));
    out.want = EvaluateReferencePoints(dag_, args, out.arg, points);
  }
}

std::vector<CallArg> TestData::CallArgs() const {
  std::vector<CallArg> args;
  for (size_t a = 0; a < dag_.tensors().size(); ++a) {
    const Tensor& t = dag_.tensors()[a];
    CallArg arg;
    arg.data = buffers_[a].get();
    arg.dtype = t->dtype;
    arg.shape = t->shape;
    args.push_back(arg);
  }
  return args;
}

void TestData::PoisonOutputs() {
  for (const Output& out : outputs_) {
    const Tensor& t = dag_.tensors()[out.arg];
    void* p = buffers_[out.arg].get();
    if (t->dtype.is_float()) {
      for (int64_t i = 0; i < t->num_elements(); ++i) WriteElement(p, t->dtype, i, NAN);
    } else {
      std::memset(p, 0xA5, TensorBytes(t));
    }
  }
}

void TestData::PerturbOutputs() {
  for (const Output& out : outputs_) {
    const Tensor& t = dag_.tensors()[out.arg];
    void* p = buffers_[out.arg].get();
    for (int64_t i = 0; i < t->num_elements(); ++i) {
      double v = ReadElement(p, t->dtype, i);
      WriteElement(p, t->dtype, i, t->dtype.is_bool() ? (v == 0) : (std::isnan(v) ? 1.0 : v + 1.0));
    }
  }
}

std::string TestData::Compare(bool fast_math) const {
  for (const Output& out : outputs_) {
    const Tensor& t = dag_.tensors()[out.arg];
    const void* p = buffers_[out.arg].get();
    double rtol = RelativeTolerance(t->dtype);
    double scale = 1;
    for (double w : out.want) {
      if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
    }
    int64_t bad = 0, first = -1;
    double first_got = 0, first_want = 0;
    for (size_t k = 0; k < out.flat.size(); ++k) {
      double want = out.want[k];
      double got = ReadElement(p, t->dtype, out.flat[k]);
      bool ok;
      if (!std::isfinite(want)) {
        ok = fast_math || (std::isnan(want) ? std::isnan(got) : got == want);
      } else {
        ok = std::isfinite(got) && std::fabs(got - want) <= rtol * (std::fabs(want) + scale);
      }
      if (ok) continue;
      if (bad++ == 0) {
        first = out.flat[k];
        first_got = got;
        first_want = want;
      }
    }
    if (bad == 0) continue;
    std::ostringstream ss;
    ss.precision(9);
    ss << "output '" << t->name << "' differs from the reference at " << IndexStr(t->shape, first) << ": got "
       << first_got << ", expected " << first_want;
    if (rtol > 0) ss << " (relative tolerance " << rtol << " of " << t->dtype.str() << ")";
    ss << "; " << bad << " of " << out.flat.size() << (whole_ ? "" : " sampled") << " values differ";
    return ss.str();
  }
  return "";
}

// ---- plausibility ----

double PlausibilityBound::min_seconds() const {
  double t = 0;
  if (peak_flops > 0) t = std::max(t, flop_ct / peak_flops);
  if (peak_bandwidth > 0) t = std::max(t, min_bytes / peak_bandwidth);
  return t / kPeakMargin;
}

namespace {

// Memory bandwidth no run can beat: generous, as the FLOP/s of
// EstimatePeakFlops(kUpperBound) are.
double CpuBandwidthBound(const HardwareParams& hw) {
  constexpr double kClockHz = 6e9, kVectorsPerCycle = 3;
  const double cores = hw.num_cores > 0
                           ? static_cast<double>(hw.num_cores)
                           : static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
  const double vector_bytes = static_cast<double>(std::max<int64_t>(hw.vector_unit_bytes, 16));
  return std::max(1e12, cores * kVectorsPerCycle * vector_bytes * kClockHz);
}

double GpuBandwidthBound(const PeakModel& model, const HardwareParams& hw) {
  constexpr double kBytesPerCycle = 256;
  const double units = static_cast<double>(std::max<int64_t>(1, hw.num_cores));
  const double clock = hw.clock_mhz > 0 ? static_cast<double>(hw.clock_mhz) * 1e6 : model.assumed_clock_hz;
  return units * kBytesPerCycle * clock;
}

// Whether every read of `input` in the DAG indexes each of its dimensions by
// a loop variable of that dimension's extent: then a run reads all of it.
// A gather (an embedding table read at token ids) or a slice reads a part.
bool ReadWhole(const ComputeDAG& dag, const TensorNode* input) {
  bool read = false;
  for (const Tensor& op : dag.ops()) {
    if (!op->is_compute()) continue;
    std::vector<std::pair<const VarNode*, int64_t>> vars;
    for (const IterVar& iv : op->axis) vars.emplace_back(iv.var_node(), iv.extent);
    for (const IterVar& iv : op->reduce_axis) vars.emplace_back(iv.var_node(), iv.extent);
    bool whole = true;
    PostOrderVisit(op->body, [&](const Expr& x) {
      const auto* load = x.as<TensorLoadNode>();
      if (load == nullptr || load->tensor.get() != input) return;
      read = true;
      for (size_t d = 0; d < load->indices.size(); ++d) {
        const auto* v = load->indices[d].as<VarNode>();
        const auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& p) { return p.first == v; });
        if (v == nullptr || it == vars.end() || it->second != input->shape[d]) whole = false;
      }
    });
    if (!whole) return false;
  }
  return read;
}

}  // namespace

double MinTouchedBytes(const ComputeDAG& dag) {
  double bytes = 0;
  for (const Tensor& t : dag.tensors()) {
    const bool output = t->is_compute();
    if (output || ReadWhole(dag, t.get())) bytes += static_cast<double>(TensorBytes(t));
  }
  return bytes;
}

PlausibilityBound DerivePlausibilityBound(const SearchTask& task, double peak_flops, double peak_bandwidth) {
  PlausibilityBound b;
  b.flop_ct = task.compute_dag.flop_ct();
  b.min_bytes = MinTouchedBytes(task.compute_dag);
  const HardwareParams& hw = task.hardware_params;
  const PeakModel model = TargetPeakModel(task.target);
  // FLOP/s: the one peak estimate of the core (task/peak.h), which takes the
  // task's peak_gflops when set.
  const PeakFlops peak = EstimatePeakFlops(task, PeakUse::kUpperBound);
  b.peak_flops = peak.flops;
  b.origin = peak.how;
  b.peak_bandwidth = model.on_host_cpu ? CpuBandwidthBound(hw) : GpuBandwidthBound(model, hw);
  if (hw.peak_bandwidth_gbs > 0) {
    b.peak_bandwidth = static_cast<double>(hw.peak_bandwidth_gbs) * 1e9;
    b.origin += "; bandwidth: the task's hardware parameters (peak_bandwidth_gbs)";
  }
  // The runner's options replace both.
  if (peak_flops > 0 || peak_bandwidth > 0) b.origin = "the runner's options, else " + b.origin;
  if (peak_flops > 0) b.peak_flops = peak_flops;
  if (peak_bandwidth > 0) b.peak_bandwidth = peak_bandwidth;
  return b;
}

std::string CheckPlausible(const std::vector<double>& costs, const PlausibilityBound& bound) {
  if (costs.empty()) return "no time was measured";
  double floor = bound.min_seconds();
  for (double c : costs) {
    std::ostringstream ss;
    ss.precision(4);
    if (!std::isfinite(c) || c <= 0) {
      ss << "measured time " << c << " s is not a positive finite number";
      return ss.str();
    }
    if (c < floor) {
      ss << "measured time " << c << " s is faster than the hardware allows: " << bound.flop_ct << " FLOP at "
         << bound.peak_flops << " FLOP/s and " << bound.min_bytes << " bytes at " << bound.peak_bandwidth
         << " bytes/s need at least " << floor * kPeakMargin << " s (peaks: " << bound.origin
         << "; refused below 1/" << kPeakMargin << " of that)";
      return ss.str();
    }
  }
  return "";
}

}  // namespace autosched
