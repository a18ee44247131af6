// How lowering learns which config the tuner chose for a tunable node, without knowing devices or files.
//
// Each tunable node has a key: its template ("matmul", "conv2d", ...), its shapes as text and its element
// type. The caller of lower() / compile() passes the choices made for the device it lowers for
// (tuning/tuning_cache.h reads them from the cache file, keyed by device and driver as well); lowering asks
// for each tunable node's key and uses the template's heuristic where there is no answer.
#pragma once

#include <compare>
#include <map>
#include <optional>
#include <string>

#include "kernels/tuning_config.h"

namespace spire::lowering {

struct TuningKey {
  std::string op;     // the template: "matmul", "conv2d", "conv2d_grad_input", "conv2d_grad_weight", "reduce_sum", ...
  std::string shape;  // the template's shape text: "m64_k784_n120", "n64_c1_h28_w28_k6_r5x5_s1x1_p2x2_d1x1_g1", ...
  std::string dtype;  // the element type: "f32", "f64", "i32"
  std::string text() const { return op + " " + shape + " " + dtype; }
  friend auto operator<=>(const TuningKey&, const TuningKey&) = default;
};

class TuningChoices {
 public:
  virtual ~TuningChoices() = default;
  // The config chosen for `key`, if any.
  virtual std::optional<heavy::Config> find(const TuningKey& key) const = 0;
};

// Choices held in a map: what the tuning cache hands lowering for one device, and what tests build by hand.
class MapTuningChoices final : public TuningChoices {
 public:
  std::optional<heavy::Config> find(const TuningKey& key) const override {
    auto it = configs.find(key);
    if (it == configs.end()) return std::nullopt;
    return it->second;
  }
  std::map<TuningKey, heavy::Config> configs;
};

}  // namespace spire::lowering
