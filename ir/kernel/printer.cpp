#include "ir/kernel/printer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace spire::kir {

namespace {

struct Printer {
  const Kernel& k;
  std::string out;

  void line(int depth, const std::string& s) {
    out.append(size_t(depth) * 2, ' ');
    out += s;
    out += '\n';
  }

  std::string v(ValueId id) const { return fmt::format("%{}", id); }

  std::string constant(const Instr& in) const {
    switch (in.type) {
      case Type::Bool: return in.imm.i ? "true" : "false";
      case Type::I32: case Type::U32: case Type::I64: return fmt::format("{}", in.imm.i);
      default: return fmt::format("{}", in.imm.f);
    }
  }

  std::string instr(const Instr& in) const {
    std::string rhs;
    switch (in.op) {
      case Op::Const: rhs = "const " + constant(in); break;
      case Op::ReadBuiltin: rhs = fmt::format("builtin {}", builtin_name(Builtin(in.index))); break;
      case Op::ReadScalar: rhs = "param " + k.scalars[in.index].name; break;
      case Op::LoadVar: rhs = "loadvar " + k.vars[in.index].name; break;
      case Op::LoadBuffer: rhs = fmt::format("load {}[{}]", k.buffers[in.index].name, v(in.operands[0])); break;
      case Op::LoadShared: rhs = fmt::format("load_shared {}[{}]", k.shared[in.index].name, v(in.operands[0])); break;
      case Op::MatrixElement: rhs = fmt::format("matrix_element {}[{}]", k.fragments[in.index].name, in.imm.i); break;
      case Op::EpilogueTap:
        rhs = fmt::format("epilogue_tap {}[{}], {}", k.buffers[in.index].name, v(in.operands[0]), v(in.operands[1]));
        break;
      case Op::AtomicAdd:
        rhs = fmt::format("atomic_add {}[{}], {}", k.buffers[in.index].name, v(in.operands[0]), v(in.operands[1]));
        break;
      default: {
        rhs = std::string(op_name(in.op));
        int n = op_arity(in.op);
        for (int i = 0; i < n; ++i) rhs += (i ? ", " : " ") + v(in.operands[i]);
      }
    }
    return fmt::format("{} = {} : {}", v(in.result), rhs, dtype_name(in.type));
  }

