#pragma once
// A task kind's name as a trace shows it. A task without grain::annotate is named after its
// callable's demangled type, which for a lambda inside a function with long parameter types
// (a remote action's, a dataflow's) runs to hundreds of characters:
//   stencil::(anonymous namespace)::block_run(stencil::(anonymous namespace)::block_job)::
//   {lambda(grain::shared_future<void> const&, grain::shared_future<void> const&, ...)#4}
// A viewer's row, a plot's legend and a summary's column have room for a fraction of that.
// Names longer than long_task_name are shortened: "(anonymous namespace)" becomes "{anon}",
// then parameter lists become "(...)", then template argument lists "<...>", until the name fits
// or nothing is left to shorten ("stencil::{anon}::block_run(...)::{lambda(...)#4}"). The
// enclosing functions and the lambda's number stay, which is what tells two kinds apart.
#include <cstddef>
#include <string>
#include <string_view>

namespace grain::instrumentation::trace_detail {

inline constexpr std::size_t long_task_name = 80;

std::string short_task_name(std::string_view name);

}  // namespace grain::instrumentation::trace_detail
