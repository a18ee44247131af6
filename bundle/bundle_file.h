// The bundle file: a fixed header, then the payload.
//
//   bytes 0..7    magic "SPIRE\x00BN"
//   bytes 8..11   format version (kBundleFormatVersion), little-endian u32
//   bytes 12..15  reserved, 0
//   bytes 16..23  payload length in bytes, u64
//   bytes 24..31  checksum of the payload, u64 (payload_checksum: from version 9 chunks of 1 MiB checked on every
//                 core at once, each by eight FNV-1a lanes over 8-byte words, as versions 6 to 8 checked the whole
//                 payload on one core; the byte-serial FNV-1a 64 of versions 4 and 5 cost a resnet50 bundle a third
//                 of a second of its start, the one-core lanes 22-27 ms of its 0.3 s on an H200's host)
//   bytes 32..    payload (bundle_file.cpp writes and reads it field by field)
//
// A reader refuses, with a message naming the file: another magic ("not a spire bundle"), another version (which
// one it is and which this build reads), a length that disagrees with the file (truncated or trailing bytes), a
// checksum mismatch (corrupt), and any payload that fails validate() (bundle.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bundle/bundle.h"

namespace spire::bundle {

// 2: kernel signatures carry tensor maps and arrival barriers; 3: launches say whether they compute only from weights;
// 4: kernels carry the runtime's interface (workgroup memory as laid out, not arrays), tensors the one dtype (f16, bf16)
// 5: the precision policy it was compiled under (a u8 after max_batch and dynamic_batch). Version 4 bundles are still
//    read: every one of them was compiled under fp32, the only policy there was.
// 6: the header's checksum is payload_checksum's wide one; the payload is as in 5.
// 8: a kernel's buffers say whether it reads them before it waits for the kernel before it (a u8 after the access).
//    Older bundles' kernels wait first: every buffer reads as not read before the wait.
// 9: the header's checksum is payload_checksum's chunked one (every core at once); the payload is as in 8.
inline constexpr uint32_t kBundleFormatVersion = 9;
inline constexpr uint32_t kOldestBundleFormatVersion = 4;
inline constexpr size_t kBundleHeaderBytes = 32;
// Version 9's checksum chunks (part of the format: another size gives other checksums).
inline constexpr size_t kChecksumChunkBytes = size_t(1) << 20;

uint64_t fnv1a64(std::span<const uint8_t> bytes);
// The checksum a bundle of format `version` carries of its payload: fnv1a64 up to version 5; from 6 to 8 the wide
// checksum, FNV-1a 64 run in eight lanes over the payload's little-endian 8-byte words (word i into lane i % 8), the
// lanes' states and the bytes after the last whole group of eight words then folded with fnv1a64; from 9 the wide
// checksum of each kChecksumChunkBytes of the payload (the last chunk maybe shorter; one empty chunk for an empty
// payload), computed in parallel, and the chunks' checksums (little-endian u64s, in order) folded with fnv1a64. Every
// lane step is a bijection of its state, so any change confined to one word is always detected, as with the
// byte-serial form; and a change confined to one chunk changes that chunk's checksum alone.
uint64_t payload_checksum(std::span<const uint8_t> payload, uint32_t version);

std::vector<uint8_t> serialize(const Bundle& b);
// `source` names the bytes in messages (the file name). With `keep_alive` (what owns `bytes`), the weights are left
// where they lie in `bytes` (Weight::mapped) and the bundle holds `keep_alive`; without it they are copied.
Bundle parse_bundle(std::span<const uint8_t> bytes, const std::string& source,
                    std::shared_ptr<const void> keep_alive = nullptr);

// The file mapped (bundle/mapped_file.h), not copied: the weights stay in the mapping. BundleNotFound when it cannot
// be opened.
Bundle read_bundle(const std::string& path);
// Written to a temporary file beside `path` and renamed over it, so a reader never sees half a bundle.
void write_bundle(const std::string& path, const Bundle& b);

}  // namespace spire::bundle
