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

// The flat index of buffer[indices].
Expr FlatIndex(const BufferNode& buffer, const std::vector<Expr>& indices) {
  if (indices.size() == 1) return indices[0];
  AS_CHECK(indices.size() == buffer.shape.size(),
           "access to buffer '" << buffer.name << "' with " << indices.size() << " indices for "
                                << buffer.shape.size() << " dimensions");
  std::vector<int64_t> strides = ElementStrides(buffer);
  Expr scalar_part;
  for (size_t d = 0; d + 1 < indices.size(); ++d) {
    Expr term = Scaled(indices[d], strides[d]);
    scalar_part = scalar_part.defined() ? scalar_part + term : term;
  }
  const Expr& last = indices.back();
  int64_t stride = strides.back();
  if (last.dtype().lanes == 1) return scalar_part + Scaled(last, stride);
  if (const auto* ramp = last.as<RampNode>()) {
    return RampNode::make(scalar_part + Scaled(ramp->base, stride), ramp->stride * stride, ramp->lanes);
  }
  if (const auto* bc = last.as<BroadcastNode>()) {
    return BroadcastNode::make(scalar_part + Scaled(bc->value, stride), bc->lanes);
  }
  int lanes = last.dtype().lanes;
  Expr stride_vec =
      BroadcastNode::make(make_const(last.dtype().element_of(), static_cast<double>(stride)), lanes);
  return BroadcastNode::make(scalar_part, lanes) + last * stride_vec;
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
