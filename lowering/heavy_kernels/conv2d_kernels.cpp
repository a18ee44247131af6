#include "lowering/heavy_kernels/conv2d_kernels.h"

#include <functional>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering::heavy {

using namespace kir;

std::string Conv2dShape::text() const {
  return fmt::format("n{}_c{}_h{}_w{}_k{}_r{}x{}_s{}x{}_p{}x{}_d{}x{}_g{}", n, cin, h, w, cout, kh, kw, stride_h, stride_w,
                     pad_h, pad_w, dil_h, dil_w, groups);
}

Conv2dShape conv2d_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilation, int64_t groups) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("conv2d with input [{}] and weights [{}]: {}", dims_text(x), dims_text(w), why));
  };
  if (x.size() != 4 || w.size() != 4) fail("both must have rank 4");
  if (stride.size() != 2 || padding.size() != 2 || dilation.size() != 2) fail("stride, padding and dilation need 2 entries");
  if (stride[0] < 1 || stride[1] < 1 || dilation[0] < 1 || dilation[1] < 1 || padding[0] < 0 || padding[1] < 0)
    fail("stride and dilation must be >= 1 and padding >= 0");
  if (groups < 1 || x[1] % groups || w[0] % groups || w[1] * groups != x[1]) fail(fmt::format("channels do not fit groups={}", groups));
  Conv2dShape s;
  s.n = x[0], s.cin = x[1], s.h = x[2], s.w = x[3];
  s.cout = w[0], s.kh = w[2], s.kw = w[3];
  s.stride_h = stride[0], s.stride_w = stride[1];
  s.pad_h = padding[0], s.pad_w = padding[1];
  s.dil_h = dilation[0], s.dil_w = dilation[1];
  s.groups = groups;
  int64_t span_h = s.h + 2 * s.pad_h - (s.dil_h * (s.kh - 1) + 1);
  int64_t span_w = s.w + 2 * s.pad_w - (s.dil_w * (s.kw - 1) + 1);
  if (span_h < 0 || span_w < 0) fail("the dilated window does not fit the padded input");
  s.ho = span_h / s.stride_h + 1;
  s.wo = span_w / s.stride_w + 1;
  return s;
}

namespace {

constexpr uint32_t kThreads = 256;
// Windows with at most this many taps are unrolled in C++ (constant offsets); larger ones loop in the kernel.
constexpr int64_t kMaxUnrolledTaps = 49;

// One tap coordinate along one axis: the offset it contributes to an activation index (already clamped into
// range) and to a weight index, and whether it is valid (invalid Val = statically always valid).
struct TapAxis {
  Val ok;
  Val offset;
  Val w_offset;
};

Val both(Val a, Val b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return a & b;
}

// Emits body(row, col) for every tap of a kh x kw window. Small windows are unrolled: row(r) and col(c) are
// then computed once, here (outside any loop the caller opens inside `around`), and `around` wraps the taps
// (e.g. in a channel loop). Large windows loop in the kernel inside `around`.
void for_each_tap(KernelBuilder& kb, int64_t kh, int64_t kw, const std::function<TapAxis(Val)>& row,
                  const std::function<TapAxis(Val)>& col,
                  const std::function<void(const std::function<void()>&)>& around,
                  const std::function<void(const TapAxis&, const TapAxis&)>& body) {
  if (kh * kw <= kMaxUnrolledTaps) {
    std::vector<TapAxis> rows, cols;
    for (int64_t r = 0; r < kh; ++r) rows.push_back(row(kb.u32(uint32_t(r))));
    for (int64_t c = 0; c < kw; ++c) cols.push_back(col(kb.u32(uint32_t(c))));
    around([&] {
      for (const auto& rr : rows)
        for (const auto& cc : cols) body(rr, cc);
    });
  } else {
    around([&] {
      kb.for_(kb.u32(0), kb.u32(uint32_t(kh)), [&](Val r) {
        TapAxis rr = row(r);
        kb.for_(kb.u32(0), kb.u32(uint32_t(kw)), [&](Val c) { body(rr, col(c)); });
      });
    });
  }
}

// Clamps a signed coordinate into [0, size) and returns it as an unsigned index.
Val clamp_index(Val v, int64_t size) { return cast(min(max(v, 0), int32_t(size - 1)), Type::U32); }

Val masked(Val ok, Val v) { return ok.valid() ? select(ok, v, like(v, 0)) : v; }

void check_sizes(const Conv2dShape& s) {
  index_u32(s.n * s.cin * s.h * s.w, "conv2d input elements");
  index_u32(s.n * s.cout * s.ho * s.wo, "conv2d output elements");
  index_u32(s.cout * s.cin_per_group() * s.kh * s.kw, "conv2d weight elements");
}

}  // namespace

