#include "lower/passes/flatten_storage.h"

#include "lower/stmt_functor.h"
#include "support/error.h"

namespace autosched {

std::vector<int64_t> ElementStrides(const BufferNode& buffer) {
  if (!buffer.strides.empty()) {
    AS_CHECK(buffer.strides.size() == buffer.shape.size(),
             "buffer '" << buffer.name << "' has " << buffer.strides.size() << " strides for "
                        << buffer.shape.size() << " dimensions");
    return buffer.strides;
  }
  std::vector<int64_t> strides(buffer.shape.size(), 1);
  for (int d = static_cast<int>(buffer.shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * buffer.shape[d + 1];
  return strides;
}

namespace {

Expr Scaled(const Expr& index, int64_t stride) {
  if (stride == 1) return index;
  return index * make_const(index.dtype().element_of(), static_cast<double>(stride));
}

// The flat index of buffer[indices]. One vector index (the vectorized loop's
// dimension, which need not be the last one when the storage is transposed)
// keeps its Ramp / Broadcast form, scaled by its stride; several vector
// indices add up lane by lane.
Expr FlatIndex(const BufferNode& buffer, const std::vector<Expr>& indices) {
  if (indices.size() == 1) return indices[0];
  AS_CHECK(indices.size() == buffer.shape.size(),
           "access to buffer '" << buffer.name << "' with " << indices.size() << " indices for "
                                << buffer.shape.size() << " dimensions");
  const std::vector<int64_t> strides = ElementStrides(buffer);
  Expr scalar_part;
  std::vector<size_t> vector_dims;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d].dtype().lanes != 1) {
      vector_dims.push_back(d);
      continue;
    }
    const Expr term = Scaled(indices[d], strides[d]);
    scalar_part = scalar_part.defined() ? scalar_part + term : term;
  }
  if (vector_dims.empty()) return scalar_part;
  auto plus_scalar = [&](const Expr& x) { return scalar_part.defined() ? scalar_part + x : x; };
  if (vector_dims.size() == 1) {
    const size_t d = vector_dims[0];
    const int64_t stride = strides[d];
    if (const auto* ramp = indices[d].as<RampNode>())
      return RampNode::make(plus_scalar(Scaled(ramp->base, stride)), ramp->stride * stride, ramp->lanes);
    if (const auto* bc = indices[d].as<BroadcastNode>())
      return BroadcastNode::make(plus_scalar(Scaled(bc->value, stride)), bc->lanes);
  }
  const int lanes = indices[vector_dims[0]].dtype().lanes;
  Expr sum;
  for (size_t d : vector_dims) {
    const Expr& index = indices[d];
    AS_CHECK(index.dtype().lanes == lanes, "access to buffer '" << buffer.name << "' mixes vector indices of "
                                                                << lanes << " and " << index.dtype().lanes
                                                                << " lanes");
    const Expr stride_vec =
        BroadcastNode::make(make_const(index.dtype().element_of(), static_cast<double>(strides[d])), lanes);
    const Expr term = index * stride_vec;
    sum = sum.defined() ? sum + term : term;
  }
  return scalar_part.defined() ? BroadcastNode::make(scalar_part, lanes) + sum : sum;
}

class Flattener : public StmtMutator {
 protected:
  Expr MutateExpr(const Expr& e) override {
    return Rewrite(e, [&](const Expr& x) -> Expr {
      const auto* load = x.as<BufferLoadNode>();
      if (!load || load->indices.size() == 1) return Expr();
      std::vector<Expr> indices;
      for (const Expr& i : load->indices) indices.push_back(MutateExpr(i));
      return BufferLoadNode::make(load->buffer, {FlatIndex(*load->buffer, indices)});
    });
  }

  Stmt MutateBufferStore(const Stmt& s, const BufferStoreNode* n) override {
    Stmt r = StmtMutator::MutateBufferStore(s, n);
    const auto* store = r.as<BufferStoreNode>();
    if (store->indices.size() == 1) return r;
    return BufferStoreNode::make(store->buffer, store->value, {FlatIndex(*store->buffer, store->indices)});
  }
};

}  // namespace

Stmt FlattenStorage(const Stmt& s) { return Flattener().Mutate(s); }

}  // namespace autosched
