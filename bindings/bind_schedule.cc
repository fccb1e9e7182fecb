// Loop states, transform steps and lowering. Stages and iterators are
// addressed by position here; python/autosched/state.py resolves tensors,
// names and iterator objects to positions.
#include <pybind11/stl.h>

#include "bind.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "lower/lower_state.h"
#include "lower/stmt_printer.h"
#include "schedule/infer_bound.h"
#include "schedule/state.h"

namespace py = pybind11;

namespace autosched::bindings {

namespace {

const char* LocName(ComputeLocKind k) {
  switch (k) {
    case ComputeLocKind::Root: return "root";
    case ComputeLocKind::Inlined: return "inlined";
    case ComputeLocKind::At: return "at";
  }
  return "?";
}

// Python view of a stage's location: None, or (stage name, iterator name).
py::object AttachPoint(const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  if (st.loc != ComputeLocKind::At) return py::none();
  const Stage& target = s.stage(st.attach_stage);
  return py::make_tuple(target.name(), target.nodes[st.attach_node].name);
}

template <typename StepT>
State ApplyStep(const State& s, StepT step) {
  return s.Apply(Step(std::move(step)));
}

void BindIteratorAndStage(py::module_& m) {
  py::class_<Iterator>(m, "Iterator", "One loop of a stage.")
      .def_property_readonly("name", [](const Iterator& it) { return it.name; })
      .def_property_readonly(
          "extent",
          [](const Iterator& it) -> py::object { return it.extent < 0 ? py::none() : py::cast(it.extent); })
      .def_property_readonly("kind", [](const Iterator& it) { return IteratorKindName(it.kind); })
      .def_property_readonly("annotation",
                             [](const Iterator& it) { return IteratorAnnotationName(it.annotation); })
      .def("__repr__", [](const Iterator& it) {
        return "Iterator(" + it.name + ", " + (it.extent < 0 ? "None" : std::to_string(it.extent)) + ", " +
               IteratorKindName(it.kind) + ", " + IteratorAnnotationName(it.annotation) + ")";
      });

  py::class_<Stage>(m, "Stage", "The loops of one operation in a state.")
      .def_property_readonly("name", &Stage::name)
      .def_property_readonly("op", [](const Stage& st) { return st.op; })
      .def_property_readonly("iters", &Stage::iters)
      .def_property_readonly("compute_at", [](const Stage& st) { return LocName(st.loc); })
      .def_property_readonly("scope", [](const Stage& st) { return MemScopeName(st.scope); })
      .def_property_readonly("auto_unroll_max_step", [](const Stage& st) { return st.auto_unroll_max_step; })
      .def("__repr__", [](const Stage& st) { return "Stage(" + st.name() + ")"; });
}

void BindState(py::module_& m) {
  py::class_<State>(m, "LoopState", "A DAG plus a list of transform steps (an immutable value).")
      .def(py::init<const ComputeDAG&>(), py::arg("dag"))
      .def_property_readonly("dag", &State::dag)
      .def_property_readonly("init_dag", &State::init_dag)
      .def_property_readonly("stages", &State::stages)
      .def_property_readonly("num_steps", [](const State& s) { return s.steps().size(); })
      .def("stage_index", &State::StageIndex, py::arg("name"))
      .def("stage_index_of", &State::StageIndexOf, py::arg("tensor"))
      .def("attach_point", &AttachPoint, py::arg("stage"))
      .def("split", &State::Split, py::arg("stage"), py::arg("iter"), py::arg("lengths"),
           py::arg("inner_to_outer") = true)
      .def("follow_split",
           [](const State& s, int st, int it, int src, int n) {
             return ApplyStep(s, FollowSplitStep{st, it, src, n});
           })
      .def("follow_fused_split",
           [](const State& s, int st, int it, const std::vector<int>& src, int level, bool factor) {
             return ApplyStep(s, FollowFusedSplitStep{st, it, src, level, factor});
           })
      .def("fuse", &State::Fuse, py::arg("stage"), py::arg("iters"))
      .def("reorder", &State::Reorder, py::arg("stage"), py::arg("order"))
      .def("annotate",
           [](const State& s, int st, int it, const std::string& ann) {
             return s.Annotate(st, it, ParseIteratorAnnotation(ann));
           })
      .def("pragma",
           [](const State& s, int st, int it, const std::string& p) {
             return ApplyStep(s, PragmaStep{st, it, p});
           })
      .def("storage_align",
           [](const State& s, int st, int it, int64_t factor, int64_t offset) {
             return ApplyStep(s, StorageAlignStep{st, it, factor, offset});
           })
      .def("compute_at", &State::ComputeAt)
      .def("compute_inline", &State::ComputeInline)
      .def("compute_root", &State::ComputeRoot)
      .def("cache_read",
           [](const State& s, int st, const std::string& scope, const std::vector<int>& readers) {
             return ApplyStep(s, CacheReadStep{st, scope, readers});
           })
      .def("cache_write",
           [](const State& s, int st, const std::string& scope) {
             return ApplyStep(s, CacheWriteStep{st, scope});
           })
      .def("rfactor",
           [](const State& s, int st, int it, int factor_iter) {
             return ApplyStep(s, RfactorStep{st, it, factor_iter});
           })
      .def("pack",
           [](const State& s, int st, const std::vector<int>& readers, int axis, int64_t lanes) {
             return ApplyStep(s, PackLayoutStep{st, readers, axis, lanes});
           })
      .def("replay", &State::Replay)
      .def("same_steps", &State::SameSteps)
      .def("to_json", [](const State& s) { return s.ToJson().dump(); })
      .def_static("from_json",
                  [](const ComputeDAG& dag, const std::string& text) {
                    return State::FromJson(dag, ParseJsonText(text, "state JSON"));
                  })
      .def("print_python_steps", &State::PrintPythonSteps)
      .def("infer_bound", &InferBound)
      .def("__str__", &State::ToString)
      .def("__repr__", &State::ToString);
}

}  // namespace

void bind_schedule(py::module_& m) {
  m.attr("MAX_ITER_EXTENT") = kMaxIterExtent;
  BindIteratorAndStage(m);
  BindState(m);
  m.def("lower_state", &LowerStateToStmt, py::arg("state"), "The loop-nest IR of a state (a LoweredFunc).");
  m.def(
      "lower_state_text", [](const State& s) { return ToString(LowerStateToStmt(s)); }, py::arg("state"),
      "The loop-nest IR of a state, as text.");
}

}  // namespace autosched::bindings
