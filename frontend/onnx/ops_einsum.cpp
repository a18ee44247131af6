// Einsum: the equation's contraction as graph ops. Each operand first takes the diagonal of any label it repeats (a
// gather over the two axes made one) and sums out the labels nothing else names; the operands are then contracted
// left to right, two at a time, as one batched matmul ([batch, left, summed] x [batch, summed, right]); the result
// sums what the output does not name and is permuted into the output's order. Ellipses stand for the same dims in
// every operand (aligned from the right); dims that differ, broadcasting by 1 included, are refused.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// A label: a letter, or kEllipsis + k for the k-th dim an ellipsis stands for.
constexpr int kEllipsis = 1000;

struct Term {
  Value v;
  std::vector<int> labels;  // one per axis of v
};

// The labels of one side of the equation ("ij", "...ii", "b...k"), for an operand of `rank` axes (-1: the output,
// whose ellipsis stands for `ellipsis` dims).
std::vector<int> parse_labels(NodeContext& c, const std::string& s, int64_t rank, int64_t ellipsis) {
  std::vector<int> out;
  int64_t letters = 0;
  for (char ch : s)
    if (std::isalpha(static_cast<unsigned char>(ch))) ++letters;
  const size_t dots = s.find("...");
  if (dots != std::string::npos && s.find("...", dots + 3) != std::string::npos) c.refuse("two ellipses in one term");
  const int64_t spans = dots == std::string::npos ? 0 : (rank < 0 ? ellipsis : rank - letters);
  if (spans < 0 || (rank >= 0 && dots == std::string::npos && letters != rank))
    c.refuse(fmt::format("term '{}' does not fit an operand of rank {}", s, rank));
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      for (int64_t k = 0; k < spans; ++k) out.push_back(kEllipsis + int(ellipsis - spans + k));
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(s[i]))) {
      out.push_back(s[i]);
    } else {
      c.refuse(fmt::format("'{}' in the equation's term '{}'", s[i], s));
    }
  }
  return out;
}

class Einsum {
 public:
  explicit Einsum(NodeContext& c) : c_(c), g_(c.g()) {}

