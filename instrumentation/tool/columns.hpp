#pragma once
// grain-trace-read --columns: every region interval, metric sample and message of an archive as
// binary columns, for readers that build tables (python/grain_analysis reads them into pandas
// with numpy.frombuffer, without parsing a number). The layout is described in
// docs/python.md ("The columnar format").
#include <cstdint>
#include <cstdio>
#include <vector>

#include "trace_state.hpp"

namespace grain::trace_read {

class columns final : public state {
 public:
  columns() { want_metrics = true; }

  // Region intervals in Enter order: outer is the row of the enclosing interval (-1 at a
  // location's outermost level); flags: 1 re-entry of an inline parent, 2 has a GUID, 4 has a
  // parent GUID. end is filled at the Leave (or by finish()).
  struct {
    std::vector<std::uint32_t> location, region;
    std::vector<std::uint64_t> begin, end, guid, parent;
    std::vector<std::int64_t> outer;
    std::vector<std::uint8_t> flags;
  } events;
  // MpiSend (sent = 1) and MpiRecv records; parcels -1 where the send has no "parcels".
  struct {
    std::vector<std::uint32_t> location, peer, tag;
    std::vector<std::uint64_t> time, bytes;
    std::vector<std::uint8_t> sent;
    std::vector<std::int64_t> parcels;
  } messages;

  void enter(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes& a,
             OTF2_RegionRef region) override;
  void mpi_message(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes& a, bool sent,
                   std::uint32_t peer, std::uint32_t tag, std::uint64_t bytes) override;
  void closed(location_stats& l, std::uint64_t t) override;

  // Writes the header line and the columns; false when the output cannot be written.
  bool print(std::FILE* f) const;

 private:
  std::vector<std::vector<std::int64_t>> open_;  // per location: rows of its open intervals
};

}  // namespace grain::trace_read