HeavyKernel conv2d_kernel(const Conv2dShape& s, Type t) {
  std::string name = "conv2d_" + s.text() + "_" + float_suffix(t, "conv2d");
  check_sizes(s);
  const uint32_t total = uint32_t(s.n * s.cout * s.ho * s.wo);
  if (total == 0) return empty_result(name);
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t cpg = uint32_t(s.cin_per_group()), opg = uint32_t(s.cout_per_group());
  const uint32_t taps = uint32_t(s.kh * s.kw);

  KernelBuilder kb(name, kThreads);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf y = kb.buffer("y", t, Access::Write);
  Val o = kb.global_id();
  kb.if_(o < total, [&] {
    Val wo = o % Wo, t1 = o / Wo;
    Val ho = t1 % Ho, t2 = t1 / Ho;
    Val co = t2 % uint32_t(s.cout), n = t2 / uint32_t(s.cout);
    Val g = co / opg;
    Val x_base = (n * uint32_t(s.cin) + g * cpg) * (H * W);
    Val w_base = co * (cpg * taps);
    Val hi0 = cast(ho, Type::I32) * int32_t(s.stride_h) - int32_t(s.pad_h);
    Val wi0 = cast(wo, Type::I32) * int32_t(s.stride_w) - int32_t(s.pad_w);
    // Without padding every tap of every output lies inside the input: no checks at all.
    auto row = [&](Val r) {
      Val hi = hi0 + cast(r, Type::I32) * int32_t(s.dil_h);
      if (s.pad_h == 0) return TapAxis{Val(), cast(hi, Type::U32) * W, r * uint32_t(s.kw)};
      return TapAxis{(hi >= 0) & (hi < int32_t(H)), clamp_index(hi, H) * W, r * uint32_t(s.kw)};
    };
    auto col = [&](Val c) {
      Val wi = wi0 + cast(c, Type::I32) * int32_t(s.dil_w);
      if (s.pad_w == 0) return TapAxis{Val(), cast(wi, Type::U32), c};
      return TapAxis{(wi >= 0) & (wi < int32_t(W)), clamp_index(wi, W), c};
    };
    Var acc = kb.var("acc", kb.constant(t, 0));
    Val ci;  // the channel loop's variable, set by `around`
    auto around = [&](const std::function<void()>& taps_body) {
      kb.for_(kb.u32(0), kb.u32(cpg), [&](Val c) {
        ci = c;
        taps_body();
      });
    };
    for_each_tap(kb, s.kh, s.kw, row, col, around, [&](const TapAxis& rr, const TapAxis& cc) {
      Val xv = x[x_base + ci * (H * W) + rr.offset + cc.offset];
      Val wv = w[w_base + ci * taps + rr.w_offset + cc.w_offset];
      acc += masked(both(rr.ok, cc.ok), xv * wv);
    });
    y[o] = acc.get();
  });
  return {kb.finish(), groups_for_threads(total, kThreads)};
}

HeavyKernel conv2d_grad_input_kernel(const Conv2dShape& s, Type t) {
  std::string name = "conv2d_grad_input_" + s.text() + "_" + float_suffix(t, "conv2d_grad_input");
  check_sizes(s);
  const uint32_t total = uint32_t(s.n * s.cin * s.h * s.w);
  if (total == 0) return empty_result(name);
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t cpg = uint32_t(s.cin_per_group()), opg = uint32_t(s.cout_per_group());
  const uint32_t taps = uint32_t(s.kh * s.kw);

  KernelBuilder kb(name, kThreads);
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf w = kb.buffer("w", t, Access::Read);
  Buf gx = kb.buffer("grad_x", t, Access::Write);
  Val o = kb.global_id();
  kb.if_(o < total, [&] {
    Val wi = o % W, t1 = o / W;
    Val hi = t1 % H, t2 = t1 / H;
    Val ci = t2 % uint32_t(s.cin), n = t2 / uint32_t(s.cin);
    Val g = ci / cpg, cil = ci % cpg;
    Val gy_base = (n * uint32_t(s.cout) + g * opg) * (Ho * Wo);
    Val w_base = (g * opg * cpg + cil) * taps;
    // Tap r of output row oh reads input row oh*stride - pad + r*dil; so this row is read by tap r of
    // oh = (hi + pad - r*dil) / stride when that is a whole number in [0, Ho).
    auto axis = [&](Val i, Val tap, int64_t pad, int64_t dil, int64_t stride, uint32_t out, uint32_t out_scale,
                    uint32_t w_scale) {
      Val th = cast(i, Type::I32) + int32_t(pad) - cast(tap, Type::I32) * int32_t(dil);
      Val thc = max(th, 0);
      Val oh = thc / int32_t(stride);
      Val ok = (th >= 0) & (oh < int32_t(out));
      if (stride > 1) ok = ok & (thc % int32_t(stride) == 0);
      return TapAxis{ok, clamp_index(oh, out) * out_scale, tap * w_scale};
    };
    auto row = [&](Val r) { return axis(hi, r, s.pad_h, s.dil_h, s.stride_h, Ho, Wo, uint32_t(s.kw)); };
    auto col = [&](Val c) { return axis(wi, c, s.pad_w, s.dil_w, s.stride_w, Wo, 1, 1); };
    Var acc = kb.var("acc", kb.constant(t, 0));
    Val col_idx;  // output channel within the group, set by `around`
    auto around = [&](const std::function<void()>& taps_body) {
      kb.for_(kb.u32(0), kb.u32(opg), [&](Val c) {
        col_idx = c;
        taps_body();
      });
    };
    for_each_tap(kb, s.kh, s.kw, row, col, around, [&](const TapAxis& rr, const TapAxis& cc) {
      Val gv = gy[gy_base + col_idx * (Ho * Wo) + rr.offset + cc.offset];
      Val wv = w[w_base + col_idx * (cpg * taps) + rr.w_offset + cc.w_offset];
      acc += masked(both(rr.ok, cc.ok), gv * wv);
    });
    gx[o] = acc.get();
  });
  return {kb.finish(), groups_for_threads(total, kThreads)};
}

