// The ranks agree on tracing (trace_agreement.hpp). A multi-rank trace is written
// collectively: the directory check, OTF2's archive and the clock exchange are collective
// steps. A rank traced while another is not, or one writing OTF2 while another writes
// Perfetto, used to wait in such a step for a partner that never came (no output at all).
// So every rank sends rank 0 its choice first, rank 0 compares, and all ranks go on or all
// stop with the same message.
#include "trace_agreement.hpp"

#include <cstdint>
#include <vector>

namespace grain::distributed {

std::string tracing_choice(const options& o) {
  if (!o.has("trace")) return "no tracing";
  std::string fmt = o.get("trace-format", "otf2");
  // The trace extension's aliases: the same format under two names is no disagreement.
  if (fmt == "json") fmt = "chrome";
  if (fmt == "json.gz") fmt = "chrome.gz";
  return "--grain:trace=" + o.get("trace") + " --grain:trace-format=" + fmt;
}

namespace {

// On rank 0: the message when the ranks' choices differ, empty when they agree.
std::string compare(const std::vector<std::string>& choices) {
  bool same = true;
  for (const std::string& c : choices) same = same && c == choices[0];
  if (same) return {};
  std::string text = "the ranks were given different tracing options (";
  constexpr std::size_t named = 8;  // a job of many ranks: the first few tell the story
  for (std::size_t r = 0; r < choices.size() && r < named; ++r)
    text += (r ? "; locality#" : "locality#") + std::to_string(r) + ": " + choices[r];
  if (choices.size() > named) text += "; ...";
  return text +
         "); a trace of several ranks is written by all of them together: give every rank the "
         "same --grain:trace and --grain:trace-format, or none";
}

}  // namespace

void agree_on_tracing(instrumentation::trace_group& g, const std::string& mine) {
  const unsigned n = g.size();
  const bool root = g.rank() == 0;
  const std::uint64_t my_size = mine.size();
  std::vector<std::uint64_t> sizes(root ? n : 0);
  const std::vector<std::size_t> eight(n, sizeof(std::uint64_t));
  g.gatherv(&my_size, sizeof my_size, sizes.data(), eight.data(), 0);
  std::vector<std::size_t> counts(sizes.begin(), sizes.end());
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  std::string all(total, '\0');
  counts.resize(n);  // read on the root only
  g.gatherv(mine.data(), mine.size(), all.data(), counts.data(), 0);
  std::string verdict;
  if (root) {
    std::vector<std::string> choices;
    std::size_t at = 0;
    for (std::size_t c : counts) {
      choices.push_back(all.substr(at, c));
      at += c;
    }
    verdict = compare(choices);
  }
  std::uint64_t len = verdict.size();
  g.broadcast(&len, sizeof len, 0);
  if (len == 0) return;
  verdict.resize(len);
  g.broadcast(verdict.data(), len, 0);
  throw option_error(verdict);
}

}  // namespace grain::distributed
