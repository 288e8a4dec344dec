// find_here() and friends, and the entry from remote_async.hpp into the parcel port.
#include <stdexcept>
#include <string>

#include "grain/distributed/locality.hpp"
#include "grain/distributed/remote_async.hpp"
#include "parcelport.hpp"

namespace grain {

locality find_here() noexcept {
  auto* p = distributed::parcelport::current();
  return locality(p ? p->rank() : 0);
}

std::uint32_t get_num_localities() noexcept {
  auto* p = distributed::parcelport::current();
  return p ? p->size() : 1;
}

std::vector<locality> find_all_localities() {
  std::vector<locality> r;
  for (std::uint32_t i = 0; i < get_num_localities(); ++i) r.emplace_back(i);
  return r;
}

namespace detail {

distributed::parcelport* route(const locality& loc) {
  auto* p = distributed::parcelport::current();
  const std::uint32_t n = p ? p->size() : 1;
  if (loc.rank() >= n)
    throw std::out_of_range(
        "grain: " + loc.to_string() + " does not exist (there " +
        (n == 1 ? "is 1 locality" : "are " + std::to_string(n) + " localities") + ")");
  if (loc.rank() == (p ? p->rank() : 0)) return nullptr;
  if (!p->distributed())
    throw std::logic_error("grain: a remote call needs a running distributed runtime");
  return p;
}

void send_post(distributed::parcelport* port, std::uint32_t dest, const action_info& a,
               const args_writer& write) {
  port->post(dest, a, write);
}

void send_call(distributed::parcelport* port, std::uint32_t dest, const action_info& a,
               const args_writer& write, response_handler on_response) {
  port->call(dest, a, write, std::move(on_response));
}

}  // namespace detail
}  // namespace grain
