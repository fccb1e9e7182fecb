#include "task/search_task.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "support/error.h"

namespace autosched {

SearchTask::SearchTask(ComputeDAG dag, std::string key, Target tgt, HardwareParams params,
                       std::string description)
    : compute_dag(std::move(dag)),
      workload_key(std::move(key)),
      target(std::move(tgt)),
      hardware_params(ResolveHardwareParams(params, target)),
      desc(std::move(description)) {
  CheckFields(hardware_params);
  if (workload_key.empty()) workload_key = compute_dag.workload_key();
}

SearchTask::SearchTask(ComputeDAG dag, Target tgt)
    : SearchTask(std::move(dag), "", tgt, DefaultHardwareParams(tgt)) {}

HardwareParams ResolveHardwareParams(const HardwareParams& params, const Target& target) {
  HardwareParams out = params;
  std::optional<HardwareParams> defaults;  // queried only when a field asks for them (an OpenCL device)
  HardwareParams::VisitFields(out, [&](const char* name, int64_t& value, const FieldRange&, const char*) {
    if (value != kHardwareParamFromTarget) return;
    if (!defaults) defaults = DefaultHardwareParams(target);
    HardwareParams::VisitFields(*defaults,
                                [&](const char* other, int64_t from, const FieldRange&, const char*) {
                                  if (std::string_view(other) == name) value = from;
                                });
  });
  return out;
}

void SearchTask::SetConstantArgs(std::vector<int> positions) {
  const auto& tensors = compute_dag.tensors();
  for (int p : positions) {
    AS_CHECK(p >= 0 && p < static_cast<int>(tensors.size()), "constant_args: position "
                                                                 << p << " is out of range (the DAG has "
                                                                 << tensors.size() << " tensors)");
    AS_CHECK(tensors[p]->is_placeholder(),
             "constant_args: tensor " << p << " ('" << tensors[p]->name << "') is computed, not an input");
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  constant_args = std::move(positions);
}

nlohmann::json SearchTask::ToJson() const {
  nlohmann::json doc = {{"version", kJsonVersion},
                        {"workload_key", workload_key},
                        {"desc", desc},
                        {"target", target.str()},
                        {"hardware_params", FieldsToJson(hardware_params)},
                        {"compute_dag", compute_dag.ToJson()}};
  if (!constant_args.empty()) doc["constant_args"] = constant_args;  // absent: none (older records)
  if (cold_constants) doc["cold_constants"] = true;                  // absent: warm
  if (network_caches) doc["network_caches"] = true;                  // absent: warm
  return doc;
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
  HardwareParams params = FieldsFromJson<HardwareParams>(Field(doc, "hardware_params"));
  std::string desc = doc.contains("desc") ? StringField(doc, "desc") : "";
  SearchTask task(std::move(dag), StringField(doc, "workload_key"), std::move(target), params,
                  std::move(desc));
  if (doc.contains("constant_args")) {
    const nlohmann::json& positions = doc.at("constant_args");
    AS_CHECK(
        positions.is_array() && std::all_of(positions.begin(), positions.end(),
                                            [](const nlohmann::json& p) { return p.is_number_integer(); }),
        "search task field 'constant_args' must be a list of integers");
    task.SetConstantArgs(positions.get<std::vector<int>>());
  }
  if (doc.contains("cold_constants")) {
    AS_CHECK(doc.at("cold_constants").is_boolean(),
             "search task field 'cold_constants' must be true or false");
    task.cold_constants = doc.at("cold_constants").get<bool>();
  }
  if (doc.contains("network_caches")) {
    AS_CHECK(doc.at("network_caches").is_boolean(),
             "search task field 'network_caches' must be true or false");
    task.network_caches = doc.at("network_caches").get<bool>();
  }
  return task;
}

}  // namespace autosched
