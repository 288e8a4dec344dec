#pragma once
// when_all / when_any: futures that become ready when all / any of their inputs are.
#include <array>
#include <atomic>
#include <cstddef>
#include <iterator>
#include <memory>
#include <tuple>
#include <vector>

#include "grain/future.hpp"

namespace grain {

template <class Sequence>
struct when_any_result {
  std::size_t index = static_cast<std::size_t>(-1);
  Sequence futures;
};

namespace detail {

// Calls on_ready() once every registered input state is ready. Self-owning: freed after that.
class join_counter {
 public:
  template <class OnReady>
  static void run(std::vector<state_base*> inputs, OnReady on_ready);
  // N inputs known at compile time (dataflow on N futures): one pooled block, no heap.
  template <std::size_t N, class OnReady>
  static void run(const std::array<state_base*, N>& inputs, OnReady on_ready);
};

struct join_node : waiter {
  struct join_base* owner = nullptr;
};

struct join_base {
  std::atomic<std::size_t> remaining;
  explicit join_base(std::size_t n) : remaining(n + 1) {}
  virtual ~join_base() = default;
  virtual void fire() = 0;
  virtual void destroy() noexcept = 0;
  void arrive() {
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      fire();
      destroy();
    }
  }
  void start(state_base* const* inputs, join_node* nodes, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      nodes[i].owner = this;
      nodes[i].notify_fn = [](waiter* w) noexcept { static_cast<join_node*>(w)->owner->arrive(); };
      if (inputs[i]->deferred_fn && !inputs[i]->claimed.exchange(true))
        inputs[i]->deferred_fn(inputs[i]);
      if (!inputs[i]->add_waiter(&nodes[i])) arrive();
    }
    arrive();  // the guard count
  }
};

template <class OnReady>
struct join_impl final : join_base {
  std::vector<join_node> nodes;
  OnReady on_ready;
  join_impl(std::size_t n, OnReady f) : join_base(n), nodes(n), on_ready(std::move(f)) {}
  void fire() override { on_ready(); }
  void destroy() noexcept override { delete this; }
};

template <std::size_t N, class OnReady>
struct fixed_join final : join_base {
  std::array<join_node, N> nodes;
  OnReady on_ready;
  explicit fixed_join(OnReady f) : join_base(N), on_ready(std::move(f)) {}
  void fire() override { on_ready(); }
  void destroy() noexcept override {
    this->~fixed_join();
    deallocate_for<fixed_join>(this);
  }
};

template <class OnReady>
void join_counter::run(std::vector<state_base*> inputs, OnReady on_ready) {
  auto* j = new join_impl<OnReady>(inputs.size(), std::move(on_ready));
  j->start(inputs.data(), j->nodes.data(), inputs.size());
}

template <std::size_t N, class OnReady>
void join_counter::run(const std::array<state_base*, N>& inputs, OnReady on_ready) {
  auto* j =
      ::new (allocate_for<fixed_join<N, OnReady>>()) fixed_join<N, OnReady>(std::move(on_ready));
  j->start(inputs.data(), j->nodes.data(), N);
}

template <class F>
state_base* state_ptr(F& f) {
  state_base* s = future_access::state(f);
  if (!s) throw_future_error(future_errc::no_state);
  return s;
}

}  // namespace detail

template <class InputIt>
auto when_all(InputIt first, InputIt last)
    -> future<std::vector<typename std::iterator_traits<InputIt>::value_type>> {
  using F = typename std::iterator_traits<InputIt>::value_type;
  using R = std::vector<F>;
  auto result = std::make_shared<R>();
  for (; first != last; ++first) result->push_back(std::move(*first));
  std::vector<detail::state_base*> inputs;
  for (auto& f : *result) inputs.push_back(detail::state_ptr(f));
  promise<R> p;
  future<R> out = p.get_future();
  detail::join_counter::run(
      std::move(inputs), [p = std::move(p), result]() mutable { p.set_value(std::move(*result)); });
  return out;
}

template <class Range>
requires requires(Range& r) {
  std::begin(r);
}
auto when_all(Range&& r) {
  return when_all(std::make_move_iterator(std::begin(r)), std::make_move_iterator(std::end(r)));
}

