#pragma once
// A seam for the fault tests (tests/distributed/faults_test.cpp): send a call the way
// grain::async does, but with a message changed on its way out — what a broken or different
// program would send. Not part of the installed API.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "grain/distributed/remote_async.hpp"

namespace grain::distributed::testing {

// The answer's payload (the serialized result), or remote_exception with the error the
// receiving locality sent back.
future<std::vector<char>> call_tampered(std::uint32_t dest, const detail::action_info& a,
                                        std::vector<char> args,
                                        const std::function<void(std::vector<char>&)>& tamper);
// A post with a changed message: nothing comes back.
void post_tampered(std::uint32_t dest, const detail::action_info& a, std::vector<char> args,
                   const std::function<void(std::vector<char>&)>& tamper);

// Whether this rank sends compact parcels (compact_parcel.hpp), and the bytes of the parcels
// it has sent (/parcels/data/sent).
bool compact_parcels();
std::uint64_t parcel_bytes_sent();
// A call sent the way grain::async sends a compact one, with its tag and payload changed on
// the way out. Throws std::logic_error when the call has no compact tag (compact parcels off).
future<std::vector<char>> call_compact_tampered(
    std::uint32_t dest, const detail::action_info& a, std::vector<char> args,
    const std::function<void(int& tag, std::vector<char>& payload)>& tamper);
// A message with any tag: a compact parcel that no sender writes.
void send_raw(std::uint32_t dest, int tag, std::vector<char> bytes);

// Sees every received message of parcels, decoded, before its parcels are dispatched: for
// each parcel of action `action`, its payload, in the message's order (the coalescing tests
// check that no parcel is lost, duplicated or reordered). Empty `fn` removes the observer.
using message_observer = std::function<void(std::uint32_t source, std::uint64_t action,
                                            const std::vector<std::span<const char>>& payloads)>;
void observe_messages(std::uint64_t action, message_observer fn);

}  // namespace grain::distributed::testing
