// The run summary (--grain:summary=FILE.json); schema: docs/summary-schema.json.
#include <fstream>

#include "grain/knob.hpp"
#include "internal.hpp"

namespace grain::instrumentation::detail {

void write_summary(const std::string& path, const counter_snapshot& snap, double wall_time_s,
                   std::uint64_t start_ns, const std::string& app, unsigned workers) {
  std::string o;
  o.reserve(64 * snap.values.size() + 1024);
  o += "{\n  \"format\": \"grain-summary\",\n  \"version\": 1,\n";
  o += "  \"application\": " + json_string(app) + ",\n";
  o += "  \"workers\": " + std::to_string(workers) + ",\n";
  o += "  \"wall_time_s\": " + json_number(wall_time_s) + ",\n";
  o += "  \"counters\": {";
  bool first = true;
  for (auto& v : snap.values) {
    o += first ? "\n" : ",\n";
    first = false;
    o += "    " + json_string(v.name) + ": " + (v.available ? json_number(v.value) : "null");
  }
  o += first ? "},\n" : "\n  },\n";

  o += "  \"knobs\": {";
  first = true;
  for (knob* k : knobs().all()) {
    o += first ? "\n" : ",\n";
    first = false;
    o += "    " + json_string(k->name()) + ": ";
    if (k->type() == knob_type::enumeration)
      o += json_string(k->enum_name());
    else
      o += json_number(k->value());
  }
  o += first ? "},\n" : "\n  },\n";

  o += "  \"decisions\": [";
  first = true;
  for (const decision_record& d : knobs().decisions()) {
    if (d.time_ns < start_ns) continue;  // an earlier runtime's in this process
    o += first ? "\n" : ",\n";
    first = false;
    const double t = static_cast<double>(d.time_ns - start_ns) * 1e-9;
    o += "    {\"time\": " + json_number(t) + ", \"rule\": " + json_string(d.rule) +
         ", \"knob\": " + json_string(d.knob) + ", \"old\": " + json_number(d.old_value) +
         ", \"new\": " + json_number(d.new_value) + ", \"requested\": " + json_number(d.requested) +
         ", \"clamped\": " + (d.clamped ? "true" : "false") +
         ", \"reason\": " + json_string(d.reason) + ", \"trigger\": {";
    for (std::size_t k = 0; k < d.trigger.size(); ++k) {
      if (k) o += ", ";
      o += json_string(d.trigger[k].first) + ": " + json_number(d.trigger[k].second);
    }
    o += "}}";
  }
  o += first ? "]\n" : "\n  ]\n";
  o += "}\n";

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("--grain:summary=" + path + ": cannot write the file");
  f << o;
  if (!f) throw std::runtime_error("--grain:summary=" + path + ": cannot write the file");
}

}  // namespace grain::instrumentation::detail