  void block(const Block& b, int depth) {
    for (const auto& s : b.stmts) {
      if (auto* in = std::get_if<Instr>(&s)) {
        line(depth, instr(*in));
      } else if (auto* st = std::get_if<StoreBuffer>(&s)) {
        line(depth, fmt::format("store {}[{}], {}", k.buffers[st->buffer].name, v(st->index), v(st->value)));
      } else if (auto* st = std::get_if<StoreShared>(&s)) {
        line(depth, fmt::format("store_shared {}[{}], {}", k.shared[st->array].name, v(st->index), v(st->value)));
      } else if (auto* st = std::get_if<LoadSharedVector>(&s)) {
        std::vector<std::string> results;
        for (ValueId r : st->results) results.push_back(v(r));
        line(depth, fmt::format("{} = load_shared_vector {}[{}] : {}", fmt::join(results, ", "), k.shared[st->array].name,
                                v(st->index), dtype_name(k.shared[st->array].elem)));
      } else if (auto* st = std::get_if<LoadBufferVector>(&s)) {
        std::vector<std::string> results;
        for (ValueId r : st->results) results.push_back(v(r));
        line(depth, fmt::format("{} = load_vector{} {}[{}] : {}", fmt::join(results, ", "), st->widen ? "_widened" : "",
                                k.buffers[st->buffer].name, v(st->index), dtype_name(k.buffers[st->buffer].elem)));
      } else if (auto* st = std::get_if<StoreVar>(&s)) {
        line(depth, fmt::format("storevar {}, {}", k.vars[st->var].name, v(st->value)));
      } else if (auto* st = std::get_if<MatrixFill>(&s)) {
        line(depth, fmt::format("matrix_fill {}, {}", k.fragments[st->fragment].name, v(st->value)));
      } else if (auto* st = std::get_if<MatrixLoad>(&s)) {
        line(depth, fmt::format("matrix_load {}, {}[{}] stride {}", k.fragments[st->fragment].name,
                                k.shared[st->array].name, v(st->index), st->stride));
      } else if (auto* st = std::get_if<MatrixStore>(&s)) {
        line(depth, fmt::format("matrix_store {}[{}] stride {}, {}", k.shared[st->array].name, v(st->index),
                                st->stride, k.fragments[st->fragment].name));
      } else if (auto* st = std::get_if<MatrixLoadTensor>(&s)) {
        line(depth, fmt::format("matrix_load_tensor {}, {}[{} + ({}, {}) of {} x {}]", k.fragments[st->fragment].name,
                                k.buffers[st->buffer].name, v(st->base), v(st->row), v(st->column), v(st->rows),
                                v(st->columns)));
      } else if (auto* st = std::get_if<MatrixStoreTensor>(&s)) {
        line(depth, fmt::format("matrix_store_tensor {}[{} + ({}, {}) of {} x {}], {}", k.buffers[st->buffer].name,
                                v(st->base), v(st->row), v(st->column), v(st->rows), v(st->columns),
                                k.fragments[st->fragment].name));
      } else if (auto* st = std::get_if<MatrixLoadPacked>(&s)) {
        line(depth, fmt::format("matrix_load_packed {}, {}[{}]", k.fragments[st->fragment].name,
                                k.buffers[st->buffer].name, v(st->index)));
      } else if (auto* st = std::get_if<MatrixStorePacked>(&s)) {
        line(depth, fmt::format("matrix_store_packed {}[{}], {}", k.buffers[st->buffer].name, v(st->index),
                                k.fragments[st->fragment].name));
      } else if (auto* st = std::get_if<MatrixMulAdd>(&s)) {
        const auto& f = k.fragments;
        line(depth, fmt::format("matrix_mul_add {} = {} x {} + {}", f[st->d].name, f[st->a].name, f[st->b].name,
                                f[st->c].name));
      } else if (auto* st = std::get_if<CopyToShared>(&s)) {
        line(depth, fmt::format("copy_to_shared {}[{}], {}[{}] if {}", k.shared[st->array].name, v(st->dst),
                                k.buffers[st->buffer].name, v(st->src), v(st->valid)));
      } else if (std::holds_alternative<CopyCommit>(s)) {
        line(depth, "copy_commit");
      } else if (auto* st = std::get_if<CopyWait>(&s)) {
        line(depth, fmt::format("copy_wait pending={}", st->pending));
      } else if (auto* st = std::get_if<WarpgroupMulAdd>(&s)) {
        auto operand = [&](const WarpgroupOperand& o) {
          return fmt::format("{}[{}] blocks k {} {} {}{}{}", k.shared[o.array].name, v(o.index), o.k_block_stride,
                             o.mn_major ? "mn" : "m/n", o.mn_block_stride, o.mn_major ? " mn-major" : "", o.swizzled ? " swizzled" : "");
        };
        line(depth, fmt::format("warpgroup_mul_add {} += {} x {}", k.fragments[st->acc].name, operand(st->a),
                                operand(st->b)));
      } else if (std::holds_alternative<WarpgroupCommit>(s)) {
        line(depth, "warpgroup_commit");
      } else if (auto* st = std::get_if<WarpgroupWait>(&s)) {
        line(depth, fmt::format("warpgroup_wait pending={}", st->pending));
      } else if (auto* st = std::get_if<TensorCopy>(&s)) {
        std::vector<std::string> coords;
        for (ValueId c : st->coords) coords.push_back(v(c));
        line(depth, fmt::format("tensor_copy {}[{}], {} at ({}) arrives at {}[{}]", k.shared[st->array].name, v(st->index),
                                k.tensor_maps[st->map].name, fmt::join(coords, ", "),
                                k.arrival_barriers[st->barriers].name, v(st->barrier)));
      } else if (auto* st = std::get_if<Arrive>(&s)) {
        line(depth, fmt::format("arrive {}[{}] expecting {} bytes", k.arrival_barriers[st->barriers].name, v(st->barrier),
                                st->expect_bytes));
      } else if (auto* st = std::get_if<AwaitPhase>(&s)) {
        line(depth, fmt::format("await_phase {}[{}] parity {}", k.arrival_barriers[st->barriers].name, v(st->barrier),
                                v(st->parity)));
      } else if (std::holds_alternative<Barrier>(s)) {
        line(depth, "barrier");
      } else if (std::holds_alternative<WaitForPriorKernels>(s)) {
        line(depth, "wait_for_prior_kernels");
      } else if (auto* st = std::get_if<If>(&s)) {
        line(depth, fmt::format("if {} {{", v(st->cond)));
        block(*st->then_body, depth + 1);
        if (st->else_body) {
          line(depth, "} else {");
          block(*st->else_body, depth + 1);
        }
        line(depth, "}");
      } else if (auto* st = std::get_if<For>(&s)) {
        line(depth, fmt::format("for {} = {} to {} step {} {{", k.vars[st->var].name, v(st->begin), v(st->end), v(st->step)));
        block(*st->body, depth + 1);
        line(depth, "}");
      }
    }
  }
};

}  // namespace

