// Fashion-MNIST as minibatches: images normalized to float [N,1,28,28], labels as i32, a seeded shuffle
// per epoch. Static graph shapes mean every batch has exactly `batch` images: the last partial batch of an
// epoch is dropped (at most batch-1 images, a different subset each epoch because of the shuffle).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "io/idx.h"

namespace spire::training {

// The mean and standard deviation of Fashion-MNIST's training pixels (scaled to [0,1]), as commonly used
// with torchvision's Normalize.
inline constexpr float kFashionMean = 0.2860f;
inline constexpr float kFashionStd = 0.3530f;

class Batches {
 public:
  // Keeps the first `limit` images when limit > 0. Pixels become (p/255 - mean) / std.
  Batches(const io::FashionMnist& data, int64_t batch, int64_t limit = 0, float mean = kFashionMean,
          float std = kFashionStd);
  int64_t batch() const { return batch_; }
  int64_t images() const { return count_; }
  int64_t batches_per_epoch() const { return count_ / batch_; }
  // Reorders the images for a new epoch (a Fisher-Yates shuffle driven by mt19937_64, so the order depends
  // only on the seed and the epoch, on every platform).
  void shuffle(uint64_t seed, int epoch);
  // Fills batch b of the current order: x (batch*784 floats, normalized) and y (batch labels).
  void fill(int64_t b, std::vector<float>& x, std::vector<int32_t>& y) const;
  // The label of image `image` in file order.
  int32_t label(int64_t image) const { return data_.labels[size_t(image)]; }

 private:
  const io::FashionMnist& data_;
  int64_t batch_;
  int64_t count_;
  float mean_, std_;
  std::vector<int64_t> order_;
};

}  // namespace spire::training
