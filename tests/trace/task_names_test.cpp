// Task kinds named after a long demangled lambda type are shortened in traces
// (instrumentation/src/trace/task_names.hpp); short names stay as they are.
#include <gtest/gtest.h>

#include <string>

#include "trace/task_names.hpp"

namespace grain::test {
namespace {

using instrumentation::trace_detail::long_task_name;
using instrumentation::trace_detail::short_task_name;

TEST(TaskNames, ShortNamesStay) {
  for (const char* n : {"fib", "long (*)(int)", "main::{lambda()#1}", "operator<",
                        "run_main(int, char**)::{lambda()#1}"})
    EXPECT_EQ(short_task_name(n), n);
}

TEST(TaskNames, ARemoteLambdaLosesItsParameterTypes) {
  // The name grain-stencil --localities gives one of its dataflow continuations (271 chars).
  const std::string name =
      "stencil::(anonymous namespace)::block_run(stencil::(anonymous namespace)::block_job)::"
      "{lambda(grain::shared_future<void> const&, grain::shared_future<void> const&, "
      "grain::shared_future<void> const&, grain::shared_future<double> const&, "
      "grain::shared_future<double> const&)#3}";
  ASSERT_GT(name.size(), 250u);
  EXPECT_EQ(short_task_name(name), "stencil::{anon}::block_run(...)::{lambda(...)#3}");
  // Another lambda of the same function stays another name.
  EXPECT_NE(short_task_name(name),
            short_task_name(std::string(name).replace(name.size() - 2, 1, "4")));
}

TEST(TaskNames, TemplateArgumentsGoLastAndOnlyWhenNeeded) {
  const std::string args(60, 'x');
  const std::string fits = "a::b<" + std::string(40, 'T') + ">::run(" + args + ")";
  EXPECT_EQ(short_task_name(fits), "a::b<" + std::string(40, 'T') + ">::run(...)");
  const std::string long_template =
      "ns::action<" + std::string(90, 'T') + ">::invoke(" + args + ")";
  EXPECT_EQ(short_task_name(long_template), "ns::action<...>::invoke(...)");
  for (const auto& n : {fits, long_template}) EXPECT_LE(short_task_name(n).size(), long_task_name);
}

TEST(TaskNames, UnbalancedBracketsLeaveTheNameWhole) {
  const std::string name = "ns::operator<(" + std::string(100, 'a') + ")";
  // '(' and ')' balance: the parameters go; the lone '<' leaves template collapsing alone.
  EXPECT_EQ(short_task_name(name), "ns::operator<(...)");
}

}  // namespace
}  // namespace grain::test
