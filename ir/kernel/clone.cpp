#include "ir/kernel/kernel.h"

#include <type_traits>

namespace spire::kir {

namespace {

std::unique_ptr<kir::Block> copy_block_ptr(const std::unique_ptr<kir::Block>& b);

kir::Block copy_block(const kir::Block& b) {
  kir::Block out;
  out.stmts.reserve(b.stmts.size());
  for (const kir::Stmt& s : b.stmts) {
    std::visit(
        [&](const auto& st) {
          using T = std::decay_t<decltype(st)>;
          if constexpr (std::is_same_v<T, kir::If>) {
            out.stmts.emplace_back(kir::If{st.cond, copy_block_ptr(st.then_body), copy_block_ptr(st.else_body)});
          } else if constexpr (std::is_same_v<T, kir::For>) {
            out.stmts.emplace_back(kir::For{st.var, st.begin, st.end, st.step, copy_block_ptr(st.body)});
          } else {
            out.stmts.emplace_back(st);  // plain data
          }
        },
        s);
  }
  return out;
}

std::unique_ptr<kir::Block> copy_block_ptr(const std::unique_ptr<kir::Block>& b) {
  return b ? std::make_unique<kir::Block>(copy_block(*b)) : nullptr;
}

}  // namespace

Kernel clone(const Kernel& k) {
  Kernel out = signature(k);
  out.vars = k.vars;
  out.fragments = k.fragments;
  out.value_types = k.value_types;
  out.body = copy_block(k.body);
  out.spirv_module = k.spirv_module;
  return out;
}

Kernel signature(const Kernel& k) {
  Kernel out;
  out.name = k.name;
  out.workgroup_size = k.workgroup_size;
  out.min_workgroups_per_core = k.min_workgroups_per_core;
  out.barriers_order_buffers = k.barriers_order_buffers;
  out.features = k.features;
  out.buffers = k.buffers;
  out.scalars = k.scalars;
  out.shared = k.shared;
  out.tensor_maps = k.tensor_maps;
  out.arrival_barriers = k.arrival_barriers;
  return out;
}

}  // namespace spire::kir
