#include "bundle/bundle.h"

#include <set>
#include <utility>

#include <fmt/format.h>

namespace spire::bundle {

namespace {

constexpr uint64_t kMaxElements = uint64_t(1) << 40;  // far beyond any device, small enough to never overflow

}  // namespace

uint64_t TensorSpec::elements_at(int64_t batch) const {
  uint64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) n *= uint64_t(d == 0 && batched ? batch : shape[d]);
  return n;
}

void validate(const Bundle& b, const std::string& source) {
  auto fail = [&](const std::string& why) { throw BundleError(fmt::format("{}: invalid spire bundle: {}", source, why)); };
  if (b.max_batch < 0 || uint64_t(b.max_batch) > kMaxElements) fail(fmt::format("largest batch {}", b.max_batch));
  if (b.dynamic_batch && b.max_batch < 1) fail("a dynamic batch without a largest batch");
  std::set<std::string> names;
  for (const auto* list : {&b.inputs, &b.outputs})
    for (const TensorSpec& t : *list) {
      if (t.name.empty() || !names.insert(t.name).second) fail(fmt::format("tensor name '{}' empty or repeated", t.name));
      if (t.shape.size() > 8) fail(fmt::format("'{}' has {} dimensions (at most 8)", t.name, t.shape.size()));
      uint64_t n = 1;
      for (int64_t d : t.shape) {
        if (d < 0 || uint64_t(d) > kMaxElements || (d > 0 && n > kMaxElements / uint64_t(d)))
          fail(fmt::format("'{}' has a dimension of {}", t.name, d));
        n *= uint64_t(d);
      }
      if (t.batched && (t.shape.empty() || t.shape[0] != b.max_batch))
        fail(fmt::format("'{}' is batched but its first dimension is not the largest batch {}", t.name, b.max_batch));
    }
  for (const Weight& w : b.weights)
    if (dtype_bytes(w.type) == 0 || w.data().size() % dtype_bytes(w.type))
      fail(fmt::format("weight '{}' holds {} bytes of {}", w.name, w.data().size(), dtype_name(w.type)));

  // One plan per target and batch (several PTX targets may share a format: the session runs the newest it can).
  std::set<std::pair<std::string, int64_t>> seen;
  for (const DevicePlan& p : b.plans) {
    const std::string where = fmt::format("plan '{}' batch {}", p.target, p.batch);
    auto pfail = [&](const std::string& why) { fail(fmt::format("{}: {}", where, why)); };
    if (!seen.insert({p.target, p.batch}).second) pfail("appears twice");
    if (b.max_batch ? (p.batch < 1 || p.batch > b.max_batch) : p.batch != 0) pfail("batch out of range");
    if (p.arena_bytes > kMaxElements) pfail(fmt::format("arena of {} bytes", p.arena_bytes));
    for (const BufferSpec& s : p.buffers) {
      if (dtype_bytes(s.type) == 0 || s.elements > kMaxElements) pfail(fmt::format("buffer '{}' type or size", s.name));
      if (s.role == BufferRole::Transient && s.arena_offset >= 0 &&
          (s.arena_offset % 4 || uint64_t(s.arena_offset) > p.arena_bytes || s.bytes() > p.arena_bytes - uint64_t(s.arena_offset)))
        pfail(fmt::format("buffer '{}' lies outside the arena", s.name));
      if (s.role == BufferRole::Parameter) {
        if (s.weight < 0 || size_t(s.weight) >= b.weights.size()) pfail(fmt::format("parameter '{}' has no weight", s.name));
        const Weight& w = b.weights[size_t(s.weight)];
        if (w.type != s.type || w.data().size() != s.bytes())
          pfail(fmt::format("parameter '{}' ({} bytes of {}) and its weight '{}' ({} bytes of {}) differ", s.name, s.bytes(),
                            dtype_name(s.type), w.name, w.data().size(), dtype_name(w.type)));
      }
    }
    for (const rt::KernelBinary& k : p.kernels) {
      if (k.format != p.format) pfail(fmt::format("kernel '{}' is in another format", k.interface.name));
      if (k.format == rt::BinaryFormat::Spirv ? (k.spirv.size() < 5 || k.spirv[0] != 0x07230203u)
                                              : (k.ptx.empty() || k.entry.empty()))
        pfail(fmt::format("kernel '{}' holds no {} module", k.interface.name, k.format == rt::BinaryFormat::Spirv ? "SPIR-V" : "PTX"));
      for (uint32_t d : k.interface.workgroup_size)
        if (d == 0 || d > 1024) pfail(fmt::format("kernel '{}' has workgroup size {}", k.interface.name, d));
      for (const auto& s : k.interface.scalars)
        if (s.type == DType::Bool) pfail(fmt::format("kernel '{}' takes a bool scalar", k.interface.name));
      for (const auto& s : k.interface.buffers)
        if (s.elem == DType::Bool) pfail(fmt::format("kernel '{}' binds a buffer of bools", k.interface.name));
      for (const auto& m : k.interface.tensor_maps)
        if (m.buffer >= k.interface.buffers.size() || m.extents.empty() || m.extents.size() > 3)
          pfail(fmt::format("kernel '{}' has a malformed tensor map '{}'", k.interface.name, m.name));
      if (k.interface.dynamic_shared_bytes > k.interface.shared_bytes)
        pfail(fmt::format("kernel '{}' passes more dynamic workgroup memory than it uses", k.interface.name));
    }
    for (const LaunchSpec& l : p.launches) {
      if (l.kernel >= p.kernels.size()) pfail(fmt::format("launch '{}' names kernel {}", l.node, l.kernel));
      const rt::KernelInterface& sig = p.kernels[l.kernel].interface;
      if (l.buffers.size() != sig.buffers.size())
        pfail(fmt::format("launch '{}' binds {} buffers, kernel '{}' takes {}", l.node, l.buffers.size(), sig.name,
                          sig.buffers.size()));
      for (uint32_t i : l.buffers) {
        if (i >= p.buffers.size()) pfail(fmt::format("launch '{}' binds buffer {}", l.node, i));
        const BufferSpec& s = p.buffers[i];
        if (s.role == BufferRole::Transient && s.arena_offset < 0)
          pfail(fmt::format("launch '{}' binds buffer '{}', which has no place in the arena", l.node, s.name));
      }
      // What runs only in a plan's first run may leave results only in the arena, where nothing else writes them.
      if (l.parameters_only)
        for (size_t i = 0; i < l.buffers.size(); ++i)
          if (sig.buffers[i].access != Access::Read && p.buffers[l.buffers[i]].role != BufferRole::Transient)
            pfail(fmt::format("launch '{}' runs only once but writes buffer '{}'", l.node, p.buffers[l.buffers[i]].name));
      if (l.scalars.size() != sig.scalar_block_bytes())
        pfail(fmt::format("launch '{}' passes {} scalar bytes, kernel '{}' takes {}", l.node, l.scalars.size(), sig.name,
                          sig.scalar_block_bytes()));
    }
    for (const CopySpec& c : p.copies)
      if (c.from >= p.buffers.size() || c.to >= p.buffers.size() || c.from == c.to ||
          p.buffers[c.from].bytes() < p.buffers[c.to].bytes() || p.buffers[c.to].role == BufferRole::Transient ||
          p.buffers[c.from].role == BufferRole::Transient)
        pfail(fmt::format("state copy {} -> {}", c.from, c.to));
    if (p.input_buffers.size() != b.inputs.size() || p.output_buffers.size() != b.outputs.size())
      pfail("its inputs or outputs differ from the bundle's");
    const int64_t batch = p.batch;
    for (int io = 0; io < 2; ++io) {
      const auto& specs = io == 0 ? b.inputs : b.outputs;
      const auto& bufs = io == 0 ? p.input_buffers : p.output_buffers;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (bufs[i] >= p.buffers.size()) pfail(fmt::format("'{}' names buffer {}", specs[i].name, bufs[i]));
        const BufferSpec& s = p.buffers[bufs[i]];
        if (s.role == BufferRole::Transient) pfail(fmt::format("'{}' is kept in the arena", specs[i].name));
        if (s.elements != specs[i].elements_at(batch))
          pfail(fmt::format("'{}' has {} elements, its buffer {}", specs[i].name, specs[i].elements_at(batch), s.elements));
      }
    }
  }
}

}  // namespace spire::bundle
