// Encoding and checked decoding of messages (parcel.hpp).
#include "parcel.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "grain/distributed/serialization.hpp"

namespace grain::distributed {

namespace {

enum class message_format : std::uint16_t { parcels = 0, batch = 1 };

struct message_header {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t format;  // message_format
  std::uint32_t parcels;
  std::uint32_t reserved;
  std::uint64_t bytes;  // the whole message, this header included
};

struct batch_header {
  std::uint32_t source;
  std::uint32_t reserved;
  std::uint64_t action;
  std::uint64_t signature;
  std::uint64_t checksum;  // XXH3 of the bytes after this header
};

// A batch parcel's first word: its payload's size, and whether it is a call (a continuation
// follows the word then).
constexpr std::uint32_t batch_call_bit = 0x8000'0000u;
constexpr std::size_t batch_max_payload = batch_call_bit - 1;
constexpr std::size_t batch_start = sizeof(message_header) + sizeof(batch_header);

struct parcel_header {
  std::uint8_t kind;
  std::uint8_t reserved[3];
  std::uint32_t source;
  std::uint64_t action;
  std::uint64_t signature;
  std::uint64_t continuation;
  std::uint64_t payload_bytes;
  std::uint64_t checksum;
};
// close_parcel writes the two in one go.
static_assert(offsetof(parcel_header, checksum) == offsetof(parcel_header, payload_bytes) + 8);

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

void begin_message(std::vector<char>& out) {
  message_header h{message_magic,
                   wire_version,
                   static_cast<std::uint16_t>(message_format::parcels),
                   0,
                   0,
                   sizeof(message_header)};
  out.resize(sizeof h);
  std::memcpy(out.data(), &h, sizeof h);
}

void append_parcel(std::vector<char>& out, const parcel& p) {
  const std::size_t at = open_parcel(out, p.kind, p.source, p.action, p.signature, p.continuation);
  out.insert(out.end(), p.payload.begin(), p.payload.end());
  close_parcel(out, at);
}

void single_parcel_message(std::vector<char>& out, parcel_kind kind, std::uint32_t source,
                           std::uint64_t action, std::uint64_t signature,
                           std::uint64_t continuation, std::span<const char> payload) {
  out.clear();
  out.reserve(sizeof(message_header) + sizeof(parcel_header) + payload.size());
  begin_message(out);
  const std::size_t at = open_parcel(out, kind, source, action, signature, continuation);
  out.insert(out.end(), payload.begin(), payload.end());
  close_parcel(out, at);
}

std::size_t open_parcel(std::vector<char>& out, parcel_kind kind, std::uint32_t source,
                        std::uint64_t action, std::uint64_t signature, std::uint64_t continuation) {
  parcel_header h{};
  h.kind = static_cast<std::uint8_t>(kind);
  h.source = source;
  h.action = action;
  h.signature = signature;
  h.continuation = continuation;
  const std::size_t at = out.size();
  // A range insert copies into the reserved room; resize would zero it first.
  const char* bytes = reinterpret_cast<const char*>(&h);
  out.insert(out.end(), bytes, bytes + sizeof h);
  return at;
}

void close_parcel(std::vector<char>& out, std::size_t at) {
  const char* payload = out.data() + at + sizeof(parcel_header);
  const std::size_t n = out.size() - at - sizeof(parcel_header);
  const std::uint64_t sizes[2] = {n, XXH3_64bits(payload, n)};
  std::memcpy(out.data() + at + offsetof(parcel_header, payload_bytes), sizes, sizeof sizes);
  auto m = load<message_header>(out.data());
  m.parcels += 1;
  m.bytes = out.size();
  std::memcpy(out.data(), &m, sizeof m);
}

void begin_batch(std::vector<char>& out, std::uint32_t source, std::uint64_t action,
                 std::uint64_t signature) {
  const message_header m{
      message_magic, wire_version, static_cast<std::uint16_t>(message_format::batch), 0, 0,
      batch_start};
  const batch_header b{source, 0, action, signature, 0};
  out.resize(batch_start);
  std::memcpy(out.data(), &m, sizeof m);
  std::memcpy(out.data() + sizeof m, &b, sizeof b);
}

std::size_t open_batch_parcel(std::vector<char>& out, parcel_kind kind,
                              std::uint64_t continuation) {
  const std::size_t at = out.size();
  if (kind == parcel_kind::call) {
    char head[12];
    std::memcpy(head, &batch_call_bit, 4);
    std::memcpy(head + 4, &continuation, 8);
    out.insert(out.end(), head, head + sizeof head);
  } else {
    const std::uint32_t word = 0;
    const char* bytes = reinterpret_cast<const char*>(&word);
    out.insert(out.end(), bytes, bytes + sizeof word);
  }
  return at;
}

void close_batch_parcel(std::vector<char>& out, std::size_t at) {
  std::uint32_t word = load<std::uint32_t>(out.data() + at);
  const std::size_t head = (word & batch_call_bit) ? 12 : 4;
  const std::size_t n = out.size() - at - head;
  if (n > batch_max_payload) {
    out.resize(at);
    throw parcel_error("a coalesced parcel's arguments take " + std::to_string(n) +
                       " bytes, more than a batch carries (" + std::to_string(batch_max_payload) +
                       ")");
  }
  word |= static_cast<std::uint32_t>(n);
  std::memcpy(out.data() + at, &word, sizeof word);
}

void seal_batch(std::vector<char>& out, std::size_t parcels) {
  auto m = load<message_header>(out.data());
  m.parcels = static_cast<std::uint32_t>(parcels);
  m.bytes = out.size();
  std::memcpy(out.data(), &m, sizeof m);
  const std::uint64_t sum = XXH3_64bits(out.data() + batch_start, out.size() - batch_start);
  std::memcpy(out.data() + sizeof m + offsetof(batch_header, checksum), &sum, sizeof sum);
}

std::size_t parcel_overhead() noexcept {
  return sizeof(parcel_header);
}

std::size_t message_overhead() noexcept {
  return sizeof(message_header);
}

namespace {

// A batch's framing, walked once (read_batch): every size against the bytes
// received, so that a batch_cursor over it needs no checks.
batch_header check_batch(std::span<const char> bytes, std::uint32_t parcels) {
  if (bytes.size() < batch_start)
    throw parcel_error("batch of " + std::to_string(bytes.size()) +
                       " bytes is shorter than its headers");
  std::size_t at = batch_start;
  for (std::uint32_t i = 0; i < parcels; ++i) {
    if (bytes.size() - at < 4)
      throw parcel_error("parcel " + std::to_string(i) + " of a batch of " +
                         std::to_string(parcels) + " is cut off in its header");
    const auto word = load<std::uint32_t>(bytes.data() + at);
    at += 4;
    if (word & batch_call_bit) {
      if (bytes.size() - at < 8)
        throw parcel_error("parcel " + std::to_string(i) + " of a batch of " +
                           std::to_string(parcels) + " is cut off in its continuation");
      at += 8;
    }
    const std::size_t n = word & ~batch_call_bit;
    if (n > bytes.size() - at)
      throw parcel_error("parcel " + std::to_string(i) + " of a batch says " + std::to_string(n) +
                         " payload bytes, only " + std::to_string(bytes.size() - at) +
                         " are left (truncated?)");
    at += n;
  }
  if (at != bytes.size())
    throw parcel_error(std::to_string(bytes.size() - at) + " bytes after the last parcel");
  return load<batch_header>(bytes.data() + sizeof(message_header));
}

// The parcels of a batch read_batch accepted, as views (decode_message).
void decode_batch(std::span<const char> bytes, const batch_view& b, std::vector<parcel_view>& out) {
  out.reserve(b.parcels);  // checked: each parcel took 4 bytes at least
  parcel_view p = b.shared();
  batch_cursor c(bytes.subspan(b.body_at));
  while (c.next(p.kind, p.continuation, p.payload)) out.push_back(p);
}

// The message header's checks (decode_message, read_batch).
message_header check_header(std::span<const char> bytes) {
  if (bytes.size() < sizeof(message_header))
    throw parcel_error("message of " + std::to_string(bytes.size()) +
                       " bytes is shorter than its header");
  const auto m = load<message_header>(bytes.data());
  if (m.magic != message_magic) throw parcel_error("message does not start with grain's magic");
  if (m.version != wire_version)
    throw parcel_error("message has wire version " + std::to_string(m.version) + ", expected " +
                       std::to_string(wire_version));
  if (m.bytes != bytes.size())
    throw parcel_error("message says " + std::to_string(m.bytes) + " bytes, " +
                       std::to_string(bytes.size()) + " arrived (truncated?)");
  return m;
}

}  // namespace

std::vector<parcel_view> decode_message(std::span<const char> bytes) {
  std::vector<parcel_view> out;
  decode_message(bytes, out);
  return out;
}

void decode_message(std::span<const char> bytes, std::vector<parcel_view>& out) {
  out.clear();
  if (batch_view b; read_batch(bytes, b)) {
    decode_batch(bytes, b, out);
    return;
  }
  const message_header m = check_header(bytes);
  if (m.format != static_cast<std::uint16_t>(message_format::parcels))
    throw parcel_error("message has unknown format " + std::to_string(m.format));
  std::size_t at = sizeof(message_header);
  for (std::uint32_t i = 0; i < m.parcels; ++i) {
    if (bytes.size() - at < sizeof(parcel_header))
      throw parcel_error("parcel " + std::to_string(i) + " of " + std::to_string(m.parcels) +
                         " is cut off in its header");
    const auto h = load<parcel_header>(bytes.data() + at);
    at += sizeof(parcel_header);
    if (h.kind < 1 || h.kind > 4)
      throw parcel_error("parcel " + std::to_string(i) + " has unknown kind " +
                         std::to_string(h.kind));
    if (h.payload_bytes > bytes.size() - at)
      throw parcel_error("parcel " + std::to_string(i) + " says " +
                         std::to_string(h.payload_bytes) + " payload bytes, only " +
                         std::to_string(bytes.size() - at) + " are left (truncated?)");
    std::span<const char> payload = bytes.subspan(at, h.payload_bytes);
    const bool corrupt = XXH3_64bits(payload.data(), payload.size()) != h.checksum;
    at += h.payload_bytes;
    out.push_back({static_cast<parcel_kind>(h.kind), h.source, h.action, h.signature,
                   h.continuation, payload, corrupt});
  }
  if (at != bytes.size())
    throw parcel_error(std::to_string(bytes.size() - at) + " bytes after the last parcel");
}

bool read_batch(std::span<const char> bytes, batch_view& out) {
  // Messages of single parcels (answers, coalescing off) are decode_message's, checks and all.
  if (bytes.size() < sizeof(message_header) ||
      load<message_header>(bytes.data()).format !=
          static_cast<std::uint16_t>(message_format::batch))
    return false;
  const message_header m = check_header(bytes);
  const batch_header b = check_batch(bytes, m.parcels);
  out.source = b.source;
  out.action = b.action;
  out.signature = b.signature;
  out.parcels = m.parcels;
  out.corrupt = XXH3_64bits(bytes.data() + batch_start, bytes.size() - batch_start) != b.checksum;
  out.body_at = batch_start;
  return true;
}

bool batch_cursor::next(parcel_kind& kind, std::uint64_t& continuation,
                        std::span<const char>& payload) noexcept {
  if (at_ == end_) return false;
  const auto word = load<std::uint32_t>(at_);
  at_ += 4;
  kind = parcel_kind::post;
  continuation = 0;
  if (word & batch_call_bit) {
    kind = parcel_kind::call;
    continuation = load<std::uint64_t>(at_);
    at_ += 8;
  }
  const std::size_t n = word & ~batch_call_bit;
  payload = {at_, n};
  at_ += n;
  return true;
}

bool first_parcel_header(std::span<const char> bytes, parcel_view& out) noexcept {
  if (bytes.size() < sizeof(message_header)) return false;
  const auto m = load<message_header>(bytes.data());
  if (m.magic != message_magic) return false;
  if (m.format == static_cast<std::uint16_t>(message_format::batch)) {
    if (bytes.size() < batch_start + 4) return false;
    const auto b = load<batch_header>(bytes.data() + sizeof m);
    const auto word = load<std::uint32_t>(bytes.data() + batch_start);
    out = {parcel_kind::post, b.source, b.action, b.signature, 0, {}, true};
    if (word & batch_call_bit) {
      if (bytes.size() < batch_start + 12) return false;
      out.kind = parcel_kind::call;
      out.continuation = load<std::uint64_t>(bytes.data() + batch_start + 4);
    }
    return true;
  }
  if (bytes.size() < sizeof(message_header) + sizeof(parcel_header)) return false;
  const auto h = load<parcel_header>(bytes.data() + sizeof(message_header));
  if (h.kind < 1 || h.kind > 4) return false;
  out = {
      static_cast<parcel_kind>(h.kind), h.source, h.action, h.signature, h.continuation, {}, true};
  return true;
}

const char* to_string(parcel_kind k) noexcept {
  switch (k) {
    case parcel_kind::call:
      return "call";
    case parcel_kind::post:
      return "post";
    case parcel_kind::result:
      return "result";
    case parcel_kind::error:
      return "error";
  }
  return "?";
}

}  // namespace grain::distributed
