// Histogram counters (docs/counters.md: /coalescing/time/parcel-arrival-histogram).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation {

histogram::histogram(double min, double max, std::size_t buckets)
    : min_(min), max_(max), n_(buckets) {
  if (!(max > min) || buckets == 0)
    throw std::invalid_argument("histogram: need max > min and at least one bucket");
  width_ = (max - min) / static_cast<double>(buckets);
  counts_ = std::make_unique<std::atomic<std::uint64_t>[]>(buckets + 2);
}

std::size_t histogram::bucket_of(double v) const noexcept {
  if (!(v >= min_)) return 0;
  if (v >= max_) return n_ + 1;
  return std::min(n_, static_cast<std::size_t>((v - min_) / width_)) + 1;
}

void histogram::record(double v) noexcept {
  counts_[bucket_of(v)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

void histogram::add(const std::uint32_t* per_bucket, double sum) noexcept {
  std::uint64_t n = 0;
  for (std::size_t k = 0; k < n_ + 2; ++k)
    if (per_bucket[k] != 0) {
      counts_[k].fetch_add(per_bucket[k], std::memory_order_relaxed);
      n += per_bucket[k];
    }
  if (n == 0) return;
  count_.fetch_add(n, std::memory_order_relaxed);
  sum_.fetch_add(sum, std::memory_order_relaxed);
}

std::uint64_t histogram::count() const noexcept {
  return count_.load(std::memory_order_relaxed);
}
double histogram::sum() const noexcept {
  return sum_.load(std::memory_order_relaxed);
}
std::uint64_t histogram::bucket(std::size_t k) const noexcept {
  return k < n_ + 2 ? counts_[k].load(std::memory_order_relaxed) : 0;
}

namespace {

class histogram_provider final : public counter_provider {
 public:
  histogram_provider(counter_info info, std::shared_ptr<histogram> h) : h_(std::move(h)) {
    info.kind = counter_kind::histogram;
    const std::string base = info.name;
    const std::string unit = info.unit;
    const std::string desc = info.description;
    infos_.push_back(std::move(info));
    infos_.push_back(
        {base + "/count", "count", "values recorded in " + base, counter_kind::monotonic});
    for (std::size_t k = 0; k < h_->buckets() + 2; ++k) {
      std::string range;
      if (k == 0)
        range = "below " + std::to_string(h_->min());
      else if (k == h_->buckets() + 1)
        range = "at or above " + std::to_string(h_->max());
      else {
        const double w = (h_->max() - h_->min()) / static_cast<double>(h_->buckets());
        range = "[" + std::to_string(h_->min() + w * static_cast<double>(k - 1)) + ", " +
                std::to_string(h_->min() + w * static_cast<double>(k)) + ")";
      }
      std::string desc = "values of " + base;
      desc += " in ";
      desc += range;
      if (!unit.empty()) desc += " " + unit;
      infos_.push_back({base + "/bucket#" + std::to_string(k), "count", std::move(desc),
                        counter_kind::monotonic});
    }
    base_.assign(h_->buckets() + 2, 0);
  }
  const std::vector<counter_info>& counters() const override { return infos_; }
  void sample(std::uint64_t, counter_reading* out) override {
    const std::uint64_t n = h_->count() - std::min(h_->count(), count_base_);
    const double s = h_->sum() - sum_base_;
    out[0] = n ? counter_reading{s / static_cast<double>(n), true} : counter_reading{0, false};
    out[1] = {static_cast<double>(n), true};
    for (std::size_t k = 0; k < base_.size(); ++k) {
      const std::uint64_t b = h_->bucket(k);
      out[2 + k] = {static_cast<double>(b - std::min(b, base_[k])), true};
    }
  }
  void reset(std::uint64_t) override {
    count_base_ = h_->count();
    sum_base_ = h_->sum();
    for (std::size_t k = 0; k < base_.size(); ++k) base_[k] = h_->bucket(k);
  }

 private:
  std::shared_ptr<histogram> h_;
  std::vector<counter_info> infos_;
  std::vector<std::uint64_t> base_;
  std::uint64_t count_base_ = 0;
  double sum_base_ = 0;
};

}  // namespace

int add_histogram(counter_registry& r, counter_info info, std::shared_ptr<histogram> h) {
  if (!h) throw std::invalid_argument("add_histogram: null histogram");
  return r.add_provider(std::make_shared<histogram_provider>(std::move(info), std::move(h)));
}

}  // namespace grain::instrumentation
