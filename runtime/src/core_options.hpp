#pragma once
// Parsing and checking the core options of runtime_core (core_options.cpp).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "grain/ext/runtime_core.hpp"
#include "grain/topology.hpp"

namespace grain::detail {

// More workers than processing units only time-share the cores; above this many per processing
// unit --grain:threads takes --grain:oversubscribe.
constexpr long long oversubscription_limit = 4;

// --grain:stack-size=BYTES[K|M], within [16K, 256M]; throws option_error.
std::size_t parse_stack_size(const std::string& text);
// --grain:pools=NAME:N[,NAME:N]; the remaining workers form the last pool, "default".
std::vector<pool_request> parse_pools(const std::string& spec, unsigned threads);
// The core options and every extension's.
std::vector<option_spec> all_option_specs(const std::vector<std::unique_ptr<extension>>& exts);
// --grain:threads, checked against the processing units (warns or throws option_error).
unsigned checked_threads(const options& o, const topology& topo);

}  // namespace grain::detail
