// How far the fp32 tiled GEMM's structure can go on this GPU, and which of its parts matters: the body spire's
// tiled_gemm.cpp emits (128x128 blocks, 8-deep slices, 8x8 outputs per invocation, 256 invocations, slices staged
// through registers) written in plain CUDA in four variants:
//   strided   outputs strided by the thread grid, scalar shared loads, one buffer and two barriers per slice (today);
//   patch     the same, with each warp covering a 4 x 8 patch of the thread grid;
//   vector    outputs in 4-wide contiguous groups read with 128-bit shared loads, over the 4 x 8 patch;
//   double    vector, with two shared buffers and one barrier per slice.
// C = A B, all row-major fp32, checked against float64 on sampled entries (C poisoned first); strict fp32 (no TF32).
// PyTorch's strict fp32 matmul (cuBLAS) took 21.3 ms at 8192^3 on this H100 type (docs/PERFORMANCE.md).
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o /tmp/sgemm tools/gpu/sgemm_probe.cu && /tmp/sgemm
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

constexpr int kBM = 128, kBN = 128, kBK = 8, kThreads = 256;

#define CHECK(x)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));              \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

enum Variant { kStrided, kPatch, kVector, kDouble };

// Variant-dependent thread coordinates in the 16 x 16 thread grid.
template <int V>
__device__ __forceinline__ void coords(int& tx, int& ty) {
  const int lid = threadIdx.x;
  if (V == kStrided) {
    tx = lid % 16;
    ty = lid / 16;
  } else {
    const int lane = lid % 32, warp = lid / 32;
    tx = (warp % 2) * 8 + lane % 8;
    ty = (warp / 2) * 4 + lane / 8;
  }
}

template <int V>
__global__ void __launch_bounds__(kThreads, 2) sgemm(const float* __restrict__ a, const float* __restrict__ b,
                                                     float* __restrict__ c, int m, int n, int k) {
  constexpr int a_ld = kBM + 4;  // k-major A; 4 of padding keeps rows 16-byte aligned
  constexpr int buffers = V == kDouble ? 2 : 1;
  __shared__ __align__(16) float as[buffers][kBK * a_ld];
  __shared__ __align__(16) float bs[buffers][kBK * kBN];
  int tx, ty;
  coords<V>(tx, ty);
  const int lid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  // Staging: A's 128 x 8 slice as 256 float4 along k (row lid / 2), B's 8 x 128 as 256 float4 along n.
  const int a_row = lid / 2, a_k = (lid % 2) * 4, b_k = lid / 32, b_col = (lid % 32) * 4;
  float4 a_next, b_next;
  auto load = [&](int k0) {
    a_next = *reinterpret_cast<const float4*>(a + size_t(row0 + a_row) * k + k0 + a_k);
    b_next = *reinterpret_cast<const float4*>(b + size_t(k0 + b_k) * n + col0 + b_col);
  };
  auto store = [&](int buf) {
    as[buf][(a_k + 0) * a_ld + a_row] = a_next.x;
    as[buf][(a_k + 1) * a_ld + a_row] = a_next.y;
    as[buf][(a_k + 2) * a_ld + a_row] = a_next.z;
    as[buf][(a_k + 3) * a_ld + a_row] = a_next.w;
    *reinterpret_cast<float4*>(&bs[buf][b_k * kBN + b_col]) = b_next;
  };
  float acc[8][8] = {};
  const int slices = k / kBK;
  load(0);
  if (V == kDouble) {
    store(0);
    __syncthreads();
  }
  for (int s = 0; s < slices; ++s) {
    const int buf = V == kDouble ? s % 2 : 0;
    if (V != kDouble) {
      store(0);
      __syncthreads();
    }
    if (s + 1 < slices) load((s + 1) * kBK);
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float av[8], bv[8];
      if (V == kStrided || V == kPatch) {
#pragma unroll
        for (int i = 0; i < 8; ++i) av[i] = as[buf][kk * a_ld + ty + i * 16];
#pragma unroll
        for (int j = 0; j < 8; ++j) bv[j] = bs[buf][kk * kBN + tx + j * 16];
      } else {
        const float4 a0 = *reinterpret_cast<const float4*>(&as[buf][kk * a_ld + ty * 4]);
        const float4 a1 = *reinterpret_cast<const float4*>(&as[buf][kk * a_ld + 64 + ty * 4]);
        const float4 b0 = *reinterpret_cast<const float4*>(&bs[buf][kk * kBN + tx * 4]);
        const float4 b1 = *reinterpret_cast<const float4*>(&bs[buf][kk * kBN + 64 + tx * 4]);
        av[0] = a0.x, av[1] = a0.y, av[2] = a0.z, av[3] = a0.w, av[4] = a1.x, av[5] = a1.y, av[6] = a1.z, av[7] = a1.w;
        bv[0] = b0.x, bv[1] = b0.y, bv[2] = b0.z, bv[3] = b0.w, bv[4] = b1.x, bv[5] = b1.y, bv[6] = b1.z, bv[7] = b1.w;
      }
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    if (V == kDouble) {
      if (s + 1 < slices) store((s + 1) % 2);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = row0 + (V == kStrided || V == kPatch ? ty + i * 16 : (i / 4) * 64 + ty * 4 + i % 4);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = col0 + (V == kStrided || V == kPatch ? tx + j * 16 : (j / 4) * 64 + tx * 4 + j % 4);
      c[size_t(r) * n + col] = acc[i][j];
    }
  }
}

