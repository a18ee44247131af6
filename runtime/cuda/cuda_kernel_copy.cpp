#include "runtime/cuda/cuda_kernel_copy.h"

#include <memory>

namespace spire::rt::cuda {

namespace {

kir::Block copy_block(const kir::Block& b);

std::unique_ptr<kir::Block> copy_owned(const std::unique_ptr<kir::Block>& b) {
  if (!b) return nullptr;
  return std::make_unique<kir::Block>(copy_block(*b));
}

struct StmtCopier {
  kir::Stmt operator()(const kir::If& s) const { return kir::If{s.cond, copy_owned(s.then_body), copy_owned(s.else_body)}; }
  kir::Stmt operator()(const kir::For& s) const {
    return kir::For{s.var, s.begin, s.end, s.step, copy_owned(s.body)};
  }
  // Every other statement is plain data.
  template <class T>
  kir::Stmt operator()(const T& s) const { return s; }
};

kir::Block copy_block(const kir::Block& b) {
  kir::Block out;
  out.stmts.reserve(b.stmts.size());
  for (const auto& s : b.stmts) out.stmts.push_back(std::visit(StmtCopier{}, s));
  return out;
}

}  // namespace

kir::Kernel copy_kernel(const kir::Kernel& k) {
  kir::Kernel out;
  out.name = k.name;
  out.workgroup_size = k.workgroup_size;
  out.features = k.features;
  out.buffers = k.buffers;
  out.scalars = k.scalars;
  out.shared = k.shared;
  out.vars = k.vars;
  out.value_types = k.value_types;
  out.body = copy_block(k.body);
  return out;
}

}  // namespace spire::rt::cuda
