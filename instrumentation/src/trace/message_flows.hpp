#pragma once
// Flow ids that join a message's send, written in the sender's file, to its receive, written
// in the receiver's (the Perfetto and Chrome JSON formats write one file per rank). Both ranks
// compute the id of the k-th message from rank a to rank b without talking to each other:
// each end records its messages in the order MPI pairs them (docs/distributed.md, "Traces"),
// so the k-th send to b is the k-th receive from a. The ids are hashed over 64 bits, apart from
// the task flows' GUIDs in the same file.
#include <cstdint>
#include <unordered_map>

namespace grain::instrumentation::trace_detail {

class message_flows {
 public:
  // The id of the next message from rank `from` to rank `to` (sent or received).
  std::uint64_t next(unsigned from, unsigned to) {
    std::uint64_t& k = count_[(std::uint64_t{from} << 32) | to];
    return id(from, to, k++);
  }

  static std::uint64_t id(unsigned from, unsigned to, std::uint64_t k) noexcept {
    return mix(mix((std::uint64_t{from} << 32) | to) ^ k);
  }

  // Every rank numbers its tasks' GUIDs alike, so the task flows (parent -> child, flow id =
  // GUID) of several ranks' files would share ids once the files are concatenated: rank R's
  // task flows are its GUIDs XOR this (0 on rank 0, where the flow id is the GUID itself).
  static std::uint64_t task_flow_salt(unsigned locality) noexcept {
    return locality ? mix(0x7261736bull ^ locality) : 0;
  }

 private:
  // splitmix64's finaliser: every input bit moves every output bit.
  static std::uint64_t mix(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

  std::unordered_map<std::uint64_t, std::uint64_t> count_;
};

}  // namespace grain::instrumentation::trace_detail
