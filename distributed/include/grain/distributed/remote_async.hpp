#pragma once
// Calling actions on localities:
//   grain::async(loc, grain::action<&fn>{}, args...) -> grain::future<R>
//   grain::post(loc, grain::action<&fn>{}, args...)  fire and forget
// The arguments are converted to fn's parameter types and serialized here (so the caller may
// change them right after the call); the call becomes a parcel to `loc`, and the result, or
// the exception fn threw, comes back as a parcel that sets the future. A call to find_here()
// runs fn as a local task without serializing. A locality that does not exist is an error at
// the call (std::out_of_range). The returned future composes like any other (then,
// dataflow, when_all).
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "grain/async.hpp"
#include "grain/distributed/action.hpp"
#include "grain/distributed/locality.hpp"
#include "grain/future.hpp"

namespace grain {

// The exception a remote action threw, as the caller sees it: the type is not sent, its
// what() is, with the action and the locality named.
class remote_exception : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// Called with the response: ok and the serialized result, or !ok and an error message.
using response_handler = std::function<void(bool ok, std::span<const char> payload)>;

// Send a call of `a` with serialized arguments to rank `dest` (not here). `on_response`
// empty: a post, nothing comes back.
void send_action(std::uint32_t dest, const action_info& a, std::vector<char> args,
                 response_handler on_response);
// A post of a coalesced action: `write` serialises the arguments straight into the message
// being built for `dest`. False, without calling `write`, when the action is not coalesced
// (the caller then serialises them for send_action).
bool post_coalesced(std::uint32_t dest, const action_info& a, const args_writer& write);
// Throws std::out_of_range for a rank outside [0, get_num_localities()).
void check_locality(const locality& loc);

template <class Tuple>
struct serialize_as;
template <class... P>
struct serialize_as<std::tuple<P...>> {
  template <class... A>
  static std::vector<char> bytes(A&&... a) {
    static_assert(sizeof...(P) == sizeof...(A), "grain::async: wrong number of arguments");
    std::vector<char> out;
    append(out, std::forward<A>(a)...);
    return out;
  }
  template <class... A>
  static void append(std::vector<char>& out, A&&... a) {
    static_assert(sizeof...(P) == sizeof...(A), "grain::post: wrong number of arguments");
    serialize_values<P...>(out, P(std::forward<A>(a))...);
  }
};

}  // namespace detail

template <auto F, action_mode M, class... A>
auto async(const locality& loc, action<F, M> act, A&&... a)
    -> future<typename action<F, M>::result_type> {
  using R = typename action<F, M>::result_type;
  detail::check_locality(loc);
  const detail::action_info& info = act.info();
  if (loc == find_here())
    return grain::async(annotate(info.name.c_str(), F), std::forward<A>(a)...);
  auto bytes = detail::serialize_as<typename action<F, M>::args_type>::bytes(std::forward<A>(a)...);
  auto p = std::make_shared<promise<R>>();
  future<R> f = p->get_future();
  detail::send_action(
      loc.rank(), info, std::move(bytes), [p, &info, loc](bool ok, std::span<const char> in) {
        if (!ok) {
          p->set_exception(
              std::make_exception_ptr(remote_exception(std::string(in.begin(), in.end()))));
          return;
        }
        try {
          if constexpr (std::is_void_v<R>) {
            if (!in.empty()) throw parcel_error("a void action returned bytes");
            p->set_value();
          } else {
            p->set_value(std::get<0>(deserialize_values<R>(in)));
          }
        } catch (const parcel_error& e) {
          p->set_exception(std::make_exception_ptr(
              parcel_error("the result of action '" + info.name + "' from " + loc.to_string() +
                           " does not decode: " + e.what())));
        }
      });
  return f;
}

template <auto F, action_mode M, class... A>
void post(const locality& loc, action<F, M> act, A&&... a) {
  detail::check_locality(loc);
  const detail::action_info& info = act.info();
  if (loc == find_here()) {
    grain::post(executor{}, annotate(info.name.c_str(), F), std::forward<A>(a)...);
    return;
  }
  using args = detail::serialize_as<typename action<F, M>::args_type>;
  // A coalesced action's arguments go straight into the message being built (no parcel, no
  // allocation); `write` runs at most once, and only when that path takes the post.
  const auto write = [&](std::vector<char>& out) { args::append(out, std::forward<A>(a)...); };
  using writer = decltype(write);
  const detail::args_writer fused{
      [](const void* w, std::vector<char>& out) { (*static_cast<const writer*>(w))(out); }, &write};
  if (detail::post_coalesced(loc.rank(), info, fused)) return;
  detail::send_action(loc.rank(), info, args::bytes(std::forward<A>(a)...), {});
}

}  // namespace grain
