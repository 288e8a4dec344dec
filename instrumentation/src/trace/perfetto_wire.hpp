#pragma once
// The protobuf wire format, as much of it as the Perfetto back end writes: varints, fixed64,
// length-delimited fields and nested messages, appended to a std::string. A hand-written encoder
// instead of libprotobuf because the converter writes a few fields per task event into a buffer
// it reuses: generated message objects would cost an allocation and a serialisation pass per
// event, and a build dependency, for a format of five wire rules (docs/tracing.md, "Perfetto").
// Nested messages reserve one length byte and grow it in place in the rare case that the body
// is 128 bytes or longer, so a task event is written in one pass.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace grain::instrumentation::trace_detail::pb {

enum wire : std::uint32_t { varint = 0, fixed64 = 1, bytes = 2 };

inline std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline void put_varint(std::string& out, std::uint64_t v) {
  char buf[10];
  std::size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, n);
}

// The converter's fast path writes small messages whose lengths it knows to fit one byte into a
// raw buffer: the same encoding, without the string's bookkeeping per byte.
inline char* put_varint(char* p, std::uint64_t v) noexcept {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

inline char* put_fixed64(char* p, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xFF);
  return p;
}

inline void put_tag(std::string& out, std::uint32_t field, wire w) {
  put_varint(out, (static_cast<std::uint64_t>(field) << 3) | w);
}

inline void put_uint(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_tag(out, field, varint);
  put_varint(out, v);
}

// int32/int64 fields: negative values take ten bytes (two's complement), as protobuf specifies.
inline void put_int(std::string& out, std::uint32_t field, std::int64_t v) {
  put_uint(out, field, static_cast<std::uint64_t>(v));
}

inline void put_bool(std::string& out, std::uint32_t field, bool v) {
  put_uint(out, field, v ? 1 : 0);
}

inline void put_fixed64(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_tag(out, field, fixed64);
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  out.append(buf, 8);
}

inline void put_double(std::string& out, std::uint32_t field, double v) {
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof v);
  std::memcpy(&bits, &v, sizeof bits);
  put_fixed64(out, field, bits);
}

inline void put_string(std::string& out, std::uint32_t field, std::string_view s) {
  put_tag(out, field, bytes);
  put_varint(out, s.size());
  out.append(s.data(), s.size());
}

// A nested message: open() writes the tag and one placeholder length byte and returns where
// the body starts; close() writes the body's length there (moving the body when the length
// needs more than one byte).
inline std::size_t open(std::string& out, std::uint32_t field) {
  put_tag(out, field, bytes);
  out.push_back('\0');
  return out.size();
}

inline void close(std::string& out, std::size_t body) {
  const std::size_t len = out.size() - body;
  if (len < 0x80) {
    out[body - 1] = static_cast<char>(len);
    return;
  }
  std::string prefix;
  put_varint(prefix, len);
  out.replace(body - 1, 1, prefix);
}

}  // namespace grain::instrumentation::trace_detail::pb
