// ir/kernel -> PTX text for the CUDA driver's JIT.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ir/kernel/kernel.h"

namespace spire::ptx {

class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Target {
  uint32_t sm = 75;  // compute capability as major*10+minor; sm_75 when compiling offline
};

// The lowest PTX ISA version that supports .target sm_XX, so older drivers can JIT it (7.8 for sm_90).
// Throws CompileError below sm_75. A capability newer than (or between) the known targets gets the
// version of the newest known target below it, as ptx_target_for() does.
std::string ptx_version_for(uint32_t sm);

// The `.target` emitted for a device of capability `sm`: sm itself when known, else the newest known target
// below it (PTX for sm_XY JIT-compiles for every GPU of capability >= XY).
uint32_t ptx_target_for(uint32_t sm);

// The `.entry` name for a kernel: its name with every character PTX identifiers cannot hold replaced by '_'
// (and '_' prepended to a leading digit). runtime/cuda looks the function up by this name.
std::string entry_name(const kir::Kernel& k);

// Interface contract with runtime/cuda:
//  * one .visible .entry named after the kernel;
//  * parameters in order: one .u64 global pointer per buffer, then each scalar as its own .param of its
//    type (kir::Kernel::scalars order);
//  * linear builtins rebuilt from %ctaid/%nctaid (x fastest) so a folded grid works;
//  * .reqntid = kernel.workgroup_size.
// Throws CompileError (naming the kernel and the problem) for a malformed kernel, a workgroup over 1024
// invocations, static shared memory over 48 KiB, or a target below sm_75.
//
// Numerics (what a kernel may rely on):
//  * f32/f64 add, sub, mul, div, sqrt round to nearest even and are never contracted into fma; floor,
//    abs, neg, min, max (C fmin/fmax: a NaN operand yields the other), compares (ordered; != is true on NaN)
//    and conversions (float->int truncates, int->float and narrowing rounds to nearest) are exact IEEE/C.
//  * rsqrt is 1/sqrt, each correctly rounded. rem on floats is C fmod, exact while |x/y| < 2^53.
//  * f32 exp, log, tanh: relative error about 1e-6 or better over their ranges (reduced-argument evaluation,
//    see ptx_math.cpp); pow(x, y) = exp(y * log|x|) with C's special cases (pow(x, 0) = 1, pow(1, y) = 1,
//    negative x only with integral y), relative error about |y * log x| * 2.4e-7 + 1e-6.
//  * f64 exp, log, tanh: a few ulp of double (range reduction and series in f64, no approximate
//    instructions); pow as in f32, relative error about |y * log x| * 4e-16 + 1e-15.
//  * f16 values are computed in f32 and rounded back to f16 after each op.
std::string compile(const kir::Kernel& k, const Target& target = {});

}  // namespace spire::ptx
