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
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "grain/async.hpp"
#include "grain/distributed/action.hpp"
#include "grain/distributed/inline_callback.hpp"
#include "grain/distributed/locality.hpp"
#include "grain/future.hpp"

namespace grain {

namespace distributed {
class parcelport;
}

// The exception a remote action threw, as the caller sees it: the type is not sent, its
// what() is, with the action and the locality named.
class remote_exception : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// Called with the response: ok and the serialized result, or !ok and an error message.
// Move-only, with the caller's promise inline (inline_callback.hpp): no allocation per call.
using response_handler = inline_callback<void(bool ok, std::span<const char> payload)>;

// Where a call or a post to `loc` goes: nullptr when loc is here (it runs as a local task),
// else the running parcel port. Throws std::out_of_range for a rank outside
// [0, get_num_localities()). One look-up per call: a coalesced post costs ~100 ns in all.
distributed::parcelport* route(const locality& loc);
// A post or a call of `a` to rank `dest` (not here) through `port` (route's), whose arguments
// `write` serialises straight into the message being built (the coalesced queue's, or the
// parcel's own): no argument vector, no parcel object. An exception of `write` sends nothing
// (and a call's `on_response` is dropped uncalled).
void send_post(distributed::parcelport* port, std::uint32_t dest, const action_info& a,
               const args_writer& write);
void send_call(distributed::parcelport* port, std::uint32_t dest, const action_info& a,
               const args_writer& write, response_handler on_response);

template <class Tuple>
struct serialize_as;
template <class... P>
struct serialize_as<std::tuple<P...>> {
  template <class... A>
  static void append(std::vector<char>& out, A&&... a) {
    static_assert(sizeof...(P) == sizeof...(A), "grain::async/post: wrong number of arguments");
    serialize_values<P...>(out, P(std::forward<A>(a))...);
  }
};

}  // namespace detail

template <auto F, action_mode M, class... A>
auto async(const locality& loc, action<F, M> act, A&&... a)
    -> future<typename action<F, M>::result_type> {
  using R = typename action<F, M>::result_type;
  distributed::parcelport* port = detail::route(loc);
  const detail::action_info& info = act.info();
  if (!port) return grain::async(annotate(info.name.c_str(), F), std::forward<A>(a)...);
  using args = detail::serialize_as<typename action<F, M>::args_type>;
  const auto write = [&](std::vector<char>& out) { args::append(out, std::forward<A>(a)...); };
  using writer = decltype(write);
  const detail::args_writer fused{
      [](const void* w, std::vector<char>& out) { (*static_cast<const writer*>(w))(out); }, &write};
  promise<R> p;
  future<R> f = p.get_future();
  detail::send_call(port, loc.rank(), info, fused,
                    [p = std::move(p), &info, loc](bool ok, std::span<const char> in) mutable {
                      if (!ok) {
                        p.set_exception(std::make_exception_ptr(
                            remote_exception(std::string(in.begin(), in.end()))));
                        return;
                      }
                      try {
                        if constexpr (std::is_void_v<R>) {
                          if (!in.empty()) throw parcel_error("a void action returned bytes");
                          p.set_value();
                        } else {
                          p.set_value(std::get<0>(deserialize_values<R>(in)));
                        }
                      } catch (const parcel_error& e) {
                        p.set_exception(std::make_exception_ptr(
                            parcel_error("the result of action '" + info.name + "' from " +
                                         loc.to_string() + " does not decode: " + e.what())));
                      }
                    });
  return f;
}

template <auto F, action_mode M, class... A>
void post(const locality& loc, action<F, M> act, A&&... a) {
  distributed::parcelport* port = detail::route(loc);
  const detail::action_info& info = act.info();
  if (!port) {
    grain::post(executor{}, annotate(info.name.c_str(), F), std::forward<A>(a)...);
    return;
  }
  using args = detail::serialize_as<typename action<F, M>::args_type>;
  // The arguments go straight into the message being built (no parcel, no argument vector).
  const auto write = [&](std::vector<char>& out) { args::append(out, std::forward<A>(a)...); };
  using writer = decltype(write);
  const detail::args_writer fused{
      [](const void* w, std::vector<char>& out) { (*static_cast<const writer*>(w))(out); }, &write};
  detail::send_post(port, loc.rank(), info, fused);
}

}  // namespace grain
