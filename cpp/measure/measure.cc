#include "measure/measure.h"

#include <cmath>
#include <limits>
#include <string>

#include "support/error.h"

namespace autosched {
namespace {

constexpr const char* kErrorNames[kNumMeasureErrors] = {
    "none",          "instantiation", "lower",        "compile",     "runtime",
    "build_timeout", "run_timeout",   "wrong_answer", "implausible", "unknown",
};

const nlohmann::json& Field(const nlohmann::json& doc, const char* name) {
  AS_CHECK(doc.contains(name), "measure result lacks the field '" << name << "'");
  return doc.at(name);
}

double NumberField(const nlohmann::json& doc, const char* name) {
  const nlohmann::json& v = Field(doc, name);
  AS_CHECK(v.is_number(), "measure result field '" << name << "' must be a number");
  return v.get<double>();
}

}  // namespace

const char* MeasureErrorName(MeasureError e) { return kErrorNames[static_cast<int>(e)]; }

MeasureError ParseMeasureError(const std::string& name) {
  for (int i = 0; i < kNumMeasureErrors; ++i) {
    if (name == kErrorNames[i]) return static_cast<MeasureError>(i);
  }
  std::string known;
  for (int i = 0; i < kNumMeasureErrors; ++i) known += std::string(i ? ", " : "") + kErrorNames[i];
  throw Error("unknown measure error '" + name + "' (known: " + known + ")");
}

double MeasureResult::mean_cost() const {
  if (error != MeasureError::None || costs.empty()) return std::numeric_limits<double>::infinity();
  double sum = 0;
  for (double c : costs) sum += c;
  return sum / static_cast<double>(costs.size());
}

nlohmann::json MeasureResultToJson(const MeasureResult& r) {
  // NaN and infinite costs have no JSON form: they become null.
  nlohmann::json costs = nlohmann::json::array();
  for (double c : r.costs) costs.push_back(std::isfinite(c) ? nlohmann::json(c) : nlohmann::json());
  nlohmann::json doc = {{"costs", costs},
                        {"error", MeasureErrorName(r.error)},
                        {"error_msg", r.error_msg},
                        {"all_cost", r.all_cost},
                        {"timestamp", r.timestamp}};
  if (r.kernel_max_threads > 0) doc["kernel_max_threads"] = r.kernel_max_threads;
  return doc;
}

namespace {

// The kernel's own work-group maximum named by a refusal's message, for
// records written before results carried kernel_max_threads; 0 when absent.
int64_t KernelMaxThreadsOfMessage(const std::string& msg) {
  static const std::string kMark = " (CL_KERNEL_WORK_GROUP_SIZE)";
  static const std::string kLead = "runs it with at most ";
  const size_t end = msg.find(kMark);
  if (end == std::string::npos) return 0;
  const size_t begin = msg.rfind(kLead, end);
  if (begin == std::string::npos) return 0;
  try {
    return std::stoll(msg.substr(begin + kLead.size(), end - begin - kLead.size()));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

MeasureResult MeasureResultFromJson(const nlohmann::json& doc) {
  AS_CHECK(doc.is_object(), "a measure result must be a JSON object");
  MeasureResult r;
  const nlohmann::json& costs = Field(doc, "costs");
  AS_CHECK(costs.is_array(), "measure result field 'costs' must be an array");
  for (const nlohmann::json& c : costs) {
    AS_CHECK(c.is_number() || c.is_null(), "measure result costs must be numbers");
    r.costs.push_back(c.is_null() ? std::numeric_limits<double>::quiet_NaN() : c.get<double>());
  }
  const nlohmann::json& error = Field(doc, "error");
  AS_CHECK(error.is_string(), "measure result field 'error' must be a string");
  r.error = ParseMeasureError(error.get<std::string>());
  if (doc.contains("error_msg")) {
    AS_CHECK(doc["error_msg"].is_string(), "measure result field 'error_msg' must be a string");
    r.error_msg = doc["error_msg"].get<std::string>();
  }
  r.all_cost = NumberField(doc, "all_cost");
  r.timestamp = NumberField(doc, "timestamp");
  if (doc.contains("kernel_max_threads")) {
    AS_CHECK(doc["kernel_max_threads"].is_number_integer() && doc["kernel_max_threads"].get<int64_t>() >= 0,
             "measure result field 'kernel_max_threads' must be a count");
    r.kernel_max_threads = doc["kernel_max_threads"].get<int64_t>();
  } else if (r.error == MeasureError::Compile) {
    r.kernel_max_threads = KernelMaxThreadsOfMessage(r.error_msg);
  }
  return r;
}

}  // namespace autosched
