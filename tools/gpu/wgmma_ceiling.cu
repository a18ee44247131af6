// The rate Hopper's wgmma reaches from shared memory alone on this GPU, by operand layout: without swizzling (the
// layout spire's wgmma kernel stages today) and with 128-byte swizzling (what cuBLAS and CUTLASS use). Two warpgroups
// per block, one block per multiprocessor, each warpgroup multiplying 64x16 by 16x256 bf16 tiles that sit in shared
// memory (A K-major, B MN-major as a row-major B lands), four per batch, one batch in flight past each wait: no global
// memory in the loop, so the difference between the two rows is shared-memory reads by the tensor cores alone. The
// values are garbage (the memory is never written); only the time matters.
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/wgmma_ceiling tools/gpu/wgmma_ceiling.cu && /tmp/wgmma_ceiling
#include <cstdint>
#include <cstdio>

constexpr int kN = 256, kK = 64;  // B tile 64 x 256, A tile 64 x 64 per warpgroup

__device__ uint64_t descriptor(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swizzle) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) |
         (uint64_t(swizzle) << 62);
}

template <int Swizzle>
__global__ void __launch_bounds__(256, 1) wgmma_loop(float* out, int iterations) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int wg = threadIdx.x / 128;
  const uint32_t a = base + wg * 64 * kK * 2, b = base + 2 * 64 * kK * 2;
  // No swizzle: 8x16-byte core matrices, A's K-blocks 128 bytes apart (SBO 1024 between 8-row groups), B's N-blocks
  // 128 bytes apart (LBO 4096 between 8-k groups). 128-byte swizzle: rows of 128 bytes in 1024-byte atoms; A's SBO
  // 1024; B (MN-major) 64-column atoms 1024 bytes apart (LBO), 8-k groups 4096 apart (SBO).
  const uint32_t a_lbo = Swizzle ? 16 : 128, a_sbo = 1024, a_step = Swizzle ? 32 : 256;
  const uint32_t b_lbo = Swizzle ? 1024 : 4096, b_sbo = Swizzle ? 4096 : 128, b_step = Swizzle ? 8192 : 8192;
  float d[128];
  for (float& x : d) x = 0.f;
  for (int it = 0; it < iterations; ++it) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    for (int ks = 0; ks < kK / 16; ++ks) {
      const uint64_t da = descriptor(a + ks * a_step, a_lbo, a_sbo, Swizzle);
      const uint64_t db = descriptor(b + ks * b_step, b_lbo, b_sbo, Swizzle);
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
          : "l"(da), "l"(db));
    }
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  float s = 0;
  for (float x : d) s += x;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the products alive
}

template <int Swizzle>
double run(int sms) {
  const int threads = 256, iterations = 4096, smem = 2 * 64 * kK * 2 + kK * kN * 2;
  cudaFuncSetAttribute(wgmma_loop<Swizzle>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  float* out = nullptr;
  cudaMalloc(&out, sms * threads * sizeof(float));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float best = 1e30f;
  for (int r = 0; r < 10; ++r) {
    cudaEventRecord(start);
    wgmma_loop<Swizzle><<<sms, threads, smem>>>(out, iterations);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (r >= 2 && ms < best) best = ms;
  }
  cudaFree(out);
  if (cudaGetLastError() != cudaSuccess) return -1;
  return 2.0 * sms * 2 * 64.0 * kN * kK * iterations / best / 1e9;
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  std::printf("wgmma m64n256k16 bf16 from shared memory, no swizzle:  %.1f TFLOP/s\n", run<0>(sms));
  std::printf("wgmma m64n256k16 bf16 from shared memory, 128B swizzle: %.1f TFLOP/s\n", run<1>(sms));
  return 0;
}
