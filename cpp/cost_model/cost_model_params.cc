#include "cost_model/cost_model_params.h"

#include <cmath>
#include <set>
#include <string>

#include "support/error.h"

namespace autosched {

void CheckParams(const XGBModelParams& p) {
  AS_CHECK(p.max_depth >= 1, "XGBModelParams: max_depth must be at least 1, got " << p.max_depth);
  AS_CHECK(p.eta > 0 && p.eta <= 1, "XGBModelParams: eta must be in (0, 1], got " << p.eta);
  AS_CHECK(p.gamma >= 0, "XGBModelParams: gamma must not be negative, got " << p.gamma);
  AS_CHECK(p.min_child_weight >= 0,
           "XGBModelParams: min_child_weight must not be negative, got " << p.min_child_weight);
  AS_CHECK(p.reg_lambda >= 0, "XGBModelParams: reg_lambda must not be negative, got " << p.reg_lambda);
  AS_CHECK(p.subsample > 0 && p.subsample <= 1,
           "XGBModelParams: subsample must be in (0, 1], got " << p.subsample);
  AS_CHECK(p.colsample_bytree > 0 && p.colsample_bytree <= 1,
           "XGBModelParams: colsample_bytree must be in (0, 1], got " << p.colsample_bytree);
  AS_CHECK(p.max_rounds >= 1, "XGBModelParams: max_rounds must be at least 1, got " << p.max_rounds);
  AS_CHECK(p.early_stopping_rounds >= 1,
           "XGBModelParams: early_stopping_rounds must be at least 1, got " << p.early_stopping_rounds);
  AS_CHECK(p.validation_fraction >= 0 && p.validation_fraction < 1,
           "XGBModelParams: validation_fraction must be in [0, 1), got " << p.validation_fraction);
  AS_CHECK(p.label_octaves >= 0 && std::isfinite(p.label_octaves),
           "XGBModelParams: label_octaves must not be negative, got " << p.label_octaves);
  AS_CHECK(std::isfinite(p.label_weight_power),
           "XGBModelParams: label_weight_power must be finite, got " << p.label_weight_power);
  AS_CHECK(p.min_label_weight > 0,
           "XGBModelParams: min_label_weight must be positive, got " << p.min_label_weight);
  AS_CHECK(p.num_warmup_samples >= 0,
           "XGBModelParams: num_warmup_samples must not be negative, got " << p.num_warmup_samples);
  AS_CHECK(p.num_threads >= 0, "XGBModelParams: num_threads must not be negative, got " << p.num_threads);
  AS_CHECK(p.xgboost_threads >= 0,
           "XGBModelParams: xgboost_threads must not be negative, got " << p.xgboost_threads);
}

nlohmann::json ParamsToJson(const XGBModelParams& p) {
  nlohmann::json doc = nlohmann::json::object();
#define AUTOSCHED_FIELD_TO_JSON(type, name, default_value, doc_text) doc[#name] = p.name;
  AUTOSCHED_XGB_MODEL_PARAMS_FIELDS(AUTOSCHED_FIELD_TO_JSON)
#undef AUTOSCHED_FIELD_TO_JSON
  return doc;
}

XGBModelParams XGBModelParamsFromJson(const nlohmann::json& doc) {
  AS_CHECK(doc.is_object(), "XGBModelParams: expected a JSON object, got " << doc.type_name());
  XGBModelParams p;
  std::set<std::string> known;
#define AUTOSCHED_FIELD_FROM_JSON(type, name, default_value, doc_text)                 \
  known.insert(#name);                                                                 \
  if (doc.contains(#name)) {                                                           \
    AS_CHECK(doc[#name].is_number(),                                                   \
             "XGBModelParams: " #name " must be a number, got " << doc[#name].dump()); \
    p.name = doc[#name].get<type>();                                                   \
  }
  AUTOSCHED_XGB_MODEL_PARAMS_FIELDS(AUTOSCHED_FIELD_FROM_JSON)
#undef AUTOSCHED_FIELD_FROM_JSON
  for (const auto& [key, value] : doc.items()) {
    AS_CHECK(known.count(key), "XGBModelParams: unknown field '" << key << "'");
  }
  CheckParams(p);
  return p;
}

}  // namespace autosched
