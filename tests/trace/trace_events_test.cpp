// Point events (instrumentation/src/trace/event_kinds.hpp): every back end writes a kind's events
// from its row, so one check per format covers every kind. Each kind gets a case here that
// raises one event through the path that records it and finds it, with its fields, in the OTF2
// archive, the Perfetto trace and the Chrome JSON.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "grain/grain.hpp"
#include "grain/instrumentation/app.hpp"
#include "grain/instrumentation/trace_reader.hpp"
#include "trace/event_kinds.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

using instrumentation::otf2_event;
using instrumentation::trace_detail::event_kind;
using instrumentation::trace_detail::event_record;
using fields = std::vector<std::pair<std::string, double>>;

// Runs `raise` in a traced run of each format and finds the event `e` in what was written.
void expect_in_every_format(const std::function<void()>& raise, const event_record& e) {
  for (const char* format : {"otf2", "perfetto", "chrome"}) {
    SCOPED_TRACE(format);
    temp_path dir(std::string("events-") + format);
    {
      grain::runtime rt({"--grain:threads=1", "--grain:trace=" + dir.str(),
                         std::string("--grain:trace-format=") + format},
                        false);
      raise();
      rt.stop();
    }
    if (format == std::string("otf2")) {
      const auto t = instrumentation::read_otf2((dir / "traces.otf2").string());
      const auto* p = t.location("policy engine");
      ASSERT_TRUE(p);
      const otf2_event* found = nullptr;
      for (auto& ev : p->events)
        if (ev.type == otf2_event::kind::parameter_string && ev.name == "event" &&
            ev.text == e.full_name())
          found = &ev;
      ASSERT_TRUE(found) << e.full_name() << " is not on the policy engine";
      for (auto& [name, value] : e.fields) {
        const auto* a = found->attribute(e.field_name(name));
        ASSERT_TRUE(a) << e.field_name(name);
        EXPECT_DOUBLE_EQ(*a->as_double(), value);
      }
    } else if (format == std::string("perfetto")) {
      // Protobuf writes strings as they are: the name and every field's name are in the file
      // (tests/trace/perfetto_proto_test.cpp decodes the instants themselves).
      const std::string bytes = slurp(dir / "trace.pftrace");
      EXPECT_NE(bytes.find(e.full_name()), std::string::npos);
      for (auto& f : e.fields) EXPECT_NE(bytes.find(f.first), std::string::npos) << f.first;
    } else {
      const std::string json = slurp(dir / "trace.json");
      const std::string head = "{\"name\":\"" + e.full_name() + "\",\"cat\":\"" +
                               row_of(e.kind).prefix + "\",\"ph\":\"i\"";
      const auto at = json.find(head);
      ASSERT_NE(at, std::string::npos) << json.substr(0, 2000);
      const std::string line = json.substr(at, json.find('\n', at) - at);
      for (auto& [name, value] : e.fields) {
        char v[64];
        std::snprintf(v, sizeof v, "%.17g", value);
        EXPECT_NE(line.find("\"" + name + "\":" + v), std::string::npos) << line;
      }
    }
  }
}

// event_kind::app: grain::event(name, payload), recorded by the session's sampler listener.
TEST(TraceEvents, ApplicationEventsAreInEveryFormat) {
  const fields f = {{"step", 3}, {"duration_ns", 1.5e6}};
  expect_in_every_format([&] { grain::event("iteration", f); },
                         event_record{event_kind::app, "iteration", f});
}

// An event raised while no trace records goes nowhere, and the next recording starts clean.
TEST(TraceEvents, EventsOutsideARecordingAreNotWritten) {
  grain::event("before-any-trace", {{"x", 1}});
  temp_path dir("events-outside");
  {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:trace=" + dir.str(), "--grain:trace-format=chrome"}, false);
    rt.stop();
  }
  grain::event("after-the-trace", {{"x", 2}});
  const std::string json = slurp(dir / "trace.json");
  EXPECT_EQ(json.find("before-any-trace"), std::string::npos);
  EXPECT_EQ(json.find("after-the-trace"), std::string::npos);
}

}  // namespace
}  // namespace grain::test
