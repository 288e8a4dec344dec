#pragma once
// Non-blocking collectives over all localities, returning futures (docs/collectives.md):
//   grain::all_reduce(value, op[, args])        every contribution combined with op, everywhere
//   grain::reduce(value, op, root[, args])      the same, the result on `root` only
//   grain::broadcast(value, root[, args])       root's value, everywhere
//   grain::all_gather(value[, args])            every contribution, in locality order
//   grain::collectives::barrier([args])          ready when every contributor has arrived
// Two levels (Wickramasinghe et al. 2017 §IV): `args.local_contributors` tasks on each locality
// contribute to one generation; their values are combined in place as they arrive, then the
// locality takes part in ONE non-blocking MPI collective for that generation, progressed as
// background work, and every contributor's future becomes ready when it completes. Generations are
// numbered per kind of collective on each locality (0, 1, 2, ...: automatic, or given in args), so
// a loop can have many in flight without a global barrier. Values are trivially copyable
// (arithmetic types, std::array, structs); op is any callable T(T, T), captures allowed; it
// should be associative and commutative (localities combine in rank order, contributions on
// a locality in arrival order). On one locality (no mpirun, or -DGRAIN_WITH_MPI=OFF) a
// generation completes when its last local contribution arrives.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "grain/distributed/inline_callback.hpp"
#include "grain/future.hpp"

