#include "training/batches.h"

#include <stdexcept>

namespace spire::training {

Batches::Batches(const io::FashionMnist& data, int64_t batch, int64_t limit, float mean, float std)
    : data_(data), batch_(batch), mean_(mean), std_(std) {
  if (batch <= 0) throw std::invalid_argument("batch size must be positive");
  count_ = data.images.count;
  if (limit > 0 && limit < count_) count_ = limit;
  if (count_ < batch)
    throw std::invalid_argument("only " + std::to_string(count_) + " images for a batch of " + std::to_string(batch));
  order_.resize(size_t(count_));
  for (int64_t i = 0; i < count_; ++i) order_[size_t(i)] = i;
}

void Batches::shuffle(uint64_t seed, int epoch) {
  for (int64_t i = 0; i < count_; ++i) order_[size_t(i)] = i;
  std::mt19937_64 rng(seed * 1000003u + uint64_t(epoch));
  for (int64_t i = count_ - 1; i > 0; --i) {
    int64_t j = int64_t(rng() % uint64_t(i + 1));
    std::swap(order_[size_t(i)], order_[size_t(j)]);
  }
}

void Batches::fill(int64_t b, std::vector<float>& x, std::vector<int32_t>& y) const {
  const int64_t pixels = data_.images.rows * data_.images.cols;
  x.resize(size_t(batch_ * pixels));
  y.resize(size_t(batch_));
  for (int64_t k = 0; k < batch_; ++k) {
    int64_t img = order_[size_t(b * batch_ + k)];
    const uint8_t* src = data_.images.pixels.data() + img * pixels;
    float* dst = x.data() + k * pixels;
    for (int64_t p = 0; p < pixels; ++p) dst[p] = (float(src[p]) / 255.0f - mean_) / std_;
    y[size_t(k)] = data_.labels[size_t(img)];
  }
}

}  // namespace spire::training
