// Counter names, patterns and the registry.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "grain/clock.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::instrumentation {

// ---- names ------------------------------------------------------------------------------

std::string counter_name::full() const {
  std::string s;
  s.reserve(object.size() + instance.size() + counter.size() + 4);
  s += '/';
  s += object;
  if (!instance.empty()) {
    s += '{';
    s += instance;
    s += '}';
  }
  s += '/';
  s += counter;
  return s;
}

std::optional<counter_name> parse_counter_name(std::string_view text) {
  if (text.size() < 3 || text[0] != '/') return std::nullopt;
  counter_name n;
  std::size_t i = 1;
  std::size_t end = text.find_first_of("{/", i);
  if (end == std::string_view::npos || end == i) return std::nullopt;
  n.object = std::string(text.substr(i, end - i));
  if (n.object.find('}') != std::string::npos) return std::nullopt;
  i = end;
  if (text[i] == '{') {
    std::size_t close = text.find('}', i + 1);
    if (close == std::string_view::npos || close == i + 1) return std::nullopt;
    n.instance = std::string(text.substr(i + 1, close - i - 1));
    if (n.instance.find('{') != std::string::npos) return std::nullopt;
    // HPX spells a worker's instance worker-thread#N: the same instance as grain's worker#N.
    static constexpr std::string_view hpx_worker = "worker-thread#";
    for (std::size_t at = n.instance.find(hpx_worker); at != std::string::npos;
         at = n.instance.find(hpx_worker, at))
      n.instance.replace(at, hpx_worker.size(), "worker#");
    i = close + 1;
    if (i >= text.size() || text[i] != '/') return std::nullopt;
  }
  // text[i] == '/'
  if (i + 1 >= text.size()) return std::nullopt;
  n.counter = std::string(text.substr(i + 1));
  if (n.counter.find_first_of("{}") != std::string::npos) return std::nullopt;
  return n;
}

bool glob_match(std::string_view p, std::string_view t) noexcept {
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (pi < p.size() && p[pi] == t[ti]) {
      ++pi;
      ++ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

counter_pattern::counter_pattern(std::string_view text) : text_(text) {
  if (text.empty() || text == "*") {
    parts_ = {"*", "*", "*"};
    return;
  }
  auto n = parse_counter_name(text);
  if (!n)
    throw std::invalid_argument("malformed counter name '" + std::string(text) +
                                "' (expected /object{instance}/name, e.g. "
                                "/threads{locality#0/total}/idle-rate)");
  parts_ = std::move(*n);
}

namespace {
// Written once at configure time, before workers or the sampler name or match counters.
std::string g_default_instance = "locality#0/total";
unsigned g_here = 0;
}  // namespace

std::string_view default_instance() noexcept {
  return g_default_instance;
}

std::string here_instance(std::string_view rest) {
  return "locality#" + std::to_string(g_here) + "/" + std::string(rest);
}

unsigned here_locality() noexcept {
  return g_here;
}

void set_here_locality(unsigned rank) {
  g_here = rank;
  g_default_instance = here_instance("total");
}

bool counter_pattern::matches(const counter_name& n) const noexcept {
  if (!glob_match(parts_.object, n.object)) return false;
  if (parts_.instance.empty()) {
    if (!n.instance.empty() && n.instance != default_instance()) return false;
  } else if (!(parts_.instance == "*" && n.instance.empty()) &&
             !glob_match(parts_.instance, n.instance)) {
    return false;
  }
  return glob_match(parts_.counter, n.counter);
}

bool counter_pattern::matches(std::string_view full_name) const {
  auto n = parse_counter_name(full_name);
  return n && matches(*n);
}

// ---- single-function counters -------------------------------------------------------------

namespace {

class function_provider final : public counter_provider {
 public:
  function_provider(counter_info info, std::function<counter_reading()> fn,
                    std::function<void()> on_reset)
      : infos_{std::move(info)}, fn_(std::move(fn)), on_reset_(std::move(on_reset)) {}
  const std::vector<counter_info>& counters() const override { return infos_; }
  void sample(std::uint64_t, counter_reading* out) override {
    try {
      counter_reading r = fn_();
      if (infos_[0].kind == counter_kind::monotonic && r.available) r.value -= base_;
      *out = r;
    } catch (...) {
      *out = {0, false};
    }
  }
  void reset(std::uint64_t) override {
    if (infos_[0].kind == counter_kind::monotonic) {
      try {
        counter_reading r = fn_();
        base_ = r.available ? r.value : 0;
      } catch (...) {
        base_ = 0;
      }
    }
    if (on_reset_) on_reset_();
  }

 private:
  std::vector<counter_info> infos_;
  std::function<counter_reading()> fn_;
  std::function<void()> on_reset_;
  double base_ = 0;
};

}  // namespace

// ---- registry ---------------------------------------------------------------------------

struct counter_registry::impl {
  struct slot {
    int id;
    std::shared_ptr<counter_provider> p;
    std::size_t offset = 0;
  };
  mutable std::mutex m;
  std::vector<slot> providers;
  std::vector<counter_reading> flat;       // one reading per counter, provider order
  std::vector<const counter_info*> infos;  // flat index -> info
  std::vector<counter_name> parsed;        // flat index -> parts
  std::vector<std::uint32_t> order;        // sorted position -> flat index
  std::unordered_map<std::string, std::uint32_t> by_name;  // full name -> flat index
  // The other spelling of each name: /o/c for /o{locality#0/total}/c and vice versa.
  std::unordered_map<std::string, std::uint32_t> by_alias;

  static std::string alias_of(const counter_name& n) {
    counter_name a = n;
    if (n.instance.empty())
      a.instance = std::string(default_instance());
    else if (n.instance == default_instance())
      a.instance.clear();
    else
      return {};
    return a.full();
  }
  const std::uint32_t* lookup(std::string_view name) const {
    std::string key(name);
    if (auto it = by_name.find(key); it != by_name.end()) return &it->second;
    if (auto it = by_alias.find(key); it != by_alias.end()) return &it->second;
    return nullptr;
  }
  std::uint64_t generation = 1;
  int next_id = 1;

  void rebuild() {
    std::size_t n = 0;
    for (auto& s : providers) {
      s.offset = n;
      n += s.p->counters().size();
    }
    flat.assign(n, counter_reading{});
    infos.clear();
    parsed.clear();
    by_name.clear();
    by_alias.clear();
    for (auto& s : providers)
      for (auto& c : s.p->counters()) {
        const auto idx = static_cast<std::uint32_t>(infos.size());
        by_name.emplace(c.name, idx);
        infos.push_back(&c);
        parsed.push_back(*parse_counter_name(c.name));
        if (auto a = alias_of(parsed.back()); !a.empty()) by_alias.emplace(std::move(a), idx);
      }
    order.resize(n);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return infos[a]->name < infos[b]->name; });
    ++generation;
  }

  void sample_all(std::uint64_t now) {
    for (auto& s : providers) s.p->sample(now, flat.data() + s.offset);
  }
};

