// What the runtime loads: a kernel already compiled for a target (SPIR-V words or PTX text) together with its
// interface. Compilers produce it (backends/compile_kernel.h) with no device present; a bundle stores it; a
// Device::load turns it into something a command stream can dispatch. The runtime never sees kernel bodies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernel_interface.h"

namespace spire::rt {

enum class BinaryFormat : uint8_t { Spirv, Ptx };
std::string_view binary_format_name(BinaryFormat f);  // "SPIR-V", "PTX"

struct KernelBinary {
  // The kernel's interface (kernel_interface.h): the runtime checks limits and bindings against it and packs scalars
  // by its layout.
  KernelInterface interface;
  BinaryFormat format = BinaryFormat::Spirv;
  std::vector<uint32_t> spirv;  // Spirv: the module (entry point "main")
  std::string ptx;              // Ptx: the module text
  std::string entry;            // Ptx: the entry function's name
  uint32_t ptx_sm = 0;          // Ptx: the compute capability it was generated for (90 for sm_90)
};

}  // namespace spire::rt
