// The bundle file format: what is written is read back field for field, and every kind of damage is refused
// with a message that names it (bundle/bundle_file.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bundle/bundle_file.h"
#include "tests/bundle/sample_bundle.h"

namespace spire::bundle {
namespace {

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    parse_bundle(bytes, "m.spire");
  } catch (const BundleError& e) {
    return e.what();
  }
  return "";
}

// Rewrites the header's checksum after a change to the payload (or the version), so the change reaches the parser.
void reseal(std::vector<uint8_t>& bytes) {
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  const uint64_t sum = payload_checksum(std::span<const uint8_t>(bytes).subspan(kBundleHeaderBytes), version);
  std::memcpy(bytes.data() + 24, &sum, 8);
}

// The bytes of `b` as an older format `version` writes them: before 8 without the kernels' read-before-wait flags
// (found as the bytes that change when every flag is set), before 7 also without the source graph's section at the
// end (an empty string and two empty name lists, 24 bytes, in the sample); the header's version and length set.
std::vector<uint8_t> as_older_version(const Bundle& b, uint32_t version) {
  std::vector<uint8_t> bytes = serialize(b);
  if (version < 8) {
    auto with_flags = [&](bool on) {
      Bundle flagged = b;
      for (DevicePlan& p : flagged.plans)
        for (rt::KernelBinary& k : p.kernels)
          for (rt::KernelInterface::Buffer& buf : k.interface.buffers) buf.read_before_wait = on;
      return serialize(flagged);
    };
    const std::vector<uint8_t> set = with_flags(true), unset = with_flags(false);
    EXPECT_EQ(set.size(), bytes.size());
    for (size_t i = bytes.size(); i-- > kBundleHeaderBytes;)
      if (set[i] != unset[i]) bytes.erase(bytes.begin() + ptrdiff_t(i));
  }
  if (version < 7) {
    EXPECT_TRUE(std::all_of(bytes.end() - 24, bytes.end(), [](uint8_t c) { return c == 0; })) << "not an empty section";
    bytes.resize(bytes.size() - 24);
  }
  const uint64_t length = bytes.size() - kBundleHeaderBytes;
  std::memcpy(bytes.data() + 8, &version, 4);
  std::memcpy(bytes.data() + 16, &length, 8);
  return bytes;
}

TEST(BundleFormat, RoundTripsEveryField) {
  const Bundle b = testing_support::sample_bundle();
  const Bundle r = parse_bundle(serialize(b), "m.spire");
  EXPECT_EQ(r.model, "sample.onnx");
  EXPECT_EQ(r.max_batch, 4);
  EXPECT_TRUE(r.dynamic_batch);
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_TRUE(r.inputs[0].batched);
  ASSERT_EQ(r.weights.size(), 1u);
  EXPECT_EQ(r.weights[0].bytes, std::vector<uint8_t>(24, 1));
  ASSERT_EQ(r.plans.size(), 4u);
  const DevicePlan& p = r.plans[3];
  EXPECT_EQ(p.format, rt::BinaryFormat::Ptx);
  EXPECT_EQ(p.batch, 4);
  EXPECT_EQ(p.buffers[4].fill, std::optional<double>(1.0));
  EXPECT_EQ(p.buffers[1].weight, 0);
  EXPECT_EQ(p.buffers[2].arena_offset, 0);
  EXPECT_EQ(p.kernels[0].interface.scalars.size(), 2u);
  EXPECT_EQ(p.kernels[0].interface.scalars[1].type, DType::F64);
  EXPECT_EQ(p.kernels[0].ptx, ".version 6.3\n.target sm_75\n");
  EXPECT_EQ(p.launches[1].buffers, (std::vector<uint32_t>{2, 1, 3}));
  EXPECT_TRUE(p.launches[0].parameters_only);
  EXPECT_FALSE(p.launches[1].parameters_only);
  EXPECT_EQ(r.plans[0].kernels[0].spirv, (std::vector<uint32_t>{0x07230203u, 0x00010300u, 0, 10, 0}));
  EXPECT_EQ(serialize(r), serialize(b));
}