counter_registry::counter_registry() : impl_(std::make_unique<impl>()) {}
counter_registry::~counter_registry() = default;

int counter_registry::add_provider(std::shared_ptr<counter_provider> p) {
  if (!p) throw std::invalid_argument("counter provider is null");
  std::lock_guard lk(impl_->m);
  std::vector<std::string> seen;
  for (auto& c : p->counters()) {
    auto n = parse_counter_name(c.name);
    if (!n)
      throw std::invalid_argument("malformed counter name '" + c.name +
                                  "' (expected /object{instance}/name or /object/name)");
    if (c.name.find('*') != std::string::npos)
      throw std::invalid_argument("counter name '" + c.name + "' contains '*'");
    const std::string alias = impl::alias_of(*n);
    auto in_seen = [&](const std::string& x) {
      return std::find(seen.begin(), seen.end(), x) != seen.end();
    };
    if (impl_->lookup(c.name) || in_seen(c.name) ||
        (!alias.empty() && (impl_->lookup(alias) || in_seen(alias))))
      throw std::invalid_argument("counter '" + c.name + "' is already defined");
    seen.push_back(c.name);
  }
  int id = impl_->next_id++;
  impl_->providers.push_back({id, std::move(p), 0});
  impl_->rebuild();
  return id;
}

int counter_registry::add_counter(counter_info info, std::function<counter_reading()> fn,
                                  std::function<void()> on_reset) {
  return add_provider(
      std::make_shared<function_provider>(std::move(info), std::move(fn), std::move(on_reset)));
}

int counter_registry::add_counter(counter_info info, std::function<double()> fn,
                                  std::function<void()> on_reset) {
  return add_counter(
      std::move(info),
      [f = std::move(fn)]() {
        return counter_reading{f(), true};
      },
      std::move(on_reset));
}

void counter_registry::remove(int id) {
  std::shared_ptr<counter_provider> keep;  // destroyed outside the lock
  std::lock_guard lk(impl_->m);
  auto& v = impl_->providers;
  auto it = std::find_if(v.begin(), v.end(), [id](auto& s) { return s.id == id; });
  if (it == v.end()) return;
  keep = std::move(it->p);
  v.erase(it);
  impl_->rebuild();
}