HeavyKernel conv2d_grad_weight_kernel(const Conv2dShape& s, Type t) {
  std::string name = "conv2d_grad_weight_" + s.text() + "_" + float_suffix(t, "conv2d_grad_weight");
  check_sizes(s);
  const uint32_t weights = uint32_t(s.cout * s.cin_per_group() * s.kh * s.kw);
  if (weights == 0) return empty_result(name);
  const uint32_t H = uint32_t(s.h), W = uint32_t(s.w), Ho = uint32_t(s.ho), Wo = uint32_t(s.wo);
  const uint32_t cpg = uint32_t(s.cin_per_group()), opg = uint32_t(s.cout_per_group());
  const uint32_t KH = uint32_t(s.kh), KW = uint32_t(s.kw);
  const uint32_t terms = index_u32(s.n * s.ho * s.wo, "conv2d_grad_weight terms per weight");
  const uint32_t wg = pow2_clamped(terms, 32, 256);

  KernelBuilder kb(name + fmt::format("_wg{}", wg), wg);
  Buf gy = kb.buffer("grad_y", t, Access::Read);
  Buf x = kb.buffer("x", t, Access::Read);
  Buf gw = kb.buffer("grad_w", t, Access::Write);
  Shared scratch = kb.shared("partial", t, wg);
  Val lid = kb.local_id();
  Val e = kb.group_id();
  // Uniform per workgroup: groups past the weights (a folded grid) skip everything, barriers included.
  kb.if_(e < weights, [&] {
    Val c = e % KW, t1 = e / KW;
    Val r = t1 % KH, t2 = t1 / KH;
    Val cil = t2 % cpg, co = t2 / cpg;
    Val ci = (co / opg) * cpg + cil;
    Val h_off = cast(r, Type::I32) * int32_t(s.dil_h) - int32_t(s.pad_h);
    Val w_off = cast(c, Type::I32) * int32_t(s.dil_w) - int32_t(s.pad_w);
    Var partial = kb.var("partial", kb.constant(t, 0));
    if (terms > 0) {
      kb.for_(lid, kb.u32(terms), kb.u32(wg), [&](Val idx) {
        Val pos = idx % (Ho * Wo), n = idx / (Ho * Wo);
        Val ho = pos / Wo, wo = pos % Wo;
        Val hi = cast(ho, Type::I32) * int32_t(s.stride_h) + h_off;
        Val wi = cast(wo, Type::I32) * int32_t(s.stride_w) + w_off;
        Val ok, h_idx = cast(hi, Type::U32), w_idx = cast(wi, Type::U32);
        if (s.pad_h > 0) {
          ok = both(ok, (hi >= 0) & (hi < int32_t(H)));
          h_idx = clamp_index(hi, H);
        }
        if (s.pad_w > 0) {
          ok = both(ok, (wi >= 0) & (wi < int32_t(W)));
          w_idx = clamp_index(wi, W);
        }
        Val gv = gy[(n * uint32_t(s.cout) + co) * (Ho * Wo) + pos];
        Val xv = x[(n * uint32_t(s.cin) + ci) * (H * W) + h_idx * W + w_idx];
        partial += masked(ok, gv * xv);
      });
    }
    workgroup_tree_reduce(kb, scratch, lid, partial.get(), wg);
    kb.if_(lid == 0u, [&] { gw[e] = scratch[0u]; });
  });
  return {kb.finish(), weights};
}

}  // namespace spire::lowering::heavy
