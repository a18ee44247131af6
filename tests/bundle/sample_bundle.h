// A bundle built by hand (no compiler): two plans with stand-in SPIR-V and PTX modules, weights, every kind of
// buffer. The format and fuzz tests serialize and damage it; its kernels are never loaded.
#pragma once

#include "bundle/bundle.h"

namespace spire::testing_support {

inline bundle::Bundle sample_bundle() {
  using namespace spire::bundle;
  Bundle b;
  b.model = "sample.onnx";
  b.producer = "test";
  b.max_batch = 4;
  b.dynamic_batch = true;
  b.inputs.push_back({"x", DType::F32, {4, 3}, true});
  b.outputs.push_back({"y", DType::F32, {4, 2}, true});
  b.weights.push_back({"w", DType::F32, std::vector<uint8_t>(24, 1), {}});
  for (int format = 0; format < 2; ++format)
    for (int64_t batch : {1, 4}) {
      DevicePlan p;
      p.format = format ? rt::BinaryFormat::Ptx : rt::BinaryFormat::Spirv;
      p.ptx_sm = format ? 75 : 0;
      p.target = format ? "ptx" : "spirv";
      p.batch = batch;
      p.arena_bytes = 256;
      p.buffers.push_back({"x", DType::F32, uint64_t(batch * 3), BufferRole::Input, -1, {}, -1});
      p.buffers.push_back({"w", DType::F32, 6, BufferRole::Parameter, -1, {}, 0});
      p.buffers.push_back({"t", DType::F32, uint64_t(batch * 2), BufferRole::Transient, 0, {}, -1});
      p.buffers.push_back({"y", DType::F32, uint64_t(batch * 2), BufferRole::Output, -1, {}, -1});
      p.buffers.push_back({"one", DType::F32, 1, BufferRole::Constant, -1, 1.0, -1});
      rt::KernelBinary k;
      k.interface.name = "matmul";
      k.interface.workgroup_size = {64, 1, 1};
      k.interface.buffers = {{"a", DType::F32, Access::Read}, {"b", DType::F32, Access::Read},
                             {"c", DType::F32, Access::Write}};
      k.interface.scalars = {{"n", DType::U32}, {"scale", DType::F64}};
      k.format = p.format;
      if (format) {
        k.ptx = ".version 6.3\n.target sm_75\n";
        k.entry = "matmul";
        k.ptx_sm = 75;
      } else {
        k.spirv = {0x07230203u, 0x00010300u, 0, 10, 0};
      }
      p.kernels.push_back(std::move(k));
      p.launches.push_back({0, {0, 1, 2}, std::vector<uint8_t>(16, 0), 1, "matmul_0"});
      p.launches.back().parameters_only = true;  // (the format does not check what it reads)
      p.launches.push_back({0, {2, 1, 3}, std::vector<uint8_t>(16, 0), 1, "matmul_1"});
      p.input_buffers = {0};
      p.output_buffers = {3};
      b.plans.push_back(std::move(p));
    }
  return b;
}

}  // namespace spire::testing_support