bool counter_registry::contains(std::string_view full_name) const {
  std::lock_guard lk(impl_->m);
  return impl_->lookup(full_name) != nullptr;
}

std::vector<counter_info> counter_registry::list(std::string_view pattern) const {
  counter_pattern pat(pattern);
  std::lock_guard lk(impl_->m);
  std::vector<counter_info> out;
  for (auto i : impl_->order)
    if (pat.matches(impl_->parsed[i])) out.push_back(*impl_->infos[i]);
  return out;
}

bool counter_registry::has_object(std::string_view object) const {
  std::lock_guard lk(impl_->m);
  for (auto& n : impl_->parsed)
    if (n.object == object) return true;
  return false;
}

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::optional<std::string> counter_registry::closest(std::string_view name) const {
  const bool short_form = name.find('{') == std::string_view::npos;
  // Near enough to be a typo (a swapped or missing letter or two), not another counter.
  std::size_t best = std::max<std::size_t>(2, name.size() / 5) + 1;
  std::optional<std::string> out;
  std::lock_guard lk(impl_->m);
  for (std::size_t i = 0; i < impl_->infos.size(); ++i) {
    std::string candidate = impl_->infos[i]->name;
    if (short_form && !impl_->parsed[i].instance.empty()) {
      if (impl_->parsed[i].instance != default_instance()) continue;
      candidate = "/" + impl_->parsed[i].object + "/" + impl_->parsed[i].counter;
    }
    const std::size_t d = edit_distance(name, candidate);
    if (d < best) {
      best = d;
      out = std::move(candidate);
    }
  }
  return out;
}

std::vector<counter_value> counter_registry::query(std::string_view pattern) {
  counter_pattern pat(pattern);
  std::lock_guard lk(impl_->m);
  impl_->sample_all(now_ns());
  std::vector<counter_value> out;
  for (auto i : impl_->order)
    if (pat.matches(impl_->parsed[i]))
      out.push_back({impl_->infos[i]->name, impl_->flat[i].value, impl_->flat[i].available,
                     impl_->infos[i]->kind});
  return out;
}

std::optional<counter_value> counter_registry::value(std::string_view full_name) {
  std::lock_guard lk(impl_->m);
  const std::uint32_t* idx = impl_->lookup(full_name);
  if (!idx) return std::nullopt;
  const std::uint32_t i = *idx;
  // Evaluate only the provider that owns it.
  std::uint64_t now = now_ns();
  for (auto& s : impl_->providers) {
    std::size_t n = s.p->counters().size();
    if (i >= s.offset && i < s.offset + n) {
      s.p->sample(now, impl_->flat.data() + s.offset);
      break;
    }
  }
  auto& r = impl_->flat[i];
  return counter_value{impl_->infos[i]->name, r.value, r.available, impl_->infos[i]->kind};
}

void counter_registry::reset() {
  std::lock_guard lk(impl_->m);
  std::uint64_t now = now_ns();
  for (auto& s : impl_->providers) s.p->reset(now);
}

void counter_registry::reset(const counter_snapshot& taken) {
  std::lock_guard lk(impl_->m);
  for (auto& s : impl_->providers) s.p->reset(taken.time_ns);
}

void counter_registry::sample(counter_snapshot& out) {
  std::lock_guard lk(impl_->m);
  auto& im = *impl_;
  out.time_ns = now_ns();
  im.sample_all(out.time_ns);
  const std::size_t n = im.order.size();
  if (out.layout_generation != im.generation || out.values.size() != n) {
    out.values.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      out.values[k].name = im.infos[im.order[k]]->name;
      out.values[k].kind = im.infos[im.order[k]]->kind;
    }
    out.layout_generation = im.generation;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const counter_reading& r = im.flat[im.order[k]];
    out.values[k].value = r.value;
    out.values[k].available = r.available;
  }
}

std::uint64_t counter_registry::layout_generation() const {
  std::lock_guard lk(impl_->m);
  return impl_->generation;
}

counter_registry& registry() {
  static counter_registry* r = new counter_registry();  // never destroyed: used at exit
  return *r;
}

// ---- listener.hpp helpers -------------------------------------------------------------

const counter_value* counter_snapshot::find(std::string_view name) const noexcept {
  auto it = std::lower_bound(values.begin(), values.end(), name,
                             [](const counter_value& v, std::string_view n) { return v.name < n; });
  if (it == values.end() || it->name != name) return nullptr;
  return &*it;
}

double app_event::get(std::string_view key, double fallback) const noexcept {
  for (auto& [k, v] : payload)
    if (k == key) return v;
  return fallback;
}

}  // namespace grain::instrumentation
