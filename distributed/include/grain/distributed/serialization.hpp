#pragma once
// Arguments and results of actions as bytes. Two paths, chosen per call at compile time:
//   * every value trivially copyable (ints, doubles, PODs, std::array of them): memcpy, one
//     after the other, no framing; the decoder checks the exact size;
//   * otherwise a cereal binary archive (libcereal-dev): strings, vectors, maps, tuples, and
//     user types with a `serialize(Archive&)` member or free function (cereal's convention).
// Both sides are the same program on the same machine kind (mpirun starts one binary), so
// native byte order and sizes are used. Decoding untrusted bytes never reads past the end: a
// short or corrupted payload throws parcel_error.
#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/memory.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <cstring>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace grain {

// A parcel that cannot be decoded or dispatched (unknown action, wrong size, bad bytes).
class parcel_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

template <class T>
inline constexpr bool memcpy_serializable_v =
    std::is_trivially_copyable_v<T>&& std::is_default_constructible_v<T> && !std::is_pointer_v<T> &&
    !std::is_member_pointer_v<T>;

// A pointer means nothing in another process.
template <class T>
inline constexpr bool sendable_v = !std::is_pointer_v<T> && !std::is_reference_v<T>;

class vector_sink : public std::streambuf {
 public:
  explicit vector_sink(std::vector<char>& out) : out_(out) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.insert(out_.end(), s, s + n);
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) out_.push_back(static_cast<char>(c));
    return traits_type::not_eof(c);
  }

 private:
  std::vector<char>& out_;
};

class span_source : public std::streambuf {
 public:
  explicit span_source(std::span<const char> in) {
    char* b = const_cast<char*>(in.data());  // get area only: never written through
    setg(b, b, b + in.size());
  }
  std::size_t left() const noexcept { return static_cast<std::size_t>(egptr() - gptr()); }
};

}  // namespace detail

namespace detail {

// The two paths, callable on their own (apps/bench/serialization_bench.cpp measures both on
// the same values).
template <class... T>
void memcpy_encode(std::vector<char>& out, const T&... v) {
  const std::size_t at = out.size();
  out.resize(at + (sizeof(T) + ... + 0));
  char* p = out.data() + at;
  ((std::memcpy(p, &v, sizeof(T)), p += sizeof(T)), ...);
}

template <class... T>
std::tuple<T...> memcpy_decode(std::span<const char> in) {
  constexpr std::size_t need = (sizeof(T) + ... + 0);
  if (in.size() != need)
    throw parcel_error("payload of " + std::to_string(in.size()) + " bytes, expected " +
                       std::to_string(need));
  std::tuple<T...> r;
  const char* p = in.data();
  std::apply([&](auto&... x) { ((std::memcpy(&x, p, sizeof(x)), p += sizeof(x)), ...); }, r);
  return r;
}

template <class... T>
void cereal_encode(std::vector<char>& out, const T&... v) {
  vector_sink sink(out);
  std::ostream os(&sink);
  cereal::BinaryOutputArchive ar(os);
  (ar(v), ...);
}

template <class... T>
std::tuple<T...> cereal_decode(std::span<const char> in) {
  span_source src(in);
  std::istream is(&src);
  std::tuple<T...> r;
  try {
    cereal::BinaryInputArchive ar(is);
    std::apply([&](auto&... x) { (ar(x), ...); }, r);
  } catch (const cereal::Exception& e) {
    throw parcel_error(std::string("payload does not decode: ") + e.what());
  } catch (const std::length_error& e) {
    throw parcel_error(std::string("payload does not decode: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw parcel_error(
        "payload does not decode: a length field asks for more memory than there is "
        "(corrupted?)");
  }
  if (src.left() != 0)
    throw parcel_error("payload has " + std::to_string(src.left()) +
                       " bytes left over after the arguments");
  return r;
}

}  // namespace detail

// Append the values to `out`.
template <class... T>
void serialize_values(std::vector<char>& out, const T&... v) {
  static_assert((detail::sendable_v<T> && ...), "grain: an action cannot send a pointer");
  if constexpr ((detail::memcpy_serializable_v<T> && ...))
    detail::memcpy_encode(out, v...);
  else
    detail::cereal_encode(out, v...);
}

// Decode exactly the bytes in `in` as values of the types T...; throws parcel_error when the
// bytes are too few, too many or do not decode.
template <class... T>
std::tuple<T...> deserialize_values(std::span<const char> in) {
  if constexpr ((detail::memcpy_serializable_v<T> && ...))
    return detail::memcpy_decode<T...>(in);
  else
    return detail::cereal_decode<T...>(in);
}

}  // namespace grain