// Format 8: a kernel's buffers say whether it reads them before its wait for the kernel before it; a version 7
// bundle (without the flags) reads as none read early, and a flag other than 0 or 1 is refused.
TEST(BundleFormat, KeepsWhichBuffersAKernelReadsBeforeItsWait) {
  Bundle b = testing_support::sample_bundle();
  b.plans[3].kernels[0].interface.buffers[1].read_before_wait = true;
  const std::vector<uint8_t> bytes = serialize(b);
  const Bundle r = parse_bundle(bytes, "m.spire");
  EXPECT_FALSE(r.plans[3].kernels[0].interface.buffers[0].read_before_wait);
  EXPECT_TRUE(r.plans[3].kernels[0].interface.buffers[1].read_before_wait);

  std::vector<uint8_t> v7 = as_older_version(b, 7);
  reseal(v7);
  const Bundle old = parse_bundle(v7, "m.spire");
  for (const DevicePlan& p : old.plans)
    for (const rt::KernelBinary& k : p.kernels)
      for (const auto& buf : k.interface.buffers) EXPECT_FALSE(buf.read_before_wait) << buf.name;
  EXPECT_EQ(old.model, "sample.onnx");

  const std::vector<uint8_t> unflagged = serialize(testing_support::sample_bundle());
  std::vector<uint8_t> bad = bytes;
  for (size_t i = kBundleHeaderBytes; i < bad.size(); ++i)
    if (bad[i] != unflagged[i]) bad[i] = 7;
  reseal(bad);
  EXPECT_NE(error_of(bad).find("read-before-wait flag 7"), std::string::npos) << error_of(bad);
}

// Format 7 keeps the source graph and its names for the inputs and outputs; names that do not match the inputs and
// outputs are refused.
TEST(BundleFormat, KeepsTheSourceGraph) {
  Bundle b = testing_support::sample_bundle();
  b.source_graph = "x = input() : f32[4,3]\noutput y = x\n";
  b.input_graph_names = {"x"};
  b.output_graph_names = {"y"};
  const Bundle r = parse_bundle(serialize(b), "m.spire");
  EXPECT_EQ(r.source_graph, b.source_graph);
  EXPECT_EQ(r.input_graph_names, b.input_graph_names);
  EXPECT_EQ(r.output_graph_names, b.output_graph_names);
  b.output_graph_names.clear();
  EXPECT_NE(error_of(serialize(b)).find("the source graph's names do not match the inputs and outputs"), std::string::npos)
      << error_of(serialize(b));
}

TEST(BundleFormat, RefusesWhatIsNotABundle) {
  EXPECT_NE(error_of({}).find("not a spire bundle"), std::string::npos);
  const std::string onnx = "\x08\x07\x12\x07pytorch";
  EXPECT_NE(error_of(std::vector<uint8_t>(onnx.begin(), onnx.end())).find("not a spire bundle"), std::string::npos);
}

TEST(BundleFormat, RefusesATruncatedBundle) {
  std::vector<uint8_t> bytes = serialize(testing_support::sample_bundle());
  for (size_t keep : {size_t(10), kBundleHeaderBytes, bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + ptrdiff_t(keep));
    EXPECT_NE(error_of(cut).find("truncated"), std::string::npos) << keep << ": " << error_of(cut);
  }
}

TEST(BundleFormat, RefusesAnotherFormatVersionNamingBoth) {
  std::vector<uint8_t> bytes = serialize(testing_support::sample_bundle());
  const uint32_t v = kBundleFormatVersion + 1;
  std::memcpy(bytes.data() + 8, &v, 4);
  const std::string e = error_of(bytes);
  EXPECT_NE(e.find(fmt::format("format version {}", v)), std::string::npos) << e;
  EXPECT_NE(e.find(fmt::format("reads versions {} to {}", kOldestBundleFormatVersion, kBundleFormatVersion)),
            std::string::npos)
      << e;
  const uint32_t old = kOldestBundleFormatVersion - 1;
  std::memcpy(bytes.data() + 8, &old, 4);
  EXPECT_NE(error_of(bytes).find(fmt::format("format version {}", old)), std::string::npos) << error_of(bytes);
}

