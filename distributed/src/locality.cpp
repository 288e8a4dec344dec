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

void check_locality(const locality& loc) {
  if (loc.rank() >= get_num_localities())
    throw std::out_of_range("grain: " + loc.to_string() + " does not exist (there " +
                            (get_num_localities() == 1
                                 ? "is 1 locality"
                                 : "are " + std::to_string(get_num_localities()) + " localities") +
                            ")");
}

void send_action(std::uint32_t dest, const action_info& a, std::vector<char> args,
                 response_handler on_response) {
  auto* p = distributed::parcelport::current();
  if (!p || !p->distributed())
    throw std::logic_error("grain: a remote call needs a running distributed runtime");
  p->send_action(dest, a, std::move(args), std::move(on_response));
}

bool post_coalesced(std::uint32_t dest, const action_info& a, const args_writer& write) {
  auto* p = distributed::parcelport::current();
  return p && p->post_coalesced(dest, a, write);
}

}  // namespace detail
}  // namespace grain
