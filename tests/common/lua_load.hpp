#pragma once
// Load Lua code into a policy engine and return the error message, or "" when it loaded.
#include <exception>
#include <string>

#include "grain/policy/engine.hpp"

namespace grain::test {

inline std::string load_error(policy::engine& e, const std::string& code,
                              const char* chunk = "check.lua") {
  try {
    e.load_string(code, chunk);
  } catch (const std::exception& ex) {
    return ex.what();
  }
  return {};
}

}  // namespace grain::test