  void run() {
    std::string eq;
    for (char ch : c_.attr_string("equation")) if (ch != ' ') eq += ch;
    const size_t arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t at = 0;;) {
      const size_t comma = lhs.find(',', at);
      terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    if (int64_t(terms.size()) != c_.num_inputs())
      c_.refuse(fmt::format("the equation has {} operands, the node {}", terms.size(), c_.num_inputs()));
    int64_t ellipsis = 0;  // the most dims an ellipsis stands for
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t letters = 0;
      for (char ch : terms[i]) letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
      if (terms[i].find("...") != std::string::npos) ellipsis = std::max(ellipsis, c_.type(int(i)).rank() - letters);
    }
    std::vector<Term> operands;
    std::map<int, int> uses;  // how many operands name each label
    for (size_t i = 0; i < terms.size(); ++i) {
      if (!graph::is_float(c_.type(int(i)).dtype)) c_.refuse("spire runs Einsum on float tensors only");
      Term t{c_.value(int(i)), parse_labels(c_, terms[i], c_.type(int(i)).rank(), ellipsis)};
      const Shape& s = c_.type(int(i)).shape;
      for (size_t d = 0; d < t.labels.size(); ++d) size_of(t.labels[d], s[d]);
      std::vector<int> seen = t.labels;
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (int l : seen) ++uses[l];
      operands.push_back(diagonals(t));
    }
    std::vector<int> output;
    if (arrow != std::string::npos) {
      output = parse_labels(c_, eq.substr(arrow + 2), -1, ellipsis);
      for (int l : output) {
        if (!uses.count(l)) c_.refuse(fmt::format("the output names a label no operand has"));
        if (std::count(output.begin(), output.end(), l) != 1) c_.refuse("the output repeats a label");
      }
    } else {  // implicit: the ellipsis, then the letters named once, in alphabetical order
      for (int64_t k = 0; k < ellipsis; ++k) output.push_back(kEllipsis + int(k));
      for (const auto& [l, n] : uses) {
        int count = 0;
        for (const std::string& t : terms) count += int(std::count(t.begin(), t.end(), char(l)));
        if (l < kEllipsis && count == 1) output.push_back(l);
      }
    }
    // Left to right: each step keeps what the output or a later operand names.
    Term acc = operands[0];
    for (size_t i = 1; i <= operands.size(); ++i) {
      std::vector<int> keep = output;
      for (size_t j = i; j < operands.size(); ++j) keep.insert(keep.end(), operands[j].labels.begin(), operands[j].labels.end());
      if (i < operands.size()) {
        std::vector<int> with_next = keep;
        with_next.insert(with_next.end(), operands[i].labels.begin(), operands[i].labels.end());
        acc = sum_out(acc, with_next);
        std::vector<int> with_acc = keep;
        with_acc.insert(with_acc.end(), acc.labels.begin(), acc.labels.end());
        acc = contract(acc, sum_out(operands[i], with_acc), keep);
      } else {
        acc = sum_out(acc, keep);
      }
    }
    std::vector<int64_t> perm;
    for (int l : output) perm.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == int64_t(d);
    c_.set_output(0, identity ? acc.v : g_.permute(acc.v, perm));
  }

 private:
  void size_of(int label, int64_t n) {
    auto [it, fresh] = sizes_.emplace(label, n);
    if (!fresh && it->second != n)
      c_.refuse(fmt::format("a label spans {} in one operand and {} in another (broadcasting is not supported)", it->second, n));
  }

  // The diagonal of every label the term repeats.
  Term diagonals(Term t) {
    for (;;) {
      size_t p = 0, q = 0;
      for (p = 0; p < t.labels.size(); ++p) {
        q = std::find(t.labels.begin() + long(p) + 1, t.labels.end(), t.labels[p]) - t.labels.begin();
        if (q < t.labels.size()) break;
      }
      if (p == t.labels.size()) return t;
      const Shape s = g_.type(t.v).shape;
      const int64_t n = s[p];
      std::vector<int64_t> perm;
      std::vector<int> labels;
      Shape merged;
      for (size_t d = 0; d < s.size(); ++d)
        if (d != p && d != q) perm.push_back(int64_t(d)), labels.push_back(t.labels[d]), merged.push_back(s[d]);
      perm.push_back(int64_t(p));
      perm.push_back(int64_t(q));
      merged.push_back(n * n);
      graph::Tensor at(graph::DType::I64, {n});
      for (int64_t k = 0; k < n; ++k) at.data[size_t(k)] = double(k * (n + 1));
      const Value flat = g_.reshape(g_.permute(t.v, perm), merged);
      t.v = g_.op("gather", {flat, c_.constant_value(at, c_.node().output(0) + ".diagonal")},
                  {{"axis", int64_t(merged.size() - 1)}});
      labels.push_back(t.labels[p]);
      t.labels = labels;
    }
  }

  // The term with every label not in `keep` summed out.
  Term sum_out(Term t, const std::vector<int>& keep) {
    std::vector<int64_t> axes;
    std::vector<int> labels;
    for (size_t d = 0; d < t.labels.size(); ++d) {
      if (std::find(keep.begin(), keep.end(), t.labels[d]) == keep.end()) axes.push_back(int64_t(d));
      else labels.push_back(t.labels[d]);
    }
    if (axes.empty()) return t;
    return {g_.sum(t.v, axes), labels};
  }

  // a and b contracted over the labels both have and `keep` does not name, one batched matmul.
  Term contract(const Term& a, const Term& b, const std::vector<int>& keep) {
    auto has = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
    std::vector<int> batch, left, summed, right;
    for (int l : a.labels) {
      if (!has(b.labels, l)) left.push_back(l);
      else if (has(keep, l)) batch.push_back(l);
      else summed.push_back(l);
    }
    for (int l : b.labels)
      if (!has(a.labels, l)) right.push_back(l);
    auto arrange = [&](const Term& t, std::vector<std::vector<int>> groups) {
      std::vector<int64_t> perm;
      Shape dims;
      for (const auto& group : groups) {
        int64_t n = 1;
        for (int l : group) {
          perm.push_back(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
          n *= sizes_.at(l);
        }
        dims.push_back(n);
      }
      return g_.reshape(g_.permute(t.v, perm), dims);
    };
    const Value product = g_.matmul(arrange(a, {batch, left, summed}), arrange(b, {batch, summed, right}));
    Term r;
    Shape dims;
    for (const auto* group : {&batch, &left, &right})
      for (int l : *group) r.labels.push_back(l), dims.push_back(sizes_.at(l));
    r.v = g_.reshape(product, dims);
    return r;
  }

  NodeContext& c_;
  graph::Graph& g_;
  std::map<int, int64_t> sizes_;
};

}  // namespace

void register_einsum_ops(OpTable& t) {
  t["Einsum"] = {[](NodeContext& c) { Einsum(c).run(); }, {}};
}

}  // namespace spire::onnx_import
