// grain-trace-read --columns (see columns.hpp): the events kept as columns while the aggregation
// runs, then one JSON header line and the columns' bytes.
#include "columns.hpp"

#include <cinttypes>
#include <cstdlib>
#include <string>

#include "json_output.hpp"

namespace grain::trace_read {

void columns::enter(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes& a,
                    OTF2_RegionRef region) {
  state::enter(loc, t, a, region);
  const std::int64_t li = index_of(loc);
  if (li < 0) return;
  if (open_.size() < locations.size()) open_.resize(locations.size());
  auto& open = open_[static_cast<std::size_t>(li)];
  const auto row = static_cast<std::int64_t>(events.begin.size());
  events.location.push_back(static_cast<std::uint32_t>(li));
  events.region.push_back(last_enter.region);
  events.begin.push_back(t);
  events.end.push_back(t);
  events.guid.push_back(last_enter.guid.value_or(0));
  events.parent.push_back(last_enter.parent.value_or(0));
  events.outer.push_back(open.empty() ? -1 : open.back());
  events.flags.push_back(static_cast<std::uint8_t>(
      (last_enter.reentry ? 1 : 0) | (last_enter.guid ? 2 : 0) | (last_enter.parent ? 4 : 0)));
  open.push_back(row);
}

void columns::closed(location_stats& l, std::uint64_t t) {
  auto& open = open_[static_cast<std::size_t>(&l - locations.data())];
  events.end[static_cast<std::size_t>(open.back())] = t;
  open.pop_back();
}

void columns::mpi_message(OTF2_LocationRef loc, OTF2_TimeStamp t, const walk::attributes& a,
                          bool sent, std::uint32_t peer, std::uint32_t tag, std::uint64_t bytes) {
  state::mpi_message(loc, t, a, sent, peer, tag, bytes);
  const std::int64_t li = index_of(loc);
  if (li < 0) return;
  std::int64_t parcels = -1;
  for (std::uint32_t i = 0; i < a.size(); ++i) {
    OTF2_AttributeRef ref;
    walk::value v;
    if (a.get(i, ref, v) && ref == parcels_attr) {
      if (auto* x = std::get_if<std::uint64_t>(&v)) parcels = static_cast<std::int64_t>(*x);
      if (auto* x = std::get_if<std::int64_t>(&v)) parcels = *x;
    }
  }
  messages.location.push_back(static_cast<std::uint32_t>(li));
  messages.time.push_back(t);
  messages.sent.push_back(sent ? 1 : 0);
  messages.peer.push_back(peer);
  messages.tag.push_back(tag);
  messages.bytes.push_back(bytes);
  messages.parcels.push_back(parcels);
}

namespace {

struct column {
  const char* name;
  const char* dtype;  // numpy's spelling, little-endian
  const void* data;
  std::size_t bytes;
};

template <class T>
column col(const char* name, const char* dtype, const std::vector<T>& v) {
  return {name, dtype, v.data(), v.size() * sizeof(T)};
}

std::size_t padded(std::size_t n) {
  return (n + 7) / 8 * 8;
}

}  // namespace

bool columns::print(std::FILE* f) const {
  // The samples, flattened metric by metric (each in time order).
  std::vector<std::uint32_t> s_metric, s_location;
  std::vector<std::uint64_t> s_time;
  std::vector<double> s_value;
  for (std::size_t m = 0; m < samples.size(); ++m)
    for (const sample& x : samples[m]) {
      s_metric.push_back(static_cast<std::uint32_t>(m));
      s_location.push_back(x.loc);
      s_time.push_back(x.t);
      s_value.push_back(x.v);
    }
  struct table {
    const char* name;
    std::size_t rows;
    std::vector<column> cols;
  };
  const std::vector<table> tables = {
      {"events",
       events.begin.size(),
       {col("location", "<u4", events.location), col("region", "<u4", events.region),
        col("begin", "<u8", events.begin), col("end", "<u8", events.end),
        col("guid", "<u8", events.guid), col("parent", "<u8", events.parent),
        col("outer", "<i8", events.outer), col("flags", "|u1", events.flags)}},
      {"samples",
       s_time.size(),
       {col("metric", "<u4", s_metric), col("location", "<u4", s_location),
        col("time", "<u8", s_time), col("value", "<f8", s_value)}},
      {"messages",
       messages.time.size(),
       {col("location", "<u4", messages.location), col("time", "<u8", messages.time),
        col("sent", "|u1", messages.sent), col("peer", "<u4", messages.peer),
        col("tag", "<u4", messages.tag), col("bytes", "<u8", messages.bytes),
        col("parcels", "<i8", messages.parcels)}}};

  char* head = nullptr;
  std::size_t head_size = 0;
  std::FILE* h = open_memstream(&head, &head_size);
  if (!h) return false;
  std::fprintf(h,
               "{\"format\":\"grain-columns\",\"version\":1,\"resolution\":%" PRIu64
               ",\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"command\":",
               resolution, offset, length);
  put_string(h, command);
  std::fputs(",\"start_time\":", h);
  put_string(h, start_time);
  std::fputs(",\"locations\":[", h);
  const char* sep = "";
  for (auto& l : locations) {
    std::fprintf(h, "%s{\"ref\":%" PRIu64 ",\"name\":", sep, l.ref);
    put_string(h, l.name);
    std::fprintf(h, ",\"type\":\"%s\",\"events\":%" PRIu64, l.type.c_str(), l.events);
    if (l.seen)
      std::fprintf(h, ",\"first\":%" PRIu64 ",\"last\":%" PRIu64 "}", l.first, l.last);
    else
      std::fputs(",\"first\":null,\"last\":null}", h);
    sep = ",";
  }
  std::fputs("],\"regions\":[", h);
  sep = "";
  for (auto& r : regions) {
    std::fputs(sep, h);
    put_string(h, r.name);
    sep = ",";
  }
  std::fputs("],\"metrics\":[", h);
  sep = "";
  for (auto& m : metric_names) {
    std::fputs(sep, h);
    put_string(h, m);
    sep = ",";
  }
  std::fputs("],", h);
  put_units(h, *this);
  std::fputc(',', h);
  put_decisions(h, *this, false);
  std::fputs(",\"tables\":{", h);
  std::size_t at = 0;
  sep = "";
  for (auto& t : tables) {
    std::fprintf(h, "%s\"%s\":{\"rows\":%zu,\"columns\":[", sep, t.name, t.rows);
    const char* csep = "";
    for (auto& c : t.cols) {
      std::fprintf(h, "%s[\"%s\",\"%s\",%zu]", csep, c.name, c.dtype, at);
      at += padded(c.bytes);
      csep = ",";
    }
    std::fputs("]}", h);
    sep = ",";
  }
  std::fprintf(h, "},\"bytes\":%zu}", at);
  std::fclose(h);
  // The header line is padded so that every column starts at a multiple of 8 bytes.
  std::string line(head, head_size);
  std::free(head);
  line.append(padded(line.size() + 1) - line.size() - 1, ' ');
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), f);
  static const char zeros[8] = {};
  for (auto& t : tables)
    for (auto& c : t.cols) {
      if (c.bytes) std::fwrite(c.data, 1, c.bytes, f);
      std::fwrite(zeros, 1, padded(c.bytes) - c.bytes, f);
    }
  return std::fflush(f) == 0 && !std::ferror(f);
}

}  // namespace grain::trace_read
