// What Hopper's wgmma reads and writes, checked on the GPU before spire's PTX backend and its mock-driver emulation
// rely on it: one warpgroup multiplies a 64 x 32 bf16 A by a 32 x 64 bf16 B (two k16 steps) from shared memory laid
// out as 8x8 core matrices without swizzle, A K-major, B K-major or MN-major (imm-trans-b = 1), and every thread
// writes its accumulator registers where the assumed fragment layout puts them. A mismatch names the hypothesis that
// failed. The layout assumed (kir's warpgroup matrices, ir/kernel/kernel.h):
//   * element (r, k) of a K-major operand at (r / 8) * SBO + (k / 8) * LBO + (r % 8) * 16 + (k % 8) * 2 bytes,
//     element (k, c) of an MN-major one at (c / 8) * SBO + (k / 8) * LBO + (k % 8) * 16 + (c % 8) * 2: in both,
//     LBO steps along K and SBO along M or N;
//   * accumulator register i of thread t holds row 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2) and column
//     8 * (i / 4) + 2 * (t % 4) + i % 2.
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o /tmp/wgmma_probe tools/gpu/wgmma_layout_probe.cu && /tmp/wgmma_probe
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_bf16.h>
#include <vector>

constexpr int M = 64, N = 64, K = 32;

__device__ uint64_t descriptor(const void* smem, uint32_t lbo, uint32_t sbo) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}

template <int TransB>
__global__ void probe(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c) {
  __shared__ alignas(128) __nv_bfloat16 sa[M * K], sb[K * N];
  const int t = threadIdx.x;
  // A K-major: LBO (next 8 k) = 128 bytes, SBO (next 8 rows) = K / 8 * 128.
  const uint32_t a_lbo = 128, a_sbo = K / 8 * 128;
  for (int e = t; e < M * K; e += 128) {
    const int r = e / K, k = e % K;
    sa[((r / 8) * a_sbo + (k / 8) * a_lbo + (r % 8) * 16 + (k % 8) * 2) / 2] = a[e];
  }
  uint32_t b_lbo, b_sbo;
  if (TransB == 0) {  // K-major B: element (k, n) placed as row n of B^T
    b_lbo = 128, b_sbo = K / 8 * 128;
    for (int e = t; e < K * N; e += 128) {
      const int k = e / N, n = e % N;
      sb[((n / 8) * b_sbo + (k / 8) * b_lbo + (n % 8) * 16 + (k % 8) * 2) / 2] = b[e];
    }
  } else {  // MN-major B: 8 k-rows of 8 contiguous n per core matrix; n-blocks 128 bytes apart, k-blocks N/8*128
    b_sbo = 128, b_lbo = N / 8 * 128;
    for (int e = t; e < K * N; e += 128) {
      const int k = e / N, n = e % N;
      sb[((n / 8) * b_sbo + (k / 8) * b_lbo + (k % 8) * 16 + (n % 8) * 2) / 2] = b[e];
    }
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  float d[32];
  for (float& x : d) x = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int ks = 0; ks < K / 16; ++ks) {
    const uint64_t da = descriptor(reinterpret_cast<const char*>(sa) + ks * 2 * a_lbo, a_lbo, a_sbo);
    const uint64_t db = descriptor(reinterpret_cast<const char*>(sb) + ks * 2 * b_lbo, b_lbo, b_sbo);
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
        "%23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, %34;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "n"(TransB));
  }
  asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int i = 0; i < 32; ++i) {
    const int row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (t % 4) + i % 2;
    c[row * N + col] = d[i];
  }
}

int main() {
  std::vector<__nv_bfloat16> ha(M * K), hb(K * N);
  std::vector<float> fa(M * K), fb(K * N), ref(M * N, 0.f);
  srand(7);
  for (int i = 0; i < M * K; ++i) fa[i] = float(rand() % 17 - 8) / 8, ha[i] = __float2bfloat16(fa[i]);
  for (int i = 0; i < K * N; ++i) fb[i] = float(rand() % 17 - 8) / 8, hb[i] = __float2bfloat16(fb[i]);
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      for (int k = 0; k < K; ++k) ref[r * N + c] += fa[r * K + k] * fb[k * N + c];
  __nv_bfloat16 *da, *db;
  float* dc;
  cudaMalloc(&da, M * K * 2), cudaMalloc(&db, K * N * 2), cudaMalloc(&dc, M * N * 4);
  cudaMemcpy(da, ha.data(), M * K * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), K * N * 2, cudaMemcpyHostToDevice);
  int failures = 0;
  for (int trans = 0; trans < 2; ++trans) {
    cudaMemset(dc, 0xFF, M * N * 4);  // NaN poison: an element no register lands on shows
    if (trans) probe<1><<<1, 128>>>(da, db, dc);
    else probe<0><<<1, 128>>>(da, db, dc);
    std::vector<float> out(M * N);
    cudaError_t err = cudaMemcpy(out.data(), dc, M * N * 4, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < M * N; ++i)
      if (!(std::fabs(out[i] - ref[i]) <= 1e-3f)) {
        if (bad++ < 4) std::printf("  (%d, %d): %g, expected %g\n", i / N, i % N, out[i], ref[i]);
      }
    std::printf("B %s-major: %s (%d of %d elements wrong)%s\n", trans ? "MN" : "K", bad ? "FAIL" : "ok", bad, M * N,
                err == cudaSuccess ? "" : cudaGetErrorString(err));
    failures += bad != 0 || err != cudaSuccess;
  }
  return failures;
}
