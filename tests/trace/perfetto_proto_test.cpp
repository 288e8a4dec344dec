// The native Perfetto format (--grain:trace-format=perfetto, DIR/trace.pftrace): the wire
// encoder against hand-computed protobuf bytes, and a traced run decoded by an independent
// reader (tests/trace/perfetto_decode.py: python3-protobuf with message classes protoc compiles
// from instrumentation/src/trace/perfetto_trace.proto) that applies Perfetto's sequence rules
// (incremental clock, interned names, defaults) itself and rebuilds slices, flows, counters and
// decisions, which must match what the runtime and the session counted.
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "grain/instrumentation/trace.hpp"
#include "grain/knob.hpp"
#include "grain/runtime.hpp"
#include "trace/perfetto_wire.hpp"
#include "trace_util.hpp"

namespace grain::test {
namespace {

namespace pb = instrumentation::trace_detail::pb;

std::string hex(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

TEST(PerfettoWire, VarintsAndFixed64AsProtobufEncodesThem) {
  std::string s;
  pb::put_varint(s, 0);
  pb::put_varint(s, 127);
  pb::put_varint(s, 128);
  pb::put_varint(s, 300);
  EXPECT_EQ(hex(s), "007f8001ac02");
  s.clear();
  pb::put_varint(s, ~std::uint64_t{0});
  EXPECT_EQ(hex(s), "ffffffffffffffffff01");
  EXPECT_EQ(pb::varint_size(~std::uint64_t{0}), 10u);
  s.clear();
  pb::put_int(s, 1, -1);  // int64 -1: ten bytes, two's complement
  EXPECT_EQ(hex(s), "08ffffffffffffffffff01");
  s.clear();
  pb::put_fixed64(s, 47, 0x0102030405060708ull);  // tag 47<<3|1 = 377
  EXPECT_EQ(hex(s), "f9020807060504030201");
  s.clear();
  pb::put_double(s, 5, 1.0);
  EXPECT_EQ(hex(s), "29000000000000f03f");
  s.clear();
  pb::put_string(s, 2, "ab");
  pb::put_bool(s, 3, true);
  EXPECT_EQ(hex(s), "120261621801");
  // The raw-buffer variants write the same bytes.
  char raw[16];
  char* e = pb::put_varint(raw, 300);
  EXPECT_EQ(hex(std::string(raw, e)), "ac02");
  e = pb::put_fixed64(raw, 0x0102030405060708ull);
  EXPECT_EQ(hex(std::string(raw, e)), "0807060504030201");
}

TEST(PerfettoWire, NestedLengthsGrowPastOneByte) {
  std::string s;
  auto outer = pb::open(s, 1);
  auto inner = pb::open(s, 2);
  pb::put_uint(s, 1, 5);
  pb::close(s, inner);
  pb::close(s, outer);
  EXPECT_EQ(hex(s), "0a0412020805");
  // A body of 200 bytes needs a two-byte length (0xc8 0x01): the body moves, nothing is lost
  // (the string's own length, 197, takes two bytes as well).
  s.clear();
  outer = pb::open(s, 1);
  pb::put_string(s, 2, std::string(197, 'x'));  // tag + length(2) + 197 = 200 bytes
  pb::close(s, outer);
  ASSERT_EQ(s.size(), 1u + 2u + 200u);
  EXPECT_EQ(hex(s.substr(0, 6)), "0ac80112c501");
  EXPECT_EQ(s.back(), 'x');
}

std::string proto_file() {
  return std::string(GRAIN_SOURCE_DIR) + "/instrumentation/src/trace/perfetto_trace.proto";
}

bool have_python_protobuf() {
  return have_command("protoc") &&
         run_command("/usr/bin/python3 -c 'import google.protobuf'").status == 0;
}

// The summary line "  \"KEY\": VALUE" of the decoder's JSON (sorted keys, one per line).
std::string field(const std::string& out, const std::string& key) {
  const std::string k = "\"" + key + "\": ";
  auto i = out.find(k);
  if (i == std::string::npos) return "<missing " + key + ">";
  i += k.size();
  auto e = out.find_first_of(",\n", i);
  return out.substr(i, e - i);
}

TEST(TracePerfetto, DecodedIndependentlyMatchesTheRun) {
  if (!have_python_protobuf())
    GTEST_SKIP() << "protoc or python3-protobuf missing (scripts/setup installs them)";
  temp_path dir("pftrace");
  instrumentation::trace_stats st;
  {
    grain::runtime rt({"--grain:threads=2", "--grain:trace=" + dir.str(),
                       "--grain:trace-format=perfetto", "--grain:sample-interval=5"},
                      false);
    auto& i = grain::knobs().define_int("test.pf.int", 1, 1000, 10, "an integer knob");
    auto& r = grain::knobs().define_double("test.pf.real", 0, 1, 0.5, "a real knob");
    // fib(16) spawns 1596 tasks from tasks; with the root, 1597 first phases.
    EXPECT_EQ(grain::async([] { return fib(16); }).get(), 987);
    i.set(64, "queue too long", "int-rule", {{"/threads/queue-length/pending", 12}});
    r.set(0.25, "idle rate \"high\"", "real-rule");
    rt.stop();
  }
  const fs::path file = dir / "trace.pftrace";
  ASSERT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(dir / "trace.pftrace.incomplete"));
  auto r = run_command("/usr/bin/python3 '" + std::string(GRAIN_SOURCE_DIR) +
                       "/tests/trace/perfetto_decode.py' '" + proto_file() + "' '" + file.string() +
                       "' 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string& o = r.output;
  EXPECT_NE(o.find("\"errors\": []"), std::string::npos) << o;
  EXPECT_EQ(field(o, "primary_clock"), "3") << "CLOCK_MONOTONIC";
  EXPECT_EQ(field(o, "flow_edges"), "1596") << o;  // parent -> child, every task but the root
  EXPECT_EQ(field(o, "flows_without_source"), "0") << o;
  EXPECT_EQ(field(o, "flows_from_idle"), "0") << o;
  EXPECT_EQ(field(o, "negative_durations"), "0") << o;
  EXPECT_EQ(std::stoull(field(o, "first_ts")) <= std::stoull(field(o, "last_ts")), true);
  // Thread tracks: the workers and the policy engine; a counter track per counter and knob.
  EXPECT_NE(
      o.find("\"thread_tracks\": [\n  \"policy engine\",\n  \"worker 0\",\n  \"worker 1\"\n ]"),
      std::string::npos)
      << o;
  for (const char* c : {"\"/threads{locality#0/total}/idle-rate\"",
                        "\"/threads{locality#0/total}/count/cumulative\"", "\"knob:test.pf.int\"",
                        "\"knob:test.pf.real\""})
    EXPECT_NE(o.find(c), std::string::npos) << c << "\n" << o;
  // The knobs' last values are the decisions' new values.
  auto after = [&](const std::string& key) { return o.substr(o.find("\"" + key + "\": {")); };
  EXPECT_EQ(field(after("knob:test.pf.int"), "last"), "64.0") << o;
  EXPECT_EQ(field(after("knob:test.pf.real"), "last"), "0.25") << o;
  EXPECT_EQ(field(after("/threads{locality#0/total}/idle-rate"), "unit"), "\"ratio\"") << o;
  // Decisions: instant events on the policy engine with their arguments (integer knobs exact).
  const std::string d1 = after("args").substr(0, 600);
  EXPECT_NE(o.find("\"name\": \"policy:int-rule\""), std::string::npos) << o;
  EXPECT_NE(o.find("\"name\": \"policy:real-rule\""), std::string::npos) << o;
  EXPECT_NE(o.find("\"reason\": \"queue too long\""), std::string::npos) << o;
  EXPECT_NE(o.find("\"reason\": \"idle rate \\\"high\\\"\""), std::string::npos) << o;
  EXPECT_NE(o.find("\"old_value\": 10,"), std::string::npos) << o;
  EXPECT_NE(o.find("\"new_value\": 64,"), std::string::npos) << o;
  EXPECT_NE(o.find("\"new_value\": 0.25,"), std::string::npos) << o;
  EXPECT_NE(o.find("\"trigger:/threads/queue-length/pending\": 12.0"), std::string::npos) << o;
  EXPECT_NE(o.find("\"knob\": \"test.pf.int\""), std::string::npos) << o;
  EXPECT_NE(o.find("\"track\": \"policy engine\""), std::string::npos) << d1;
}

// What the session counted matches the decoded slices: every task phase (re-entries included)
// is one slice, every worker event one packet, and the file is compact (interned names, delta
// timestamps): an encoding that wrote names or absolute times per event would not fit.
TEST(TracePerfetto, SlicesMatchTheSessionsCounts) {
  if (!have_python_protobuf())
    GTEST_SKIP() << "protoc or python3-protobuf missing (scripts/setup installs them)";
  temp_path dir("pftrace-counts");
  instrumentation::trace_config cfg;
  cfg.dir = dir.str();
  cfg.format = instrumentation::trace_format::perfetto;
  cfg.workers = 2;
  cfg.counters = false;
  cfg.decisions = false;
  instrumentation::trace_stats st;
  std::uint64_t phases = 0;
  {
    grain::runtime rt({"--grain:threads=2"}, false);
    instrumentation::trace_session s(cfg);
    s.start();
    EXPECT_EQ(grain::async([] { return fib(18); }).get(), 2584);
    st = s.stop();
    phases = total_phases(rt);
  }
  ASSERT_TRUE(st.complete) << st.error;
  auto r =
      run_command("/usr/bin/python3 '" + std::string(GRAIN_SOURCE_DIR) +
                  "/tests/trace/perfetto_decode.py' '" + proto_file() + "' '" + st.path + "' 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string& o = r.output;
  EXPECT_NE(o.find("\"errors\": []"), std::string::npos) << o;
  EXPECT_EQ(field(o, "task_slices"), std::to_string(st.task_enters)) << o;
  EXPECT_EQ(field(o, "resumed_child_slices"), std::to_string(st.reentries)) << o;
  EXPECT_EQ(st.task_enters - st.reentries, phases);
  // Every slice closed (begin + end), the recorded events plus the idle periods open at stop.
  const auto decoded = std::stoull(field(o, "worker_events"));
  EXPECT_EQ(decoded,
            2 * (std::stoull(field(o, "task_slices")) + std::stoull(field(o, "idle_slices"))));
  EXPECT_GE(decoded, st.worker_events);
  EXPECT_LE(decoded, st.worker_events + cfg.workers) << o;
  EXPECT_EQ(field(o, "flow_edges"), "4180") << o;
  EXPECT_EQ(field(o, "bytes"), std::to_string(st.bytes));
  const double per_event = static_cast<double>(st.bytes) / static_cast<double>(st.worker_events);
  EXPECT_LT(per_event, 30.0) << st.bytes << " bytes, " << st.worker_events << " events";
}

// Streamed: packets reach DIR/trace.pftrace.incomplete while the program runs.
TEST(TracePerfetto, PacketsAreWrittenWhileTheProgramRuns) {
  temp_path dir("pftrace-stream");
  const fs::path writing = dir / "trace.pftrace.incomplete";
  std::uintmax_t during = 0;
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:trace=" + dir.str(), "--grain:trace-format=perfetto"},
        false);
    // fib(25): about 240,000 words of records (a child's Enter and its Leave are a word each),
    // several full 32,766-word chunks per worker.
    EXPECT_EQ(grain::async([] { return fib(25); }).get(), 75025);
    std::error_code ec;
    for (int i = 0; i < 500 && during < 200000; ++i) {
      during = fs::file_size(writing, ec);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GT(during, 200000u) << "no packets written before the end of the run";
    EXPECT_FALSE(fs::exists(dir / "trace.pftrace"));  // named only once complete
  }
  ASSERT_TRUE(fs::exists(dir / "trace.pftrace"));
  EXPECT_GT(fs::file_size(dir / "trace.pftrace"), during);
}

TEST(TracePerfetto, UnknownFormatIsRefusedWithTheChoices) {
  temp_path dir("pftrace-bad");
  try {
    grain::runtime rt(
        {"--grain:threads=1", "--grain:trace=" + dir.str(), "--grain:trace-format=protobuf"},
        false);
    FAIL() << "an unknown format was accepted";
  } catch (const grain::option_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--grain:trace-format=protobuf"), std::string::npos) << m;
    EXPECT_NE(m.find("otf2, perfetto, chrome or chrome.gz"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(dir / "trace.pftrace"));
}

// chrome.gz: the Chrome JSON through zlib; gzip and JSON readers accept it.
TEST(TraceChrome, GzipCompressedJsonReads) {
  temp_path dir("chrome-gz");
  {
    grain::runtime rt(
        {"--grain:threads=2", "--grain:trace=" + dir.str(), "--grain:trace-format=chrome.gz"},
        false);
    EXPECT_EQ(grain::async([] { return fib(14); }).get(), 377);
  }
  const fs::path gz = dir / "trace.json.gz";
  ASSERT_TRUE(fs::exists(gz));
  auto r = run_command(
      "/usr/bin/python3 -c \"import gzip,json,sys; d=json.load(gzip.open(sys.argv[1])); "
      "print('slices', sum(1 for e in d['traceEvents'] if e['ph']=='X' and e['cat']=='task'))\" "
      "'" +
      gz.string() + "' 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_NE(r.output.find("slices "), std::string::npos) << r.output;
  EXPECT_GE(std::stol(r.output.substr(r.output.find("slices ") + 7)), 610) << r.output;
}

}  // namespace
}  // namespace grain::test
