#pragma once
// The wire format of parcels and of the messages that carry them. A message is
//   message_header { magic, version, format, parcel count, total bytes }
// and then, in the `parcels` format (a parcel alone, or parcels of any kinds and actions),
//   per parcel: parcel_header { kind, source, action id, signature, continuation,
//                               payload size, payload checksum } and the payload;
// in the `batch` format (a coalesced message: parcels of one source and action),
//   batch_header { source, action id, signature, checksum of everything after it }
//   per parcel: a 32-bit word (payload size, top bit set for a call), a call's continuation
//               (64 bits), and the payload.
// A batch says once what its parcels share: a coalesced parcel of a few bytes of arguments
// costs 4 bytes of framing instead of 48, and one checksum per message instead of one per
// parcel (docs/coalescing.md, "The per-parcel path").
// Everything is native byte order: every rank is the same binary on the same machine kind.
// decode_message() checks every size against the bytes received and every payload against
// its checksum (XXH3), so a truncated or corrupted message is an error naming what is wrong,
// never a read past the end or an allocation of a garbage length.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace grain::distributed {

enum class parcel_kind : std::uint8_t {
  call = 1,    // run the action, send its result back to `continuation`
  post = 2,    // run the action, nothing comes back
  result = 3,  // the payload is the serialized result of call `continuation`
  error = 4,   // the payload is the error message of call `continuation`
};

struct parcel {
  parcel_kind kind = parcel_kind::post;
  std::uint32_t source = 0;
  std::uint64_t action = 0;
  std::uint64_t signature = 0;
  std::uint64_t continuation = 0;
  std::vector<char> payload;
};

// A decoded parcel points into the message's bytes (valid while they are).
struct parcel_view {
  parcel_kind kind = parcel_kind::post;
  std::uint32_t source = 0;
  std::uint64_t action = 0;
  std::uint64_t signature = 0;
  std::uint64_t continuation = 0;
  std::span<const char> payload;
  bool corrupt = false;  // the payload fails its checksum (the header was sound)
};

inline constexpr std::uint32_t message_magic = 0x47524e31;  // "GRN1"
inline constexpr std::uint16_t wire_version = 2;

// Appends one parcel to a message being built (begin_message first).
void begin_message(std::vector<char>& out);
void append_parcel(std::vector<char>& out, const parcel& p);
// `out` becomes a message of one parcel with this payload (cleared first; the payload must not
// point into it).
void single_parcel_message(std::vector<char>& out, parcel_kind kind, std::uint32_t source,
                           std::uint64_t action, std::uint64_t signature,
                           std::uint64_t continuation, std::span<const char> payload);
// The same in two steps, so that a sender can serialise a payload straight into the message
// (the coalescer's fused posts, no parcel object): open_parcel appends the header and returns
// where it starts; the caller appends the payload; close_parcel fills in the payload's size
// and checksum and counts the parcel in the message header.
std::size_t open_parcel(std::vector<char>& out, parcel_kind kind, std::uint32_t source,
                        std::uint64_t action, std::uint64_t signature, std::uint64_t continuation);
void close_parcel(std::vector<char>& out, std::size_t at);
// A batch (a coalesced message): begin_batch starts it; per parcel open_batch_parcel
// appends the parcel's framing and returns where it starts, the caller appends the payload,
// close_batch_parcel fills in its size (throws grain::parcel_error above 2 GiB - 1); before
// it leaves, seal_batch writes the parcel count, the size and the checksum. Its parcels are
// calls or posts.
void begin_batch(std::vector<char>& out, std::uint32_t source, std::uint64_t action,
                 std::uint64_t signature);
std::size_t open_batch_parcel(std::vector<char>& out, parcel_kind kind, std::uint64_t continuation);
void close_batch_parcel(std::vector<char>& out, std::size_t at);
void seal_batch(std::vector<char>& out, std::size_t parcels);
// Bytes of the headers around a payload of n bytes (for the byte counters).
std::size_t parcel_overhead() noexcept;
// Bytes of a message's own header (begin_message).
std::size_t message_overhead() noexcept;

// Splits a received message into parcels; throws grain::parcel_error naming the problem
// when the framing is broken. A parcel whose payload fails its checksum is returned marked
// `corrupt`, so that a call can still be answered with an error (in a batch, whose checksum
// covers all of them, every parcel is then marked).
std::vector<parcel_view> decode_message(std::span<const char> bytes);
// The same into `out` (cleared first), so that a caller may reuse its storage.
void decode_message(std::span<const char> bytes, std::vector<parcel_view>& out);

// A batch whose framing decode_message would accept, without a view per parcel: what its
// parcels share, and their bytes for a batch_cursor. The receiver's fast path (one action
// looked up, checked and run per message; docs/coalescing.md, "The per-parcel path").
struct batch_view {
  std::uint32_t source = 0;
  std::uint64_t action = 0;
  std::uint64_t signature = 0;
  std::uint32_t parcels = 0;
  bool corrupt = false;     // fails its checksum (every parcel is then corrupt)
  std::size_t body_at = 0;  // where the first parcel starts in the message
  // A view with what every parcel of the batch shares; a batch_cursor fills in the rest.
  parcel_view shared() const noexcept {
    parcel_view p;
    p.source = source;
    p.action = action;
    p.signature = signature;
    p.corrupt = corrupt;
    return p;
  }
};
// False when `bytes` is not a batch; a batch whose framing is broken throws
// grain::parcel_error, as decode_message does.
bool read_batch(std::span<const char> bytes, batch_view& out);

// The parcels of a batch that read_batch accepted (its framing is checked: no checks here).
class batch_cursor {
 public:
  explicit batch_cursor(std::span<const char> body) noexcept
      : at_(body.data()), end_(at_ + body.size()) {}
  // The next parcel's kind, continuation (calls) and payload; false after the last one.
  bool next(parcel_kind& kind, std::uint64_t& continuation,
            std::span<const char>& payload) noexcept;

 private:
  const char* at_;
  const char* end_;
};

// The header of the first parcel of a message whose framing is broken, when its bytes are
// there (payload left empty); false otherwise.
bool first_parcel_header(std::span<const char> bytes, parcel_view& out) noexcept;

const char* to_string(parcel_kind k) noexcept;

}  // namespace grain::distributed