// The precision policy a bundle was compiled under is read back; a version 4 bundle (before the field) reads as fp32,
// the only policy there was. The field's byte is found as the one where a tf32 bundle differs from an fp32 one.
TEST(BundleFormat, RecordsThePrecisionPolicyAndReadsVersion4AsFp32) {
  Bundle b = testing_support::sample_bundle();
  EXPECT_EQ(b.precision, Precision::Fp32);
  const std::vector<uint8_t> fp32 = serialize(b);
  b.precision = Precision::Tf32;
  const std::vector<uint8_t> tf32 = serialize(b);
  EXPECT_EQ(parse_bundle(tf32, "m.spire").precision, Precision::Tf32);
  EXPECT_EQ(parse_bundle(fp32, "m.spire").precision, Precision::Fp32);
  ASSERT_EQ(fp32.size(), tf32.size());
  std::vector<size_t> differ;
  for (size_t i = kBundleHeaderBytes; i < fp32.size(); ++i)
    if (fp32[i] != tf32[i]) differ.push_back(i);
  ASSERT_EQ(differ.size(), 1u);

  std::vector<uint8_t> v4 = as_older_version(testing_support::sample_bundle(), 4);
  v4.erase(v4.begin() + ptrdiff_t(differ[0]));  // (the flags come after the policy's byte)
  const uint64_t v4_length = v4.size() - kBundleHeaderBytes;
  std::memcpy(v4.data() + 16, &v4_length, 8);
  reseal(v4);
  const Bundle r = parse_bundle(v4, "m.spire");
  EXPECT_EQ(r.precision, Precision::Fp32);
  EXPECT_EQ(r.model, "sample.onnx");
  EXPECT_EQ(serialize(r), fp32);  // written back as the current version, its source graph empty

  std::vector<uint8_t> unknown = tf32;
  unknown[differ[0]] = 9;
  reseal(unknown);
  EXPECT_NE(error_of(unknown).find("unknown precision policy 9"), std::string::npos) << error_of(unknown);
}

// Version 5 bundles carry the byte-serial FNV-1a 64 checksum and are still read; a version 6 header over it is refused.
TEST(BundleFormat, ReadsVersion5WithItsByteSerialChecksum) {
  std::vector<uint8_t> bytes = serialize(testing_support::sample_bundle());
  const auto payload = std::span<const uint8_t>(bytes).subspan(kBundleHeaderBytes);
  EXPECT_NE(payload_checksum(payload, 6), fnv1a64(payload));
  bytes = as_older_version(testing_support::sample_bundle(), 5);
  EXPECT_NE(error_of(bytes).find("checksum"), std::string::npos) << error_of(bytes);
  reseal(bytes);
  EXPECT_EQ(error_of(bytes), "");
  EXPECT_EQ(parse_bundle(bytes, "m.spire").model, "sample.onnx");
}

// The wide checksum (versions 6 to 8, and each chunk's from 9) sees a change in any byte: in each lane's words, in the bytes after the last group of words, and
// two changes that would cancel in a plain sum of words.
TEST(BundleFormat, WideChecksumSeesEveryByte) {
  std::vector<uint8_t> payload(64 * 3 + 13);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7 + 1);
  const uint64_t sum = payload_checksum(payload, 8);
  for (size_t at = 0; at < payload.size(); ++at) {
    std::vector<uint8_t> changed = payload;
    changed[at] ^= 0x01;
    EXPECT_NE(payload_checksum(changed, 8), sum) << at;
  }
  std::vector<uint8_t> swapped = payload;  // words 0 and 1 (lanes 0 and 1) exchanged
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(payload_checksum(swapped, 8), sum);
}

