#pragma once
// One trace written by several processes (the localities of an MPI job): what the trace needs
// from the group the processes form, and how the network layer tells the trace about the
// messages it sends and receives. The distributed layer implements trace_group over MPI and
// installs it before the trace extension is configured; the instrumentation library itself
// never includes <mpi.h> (docs/distributed.md, "Traces").
#include <cstddef>
#include <cstdint>

namespace grain::instrumentation {

struct clock_offset {
  // Add to this process's grain::now_ns() to get the root's (rank 0's) clock.
  std::int64_t offset_ns = 0;
  // How far the offset can be off: half the best round trip between hosts, the width of the
  // two clock readings on one host.
  double uncertainty_ns = 0;
};

// Blocking collectives over every process of the group. Every member calls the same ones in
// the same order; they may be called from any thread, never from two at once.
class trace_group {
 public:
  virtual ~trace_group() = default;
  virtual unsigned rank() const noexcept = 0;
  virtual unsigned size() const noexcept = 0;
  virtual void barrier() = 0;
  virtual void broadcast(void* data, std::size_t bytes, unsigned root) = 0;
  // The root receives `counts[r]` bytes from rank r, one after the other, in `out`
  // (counts and out are read only on the root).
  virtual void gatherv(const void* in, std::size_t bytes, void* out, const std::size_t* counts,
                       unsigned root) = 0;
  // The root sends `counts[r]` bytes of `in` (one block after the other) to rank r.
  virtual void scatterv(const void* in, const std::size_t* counts, void* out, std::size_t bytes,
                        unsigned root) = 0;
  // This member's clock against the root's (both read with now()): on the root's host through
  // the clock they share, on another by round trips. Collective; the root's own offset is 0.
  virtual clock_offset measure_clock_offset(std::uint64_t (*now)()) = 0;
};

// The group of this process (null: one process). Set before the runtime's trace extension is
// configured and cleared after it stopped; not owned.
void set_trace_group(trace_group* g) noexcept;
trace_group* current_trace_group() noexcept;

// A message of the network layer, recorded on the locality's "network" location (OTF2
// MpiSend/MpiRecv; viewers draw an arrow from send to receive). Call them in the order the
// messages are handed to / matched by the network (under its lock): viewers pair sends and
// receives in that order. `parcels`: how many parcels the message carries (coalescing).
// `handed_at_ns`: the trace_message_clock() reading taken just before the message was handed
// to the network: a small message can be received before the sender's call returns (the
// sender preempted there for a time slice), and a send stamped after the call would show up
// after its receive. Cost when no trace records: one atomic load.
std::uint64_t trace_message_clock() noexcept;  // now_ns() while a trace records, else 0
void trace_message_sent(unsigned dest, std::uint32_t tag, std::uint64_t bytes,
                        std::uint32_t parcels, std::uint64_t handed_at_ns) noexcept;
void trace_message_received(unsigned source, std::uint32_t tag, std::uint64_t bytes) noexcept;

}  // namespace grain::instrumentation
