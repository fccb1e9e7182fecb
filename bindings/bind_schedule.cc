// Loop states and transform steps. LoopState is the class of every state
// Python sees: python/autosched/state.py subclasses it as autosched.State
// (the step methods) and registers that subclass, so the core hands states out
// as autosched.State (bind.h). Every step is applied the same way: the State
// method builds the step's record (["SP", args...], as records on disk store
// it; transform_steps.h) and append_step replays it in place (apply_step
// returns a new state), so a new step needs no binding. Stages are resolved
// by the core (ComputeDAG::FindOp); state.py resolves iterator objects and
// names to positions.
#include <pybind11/stl.h>

#include "bind.h"
#include "ir/serialize.h"
#include "schedule/constant_stages.h"
#include "schedule/infer_bound.h"
#include "schedule/state.h"
#include "support/error.h"

namespace py = pybind11;

namespace autosched::bindings {

namespace {

// Python view of a stage's location: None, or (stage name, iterator name).
py::object AttachPoint(const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  if (st.loc != ComputeLocKind::At) return py::none();
  const Stage& target = s.stage(st.attach_stage);
  return py::make_tuple(target.name(), target.nodes[st.attach_node].name);
}

// A stage of a state as it was when taken (state.stages, state[stage]): the
// stage, its position and its location (AttachPoint).
struct StageView {
  Stage stage;
  int index;
  py::object attach_point;
};

std::vector<StageView> StageViews(const State& s) {
  std::vector<StageView> out;
  for (int i = 0; i < static_cast<int>(s.stages().size()); ++i) {
    out.push_back({s.stages()[i], i, AttachPoint(s, i)});
  }
  return out;
}

// A step given by its JSON record; errors name the step (State::Apply) or
// the record (StepFromJson).
State ApplyStepRecord(const State& s, const std::string& record) {
  return s.Apply(StepFromJson(ParseJsonText(record, "step record")));
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

  py::class_<StageView>(m, "Stage", "The loops of one operation in a state, as they were when taken.")
      .def_property_readonly("name", [](const StageView& v) { return v.stage.name(); })
      .def_property_readonly("op", [](const StageView& v) { return v.stage.op; })
      .def_property_readonly("iters", [](const StageView& v) { return v.stage.iters(); })
      .def_readonly("index", &StageView::index, "the stage's position in the state")
      .def_property_readonly("compute_at", [](const StageView& v) { return ComputeLocKindName(v.stage.loc); })
      .def_readonly("attach_point", &StageView::attach_point,
                    "None, or (stage name, iterator name) of where it is computed")
      .def_property_readonly("scope", [](const StageView& v) { return MemScopeName(v.stage.scope); })
      .def_property_readonly("auto_unroll_max_step",
                             [](const StageView& v) { return v.stage.auto_unroll_max_step; })
      .def("__repr__", [](const StageView& v) { return "Stage(" + v.stage.name() + ")"; });
}

void BindState(py::module_& m) {
  py::class_<State>(m, "LoopState",
                    "A DAG plus a list of transform steps. LoopState(dag): the state with no steps; "
                    "LoopState(state): a copy.")
      .def(py::init<const ComputeDAG&>(), py::arg("dag"))
      .def(py::init<const State&>(), py::arg("state"))
      .def_property_readonly("dag", &State::dag,
                             "the current DAG (changed by cache_read, cache_write, rfactor)")
      .def_property_readonly("init_dag", &State::init_dag)
      .def_property_readonly("stages", &StageViews)
      .def_property_readonly("num_steps", [](const State& s) { return s.steps().size(); })
      // A stage by position, name or tensor (ComputeDAG::FindOp).
      .def("stage_id", &State::StageIndexAt, py::arg("stage"))
      .def("stage_id", &State::StageIndex, py::arg("stage"))
      .def("stage_id", &State::StageIndexOf, py::arg("stage"))
      .def("attach_point", &AttachPoint, py::arg("stage"))
      .def("apply_step", &ApplyStepRecord, py::arg("record"),
           "A new state with the step appended; record: the step's JSON record, e.g. '[\"CI\", 2]'.")
      .def(
          "append_step", [](State& s, const std::string& record) { s = ApplyStepRecord(s, record); },
          py::arg("record"), "Appends the step of apply_step to this state (unchanged when it is refused).")
      .def("replay", &State::Replay)
      .def("same_steps", &State::SameSteps)
      .def("__eq__",
           [](const State& s, const py::object& other) {
             return py::isinstance<State>(other) && s.SameSteps(other.cast<const State&>());
           })
      .def("__hash__", [](const State& s) { return std::hash<std::string>()(s.ToJson().dump()); })
      .def("to_json", [](const State& s) { return s.ToJson().dump(); })
      .def_static(
          "from_json",
          [](const ComputeDAG& dag, const std::string& text) {
            return State::FromJson(dag, ParseJsonText(text, "state JSON"));
          },
          py::arg("dag"), py::arg("text"), "Replays the steps of to_json() on dag.")
      // Pickled as its initial DAG and its steps. Copies are independent
      // (append_step changes a state in place) and O(1): the steps are shared.
      .def(py::pickle([](const State& s) { return py::make_tuple(s.init_dag(), s.ToJson().dump()); },
                      [](const py::tuple& t) {
                        AS_CHECK(t.size() == 2,
                                 "a pickled LoopState is (dag, steps), got " << t.size() << " items");
                        return State::FromJson(t[0].cast<ComputeDAG>(),
                                               ParseJsonText(t[1].cast<std::string>(), "pickled LoopState"));
                      }))
      .def(
          "copy", [](const State& s) { return s; }, "An independent copy (a State).")
      .def("__copy__", [](const State& s) { return s; })
      .def(
          "__deepcopy__", [](const State& s, const py::object&) { return s; }, py::arg("memo"))
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
  m.def(
      "split_constant_stages",
      [](const State& s, const std::vector<int>& constant_args) {
        ConstantStageSplit r = SplitConstantStages(s, constant_args);
        return py::make_tuple(r.state, r.stage_ids, r.prepack, r.prepack_args);
      },
      py::arg("state"), py::arg("constant_args"),
      "(kernel state, split stage ids, [prepack DAG], [[argument positions]]): the stages computed only "
      "from the constant arguments, split off to run once (schedule/constant_stages.h).");
}

}  // namespace autosched::bindings