template <class... Fs>
requires(is_future_v<Fs>&&...) auto when_all(Fs&&... fs)
    -> future<std::tuple<std::decay_t<Fs>...>> {
  using R = std::tuple<std::decay_t<Fs>...>;
  auto result = std::make_shared<R>(std::move(fs)...);
  std::vector<detail::state_base*> inputs;
  std::apply([&](auto&... f) { (inputs.push_back(detail::state_ptr(f)), ...); }, *result);
  promise<R> p;
  future<R> out = p.get_future();
  detail::join_counter::run(
      std::move(inputs), [p = std::move(p), result]() mutable { p.set_value(std::move(*result)); });
  return out;
}

inline future<std::tuple<>> when_all() {
  return make_ready_future(std::tuple<>());
}

namespace detail {
template <class R>
future<when_any_result<R>> when_any_impl(R&& seq, std::vector<state_base*> inputs) {
  using Res = when_any_result<R>;
  struct node : waiter {
    std::size_t index;
    struct shared* s;
  };
  struct shared {
    std::atomic<bool> done{false};
    std::atomic<std::size_t> refs;
    promise<Res> p;
    R seq;
    std::vector<node> nodes;
    std::vector<state_base*> inputs;
    void release() {
      if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
  };
  auto* s = new shared();
  s->seq = std::move(seq);
  s->inputs = std::move(inputs);
  s->nodes.resize(s->inputs.size());
  future<Res> out = s->p.get_future();
  if (s->inputs.empty()) {
    s->p.set_value(Res{static_cast<std::size_t>(-1), std::move(s->seq)});
    delete s;
    return out;
  }
  // One reference per registered node plus the registration itself.
  s->refs.store(s->inputs.size() + 1);
  for (std::size_t i = 0; i < s->inputs.size(); ++i) {
    node& n = s->nodes[i];
    n.index = i;
    n.s = s;
    n.notify_fn = [](waiter* w) noexcept {
      auto* nd = static_cast<node*>(w);
      shared* sh = nd->s;
      if (!sh->done.exchange(true)) {
        // Unhook the other nodes so no state keeps pointers into `sh` after it dies. Their
        // references go in one step: this node still holds its own, so they are never the
        // last (and the compiler sees no use of `sh` after a possible delete).
        std::size_t unhooked = 0;
        for (std::size_t k = 0; k < sh->inputs.size(); ++k)
          if (k != nd->index && sh->inputs[k]->remove_waiter(&sh->nodes[k])) ++unhooked;
        sh->refs.fetch_sub(unhooked, std::memory_order_acq_rel);
        sh->p.set_value(Res{nd->index, std::move(sh->seq)});
      }
      sh->release();
    };
  }
  std::size_t i = 0;
  for (; i < s->inputs.size() && !s->done.load(); ++i) {
    state_base* in = s->inputs[i];
    if (in->deferred_fn && !in->claimed.exchange(true)) in->deferred_fn(in);
    if (!in->add_waiter(&s->nodes[i])) s->nodes[i].notify();
  }
  // Nodes never registered (a winner was already found) give back their references.
  for (; i < s->inputs.size(); ++i) s->release();
  s->release();
  return out;
}
}  // namespace detail

template <class InputIt>
auto when_any(InputIt first, InputIt last)
    -> future<when_any_result<std::vector<typename std::iterator_traits<InputIt>::value_type>>> {
  using F = typename std::iterator_traits<InputIt>::value_type;
  std::vector<F> seq;
  for (; first != last; ++first) seq.push_back(std::move(*first));
  std::vector<detail::state_base*> inputs;
  for (auto& f : seq) inputs.push_back(detail::state_ptr(f));
  return detail::when_any_impl(std::move(seq), std::move(inputs));
}

template <class Range>
requires requires(Range& r) {
  std::begin(r);
}
auto when_any(Range&& r) {
  return when_any(std::make_move_iterator(std::begin(r)), std::make_move_iterator(std::end(r)));
}

template <class... Fs>
requires(is_future_v<Fs>&&...) auto when_any(Fs&&... fs)
    -> future<when_any_result<std::tuple<std::decay_t<Fs>...>>> {
  std::tuple<std::decay_t<Fs>...> seq(std::move(fs)...);
  std::vector<detail::state_base*> inputs;
  std::apply([&](auto&... f) { (inputs.push_back(detail::state_ptr(f)), ...); }, seq);
  return detail::when_any_impl(std::move(seq), std::move(inputs));
}

}  // namespace grain
