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

}  // namespace autosched
