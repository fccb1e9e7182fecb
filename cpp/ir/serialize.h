// JSON form of expressions and of tensor graphs, so that a DAG (and with it a
// search task) can be re-created in another process without the Python
// function that defined it.
//
// A graph is {"version": 1, "tensors": [...], "outputs": [indices]}: tensors in
// topological order, each {"name", "op": "placeholder"|"compute", "shape",
// "dtype", and for compute "axis", "reduce_axis", "body", "tag", "attrs"}.
// Variables are written by name and numbered per op; loads name their tensor by
// index in the list. Parsing a malformed document throws Error naming the
// offending field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace autosched {

// Serialises every tensor reachable from `tensors` (inputs and outputs of a
// DAG, in the order given) and records their positions.
nlohmann::json TensorsToJson(const std::vector<Tensor>& tensors);
// Rebuilds the tensors; returns them in the order given to TensorsToJson.
// Expressions nested deeper than kMaxExprDepth are an Error.
std::vector<Tensor> TensorsFromJson(const nlohmann::json& doc);

// The nesting limit of JSON read from users: a tensor graph nests at most
// about two levels per expression level (a call's argument list, a load's
// indices), plus a few for the document around it.
constexpr int kMaxJsonDepth = 2 * kMaxExprDepth + 64;

// Parses JSON text given by a user. Throws Error naming `what` when the text
// is nested deeper than kMaxJsonDepth (checked before parsing, as parsing,
// printing and walking a document recurse on its nesting) or is not JSON.
// Every parse of user-supplied text goes through here.
nlohmann::json ParseJsonText(const std::string& text, const std::string& what);

}  // namespace autosched