// Version 8 bundles carry the one-core wide checksum over the whole payload and are still read; a version 9 header
// over it is refused.
TEST(BundleFormat, ReadsVersion8WithItsOneCoreChecksum) {
  std::vector<uint8_t> bytes = as_older_version(testing_support::sample_bundle(), 8);
  EXPECT_NE(error_of(bytes).find("checksum"), std::string::npos) << error_of(bytes);
  reseal(bytes);
  EXPECT_EQ(error_of(bytes), "");
  EXPECT_EQ(parse_bundle(bytes, "m.spire").model, "sample.onnx");
}

// Version 9's checksum is version 8's of each 1 MiB chunk, folded in order, whatever threads computed them: over 9 MiB
// and a tail (parallel_for then takes two threads or more), a changed byte anywhere, at either end of a chunk or in the
// short last one, and two chunks swapped, change it.
TEST(BundleFormat, ChunkedChecksumSeesEveryChunkInOrder) {
  const size_t chunk = kChecksumChunkBytes;
  std::vector<uint8_t> payload(9 * chunk + 77);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint8_t& b : payload) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = uint8_t(x >> 24);
  }
  const std::span<const uint8_t> all(payload);
  std::vector<uint8_t> fold;
  for (size_t at = 0; at < payload.size(); at += chunk) {
    const uint64_t sum = payload_checksum(all.subspan(at, std::min(chunk, payload.size() - at)), 8);
    for (int i = 0; i < 8; ++i) fold.push_back(uint8_t(sum >> (8 * i)));
  }
  const uint64_t sum = payload_checksum(payload, 9);
  EXPECT_EQ(sum, fnv1a64(fold));
  EXPECT_NE(sum, payload_checksum(payload, 8));
  for (size_t at : {size_t(0), chunk - 1, chunk, 4 * chunk + 12345, 9 * chunk - 1, 9 * chunk, payload.size() - 1}) {
    std::vector<uint8_t> changed = payload;
    changed[at] ^= 0x10;
    EXPECT_NE(payload_checksum(changed, 9), sum) << at;
  }
  std::vector<uint8_t> swapped = payload;
  std::swap_ranges(swapped.begin(), swapped.begin() + ptrdiff_t(chunk), swapped.begin() + ptrdiff_t(chunk));
  EXPECT_NE(payload_checksum(swapped, 9), sum);
  // A payload of one chunk or none: one wide checksum folded.
  const std::vector<uint8_t> empty;
  const uint64_t empty_sum = payload_checksum(empty, 8);
  std::vector<uint8_t> one(8);
  for (int i = 0; i < 8; ++i) one[size_t(i)] = uint8_t(empty_sum >> (8 * i));
  EXPECT_EQ(payload_checksum(empty, 9), fnv1a64(one));
}

TEST(BundleFormat, RefusesABadChecksum) {
  std::vector<uint8_t> bytes = serialize(testing_support::sample_bundle());
  bytes[bytes.size() / 2] ^= 0x40;
  EXPECT_NE(error_of(bytes).find("checksum"), std::string::npos) << error_of(bytes);
}

TEST(BundleFormat, RefusesInconsistentPlansEvenWithAGoodChecksum) {
  Bundle b = testing_support::sample_bundle();
  b.plans[0].launches[0].buffers[2] = 99;  // a buffer that does not exist
  std::vector<uint8_t> bytes = serialize(b);
  EXPECT_NE(error_of(bytes).find("binds buffer 99"), std::string::npos) << error_of(bytes);

  b = testing_support::sample_bundle();
  b.plans[1].buffers[2].arena_offset = 252;  // 8 bytes at 252 leave the 256-byte arena
  EXPECT_NE(error_of(serialize(b)).find("outside the arena"), std::string::npos);

  b = testing_support::sample_bundle();
  b.plans[0].launches[0].scalars.resize(8);  // the kernel takes 16 bytes of scalars
  EXPECT_NE(error_of(serialize(b)).find("scalar bytes"), std::string::npos);

  b = testing_support::sample_bundle();
  b.plans[2].launches[1].parameters_only = true;  // a launch run only once would leave output y stale
  EXPECT_NE(error_of(serialize(b)).find("runs only once but writes buffer 'y'"), std::string::npos) << error_of(serialize(b));

  b = testing_support::sample_bundle();
  b.weights[0].bytes.resize(20);  // the parameter buffer holds 24
  EXPECT_NE(error_of(serialize(b)).find("differ"), std::string::npos);
}

