#include "grain/options.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace grain {
namespace {

constexpr std::string_view prefix = "--grain:";

const option_spec* find_spec(const std::vector<option_spec>& specs, std::string_view name) {
  for (auto& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

// The values of one occurrence of a repeatable option: empty items are dropped, so "a,,b" and
// a trailing separator are harmless.
void add_list(std::vector<std::string>& out, std::string_view text, std::string_view separators) {
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find_first_of(separators, pos);
    if (end == std::string_view::npos) end = text.size();
    if (end > pos) out.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
}

}  // namespace

const char* options::version() noexcept {
  return GRAIN_VERSION_STRING;
}

std::string options::env_name(std::string_view option) {
  std::string e = "GRAIN_";
  for (char c : option)
    e += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

std::string options::usage(const std::vector<option_spec>& specs) {
  std::vector<const option_spec*> sorted;
  sorted.reserve(specs.size());
  for (auto& s : specs) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });
  std::ostringstream os;
  for (auto* s : sorted) {
    std::string left = std::string(prefix) + s->name + (s->takes_value ? "=" + s->value_hint : "");
    os << "  " << left;
    for (std::size_t i = left.size(); i < 40; ++i) os << ' ';
    const bool says_it = s->help.find("repeatable") != std::string::npos;
    os << ' ' << s->help << (s->repeatable && !says_it ? " (repeatable)" : "") << "  ["
       << env_name(s->name) << "]\n";
  }
  return os.str();
}

void options::parse(const std::vector<std::string>& args, const std::vector<option_spec>& specs,
                    bool use_environment) {
  values_.clear();
  for (const std::string& a : args) {
    std::string_view arg = a;
    if (arg.substr(0, prefix.size()) != prefix) continue;
    arg.remove_prefix(prefix.size());
    auto eq = arg.find('=');
    std::string_view name = arg.substr(0, eq);
    const option_spec* spec = find_spec(specs, name);
    if (!spec) {
      throw option_error("unknown option --grain:" + std::string(name) + "\nvalid options:\n" +
                         usage(specs));
    }
    if (spec->takes_value && eq == std::string_view::npos)
      throw option_error("option --grain:" + spec->name + " needs a value: --grain:" + spec->name +
                         "=" + spec->value_hint);
    if (!spec->takes_value && eq != std::string_view::npos)
      throw option_error("option --grain:" + spec->name + " takes no value");
    std::string value = eq == std::string_view::npos ? "1" : std::string(arg.substr(eq + 1));
    auto& slot = values_[spec->name];
    if (!slot.empty() && !spec->repeatable)
      throw option_error("option --grain:" + spec->name + " given more than once");
    const std::size_t before = slot.size();
    if (spec->repeatable && spec->takes_value) add_list(slot, value, ",");
    if (slot.size() == before) slot.push_back(std::move(value));  // a flag, or an empty value
  }
  if (use_environment) {
    for (auto& s : specs) {
      if (values_.count(s.name)) continue;
      if (const char* v = std::getenv(env_name(s.name).c_str())) {
        // A variable cannot be given twice: a repeatable option's list is ','-separated like
        // on the command line; ';' is accepted as well (it was the only separator once).
        std::vector<std::string> list;
        if (s.repeatable && s.takes_value) add_list(list, v, ",;");
        if (list.empty()) list.emplace_back(v);
        values_[s.name] = std::move(list);
      }
    }
  }
}

void options::parse(int& argc, char** argv, const std::vector<option_spec>& specs) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  parse(args, specs, true);
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]).substr(0, prefix.size()) == prefix) continue;
    argv[out++] = argv[i];
  }
  if (out < argc) argv[out] = nullptr;
  argc = out;
}

bool options::has(std::string_view name) const {
  return values_.find(name) != values_.end();
}

std::string options::get(std::string_view name, std::string_view fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::string(fallback) : it->second.back();
}

std::vector<std::string> options::get_all(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

long long options::get_int(std::string_view name, long long fallback, long long min,
                           long long max) const {
  if (!has(name)) return fallback;
  std::string v = get(name);
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0')
    throw option_error("--grain:" + std::string(name) + "=" + v + ": not an integer");
  if (x < min || x > max)
    throw option_error("--grain:" + std::string(name) + "=" + v + ": must be in [" +
                       std::to_string(min) + ", " + std::to_string(max) + "]");
  return x;
}

}  // namespace grain
