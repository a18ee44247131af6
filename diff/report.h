// What `spire diff` prints and writes: a table per comparison, first divergence first, and the same as JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diff/compare.h"

namespace spire::diff {

struct ReportOptions {
  std::string rule;          // the tolerance rule in words (rule_text)
  bool every_value = false;  // list every value, not only those off
  // --precision: the devices ran the model in this half dtype; the report adds the values whose error grows most.
  std::optional<graph::DType> precision{};
};

// For each comparison: a summary line, the first divergence in detail (node, op, inputs, kernel, error, own
// error), then the table of values (those off, or every value).
std::string report_text(const std::vector<Comparison>& comparisons, const ReportOptions& options);

// The same as JSON (docs/DIFF.md lists the fields); non-finite numbers are written as null.
std::string report_json(const std::vector<Comparison>& comparisons, const ReportOptions& options,
                        const std::string& model, const std::string& inputs);

// "[3,5]": a flat index of a tensor of `shape` as a multi-index.
std::string index_text(int64_t flat, const graph::Shape& shape);

}  // namespace spire::diff