std::string print(const Kernel& k) {
  Printer p{k, {}};
  const auto& wg = k.workgroup_size;
  p.line(0, fmt::format("kernel {} workgroup({}, {}, {}) features({}){}{}", k.name, wg[0], wg[1], wg[2],
                        features_to_string(k.features),
                        k.min_workgroups_per_core ? fmt::format(" min_workgroups_per_core({})", k.min_workgroups_per_core) : "",
                        k.barriers_order_buffers ? "" : " barriers_order_workgroup_memory_only"));
  for (size_t i = 0; i < k.buffers.size(); ++i)
    p.line(1, fmt::format("buffer {}: {}[] {}  // binding {}", k.buffers[i].name, dtype_name(k.buffers[i].elem), access_name(k.buffers[i].access), i));
  auto offs = k.scalar_offsets();
  for (size_t i = 0; i < k.scalars.size(); ++i)
    p.line(1, fmt::format("scalar {}: {}  // offset {}", k.scalars[i].name, dtype_name(k.scalars[i].type), offs[i]));
  for (const auto& s : k.shared) p.line(1, fmt::format("shared {}: {}[{}]", s.name, dtype_name(s.elem), s.count));
  for (const auto& var : k.vars) p.line(1, fmt::format("var {}: {}", var.name, dtype_name(var.type)));
  for (const auto& f : k.fragments)
    p.line(1, fmt::format("fragment {}: {}{} {}[{}x{}]{}", f.name, f.workgroup ? "workgroup " : "",
                          matrix_use_name(f.use), dtype_name(f.elem),
                          f.use == MatrixUse::WarpgroupAccumulator ? kWarpgroupRows : f.rows, f.columns,
                          f.column_major ? " column-major" : ""));
  for (const auto& m : k.tensor_maps)
    p.line(1, fmt::format("tensor_map {}: {} extents [{}] strides [{}] box [{}]{}", m.name, k.buffers[m.buffer].name,
                          fmt::join(m.extents, ", "), fmt::join(m.strides, ", "), fmt::join(m.box, ", "),
                          m.swizzle_128 ? " swizzle-128" : ""));
  for (const auto& b : k.arrival_barriers)
    p.line(1, fmt::format("arrival_barriers {}: {} x {} arrivals", b.name, b.count, b.arrivals));
  if (k.prebuilt()) {
    // The words themselves are the kernel: their hash tells two modules apart (the plan deduplicates by text).
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (uint32_t w : k.spirv_module) h = (h ^ w) * 1099511628211ull;
    p.line(0, fmt::format("{{ prebuilt SPIR-V module: {} words, fnv1a {:016x} }}", k.spirv_module.size(), h));
    return p.out;
  }
  p.line(0, "{");
  p.block(k.body, 1);
  p.line(0, "}");
  return p.out;
}

}  // namespace spire::kir
