#pragma once
// grain::channel<T>: a FIFO between tasks. send() suspends while a bounded channel is full;
// receive() suspends while it is empty and returns nullopt once it is closed and drained.
#include <cstddef>
#include <deque>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "grain/lcos/condition_variable.hpp"
#include "grain/lcos/mutex.hpp"

namespace grain {

class channel_closed : public std::logic_error {
 public:
  channel_closed() : std::logic_error("grain::channel: send on a closed channel") {}
};

template <class T>
class channel {
 public:
  explicit channel(std::size_t capacity = std::numeric_limits<std::size_t>::max())
      : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("grain::channel: capacity must be at least 1");
  }

  void send(T value) {
    std::unique_lock lock(m_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) throw channel_closed();
    items_.push_back(std::move(value));
    not_empty_.notify_one();
  }
  bool try_send(T value) {
    std::unique_lock lock(m_);
    if (closed_) throw channel_closed();
    if (items_.size() >= capacity_) return false;
    items_.push_back(std::move(value));
    not_empty_.notify_one();
    return true;
  }
  std::optional<T> receive() {
    std::unique_lock lock(m_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    return take(lock);
  }
  std::optional<T> try_receive() {
    std::unique_lock lock(m_);
    return take(lock);
  }
  void close() {
    std::unique_lock lock(m_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }
  bool closed() const {
    std::unique_lock lock(m_);
    return closed_;
  }
  std::size_t size() const {
    std::unique_lock lock(m_);
    return items_.size();
  }

 private:
  std::optional<T> take(std::unique_lock<mutex>&) {
    if (items_.empty()) return std::nullopt;
    std::optional<T> v(std::move(items_.front()));
    items_.pop_front();
    not_full_.notify_one();
    return v;
  }
  mutable mutex m_;
  condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  std::size_t capacity_;
  bool closed_ = false;
};

}  // namespace grain
