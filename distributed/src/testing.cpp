// The fault tests' seam (testing.hpp).
#include "testing.hpp"

#include <memory>

#include "parcelport.hpp"

namespace grain::distributed::testing {

future<std::vector<char>> call_tampered(std::uint32_t dest, const detail::action_info& a,
                                        std::vector<char> args,
                                        const std::function<void(std::vector<char>&)>& tamper) {
  auto p = std::make_shared<promise<std::vector<char>>>();
  auto f = p->get_future();
  parcelport::current()->send_action(
      dest, a, std::move(args),
      [p](bool ok, std::span<const char> in) {
        if (ok)
          p->set_value(std::vector<char>(in.begin(), in.end()));
        else
          p->set_exception(
              std::make_exception_ptr(remote_exception(std::string(in.begin(), in.end()))));
      },
      tamper);
  return f;
}

void post_tampered(std::uint32_t dest, const detail::action_info& a, std::vector<char> args,
                   const std::function<void(std::vector<char>&)>& tamper) {
  parcelport::current()->send_action(dest, a, std::move(args), {}, tamper);
}

}  // namespace grain::distributed::testing

namespace grain::distributed::testing {

void observe_messages(std::uint64_t action, message_observer fn) {
  parcelport* p = parcelport::current();
  if (p) p->set_observer(action, std::move(fn));
}

}  // namespace grain::distributed::testing
