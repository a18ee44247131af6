// One capture of every value (capture.h) against another, value by value in topological order: each value's error
// statistics, whether it is within tolerance, which of its inputs were already off, and the first value that is not
// within tolerance (the first divergence).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "diff/capture.h"
#include "diff/tolerance.h"
#include "diff/value_error.h"
#include "ir/graph/graph.h"

namespace spire::diff {

struct ValueRow {
  std::string name;                      // the node's name
  std::string op;                        // its op's name
  std::string text;                      // its line of graph text: result, op, inputs, attributes and type
  std::vector<std::string> input_names;  // each input's node name
  std::vector<std::string> inputs;       // "name: f32[2,3]" for each input
  graph::TensorType type;
  ValueError error;                      // against the compared-with capture
  Verdict verdict;
  // The node alone: its float64 reference re-run on the inputs this device computed, against this device's
  // value (by the same rule), both from one run (the unfused run's for a fused group's root). Within tolerance while
  // `verdict` is not: the node is right and the error came in through its inputs. Absent where no options.feeds.
  std::optional<ValueError> own_error;
  std::optional<Verdict> own_verdict;
  std::vector<std::string> inputs_off;   // the inputs (non-leaf) that were themselves off
  ValueOrigin origin;
  // Not within tolerance against the compared-with value, or the node alone not within its op's tolerance (an error
  // smaller than what its inputs were allowed, made by this node, is still this node's).
  bool off = false;
};

struct Comparison {
  std::string device;   // what was measured: "vulkan:0", "saved:vulkan:0"
  std::string against;  // what it was measured against: "reference", "saved:vulkan:0"
  std::string device_name, driver;
  std::vector<ValueRow> rows;    // every compared value, topological order
  std::optional<size_t> first;   // the first row off
  size_t off = 0;                // rows off
  std::vector<std::string> notes;
  // Why the device could not run the model at all (a kernel it cannot compile, an allocation it refused); such a
  // device does not agree.
  std::string failure;
  bool agrees() const { return !first.has_value() && failure.empty(); }
};

struct CompareOptions {
  ToleranceOverride tolerance{};
  // Feeds of the graph's leaves, for own_error (null: no own errors).
  const std::map<std::string, graph::Tensor>* feeds = nullptr;
  // --precision: the device ran the graph with its f32 values in this half dtype; they are held to the op table's
  // tolerance for it.
  std::optional<graph::DType> judged_as{};
};

Comparison compare(const graph::Graph& g, const Capture& got, const Capture& want, const CompareOptions& options);

// "off, and this node's own error too", ...: a row's status in words (the table's last column).
std::string status_text(const ValueRow& r);

}  // namespace spire::diff
