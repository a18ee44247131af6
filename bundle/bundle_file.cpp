#include "bundle/bundle_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <climits>
#include <unistd.h>

#include <fmt/format.h>

#include "base/parallel_for.h"
#include "bundle/byte_io.h"
#include "bundle/mapped_file.h"
#include "runtime/startup_profile.h"

namespace spire::bundle {

namespace {

constexpr char kMagic[8] = {'S', 'P', 'I', 'R', 'E', '\0', 'B', 'N'};

// ---- writing

void write_interface(ByteWriter& w, const rt::KernelInterface& k) {
  w.str(k.name);
  for (uint32_t d : k.workgroup_size) w.u32(d);
  w.u32(k.features.bits);
  w.u64(k.buffers.size());
  for (const auto& b : k.buffers) {
    w.str(b.name);
    w.u8(uint8_t(b.elem));
    w.u8(uint8_t(b.access));
    w.u8(b.read_before_wait ? 1 : 0);
  }
  w.u64(k.scalars.size());
  for (const auto& s : k.scalars) {
    w.str(s.name);
    w.u8(uint8_t(s.type));
  }
  w.u64(k.tensor_maps.size());
  for (const auto& m : k.tensor_maps) {
    w.str(m.name);
    w.u32(m.buffer);
    w.u64(m.extents.size());
    for (uint64_t e : m.extents) w.u64(e);
    for (uint64_t st : m.strides) w.u64(st);
    for (uint32_t b : m.box) w.u32(b);
    w.u8(m.swizzle_128 ? 1 : 0);
  }
  w.u32(k.shared_bytes);
  w.u32(k.dynamic_shared_bytes);
}

void write_binary(ByteWriter& w, const rt::KernelBinary& b) {
  write_interface(w, b.interface);
  w.u8(uint8_t(b.format));
  w.u64(b.spirv.size());
  w.raw(b.spirv.data(), b.spirv.size() * 4);
  w.str(b.ptx);
  w.str(b.entry);
  w.u32(b.ptx_sm);
}

void write_tensor_spec(ByteWriter& w, const TensorSpec& t) {
  w.str(t.name);
  w.u8(uint8_t(t.dtype));
  w.u64(t.shape.size());
  for (int64_t d : t.shape) w.i64(d);
  w.u8(t.batched ? 1 : 0);
}

void write_plan(ByteWriter& w, const DevicePlan& p) {
  w.u8(uint8_t(p.format));
  w.u32(p.ptx_sm);
  w.str(p.target);
  w.i64(p.batch);
  w.u64(p.arena_bytes);
  w.u64(p.buffers.size());
  for (const auto& b : p.buffers) {
    w.str(b.name);
    w.u8(uint8_t(b.type));
    w.u64(b.elements);
    w.u8(uint8_t(b.role));
    w.i64(b.arena_offset);
    w.u8(b.fill ? 1 : 0);
    w.f64(b.fill.value_or(0));
    w.i64(b.weight);
  }
  w.u64(p.kernels.size());
  for (const auto& k : p.kernels) write_binary(w, k);
  w.u64(p.launches.size());
  for (const auto& l : p.launches) {
    w.u32(l.kernel);
    w.u64(l.buffers.size());
    for (uint32_t b : l.buffers) w.u32(b);
    w.bytes(l.scalars);
    w.u64(l.groups);
    w.str(l.node);
    w.u8(l.parameters_only ? 1 : 0);
  }
  w.u64(p.copies.size());
  for (const auto& c : p.copies) {
    w.u32(c.from);
    w.u32(c.to);
  }
  for (const auto* list : {&p.input_buffers, &p.output_buffers}) {
    w.u64(list->size());
    for (uint32_t b : *list) w.u32(b);
  }
}

// ---- reading: every enum is range-checked here, every cross-reference in validate().

template <typename E>
E read_enum(ByteReader& r, uint8_t last, const char* what) {
  const uint8_t v = r.u8();
  if (v > last) r.fail(fmt::format("{} {} is not one this runtime knows", what, v));
  return E(v);
}

DType read_type(ByteReader& r) { return read_enum<DType>(r, uint8_t(DType::BF16), "element type"); }

rt::KernelInterface read_interface(ByteReader& r, uint32_t version) {
  rt::KernelInterface k;
  k.name = r.str();
  for (uint32_t& d : k.workgroup_size) d = r.u32();
  k.features.bits = r.u32();
  for (uint64_t n = r.count(10, "kernel buffers"), i = 0; i < n; ++i) {
    rt::KernelInterface::Buffer b;
    b.name = r.str();
    b.elem = read_type(r);
    b.access = read_enum<Access>(r, uint8_t(Access::ReadWrite), "buffer access");
    if (version >= 8) {
      const uint8_t early = r.u8();
      if (early > 1) r.fail(fmt::format("buffer {}: read-before-wait flag {}", b.name, early));
      b.read_before_wait = early != 0;
    }
    k.buffers.push_back(std::move(b));
  }
  for (uint64_t n = r.count(9, "kernel scalars"), i = 0; i < n; ++i) {
    rt::KernelInterface::Scalar s;
    s.name = r.str();
    s.type = read_type(r);
    k.scalars.push_back(std::move(s));
  }
  for (uint64_t n = r.count(13, "tensor maps"), i = 0; i < n; ++i) {
    rt::KernelInterface::TensorMap m;
    m.name = r.str();
    m.buffer = r.u32();
    const uint64_t rank = r.count(8, "tensor map dimensions");
    for (uint64_t d = 0; d < rank; ++d) m.extents.push_back(r.u64());
    for (uint64_t d = 1; d < rank; ++d) m.strides.push_back(r.u64());
    for (uint64_t d = 0; d < rank; ++d) m.box.push_back(r.u32());
    m.swizzle_128 = r.u8() != 0;
    k.tensor_maps.push_back(std::move(m));
  }
  k.shared_bytes = r.u32();
  k.dynamic_shared_bytes = r.u32();
  return k;
}

rt::KernelBinary read_binary(ByteReader& r, uint32_t version) {
  rt::KernelBinary b;
  b.interface = read_interface(r, version);
  b.format = read_enum<rt::BinaryFormat>(r, uint8_t(rt::BinaryFormat::Ptx), "binary format");
  const uint64_t words = r.count(4, "SPIR-V words");
  b.spirv.resize(size_t(words));
  r.raw(b.spirv.data(), size_t(words) * 4);
  b.ptx = r.str();
  b.entry = r.str();
  b.ptx_sm = r.u32();
  return b;
}

TensorSpec read_tensor_spec(ByteReader& r) {
  TensorSpec t;
  t.name = r.str();
  t.dtype = read_type(r);
  for (uint64_t n = r.count(8, "dimensions"), i = 0; i < n; ++i) t.shape.push_back(r.i64());
  t.batched = r.u8() != 0;
  return t;
}

DevicePlan read_plan(ByteReader& r, uint32_t version) {
  DevicePlan p;
  p.format = read_enum<rt::BinaryFormat>(r, uint8_t(rt::BinaryFormat::Ptx), "plan format");
  p.ptx_sm = r.u32();
  p.target = r.str();
  p.batch = r.i64();
  p.arena_bytes = r.u64();
  for (uint64_t n = r.count(44, "buffers"), i = 0; i < n; ++i) {
    BufferSpec b;
    b.name = r.str();
    b.type = read_type(r);
    b.elements = r.u64();
    b.role = read_enum<BufferRole>(r, uint8_t(BufferRole::Output), "buffer role");
    b.arena_offset = r.i64();
    const bool has_fill = r.u8() != 0;
    const double fill = r.f64();
    if (has_fill) b.fill = fill;
    const int64_t weight = r.i64();
    if (weight < -1 || weight > INT32_MAX) r.fail(fmt::format("buffer '{}' names weight {}", b.name, weight));
    b.weight = int32_t(weight);
    p.buffers.push_back(std::move(b));
  }
  for (uint64_t n = r.count(40, "kernels"), i = 0; i < n; ++i) p.kernels.push_back(read_binary(r, version));
  for (uint64_t n = r.count(37, "launches"), i = 0; i < n; ++i) {
    LaunchSpec l;
    l.kernel = r.u32();
    for (uint64_t m = r.count(4, "launch buffers"), j = 0; j < m; ++j) l.buffers.push_back(r.u32());
    l.scalars = r.bytes();
    l.groups = r.u64();
    l.node = r.str();
    const uint8_t once = r.u8();
    if (once > 1) r.fail(fmt::format("launch '{}' runs only once or not: {}", l.node, once));
    l.parameters_only = once == 1;
    p.launches.push_back(std::move(l));
  }
  for (uint64_t n = r.count(8, "copies"), i = 0; i < n; ++i) {
    CopySpec c;
    c.from = r.u32();
    c.to = r.u32();
    p.copies.push_back(c);
  }
  for (auto* list : {&p.input_buffers, &p.output_buffers})
    for (uint64_t n = r.count(4, "io buffers"), i = 0; i < n; ++i) list->push_back(r.u32());
  return p;
}

}  // namespace

uint64_t fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

// Version 6's checksum: FNV-1a 64 in eight lanes over little-endian 8-byte words, folded with the tail.
uint64_t wide_checksum(std::span<const uint8_t> bytes) {
  constexpr size_t kLanes = 8;
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t lane[kLanes];
  for (size_t l = 0; l < kLanes; ++l) lane[l] = 0xcbf29ce484222325ull + l;  // distinct starts: lanes do not commute
  const size_t groups = bytes.size() / (8 * kLanes);
  const uint8_t* p = bytes.data();
  for (size_t g = 0; g < groups; ++g, p += 8 * kLanes)
    for (size_t l = 0; l < kLanes; ++l) {
      uint64_t word;
      std::memcpy(&word, p + 8 * l, 8);  // little-endian hosts only, as the rest of the format
      lane[l] = (lane[l] ^ word) * kPrime;
    }
  std::vector<uint8_t> fold(sizeof lane);
  std::memcpy(fold.data(), lane, sizeof lane);
  fold.insert(fold.end(), p, bytes.data() + bytes.size());
  return fnv1a64(fold);
}

// Version 9's: the wide checksum of each chunk, computed on the host's cores at once, the chunks' sums folded in order.
uint64_t chunked_checksum(std::span<const uint8_t> payload) {
  const size_t chunks = std::max<size_t>(1, (payload.size() + kChecksumChunkBytes - 1) / kChecksumChunkBytes);
  std::vector<uint64_t> sums(chunks);
  parallel_for(int64_t(chunks), int64_t(kChecksumChunkBytes), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const size_t at = size_t(c) * kChecksumChunkBytes;
      sums[size_t(c)] = wide_checksum(payload.subspan(at, std::min(kChecksumChunkBytes, payload.size() - at)));
    }
  });
  std::vector<uint8_t> fold(sums.size() * 8);
  std::memcpy(fold.data(), sums.data(), fold.size());
  return fnv1a64(fold);
}

}  // namespace

