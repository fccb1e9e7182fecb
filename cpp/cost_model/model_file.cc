#include "cost_model/model_file.h"

#include <cstdio>
#include <fstream>

#include "ir/error.h"

namespace autosched {

namespace {
constexpr const char* kFormat = "autosched.cost_model";
}

void WriteModelFile(const std::string& path, const std::string& model, nlohmann::json doc) {
  doc["format"] = kFormat;
  doc["version"] = kModelFileVersion;
  doc["model"] = model;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    AS_CHECK(out, "cannot write the cost model to '" << path << "'");
    out << doc.dump();
    AS_CHECK(out.good(), "cannot write the cost model to '" << path << "'");
  }
  AS_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot write the cost model to '" << path << "'");
}

nlohmann::json ReadModelFile(const std::string& path, const std::string& model) {
  std::ifstream in(path, std::ios::binary);
  AS_CHECK(in, "cannot open the cost model file '" << path << "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("cost model file '" + path + "' is not valid JSON: " + e.what());
  }
  AS_CHECK(doc.is_object() && doc.value("format", "") == kFormat,
           "'" << path << "' is not an autosched cost model file");
  AS_CHECK(doc.value("version", -1) == kModelFileVersion,
           "cost model file '" << path << "' has version " << doc.value("version", -1)
                               << ", this autosched reads " << kModelFileVersion);
  AS_CHECK(doc.value("model", "") == model, "cost model file '" << path << "' holds a '"
                                                                << doc.value("model", "")
                                                                << "' model, not a '" << model << "' model");
  return doc;
}

}  // namespace autosched
