// Python view of ComputeDAG and of the reference evaluator. numpy arrays pass
// to the evaluator without copies when they are already C-contiguous with the
// tensor's dtype (float16 travels as raw 16-bit data).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bind.h"
#include "dag/compute_dag.h"
#include "dag/evaluator.h"
#include "dag/fold_remap.h"
#include "ir/serialize.h"
#include "support/error.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

py::dict AccessInfoToDict(const ComputeDAG& dag, int op) {
  const OpAccessInfo& info = dag.access(op);
  py::dict d;
  d["name"] = dag.ops()[op]->name;
  d["is_simple_access"] = info.is_simple_access;
  d["is_strictly_inlineable"] = info.is_strictly_inlineable;
  d["needs_multi_level_tiling"] = info.needs_multi_level_tiling;
  d["is_output"] = info.is_output;
  d["producers"] = info.producers;
  d["consumers"] = info.consumers;
  return d;
}

// op_index and access_info take an op by position, name or tensor: one
// overload per way, each resolved by ComputeDAG::FindOp.
template <typename OpRef>
void DefineOpLookups(py::class_<ComputeDAG>& cls) {
  cls.def("op_index", py::overload_cast<OpRef>(&ComputeDAG::FindOp, py::const_), py::arg("op"))
      .def(
          "access_info",
          [](const ComputeDAG& dag, OpRef op) { return AccessInfoToDict(dag, dag.FindOp(op)); },
          py::arg("op"),
          "What the access analysis knows about an op (given by index, name or tensor), as a dict.");
}

// One contiguous array per placeholder of dag.tensors(), in order, converted to
// the tensor's dtype (a view when nothing needs converting); shapes checked.
// `keep` holds the arrays alive while the evaluator reads them.
std::vector<HostTensor> InputViews(const ComputeDAG& dag, const py::sequence& inputs,
                                   std::vector<py::array>* keep) {
  // asarray(order="C"), not ascontiguousarray: that one turns 0-d arrays into shape (1,).
  py::object asarray = py::module_::import("numpy").attr("asarray");
  std::vector<HostTensor> args(dag.tensors().size());
  size_t placeholders = 0;
  for (const Tensor& t : dag.tensors()) placeholders += t->is_placeholder();
  AS_CHECK(inputs.size() == placeholders, "expected " << placeholders
                                                      << " input array(s), one per placeholder "
                                                      << "among the DAG's tensors, got " << inputs.size());
  size_t next = 0;
  for (size_t i = 0; i < dag.tensors().size(); ++i) {
    const Tensor& t = dag.tensors()[i];
    args[i].shape = t->shape;
    args[i].dtype = t->dtype;
    if (!t->is_placeholder()) continue;
    py::array array = asarray(inputs[next++], py::arg("dtype") = t->dtype.str(), py::arg("order") = "C");
    std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
    if (shape != t->shape) {
      std::string expected, got;
      for (int64_t d : t->shape) expected += (expected.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      AS_CHECK(false, "input for tensor '" << t->name << "' has shape (" << got << "), expected (" << expected
                                           << ")");
    }
    args[i].data = array.mutable_data();
    keep->push_back(array);
  }
  return args;
}

std::vector<py::array> Evaluate(const ComputeDAG& dag, const py::sequence& inputs) {
  std::vector<py::array> keep;
  std::vector<HostTensor> args = InputViews(dag, inputs, &keep);
  std::vector<py::array> outputs;
  for (size_t i = 0; i < dag.tensors().size(); ++i) {
    const Tensor& t = dag.tensors()[i];
    if (t->is_placeholder()) continue;
    py::array out(py::dtype(t->dtype.str()), t->shape);
    args[i].data = out.mutable_data();
    outputs.push_back(out);
  }
  {
    py::gil_scoped_release release;
    EvaluateReference(dag, args);
  }
  return outputs;
}

py::array_t<double> EvaluatePoints(const ComputeDAG& dag, const py::sequence& inputs, int output_index,
                                   const std::vector<std::vector<int64_t>>& points) {
  std::vector<py::array> keep;
  std::vector<HostTensor> args = InputViews(dag, inputs, &keep);
  std::vector<int> outputs;
  for (size_t i = 0; i < dag.tensors().size(); ++i) {
    if (dag.tensors()[i]->is_compute()) outputs.push_back(static_cast<int>(i));
  }
  AS_CHECK(
      output_index >= 0 && output_index < static_cast<int>(outputs.size()),
      "output_index " << output_index << " out of range: the DAG has " << outputs.size() << " output(s)");
  std::vector<double> values;
  {
    py::gil_scoped_release release;
    values = EvaluateReferencePoints(dag, args, outputs[output_index], points);
  }
  py::array_t<double> result(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), result.mutable_data());
  return result;
}

}  // namespace

void bind_dag(py::module_& m) {
  py::class_<ComputeDAG> dag(m, "ComputeDAG", "The operations a task computes, in topological order.");
  dag.def(py::init<const ComputeDAG&>(), py::arg("dag"))
      .def(py::init<const std::vector<Tensor>&>(), py::arg("tensors"))
      .def_property_readonly("flop_ct", &ComputeDAG::flop_ct)
      .def("workload_key", &ComputeDAG::workload_key)
      .def("structure_key", &ComputeDAG::structure_key,
           "The workload key without the sizes: DAGs with the same ops, stages and access patterns and "
           "other shapes share it (their schedules transfer, see search/evolution/transfer_seeds.h).")
      .def_property_readonly("tensors", &ComputeDAG::tensors)
      .def_property_readonly("ops", &ComputeDAG::ops)
      .def("element_wise_match", &ComputeDAG::ElementWiseMatch, py::arg("op"), py::arg("consumer"))
      .def("to_json", [](const ComputeDAG& d) { return d.ToJson().dump(); })
      .def_static("from_json",
                  [](const std::string& text) {
                    return ComputeDAG::FromJson(ParseJsonText(text, "ComputeDAG.from_json"));
                  })
      // Pickled as its JSON; a DAG is immutable, so copies are the DAG itself.
      .def(py::pickle([](const ComputeDAG& d) { return d.ToJson().dump(); },
                      [](const std::string& text) {
                        return ComputeDAG::FromJson(ParseJsonText(text, "pickled ComputeDAG"));
                      }))
      .def("__copy__", [](py::object self) { return self; })
      .def(
          "__deepcopy__", [](py::object self, py::object) { return self; }, py::arg("memo"))
      .def("__str__", &ComputeDAG::ToString)
      .def("__repr__", [](const ComputeDAG& d) {
        return "ComputeDAG(" + std::to_string(d.ops().size()) + " ops, key " + d.workload_key() + ")";
      });
  DefineOpLookups<int64_t>(dag);
  DefineOpLookups<const std::string&>(dag);
  DefineOpLookups<const Tensor&>(dag);
  m.def("fold_remap_into_reduction", &FoldRemapIntoReduction, py::arg("out"),
        "The group output `out` with the index remap after its reduction folded into it (dag/fold_remap.h).");
  m.def("evaluate", &Evaluate, py::arg("dag"), py::arg("inputs"),
        "Reference results: one array per compute tensor among dag.tensors, from one array per placeholder.");
  m.def("evaluate_points", &EvaluatePoints, py::arg("dag"), py::arg("inputs"), py::arg("output_index"),
        py::arg("points"),
        "Reference values (float64) of output `output_index` (counting compute tensors among dag.tensors) at "
        "the given index tuples.");
}

}  // namespace autosched::bindings
