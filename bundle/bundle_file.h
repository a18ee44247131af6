// The bundle file: a fixed header, then the payload.
//
//   bytes 0..7    magic "SPIRE\x00BN"
//   bytes 8..11   format version (kBundleFormatVersion), little-endian u32
//   bytes 12..15  reserved, 0
//   bytes 16..23  payload length in bytes, u64
//   bytes 24..31  FNV-1a 64 checksum of the payload, u64
//   bytes 32..    payload (bundle_file.cpp writes and reads it field by field)
//
// A reader refuses, with a message naming the file: another magic ("not a spire bundle"), another version (which
// one it is and which this build reads), a length that disagrees with the file (truncated or trailing bytes), a
// checksum mismatch (corrupt), and any payload that fails validate() (bundle.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bundle/bundle.h"

namespace spire::bundle {

// 2: kernel signatures carry tensor maps and arrival barriers; 3: launches say whether they compute only from weights;
// 4: kernels carry the runtime's interface (workgroup memory as laid out, not arrays), tensors the one dtype (f16, bf16)
// 5: the precision policy it was compiled under (a u8 after max_batch and dynamic_batch). Version 4 bundles are still
//    read: every one of them was compiled under fp32, the only policy there was.
inline constexpr uint32_t kBundleFormatVersion = 5;
inline constexpr uint32_t kOldestBundleFormatVersion = 4;
inline constexpr size_t kBundleHeaderBytes = 32;

uint64_t fnv1a64(std::span<const uint8_t> bytes);

std::vector<uint8_t> serialize(const Bundle& b);
// `source` names the bytes in messages (the file name).
Bundle parse_bundle(std::span<const uint8_t> bytes, const std::string& source);

Bundle read_bundle(const std::string& path);
// Written to a temporary file beside `path` and renamed over it, so a reader never sees half a bundle.
void write_bundle(const std::string& path, const Bundle& b);

}  // namespace spire::bundle
