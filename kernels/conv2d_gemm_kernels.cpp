#include "kernels/conv2d_gemm_kernels.h"

#include <algorithm>
#include <array>
#include <functional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/tiled_gemm.h"

namespace spire::lowering::heavy {

using namespace kir;

namespace {

// An unbatched product of row-major operands: what every GEMM form of a convolution computes.
MatmulShape plain_gemm_shape(int64_t m, int64_t k, int64_t n) {
  MatmulShape g;
  g.m = m, g.k = k, g.n = n;
  return g;
}

// A product's extents as the 32-bit constants a kernel folds in, each checked under the name of what it counts.
struct GemmExtents {
  uint32_t m, k, n;
};
GemmExtents extents_of(const MatmulShape& g, const char* m_counts, const char* k_counts, const char* n_counts) {
  return {index_u32(g.m, m_counts), index_u32(g.k, k_counts), index_u32(g.n, n_counts)};
}

}  // namespace

MatmulShape conv2d_gemm_shape(const Conv2dShape& s) {
  return plain_gemm_shape(s.cout, s.cin_per_group() * s.kh * s.kw, s.n * s.ho * s.wo);
}

namespace {

// The kernel's name, after checking what every GEMM form needs.
std::string checked_name(const char* op, const Conv2dShape& s, Type t, const MatmulTiling& tl) {
  if (s.groups != 1)
    throw std::invalid_argument(fmt::format("{} {}: the GEMM form takes ungrouped convolutions only", op, s.text()));
  if (tl.tile_m % tl.reg_m || tl.tile_n % tl.reg_n || tl.tile_k == 0)
    throw std::invalid_argument(fmt::format("{} {}: tiling {}x{}x{} with {}x{} per invocation is inconsistent", op,
                                            s.text(), tl.tile_m, tl.tile_n, tl.tile_k, tl.reg_m, tl.reg_n));
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  return fmt::format("{}_{}_{}_gemm_t{}x{}x{}_r{}x{}", op, s.text(), float_suffix(t, op), tl.tile_m, tl.tile_n, tl.tile_k,
                     tl.reg_m, tl.reg_n);
}

// The geometry as the 32-bit constants the kernels fold in.
struct Window {
  uint32_t cin, cout, h, w, ho, wo, kw, taps, sh, sw, ph, pw, dh, dw;
  explicit Window(const Conv2dShape& s)
      : cin(uint32_t(s.cin)), cout(uint32_t(s.cout)), h(uint32_t(s.h)), w(uint32_t(s.w)), ho(uint32_t(s.ho)),
        wo(uint32_t(s.wo)), kw(uint32_t(s.kw)), taps(uint32_t(s.kh * s.kw)), sh(uint32_t(s.stride_h)),
        sw(uint32_t(s.stride_w)), ph(uint32_t(s.pad_h)), pw(uint32_t(s.pad_w)), dh(uint32_t(s.dil_h)),
        dw(uint32_t(s.dil_w)) {}
};

// X'[(ci, kh, kw), (n, ho, wo)], the im2col matrix of input x, at window index `tap_index` and output position
// `position` (both already clamped into range); zero where `valid` is false or the window hangs over the
// padding. Rows and columns before the padding wrap around as unsigned numbers, so one `< H` / `< W` test
// catches both sides; the address is clamped either way.
Val im2col_element(KernelBuilder& kb, Type t, Buf x, const Window& g, Val tap_index, Val position, Val valid) {
  const uint32_t P = g.ho * g.wo;
  Val ci = tap_index / g.taps, tap = tap_index % g.taps;
  Val b = position / P, p = position % P;
  Val ih = (p / g.wo) * g.sh + (tap / g.kw) * g.dh - g.ph;
  Val iw = (p % g.wo) * g.sw + (tap % g.kw) * g.dw - g.pw;
  Val at = ((b * g.cin + ci) * g.h + min(ih, g.h - 1)) * g.w + min(iw, g.w - 1);
  return select(valid & (ih < g.h) & (iw < g.w), Val(x[at]), kb.constant(t, 0));
}

// One workgroup per (split, block row, block column), block column fastest; `body` gets the block's first row and
// column and the split. Workgroups beyond the problem (a folded grid) skip everything, barriers included (the
// condition is uniform per workgroup). Returns the workgroup count.
uint64_t for_each_block(KernelBuilder& kb, const MatmulTiling& tl, uint32_t M, uint32_t N, uint32_t splits,
                        const std::function<void(Val row0, Val col0, Val split)>& body) {
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m, tiles_n = (N + tl.tile_n - 1) / tl.tile_n;
  Val group = kb.group_id();
  Val tile_col = group % tiles_n;
  Val tile_row = (group / tiles_n) % tiles_m;
  Val split = group / (tiles_n * tiles_m);
  kb.if_(split < splits, [&] { body(tile_row * tl.tile_m, tile_col * tl.tile_n, split); });
  return uint64_t(splits) * tiles_m * tiles_n;
}

// The buffers of a GEMM-form kernel, declared in the order the lowering binds them: two read, one written.
struct GemmBuffers {
  Buf in0, in1, out;
};

// A GEMM-form kernel over for_each_block's grid: declares the buffers named `names` (two read, one written), then
// emits `block` once per block with its first row and column and its split.
HeavyKernel block_gemm_kernel(
    const std::string& name, Type t, const MatmulTiling& tl, const std::array<std::string, 3>& names, uint32_t M,
    uint32_t N, uint32_t splits,
    const std::function<void(KernelBuilder& kb, const GemmBuffers& b, Val lid, Val row0, Val col0, Val split)>& block) {
  KernelBuilder kb(name, tl.invocations());
  const GemmBuffers b{kb.buffer(names[0], t, Access::Read), kb.buffer(names[1], t, Access::Read),
                      kb.buffer(names[2], t, Access::Write)};
  Val lid = kb.local_id();
  const uint64_t groups =
      for_each_block(kb, tl, M, N, splits, [&](Val row0, Val col0, Val split) { block(kb, b, lid, row0, col0, split); });
  return {kb.finish(), groups};
}

}  // namespace

HeavyKernel conv2d_gemm_kernel(const Conv2dShape& s, Type t, const MatmulTiling& tl) {
  const std::string name = checked_name("conv2d", s, t, tl);
  const auto [M, K, N] =
      extents_of(conv2d_gemm_shape(s), "conv2d output channels", "conv2d window size", "conv2d output positions");
  if (M == 0 || N == 0) return empty_result(name);
  const Window win(s);
  const uint32_t P = win.ho * win.wo;

  return block_gemm_kernel(name, t, tl, {"x", "w", "y"}, M, N, 1, [&](KernelBuilder& kb, const GemmBuffers& b, Val lid,
                                                                       Val row0, Val col0, Val) {
    const Buf x = b.in0, w = b.in1, y = b.out;
    GemmOperands io;
    io.a = [&](Val r, Val k) {
      return select((r < M) & (k < K), Val(w[min(r, M - 1) * K + min(k, K - 1)]), kb.constant(t, 0));
    };
    // The weights are a plain row-major [Cout, Cin * taps] matrix: where its rows hold whole fours, it stages by 16-byte
    // reads (views start on 16 bytes), with the checks only on extents that are not whole tiles (GemmOperands).
    if (dtype_bytes(t) == 4 && K % 4 == 0)
      io.a4 = [&](Val r, Val k) {
        const bool rows_whole = M % tl.tile_m == 0, k_whole = K % tl.tile_k == 0;
        std::vector<Val> v = w.load_vector((rows_whole ? r : min(r, M - 1)) * K + (k_whole ? k : min(k, K - 4)), 4);
        if (!rows_whole || !k_whole) {
          Val inside = rows_whole ? k < K : k_whole ? r < M : (r < M) & (k < K);
          for (Val& e : v) e = select(inside, e, kb.constant(t, 0));
        }
        return v;
      };
    io.b = [&](Val k, Val c) { return im2col_element(kb, t, x, win, min(k, K - 1), min(c, N - 1), (k < K) & (c < N)); };
    io.store = [&](Val r, Val c, Val v) { y[((c / P) * M + r) * P + c % P] = v; };
    emit_tiled_gemm(kb, t, tl, M, N, K, row0, col0, lid, io);
  });
}

MatmulShape conv2d_grad_input_gemm_shape(const Conv2dShape& s) {
  return plain_gemm_shape(s.cin, s.cout_per_group() * s.kh * s.kw, s.n * s.h * s.w);
}

HeavyKernel conv2d_grad_input_gemm_kernel(const Conv2dShape& s, Type t, const MatmulTiling& tl) {
  const std::string name = checked_name("conv2d_grad_input", s, t, tl);
  const auto [M, K, N] = extents_of(conv2d_grad_input_gemm_shape(s), "conv2d input channels", "conv2d output window",
                                    "conv2d input positions");
  if (M == 0 || N == 0) return empty_result(name);
  const auto [Cin, Cout, H, W, Ho, Wo, KW, taps, sh, sw, ph, pw, dh, dw] = Window(s);
  const uint32_t HW = H * W, P = Ho * Wo;

  return block_gemm_kernel(name, t, tl, {"grad_y", "w", "grad_x"}, M, N, 1, [&](KernelBuilder& kb,
                                                                               const GemmBuffers& b, Val lid, Val row0,
                                                                               Val col0, Val) {
    const Buf gy = b.in0, w = b.in1, gx = b.out;
    GemmOperands io;
    // W'[ci, (co, tap)] = w[co, ci, tap].
    io.a = [&](Val r, Val k) {
      Val rc = min(r, M - 1), kc = min(k, K - 1);
      return select((r < M) & (k < K), Val(w[((kc / taps) * M + rc) * taps + kc % taps]), kb.constant(t, 0));
    };
    // The output row feeding input row h through tap row kh: (h + pad - kh * dil) / stride, when exact. Before
    // the padding the numerator wraps around as an unsigned number and fails the `< Ho` test.
    io.b = [&](Val k, Val c) {
      Val kc = min(k, K - 1), cc = min(c, N - 1);
      Val co = kc / taps, tap = kc % taps;
      Val b = cc / HW, p = cc % HW;
      Val th = (p / W) + ph - (tap / KW) * dh;
      Val tw = (p % W) + pw - (tap % KW) * dw;
      Val oh = th / sh, ow = tw / sw;
      Val inside = (k < K) & (c < N) & (oh < Ho) & (ow < Wo);
      if (sh > 1) inside = inside & (th % sh == 0u);
      if (sw > 1) inside = inside & (tw % sw == 0u);
      Val at = (b * Cout + co) * P + min(oh, Ho - 1) * Wo + min(ow, Wo - 1);
      return select(inside, Val(gy[at]), kb.constant(t, 0));
    };
    io.store = [&](Val r, Val c, Val v) { gx[((c / HW) * M + r) * HW + c % HW] = v; };
    emit_tiled_gemm(kb, t, tl, M, N, K, row0, col0, lid, io);
  });
}

bool conv2d_grad_input_phased(const Conv2dShape& s) {
  return s.groups == 1 && (s.stride_h > 1 || s.stride_w > 1) && s.dil_h == 1 && s.dil_w == 1;
}

namespace {

void check_phased(const Conv2dShape& s) {
  if (!conv2d_grad_input_phased(s))
    throw std::invalid_argument(fmt::format("conv2d_grad_input {}: phases are for an ungrouped, undilated convolution "
                                            "with a stride", s.text()));
}

}  // namespace

std::vector<GradInputPhase> conv2d_grad_input_phases(const Conv2dShape& s) {
  check_phased(s);
  // Along one axis: input extent, window, stride, padding -> (residue, positions, first tap, taps, output offset).
  auto axis = [](int64_t extent, int64_t window, int64_t stride, int64_t pad, int64_t r, uint32_t& q, uint32_t& a,
                 uint32_t& taps, uint32_t& b) {
    q = uint32_t(r < extent ? (extent - r + stride - 1) / stride : 0);
    a = uint32_t((r + pad) % stride);
    taps = uint32_t(a < window ? (window - a + stride - 1) / stride : 0);
    b = uint32_t((r + pad - a) / stride);
  };
  std::vector<GradInputPhase> out;
  for (int64_t rh = 0; rh < s.stride_h; ++rh)
    for (int64_t rw = 0; rw < s.stride_w; ++rw) {
      GradInputPhase p;
      p.rh = uint32_t(rh), p.rw = uint32_t(rw);
      axis(s.h, s.kh, s.stride_h, s.pad_h, rh, p.qh, p.ah, p.th, p.bh);
      axis(s.w, s.kw, s.stride_w, s.pad_w, rw, p.qw, p.aw, p.tw, p.bw);
      if (p.qh > 0 && p.qw > 0) out.push_back(p);
    }
  return out;
}

MatmulShape conv2d_grad_input_phase_gemm_shape(const Conv2dShape& s, const GradInputPhase& p) {
  return plain_gemm_shape(s.cin, s.cout * p.th * p.tw, s.n * p.qh * p.qw);
}

bool conv2d_grad_input_has_unreached_phases(const Conv2dShape& s) {
  for (const GradInputPhase& ph : conv2d_grad_input_phases(s))
    if (ph.th * ph.tw == 0) return true;
  return false;
}

HeavyKernel conv2d_grad_input_phases_kernel(const Conv2dShape& s, Type t, const MatmulTiling& tl, bool reached_only) {
  const uint32_t splits = tl.splits;
  std::string name = checked_name("conv2d_grad_input", s, t, tl) + (reached_only ? "_phases_reached" : "_phases");
  if (splits > 1) name += fmt::format("_s{}", splits);
  check_phased(s);
  if (splits < 1 || splits > 64)
    throw std::invalid_argument(fmt::format("conv2d_grad_input {}: splits must be 1..64, not {}", s.text(), splits));
  if (reached_only && splits > 1)
    throw std::invalid_argument(fmt::format("conv2d_grad_input {}: a zero fill covers grad_x, not {} splits' partial "
                                            "sums", s.text(), splits));
  const int64_t elements = s.n * s.cin * s.h * s.w;
  index_u32(int64_t(splits) * elements, "conv2d input gradient partial sums");
  std::vector<GradInputPhase> phases = conv2d_grad_input_phases(s);
  if (reached_only)
    phases.erase(std::remove_if(phases.begin(), phases.end(), [](const GradInputPhase& ph) { return ph.th * ph.tw == 0; }),
                 phases.end());
  if (elements == 0 || phases.empty()) return empty_result(name);
  const auto [Cin, Cout, H, W, Ho, Wo, KW, taps, sh, sw, pad_h, pad_w, dh, dw] = Window(s);
  const uint32_t HW = H * W, P = Ho * Wo, M = Cin;
  const uint32_t tiles_m = (M + tl.tile_m - 1) / tl.tile_m;

  KernelBuilder kb(name, tl.invocations());
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf gx = kb.buffer(splits > 1 ? "partial_grad_x" : "grad_x", t, Access::Write);
  Val lid = kb.local_id();
  const GemmStaging staging = declare_gemm_staging(kb, t, tl);  // shared by the phases' bodies
  // The grid: for each split, every phase's blocks in turn (block column fastest within a phase).
  int64_t blocks = 0;
  for (const GradInputPhase& ph : phases) {
    const int64_t n = conv2d_grad_input_phase_gemm_shape(s, ph).n;
    blocks += int64_t(tiles_m) * ((n + tl.tile_n - 1) / tl.tile_n);
  }
  const uint32_t per_split = index_u32(blocks, "conv2d input gradient workgroups");
  index_u32(blocks * splits, "conv2d input gradient workgroups");
  Val group = kb.group_id();
  Val split = group / per_split, in_split = group % per_split;
  uint32_t first = 0;
  for (const GradInputPhase& ph : phases) {
    const MatmulShape g = conv2d_grad_input_phase_gemm_shape(s, ph);
    const uint32_t K = index_u32(g.k, "conv2d output window"), N = uint32_t(g.n);
    const uint32_t tiles_n = (N + tl.tile_n - 1) / tl.tile_n, Q = ph.qh * ph.qw, T = ph.th * ph.tw;
    // Each split sums a whole number of K slices (none at all for a phase no tap reaches: it stores zeros).
    const uint32_t chunk = ((K + splits - 1) / splits + tl.tile_k - 1) / tl.tile_k * tl.tile_k;
    Val block = in_split - first;  // wraps around below the phase's first block and fails the test
    kb.if_(block < tiles_m * tiles_n, [&] {
      Val row0 = (block / tiles_n) * tl.tile_m, col0 = (block % tiles_n) * tl.tile_n;
      Val k_begin = split * chunk;
      GemmOperands io;
      // Position c of the phase -> its input element's offset within an image plane of grad_x.
      auto plane_offset = [&](Val p) { return (ph.rh + (p / ph.qw) * sh) * W + ph.rw + (p % ph.qw) * sw; };
      if (K > 0) {
        // W'[ci, (co, jh, jw)] = w[co, ci, ah + sh * jh, aw + sw * jw].
        io.a = [&](Val r, Val k) {
          Val gk = k_begin + k;
          Val rc = min(r, M - 1), kc = min(gk, K - 1);
          Val j = kc % T;
          Val tap = (ph.ah + (j / ph.tw) * sh) * KW + ph.aw + (j % ph.tw) * sw;
          return select((r < M) & (k < chunk) & (gk < K), Val(w[((kc / T) * M + rc) * taps + tap]), kb.constant(t, 0));
        };
        // G[(co, jh, jw), (n, q)] = grad_y[n, co, qh + bh - jh, qw + bw - jw]: rows and columns before the output
        // wrap around as unsigned numbers and fail the `< Ho` / `< Wo` test.
        io.b = [&](Val k, Val c) {
          Val gk = k_begin + k;
          Val kc = min(gk, K - 1), cc = min(c, N - 1);
          Val co = kc / T, j = kc % T;
          Val b = cc / Q, p = cc % Q;
          Val oh = (p / ph.qw) + ph.bh - j / ph.tw;
          Val ow = (p % ph.qw) + ph.bw - j % ph.tw;
          Val inside = (k < chunk) & (gk < K) & (c < N) & (oh < Ho) & (ow < Wo);
          Val at = (b * Cout + co) * P + min(oh, Ho - 1) * Wo + min(ow, Wo - 1);
          return select(inside, Val(gy[at]), kb.constant(t, 0));
        };
      } else {
        io.a = [&](Val, Val) { return kb.constant(t, 0); };
        io.b = [&](Val, Val) { return kb.constant(t, 0); };
      }
      io.store = [&](Val r, Val c, Val v) {
        Val at = ((c / Q) * M + r) * HW + plane_offset(c % Q);
        gx[splits > 1 ? split * uint32_t(elements) + at : at] = v;
      };
      emit_tiled_gemm(kb, t, tl, M, N, chunk, row0, col0, lid, io, staging);
    });
    first += tiles_m * tiles_n;
  }
  return {kb.finish(), uint64_t(per_split) * splits};
}

MatmulShape conv2d_grad_weight_gemm_shape(const Conv2dShape& s) {
  return plain_gemm_shape(s.cout, s.n * s.ho * s.wo, s.cin_per_group() * s.kh * s.kw);
}

uint32_t conv2d_grad_weight_gemm_splits(const Conv2dShape& s, const MatmulTiling& tl) {
  const MatmulShape g = conv2d_grad_weight_gemm_shape(s);
  const int64_t blocks = ((g.m + tl.tile_m - 1) / tl.tile_m) * ((g.n + tl.tile_n - 1) / tl.tile_n);
  const int64_t k_slices = (g.k + tl.tile_k - 1) / tl.tile_k;
  const int64_t wanted = tl.tile_m * tl.tile_n >= 128 * 128 ? 256 : 512;
  int64_t splits = std::max<int64_t>(1, wanted / std::max<int64_t>(blocks, 1));
  splits = std::min<int64_t>({splits, std::max<int64_t>(1, k_slices / 8), kMaxGradWeightGemmSplits});
  return uint32_t(splits);
}

HeavyKernel conv2d_grad_weight_gemm_kernel(const Conv2dShape& s, Type t, const MatmulTiling& tl, uint32_t splits) {
  const std::string name = checked_name("conv2d_grad_weight", s, t, tl) + fmt::format("_s{}", splits);
  if (splits < 1 || splits > kMaxGradWeightGemmSplits)
    throw std::invalid_argument(fmt::format("conv2d_grad_weight {}: splits must be 1..{}, not {}", s.text(),
                                            kMaxGradWeightGemmSplits, splits));
  const auto [M, K, N] = extents_of(conv2d_grad_weight_gemm_shape(s), "conv2d output channels",
                                    "conv2d output positions", "conv2d window size");
  index_u32(int64_t(splits) * M * N, "conv2d weight gradient partial sums");
  if (M == 0 || N == 0) return empty_result(name);
  const Window win(s);
  const uint32_t Cout = win.cout, P = win.ho * win.wo;
  // Each split sums a whole number of K slices.
  const uint32_t chunk = ((K + splits - 1) / splits + tl.tile_k - 1) / tl.tile_k * tl.tile_k;

  return block_gemm_kernel(name, t, tl, {"grad_y", "x", splits > 1 ? "partial_grad_w" : "grad_w"}, M, N, splits,
                           [&](KernelBuilder& kb, const GemmBuffers& b, Val lid, Val row0, Val col0, Val split) {
    const Buf gy = b.in0, x = b.in1, gw = b.out;
    Val k_begin = split * chunk;
    GemmOperands io;
    // G[co, (n, p)] = grad_y[n, co, p]: k is the contiguous direction, as the staging of A expects.
    io.a = [&](Val r, Val k) {
      Val gk = k_begin + k;
      Val kc = min(gk, K - 1), rc = min(r, M - 1);
      return select((r < M) & (k < chunk) & (gk < K), Val(gy[((kc / P) * Cout + rc) * P + kc % P]), kb.constant(t, 0));
    };
    // X'[(n, ho, wo), (ci, kh, kw)]: consecutive k are consecutive output columns, so B is staged along k.
    io.b = [&](Val k, Val c) {
      Val gk = k_begin + k;
      return im2col_element(kb, t, x, win, min(c, N - 1), min(gk, K - 1), (k < chunk) & (gk < K) & (c < N));
    };
    io.b_k_fastest = true;
    io.store = [&](Val r, Val c, Val v) { gw[split * (M * N) + r * N + c] = v; };
    emit_tiled_gemm(kb, t, tl, M, N, chunk, row0, col0, lid, io);
  });
}

}  // namespace spire::lowering::heavy
