// Loop states and transform steps. Every step is applied the same way: the
// Python State method builds the step's record (["SP", args...], as records on
// disk store it; transform_steps.h) and LoopState.apply_step replays it, so a
// new step needs no binding. Stages are resolved by the core
// (ComputeDAG::FindOp); python/autosched/state.py resolves iterator objects
// and names to positions.
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

  py::class_<Stage>(m, "Stage", "The loops of one operation in a state.")
      .def_property_readonly("name", &Stage::name)
      .def_property_readonly("op", [](const Stage& st) { return st.op; })
      .def_property_readonly("iters", &Stage::iters)
      .def_property_readonly("compute_at", [](const Stage& st) { return ComputeLocKindName(st.loc); })
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
      // A stage by position, name or tensor (ComputeDAG::FindOp).
      .def("stage_id", &State::StageIndexAt, py::arg("stage"))
      .def("stage_id", &State::StageIndex, py::arg("stage"))
      .def("stage_id", &State::StageIndexOf, py::arg("stage"))
      .def("attach_point", &AttachPoint, py::arg("stage"))
      .def("apply_step", &ApplyStepRecord, py::arg("record"),
           "A new state with the step appended; record: the step's JSON record, e.g. '[\"CI\", 2]'.")
      .def("replay", &State::Replay)
      .def("same_steps", &State::SameSteps)
      .def("to_json", [](const State& s) { return s.ToJson().dump(); })
      .def_static("from_json",
                  [](const ComputeDAG& dag, const std::string& text) {
                    return State::FromJson(dag, ParseJsonText(text, "state JSON"));
                  })
      // Pickled as its initial DAG and its steps; a state is immutable, so
      // copies are the state itself.
      .def(py::pickle([](const State& s) { return py::make_tuple(s.init_dag(), s.ToJson().dump()); },
                      [](const py::tuple& t) {
                        AS_CHECK(t.size() == 2,
                                 "a pickled LoopState is (dag, steps), got " << t.size() << " items");
                        return State::FromJson(t[0].cast<ComputeDAG>(),
                                               ParseJsonText(t[1].cast<std::string>(), "pickled LoopState"));
                      }))
      .def("__copy__", [](py::object self) { return self; })
      .def(
          "__deepcopy__", [](py::object self, py::object) { return self; }, py::arg("memo"))
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
