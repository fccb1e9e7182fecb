#include "task/search_task.h"

#include "support/error.h"

namespace autosched {

SearchTask::SearchTask(ComputeDAG dag, std::string key, Target tgt, HardwareParams params,
                       std::string description)
    : compute_dag(std::move(dag)),
      workload_key(std::move(key)),
      target(std::move(tgt)),
      hardware_params(ResolveHardwareParams(params, target)),
      desc(std::move(description)) {
  CheckHardwareParams(hardware_params);
  if (workload_key.empty()) workload_key = compute_dag.workload_key();
}

SearchTask::SearchTask(ComputeDAG dag, Target tgt)
    : SearchTask(std::move(dag), "", tgt, DefaultHardwareParams(tgt)) {}

nlohmann::json HardwareParamsToJson(const HardwareParams& params) {
  nlohmann::json doc = nlohmann::json::object();
#define AUTOSCHED_FIELD_TO_JSON(name, default_value, doc_text) doc[#name] = params.name;
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_TO_JSON)
#undef AUTOSCHED_FIELD_TO_JSON
  return doc;
}

HardwareParams ResolveHardwareParams(const HardwareParams& params, const Target& target) {
  HardwareParams out = params;
  bool any = false;
#define AUTOSCHED_FIELD_ANY(name, default_value, doc_text) \
  any = any || params.name == kHardwareParamFromTarget;
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_ANY)
#undef AUTOSCHED_FIELD_ANY
  if (!any) return out;
  const HardwareParams defaults = DefaultHardwareParams(target);
#define AUTOSCHED_FIELD_RESOLVE(name, default_value, doc_text) \
  if (out.name == kHardwareParamFromTarget) out.name = defaults.name;
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_RESOLVE)
#undef AUTOSCHED_FIELD_RESOLVE
  return out;
}

void CheckHardwareParams(const HardwareParams& params) {
#define AUTOSCHED_FIELD_CHECK(name, default_value, doc_text)       \
  AS_CHECK(                                                        \
      params.name >= 0 || params.name == kHardwareParamFromTarget, \
      "HardwareParams: " #name " must not be negative (-1: take it from the target), got " << params.name);
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_CHECK)
#undef AUTOSCHED_FIELD_CHECK
}

HardwareParams HardwareParamsFromJson(const nlohmann::json& doc) {
  AS_CHECK(doc.is_object(), "hardware_params must be a JSON object");
  HardwareParams params;
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
#define AUTOSCHED_FIELD_FROM_JSON(name, default_value, doc_text)                    \
  if (key == #name) {                                                               \
    AS_CHECK(value.is_number_integer(),                                             \
             "hardware_params." #name " must be an integer, got " << value.dump()); \
    params.name = value.get<int64_t>();                                             \
    known = true;                                                                   \
  }
    AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_FIELD_FROM_JSON)
#undef AUTOSCHED_FIELD_FROM_JSON
    AS_CHECK(known, "unknown hardware parameter '" << key << "'");
  }
  CheckHardwareParams(params);  // as the constructor does
  return params;
}

nlohmann::json SearchTask::ToJson() const {
  return {{"version", kJsonVersion},
          {"workload_key", workload_key},
          {"desc", desc},
          {"target", target.str()},
          {"hardware_params", HardwareParamsToJson(hardware_params)},
          {"compute_dag", compute_dag.ToJson()}};
}

namespace {

const nlohmann::json& Field(const nlohmann::json& doc, const char* name) {
  AS_CHECK(doc.contains(name), "search task JSON lacks the field '" << name << "'");
  return doc.at(name);
}

std::string StringField(const nlohmann::json& doc, const char* name) {
  const nlohmann::json& value = Field(doc, name);
  AS_CHECK(value.is_string(), "search task field '" << name << "' must be a string");
  return value.get<std::string>();
}

}  // namespace

SearchTask SearchTask::FromJson(const nlohmann::json& doc) {
  AS_CHECK(doc.is_object(), "a search task must be a JSON object");
  const nlohmann::json& version = Field(doc, "version");
  AS_CHECK(version.is_number_integer() && version.get<int>() == kJsonVersion,
           "search task JSON version " << version.dump() << " is not supported (this build reads version "
                                       << kJsonVersion << ")");
  ComputeDAG dag = ComputeDAG::FromJson(Field(doc, "compute_dag"));
  Target target = Target::Parse(StringField(doc, "target"));
  HardwareParams params = HardwareParamsFromJson(Field(doc, "hardware_params"));
  std::string desc = doc.contains("desc") ? StringField(doc, "desc") : "";
  return SearchTask(std::move(dag), StringField(doc, "workload_key"), std::move(target), params,
                    std::move(desc));
}

}  // namespace autosched
