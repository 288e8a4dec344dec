#pragma once
// A seam for the fault tests (tests/distributed/faults_test.cpp): send a call the way
// grain::async does, but with a message changed on its way out — what a broken or different
// program would send. Not part of the installed API.
#include <functional>
#include <vector>

#include "grain/distributed/remote_async.hpp"

namespace grain::distributed::testing {

// The answer's payload (the serialized result), or remote_exception with the error the
// receiving locality sent back.
future<std::vector<char>> call_tampered(std::uint32_t dest, const detail::action_info& a,
                                        std::vector<char> args,
                                        const std::function<void(std::vector<char>&)>& tamper);
// A post with a changed message: nothing comes back.
void post_tampered(std::uint32_t dest, const detail::action_info& a, std::vector<char> args,
                   const std::function<void(std::vector<char>&)>& tamper);

}  // namespace grain::distributed::testing
