#include "run_info.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "grain/clock.hpp"
#include "grain/options.hpp"

namespace grain::instrumentation::detail {
namespace {

// /proc/self/cmdline keeps the arguments as the program got them: grain::runtime removes its
// options from argv, but only by moving pointers.
std::vector<std::string> read_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  std::size_t pos = 0;
  while (pos < all.size()) {
    std::size_t end = all.find('\0', pos);
    if (end == std::string::npos) end = all.size();
    words.push_back(all.substr(pos, end - pos));
    pos = end + 1;
  }
  return words;
}

}  // namespace

std::string iso_utc(std::uint64_t realtime_ns) {
  const time_t sec = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
  tm t{};
  gmtime_r(&sec, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                static_cast<unsigned>(realtime_ns / 1'000'000ull % 1000));
  return buf;
}

run_info current_run_info(std::uint64_t start_ns) {
  run_info r;
  r.version = options::version();
  r.command_line = read_command_line();
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !*host) std::snprintf(host, sizeof host, "?");
  r.host = host;
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  const std::uint64_t now_rt = static_cast<std::uint64_t>(rt.tv_sec) * 1'000'000'000ull +
                               static_cast<std::uint64_t>(rt.tv_nsec);
  const std::uint64_t since = now_ns() > start_ns ? now_ns() - start_ns : 0;
  r.start_time = iso_utc(now_rt > since ? now_rt - since : now_rt);
  return r;
}

std::string shell_quoted(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    const bool plain = !w.empty() && w.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_./:=,+%@") == std::string::npos;
    if (plain) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace grain::instrumentation::detail
