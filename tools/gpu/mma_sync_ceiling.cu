// The tensor-core rate a warp-level mma.sync kernel can reach on this GPU, which bounds spire's wmma matmul:
// every warp multiplies register fragments only (no memory traffic in the loop), 8 independent accumulators per
// warp so the tensor pipe never waits on a result. Compare with cuBLAS (wgmma on Hopper) in run-tensor-cores.sh.
//   nvcc -O3 -arch=sm_90 -o /tmp/mma_ceiling tools/gpu/mma_sync_ceiling.cu && /tmp/mma_ceiling
#include <cstdio>
#include <cuda_bf16.h>
#include <mma.h>

using namespace nvcuda;

__global__ void mma_loop(float* out, int iterations) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[8];
  wmma::fill_fragment(a, __float2bfloat16(1.0f / 1024));
  wmma::fill_fragment(b, __float2bfloat16(1.0f / 1024));
  for (auto& f : c) wmma::fill_fragment(f, 0.0f);
  for (int i = 0; i < iterations; ++i)
    for (auto& f : c) wmma::mma_sync(f, a, b, f);
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  float s = 0;
  for (auto& f : c)  // every element: one left out lets the compiler drop the half of the product it comes from
    for (int e = 0; e < f.num_elements; ++e) s += f.x[e];
  if (threadIdx.x % 32 == 0) out[warp] = s;  // keeps the products alive
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = sms * 4, threads = 256, iterations = 8192;
  float* out = nullptr;
  cudaMalloc(&out, blocks * threads / 32 * sizeof(float));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float best = 1e30f;
  for (int run = 0; run < 12; ++run) {  // the first runs warm up; the best of the rest
    cudaEventRecord(start);
    mma_loop<<<blocks, threads>>>(out, iterations);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (run >= 2 && ms < best) best = ms;
  }
  const double flops = 2.0 * blocks * (threads / 32) * 8.0 * iterations * 16 * 16 * 16;
  std::printf("mma.sync (wmma m16n16k16 bf16, f32 accumulate) ceiling: %.1f TFLOP/s (%d blocks x %d threads, %.3f ms)\n",
              flops / best / 1e9, blocks, threads, best);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