uint64_t payload_checksum(std::span<const uint8_t> payload, uint32_t version) {
  if (version < 6) return fnv1a64(payload);
  if (version < 9) return wide_checksum(payload);
  return chunked_checksum(payload);
}

std::vector<uint8_t> serialize(const Bundle& b) {
  ByteWriter w;
  w.str(b.model);
  w.str(b.producer);
  for (const auto* list : {&b.inputs, &b.outputs}) {
    w.u64(list->size());
    for (const auto& t : *list) write_tensor_spec(w, t);
  }
  w.i64(b.max_batch);
  w.u8(b.dynamic_batch ? 1 : 0);
  w.u8(uint8_t(b.precision));
  w.u64(b.weights.size());
  for (const auto& wt : b.weights) {
    w.str(wt.name);
    w.u8(uint8_t(wt.type));
    w.bytes(wt.data());
  }
  w.u64(b.plans.size());
  for (const auto& p : b.plans) write_plan(w, p);
  w.str(b.source_graph);
  for (const auto* names : {&b.input_graph_names, &b.output_graph_names}) {
    w.u64(names->size());
    for (const std::string& n : *names) w.str(n);
  }

  const std::vector<uint8_t>& payload = w.data();
  ByteWriter file;
  file.raw(kMagic, sizeof kMagic);
  file.u32(kBundleFormatVersion);
  file.u32(0);
  file.u64(payload.size());
  file.u64(payload_checksum(payload, kBundleFormatVersion));
  file.raw(payload.data(), payload.size());
  return std::move(file.data());
}

