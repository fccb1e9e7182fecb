// The JSON file a cost model is saved to:
//   {"format": "autosched.cost_model", "version": 1, "model": "xgb" | "random", ...}
// Writes go through a temporary file and a rename, so a crash never leaves a
// half-written model behind.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace autosched {

constexpr int kModelFileVersion = 1;

// Adds format, version and model to doc and writes it; Error naming the path
// when it cannot be written.
void WriteModelFile(const std::string& path, const std::string& model, nlohmann::json doc);
// Reads a model file of the given model kind; Error naming the path and the
// problem (missing, not JSON, another format, version or model kind).
nlohmann::json ReadModelFile(const std::string& path, const std::string& model);

// Checks an XGBoost model in its JSON form (the "booster" of a model file)
// before XGBoost reads it, and returns its number of trees. XGBoost trusts the
// indices it loads: a child index outside its tree, a child that leads back up
// the tree, a split on a feature past the last, or two trees of one id make
// predicting crash or never end. Error naming the path and the first problem;
// what is checked is what XGBoost follows when it predicts, so a file that
// passes still holds whatever values it holds.
size_t CheckXGBoostTrees(const nlohmann::json& booster, const std::string& path, size_t num_features);

}  // namespace autosched