// Several PTX targets in one bundle (spire compile --targets ptx,ptx:sm_90): one plan per target and batch, however
// many share a binary format; the same target twice at one batch is refused.
TEST(BundleFormat, HoldsSeveralPtxTargetsButNotOneTargetTwiceAtABatch) {
  // The sample's PTX plans (batches 1 and 4) once more, for sm_90: plans are moved, not copied (their kernels).
  const auto add_sm90_plans = [](Bundle& b, size_t count) {
    Bundle more = testing_support::sample_bundle();
    for (DevicePlan& p : more.plans)
      if (p.format == rt::BinaryFormat::Ptx && count > 0) {
        p.target = "ptx:sm_90";
        p.ptx_sm = 90;
        b.plans.push_back(std::move(p));
        --count;
      }
  };
  Bundle b = testing_support::sample_bundle();
  const size_t plans = b.plans.size();
  add_sm90_plans(b, 2);
  ASSERT_EQ(b.plans.size(), plans + 2);
  EXPECT_EQ(error_of(serialize(b)), "");
  EXPECT_EQ(parse_bundle(serialize(b), "three.spire").plans.size(), plans + 2);
  add_sm90_plans(b, 1);  // ptx:sm_90 at batch 1 again
  EXPECT_NE(error_of(serialize(b)).find("plan 'ptx:sm_90' batch 1: appears twice"), std::string::npos)
      << error_of(serialize(b));
}

TEST(BundleFormat, ResealedDamageIsRefusedOrReadNeverCrashes) {
  // A deterministic sweep (the fuzz test does the random one under ASan): every byte of the payload set to 0xFF.
  const std::vector<uint8_t> good = serialize(testing_support::sample_bundle());
  size_t refused = 0;
  for (size_t at = kBundleHeaderBytes; at < good.size(); ++at) {
    std::vector<uint8_t> bytes = good;
    bytes[at] = 0xFF;
    reseal(bytes);
    refused += !error_of(bytes).empty();
  }
  EXPECT_GT(refused, (good.size() - kBundleHeaderBytes) / 4);  // most damage is structural
}

// Read from a file, the bundle is mapped, not copied: its weights lie in the mapping. A file cut short, an empty one
// and a folder are refused with messages before a byte past the file's end could be touched (no SIGBUS); a missing
// file is BundleNotFound.
TEST(BundleFile, MapsTheFileAndRefusesShortFilesWithMessages) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("spire-bundle-map-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::vector<uint8_t> bytes = serialize(testing_support::sample_bundle());
  auto write = [&](const std::string& name, size_t keep) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(keep));
    return path;
  };
  const Bundle b = read_bundle(write("whole.spire", bytes.size()));
  ASSERT_EQ(b.weights.size(), 1u);
  EXPECT_TRUE(b.weights[0].bytes.empty());
  ASSERT_EQ(b.weights[0].mapped.size(), 24u);
  EXPECT_TRUE(std::all_of(b.weights[0].data().begin(), b.weights[0].data().end(), [](uint8_t v) { return v == 1; }));
  EXPECT_NE(b.file, nullptr);
  EXPECT_EQ(serialize(b), bytes);

  auto error = [](const std::string& path) -> std::string {
    try {
      read_bundle(path);
    } catch (const BundleError& e) {
      return e.what();
    }
    return "";
  };
  for (size_t keep : {size_t(0), size_t(12), kBundleHeaderBytes, bytes.size() / 2, bytes.size() - 1}) {
    const std::string e = error(write(fmt::format("cut{}.spire", keep), keep));
    EXPECT_NE(e.find(keep < 8 ? "not a spire bundle" : "truncated"), std::string::npos) << keep << ": " << e;
  }
  EXPECT_NE(error(dir.string()).find("not a regular file"), std::string::npos) << error(dir.string());
  EXPECT_THROW(read_bundle((dir / "missing.spire").string()), BundleNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spire::bundle