namespace grain {

// A generation that failed: a contributor's exception, a locality with contributions missing
// (after the timeout), mismatched types or generations across localities, an MPI error. The
// message names the locality, the kind and the generation.
class collective_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct collective_args {
  // Contributions on this locality that make up one generation (the same on every locality
  // for all_gather, whose blocks have one size).
  std::uint32_t local_contributors = 1;
  // -1: automatic (below); otherwise that generation, which every locality must use for the
  // same operation.
  std::int64_t generation = -1;
  // This contributor's index on the locality, in [0, local_contributors), or -1. Automatic
  // generations: a contributor with an index joins its own next generation (so one that makes
  // several calls in a row joins several generations); one without joins the generation being
  // filled (each contributor should then wait for one result before its next call).
  std::int32_t this_site = -1;
};

namespace detail {

enum class collective_kind : std::uint32_t { all_reduce, reduce, broadcast, all_gather, barrier };
inline constexpr int collective_kind_count = 5;
const char* collective_name(collective_kind k) noexcept;

// What a contribution's result goes to: void(result bytes, error), with room for a promise
// inline (inline_callback.hpp): no allocation per contribution, a sixth of an 8-byte
// all_reduce on one node with a shared_ptr'd promise (docs/collectives.md, "Latency").
using collective_done = inline_callback<void(std::span<const char>, std::exception_ptr)>;

// One contribution, type-erased. `done` is called exactly once: with the result's bytes (one
// value; for all_gather every contribution of every locality, rank-major), or with an
// exception. An error found at the call (wrong count, a closed generation, mismatched
// arguments) reaches `done` before contribute returns.
struct collective_contribution {
  collective_kind kind = collective_kind::barrier;
  std::uint32_t root = 0;
  std::uint64_t type_id = 0;  // same T and op on every contributor
  std::uint32_t size = 0;     // sizeof(T); 0 for barrier
  collective_args args;
  const void* value = nullptr;  // `size` bytes; null for barrier or a failed contribution
  std::exception_ptr error;     // a contributor that failed (the generation fails everywhere)
  std::function<void(void* acc, const void* v)> combine;  // acc = op(acc, v), in place
  collective_done done;
};

void contribute(collective_contribution&& c);

std::uint64_t collective_type_hash(std::string_view type_name, std::size_t size) noexcept;

template <class T>
std::uint64_t collective_type_id() {
  static const std::uint64_t id = collective_type_hash(typeid(T).name(), sizeof(T));
  return id;
}

template <class T>
constexpr void check_collective_type() {
  static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T> &&
                    !std::is_pointer_v<T>,
                "grain collectives: the value must be trivially copyable and default "
                "constructible (arithmetic types, std::array, plain structs), not a pointer");
}

template <class T>
T load_value(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
auto promise_done(promise<T> p) {
  return [p = std::move(p)](std::span<const char> r, std::exception_ptr e) mutable {
    if (e)
      p.set_exception(std::move(e));
    else
      p.set_value(load_value<T>(r.data()));
  };
}

template <class T, class Op>
void contribute_reduce(collective_kind kind, const T* value, std::exception_ptr error, Op op,
                       std::uint32_t root, collective_args args, promise<T> p) {
  check_collective_type<T>();
  static_assert(std::is_convertible_v<std::invoke_result_t<Op&, const T&, const T&>, T>,
                "grain::all_reduce/reduce: op(T, T) must return a T");
  collective_contribution c;
  c.kind = kind;
  c.root = root;
  c.type_id = collective_type_id<T>();
  c.size = sizeof(T);
  c.args = args;
  c.value = value;
  c.error = std::move(error);
  c.combine = [op = std::move(op)](void* acc, const void* v) mutable {
    const T r = op(load_value<T>(static_cast<const char*>(acc)),
                   load_value<T>(static_cast<const char*>(v)));
    std::memcpy(acc, &r, sizeof(T));
  };
  c.done = promise_done<T>(std::move(p));
  contribute(std::move(c));
}

template <class T, class Op>
future<T> reduce_like(collective_kind kind, const T& value, Op op, std::uint32_t root,
                      collective_args args) {
  promise<T> p;
  future<T> f = p.get_future();
  contribute_reduce(kind, &value, nullptr, std::move(op), root, args, std::move(p));
  return f;
}

}  // namespace detail

template <class T, class Op>
future<T> all_reduce(const T& value, Op op, collective_args args = {}) {
  return detail::reduce_like(detail::collective_kind::all_reduce, value, std::move(op), 0, args);
}

// The combined value on `root`; on the other localities, the value that locality sent (its
// own contributions combined).
template <class T, class Op>
future<T> reduce(const T& value, Op op, std::uint32_t root, collective_args args = {}) {
  return detail::reduce_like(detail::collective_kind::reduce, value, std::move(op), root, args);
}

// Root's value (the first of root's local contributions to arrive) on every contributor;
// the values given elsewhere are not sent (their type is still checked).
template <class T>
future<T> broadcast(const T& value, std::uint32_t root, collective_args args = {}) {
  detail::check_collective_type<T>();
  promise<T> p;
  future<T> f = p.get_future();
  detail::collective_contribution c;
  c.kind = detail::collective_kind::broadcast;
  c.root = root;
  c.type_id = detail::collective_type_id<T>();
  c.size = sizeof(T);
  c.args = args;
  c.value = &value;
  c.done = detail::promise_done<T>(std::move(p));
  detail::contribute(std::move(c));
  return f;
}

// Every contribution: locality 0's (in their arrival order there), then locality 1's, ...
template <class T>
future<std::vector<T>> all_gather(const T& value, collective_args args = {}) {
  detail::check_collective_type<T>();
  promise<std::vector<T>> p;
  future<std::vector<T>> f = p.get_future();
  detail::collective_contribution c;
  c.kind = detail::collective_kind::all_gather;
  c.type_id = detail::collective_type_id<T>();
  c.size = sizeof(T);
  c.args = args;
  c.value = &value;
  c.done = [p = std::move(p)](std::span<const char> r, std::exception_ptr e) mutable {
    if (e) {
      p.set_exception(std::move(e));
      return;
    }
    std::vector<T> out(r.size() / sizeof(T));
    std::memcpy(out.data(), r.data(), out.size() * sizeof(T));
    p.set_value(std::move(out));
  };
  detail::contribute(std::move(c));
  return f;
}

namespace collectives {

// Not grain::barrier: that name is the local lcos barrier (grain/lcos/barrier.hpp).
inline future<void> barrier(collective_args args = {}) {
  promise<void> p;
  future<void> f = p.get_future();
  detail::collective_contribution c;
  c.kind = detail::collective_kind::barrier;
  c.args = args;
  c.done = [p = std::move(p)](std::span<const char>, std::exception_ptr e) mutable {
    if (e)
      p.set_exception(std::move(e));
    else
      p.set_value();
  };
  detail::contribute(std::move(c));
  return f;
}

// The generation the next automatic contribution of `kind` joins on this locality (tests and
// programs that number generations themselves start from here).
std::uint64_t next_generation(detail::collective_kind kind);

// A generation that has waited this long for a local contribution is started with an error
// (every locality's contributors get it), and one started that long ago without completing
// fails here (a locality that never joined). Default 60 s; --grain:collectives-timeout=MS.
void set_timeout_ms(std::uint64_t ms);
std::uint64_t timeout_ms();

}  // namespace collectives

// all_reduce of a value still to come, which may hold an exception (a failed contributor
// task): it contributes when ready; an exception fails the generation on every locality with
// its message (named with the locality). It counts as one of the local contributions.
template <class T, class Op>
future<T> all_reduce(future<T>&& value, Op op, collective_args args = {}) {
  promise<T> p;
  future<T> f = p.get_future();
  value.then([p = std::move(p), op = std::move(op), args](future<T> v) mutable {
    std::exception_ptr error;
    T x{};
    try {
      x = v.get();
    } catch (...) {
      error = std::current_exception();
    }
    detail::contribute_reduce(detail::collective_kind::all_reduce, error ? nullptr : &x, error,
                              std::move(op), 0, args, std::move(p));
  });
  return f;
}

}  // namespace grain
