#pragma once
// Actions: functions that other localities may call. A function becomes an action by naming
// it, grain::action<&fn>; the first use anywhere in the program registers it on every rank
// (every rank runs the same binary, so the registration runs at start-up everywhere).
//
//   int square(int x) { return x * x; }
//   grain::future<int> f = grain::async(grain::locality(1), grain::action<&square>{}, 7);
//
// An action's id is a 64-bit hash of its name (the function's qualified name as the compiler
// spells it), so ids agree across ranks whatever the order of static initialisation; a
// collision between two names is an error at start-up. A second hash over the parameter and
// result types catches a sender and a receiver that disagree on the signature.
//
// A call received from another locality runs as a task by default (it may wait). An action
// that cannot suspend — it only computes and returns, never waits for a future, a lock or a
// sleep — may be a *direct action* (HPX's HPX_PLAIN_DIRECT_ACTION), named
// grain::direct_action<&fn>: the receiving locality runs it at once in the network's progress,
// without a task (docs/distributed.md, "Direct actions"). A wait inside one throws
// std::logic_error, which the caller's future receives.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "grain/distributed/serialization.hpp"

namespace grain {

namespace detail {

// What a registered action is to the parcel layer: run it on serialized arguments and get
// the serialized result (throws parcel_error for undecodable arguments; an exception of the
// function itself propagates).
struct action_info {
  std::string name;
  std::uint64_t id = 0;
  std::uint64_t signature = 0;
  bool returns_void = false;
  void (*invoke)(std::span<const char> args, std::vector<char>& result) = nullptr;
  bool direct = false;  // run in the network's progress, not as a task
  // Its place in the table every rank builds the same way when the job starts
  // (freeze_wire_indices); a compact parcel names its action by it (docs/distributed.md,
  // "Compact parcels"). no_wire_index for an action registered later, or past the first 2^20.
  std::uint32_t wire_index = no_wire_index;
  static constexpr std::uint32_t no_wire_index = 0xffff'ffffu;
};

// Serialises one call's arguments (appends them to `out`), type-erased without an
// allocation: a post of a coalesced action writes them straight into the message being built
// (docs/coalescing.md, "The per-parcel path").
struct args_writer {
  void (*write)(const void* ctx, std::vector<char>& out) = nullptr;
  const void* ctx = nullptr;
  void operator()(std::vector<char>& out) const { write(ctx, out); }
};

// Registers once; returns the stored entry (stable address). Aborts with a message when two
// different names hash to the same id, or when one function is named both as an action and
// as a direct action.
const action_info& register_action(action_info info);
// nullptr when no action with this id is registered in this process.
const action_info* find_action(std::uint64_t id) noexcept;
// Numbers the actions registered so far in the order of their ids (the same on every rank
// that runs the same program, whatever the order of static initialisation) and returns a
// fingerprint of the table (ids, signatures, direct or not): the ranks compare theirs before
// they use the numbers. Once per process; later calls return the first fingerprint, and
// actions registered after it get no number.
std::uint64_t freeze_wire_indices();
// The action numbered `index` by freeze_wire_indices; nullptr when none is.
const action_info* find_action_by_wire_index(std::uint32_t index) noexcept;
// By full name ("ns::fn") or by the name after the last "::" ("fn"); nullptr when none is
// registered (or several share that short name).
const action_info* find_action(std::string_view name) noexcept;
std::uint64_t hash_bytes(std::string_view s) noexcept;

template <auto F>
constexpr std::string_view function_name_of() {
  // "... function_name_of() [with auto F = ns::fn; ...]" (g++) or "[F = &ns::fn]" (clang).
  constexpr std::string_view p = __PRETTY_FUNCTION__;
  constexpr std::size_t b0 = p.find("F = ");
  constexpr std::string_view rest = p.substr(b0 + 4);
  constexpr std::size_t e = rest.find_first_of(";]");
  constexpr std::string_view n = rest.substr(0, e);
  return n.starts_with('&') ? n.substr(1) : n;
}

template <class Sig>
struct function_traits;
template <class R, class... P>
struct function_traits<R (*)(P...)> {
  using result = R;
  using args = std::tuple<std::decay_t<P>...>;
};
template <class R, class... P>
struct function_traits<R (*)(P...) noexcept> : function_traits<R (*)(P...)> {};

template <class T>
struct apply_deserialize;
template <class... T>
struct apply_deserialize<std::tuple<T...>> {
  static std::tuple<T...> from(std::span<const char> in) { return deserialize_values<T...>(in); }
};

template <auto F>
void invoke_action(std::span<const char> in, std::vector<char>& out) {
  using traits = function_traits<decltype(F)>;
  auto args = apply_deserialize<typename traits::args>::from(in);
  if constexpr (std::is_void_v<typename traits::result>) {
    std::apply(F, std::move(args));
  } else {
    serialize_values(out, std::apply(F, std::move(args)));
  }
}

template <auto F>
std::uint64_t signature_of() {
  using traits = function_traits<decltype(F)>;
  return hash_bytes(std::string(typeid(typename traits::args).name()) + "->" +
                    typeid(typename traits::result).name());
}

template <auto F, bool Direct>
const action_info& action_registration() {
  static const action_info& info = register_action(action_info{
      std::string(function_name_of<F>()), hash_bytes(function_name_of<F>()), signature_of<F>(),
      std::is_void_v<typename function_traits<decltype(F)>::result>, &invoke_action<F>, Direct});
  return info;
}

}  // namespace detail

// How the receiving locality runs a call: as a task (may wait), or directly in the network's
// progress (must not wait).
enum class action_mode { task, direct };

// grain::action<&fn>: fn is a plain function (not a lambda or member) whose parameters and
// result can be serialized (serialization.hpp).
template <auto F, action_mode M = action_mode::task>
struct action {
  static_assert(std::is_pointer_v<decltype(F)> &&
                    std::is_function_v<std::remove_pointer_t<decltype(F)>>,
                "grain::action<&fn>: fn must be a plain function");
  using result_type = typename detail::function_traits<decltype(F)>::result;
  using args_type = typename detail::function_traits<decltype(F)>::args;
  static const detail::action_info& info() { return registered; }
  static std::string_view name() { return info().name; }
  // Forces the registration at start-up in every program that names the action, so that a
  // rank which never calls it can still serve it.
  static inline const detail::action_info& registered =
      detail::action_registration<F, M == action_mode::direct>();
};

// grain::direct_action<&fn>: fn runs on the receiving locality in the network's progress,
// without a task; for short functions that never wait (see above).
template <auto F>
using direct_action = action<F, action_mode::direct>;

}  // namespace grain