const char* name(int v) { return v == kStrided ? "strided" : v == kPatch ? "patch" : v == kVector ? "vector" : "double"; }

template <int V>
void launch(const float* a, const float* b, float* c, int size) {
  sgemm<V><<<dim3(size / kBN, size / kBM), kThreads>>>(a, b, c, size, size, size);
  CHECK(cudaGetLastError());
}

void run(int v, const float* a, const float* b, float* c, int size) {
  switch (v) {
    case kStrided: launch<kStrided>(a, b, c, size); break;
    case kPatch: launch<kPatch>(a, b, c, size); break;
    case kVector: launch<kVector>(a, b, c, size); break;
    default: launch<kDouble>(a, b, c, size); break;
  }
}

int main() {
  for (int size : {2048, 4096, 8192}) {
    std::vector<float> ha(size_t(size) * size), hb(size_t(size) * size);
    std::mt19937 rng(size);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& x : ha) x = u(rng);
    for (auto& x : hb) x = u(rng);
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, ha.size() * 4));
    CHECK(cudaMalloc(&b, hb.size() * 4));
    CHECK(cudaMalloc(&c, ha.size() * 4));
    CHECK(cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hc(ha.size());
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int v = kStrided; v <= kDouble; ++v) {
      CHECK(cudaMemset(c, 0xFF, hc.size() * 4));  // NaN poison
      run(v, a, b, c, size);
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(hc.data(), c, hc.size() * 4, cudaMemcpyDeviceToHost));
      double err = 0, ref = 0;
      std::mt19937 pick(7);
      bool nan = false;
      for (int s = 0; s < 256; ++s) {
        const int i = pick() % size, j = pick() % size;
        double r = 0;
        for (int q = 0; q < size; ++q) r += double(ha[size_t(i) * size + q]) * hb[size_t(q) * size + j];
        const double got = hc[size_t(i) * size + j];
        nan |= std::isnan(got);
        err += (got - r) * (got - r);
        ref += r * r;
      }
      std::vector<float> t;
      for (int r = 0; r < 3; ++r) run(v, a, b, c, size);
      for (int r = 0; r < (size == 8192 ? 10 : 30); ++r) {
        CHECK(cudaEventRecord(e0));
        run(v, a, b, c, size);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      const double ms = t[t.size() / 2];
      std::printf("%-5d %-8s %9.3f ms %7.1f TFLOP/s  rel err %.2g%s\n", size, name(v), ms,
                  2.0 * size * size * double(size) / ms / 1e9, std::sqrt(err / ref), nan ? "  UNWRITTEN" : "");
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  return 0;
}
