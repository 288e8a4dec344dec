// A task that throws when nobody reads its future is said once and counted (issue 11, item 4).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "grain/async.hpp"
#include "grain/future.hpp"
#include "runtime_fixture.hpp"

namespace {

// What the runtime logs (spdlog's default logger writes to stdout) while it lives.
class log_capture {
 public:
  log_capture() {
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
  }
  std::string text() {
    if (!done_) {
      text_ = ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
      done_ = true;
    }
    return text_;
  }
  ~log_capture() { text(); }

 private:
  bool done_ = false;
  std::string text_;
};

}  // namespace

TEST(UnreadExceptions, ADroppedFutureOfAThrowingTaskIsReportedAndCounted) {
  auto rt = grain::test::start_runtime({"--grain:threads=2"});
  log_capture log;
  const auto before = grain::detail::unread_exceptions();
  for (int i = 0; i < 3; ++i) {
    auto f = grain::async(grain::launch::async, [] { throw std::runtime_error("lost result"); });
    f.wait();
  }  // each future is dropped without get()
  rt.reset();
  EXPECT_EQ(grain::detail::unread_exceptions() - before, 3u);
  const std::string text = log.text();
  EXPECT_NE(text.find("nobody read"), std::string::npos) << text;
  EXPECT_NE(text.find("lost result"), std::string::npos) << text;
  EXPECT_NE(text.find("3 exceptions thrown by tasks were never read"), std::string::npos) << text;
}

TEST(UnreadExceptions, ReadOnesAreNotReported) {
  auto rt = grain::test::start_runtime({"--grain:threads=2"});
  const auto before = grain::detail::unread_exceptions();
  auto f = grain::async([] { throw std::runtime_error("read"); });
  EXPECT_THROW(f.get(), std::runtime_error);
  auto g = grain::async([] { throw std::runtime_error("checked"); });
  g.wait();
  EXPECT_TRUE(g.has_exception());
  grain::shared_future<void> s = grain::async([] { throw std::runtime_error("shared"); }).share();
  auto s2 = s;
  EXPECT_THROW(s2.get(), std::runtime_error);
  {
    grain::promise<int> p;  // never retrieved: its broken promise cannot be read by anyone
  }
  auto chained = grain::async([] { throw std::runtime_error("chained"); }).then([](auto f) {
    try {
      f.get();
    } catch (const std::runtime_error&) {
      return 1;
    }
    return 0;
  });
  EXPECT_EQ(chained.get(), 1);
  rt.reset();
  EXPECT_EQ(grain::detail::unread_exceptions() - before, 0u);
}