Bundle parse_bundle(std::span<const uint8_t> bytes, const std::string& source, std::shared_ptr<const void> keep_alive) {
  rt::startup::PhaseTimer phase("bundle checked and parsed");
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw BundleError(fmt::format("{}: not a spire bundle (it does not start with a spire bundle's magic bytes)", source));
  if (bytes.size() < kBundleHeaderBytes)
    throw BundleError(fmt::format("{}: truncated spire bundle ({} bytes, shorter than its {}-byte header)", source,
                                  bytes.size(), kBundleHeaderBytes));
  ByteReader header(bytes.subspan(sizeof kMagic, kBundleHeaderBytes - sizeof kMagic), source);
  const uint32_t version = header.u32();
  header.u32();
  const uint64_t length = header.u64();
  const uint64_t checksum = header.u64();
  if (version < kOldestBundleFormatVersion || version > kBundleFormatVersion)
    throw BundleError(fmt::format("{}: spire bundle format version {}, but this runtime reads versions {} to {}: compile "
                                  "the model again with the spire that matches this runtime",
                                  source, version, kOldestBundleFormatVersion, kBundleFormatVersion));
  const uint64_t have = bytes.size() - kBundleHeaderBytes;
  if (length != have)
    throw BundleError(fmt::format("{}: {} spire bundle: its header promises {} bytes of payload, the file holds {}",
                                  source, have < length ? "truncated" : "damaged", length, have));
  const auto payload = bytes.subspan(kBundleHeaderBytes);
  if (payload_checksum(payload, version) != checksum)
    throw BundleError(fmt::format("{}: corrupt spire bundle: the checksum of its payload does not match its header "
                                  "(the file was changed or damaged after it was written)", source));
  ByteReader r(payload, source);
  Bundle b;
  b.model = r.str();
  b.producer = r.str();
  for (auto* list : {&b.inputs, &b.outputs})
    for (uint64_t n = r.count(26, "tensors"), i = 0; i < n; ++i) list->push_back(read_tensor_spec(r));
  b.max_batch = r.i64();
  b.dynamic_batch = r.u8() != 0;
  if (version >= 5) {
    const uint8_t p = r.u8();
    if (p > uint8_t(Precision::F16)) r.fail(fmt::format("unknown precision policy {}", p));
    b.precision = Precision(p);
  }
  for (uint64_t n = r.count(17, "weights"), i = 0; i < n; ++i) {
    Weight wt;
    wt.name = r.str();
    wt.type = read_type(r);
    if (keep_alive)
      wt.mapped = r.byte_view();
    else
      wt.bytes = r.bytes();
    b.weights.push_back(std::move(wt));
  }
  for (uint64_t n = r.count(64, "plans"), i = 0; i < n; ++i) b.plans.push_back(read_plan(r, version));
  if (version >= 7) {
    b.source_graph = r.str();
    for (auto* names : {&b.input_graph_names, &b.output_graph_names})
      for (uint64_t n = r.count(8, "graph names"), i = 0; i < n; ++i) names->push_back(r.str());
    if (!b.source_graph.empty() &&
        (b.input_graph_names.size() != b.inputs.size() || b.output_graph_names.size() != b.outputs.size()))
      r.fail("the source graph's names do not match the inputs and outputs");
  }
  if (r.left()) r.fail(fmt::format("{} bytes follow the {}", r.left(), version >= 7 ? "source graph" : "last plan"));
  validate(b, source);
  b.file = std::move(keep_alive);
  phase.detail(fmt::format("checksum (format {}) of {:.1f} MB, {} plans, {} weights{}", version, double(length) / 1e6,
                           b.plans.size(), b.weights.size(), b.file ? " left in the mapped file" : " copied"));
  return b;
}

Bundle read_bundle(const std::string& path) {
  rt::startup::PhaseTimer phase("bundle file mapped");
  auto file = std::make_shared<const MappedFile>(path);
  phase.detail(fmt::format("{:.1f} MB, mmap", double(file->bytes().size()) / 1e6));
  phase.record();
  const std::span<const uint8_t> bytes = file->bytes();
  return parse_bundle(bytes, path, std::move(file));
}

void write_bundle(const std::string& path, const Bundle& b) {
  const std::vector<uint8_t> bytes = serialize(b);
  const std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw BundleError(fmt::format("{}: cannot write the bundle (disk full or no permission?)", path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw BundleError(fmt::format("{}: cannot write the bundle: {}", path, ec.message()));
  }
}

}  // namespace spire::bundle
