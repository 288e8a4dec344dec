#pragma once
// The converter side of the streamed formats (Perfetto protobuf, Chrome JSON): a thread that
// takes the chunks the workers publish, hands each worker's records to the back end's convert
// function in order, and gives the chunks back, when a core is spare or the backlog is large
// (convert_pacing.hpp), so that memory stays bounded however long the run. At stop, finish()
// converts what is left (published chunks, then the chunks being written). The OTF2 back end has
// its own loop (OTF2 writers per location).
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "convert_pacing.hpp"
#include "session_core.hpp"

namespace grain::instrumentation::trace_detail {

class chunk_converter {
 public:
  using convert_fn = std::function<void(unsigned worker, const rec* begin, const rec* end)>;
  // after_batch: called by the converting thread after each pass that converted something
  // (the back end writes its buffers there).
  chunk_converter(convert_fn convert, std::function<void()> after_batch)
      : convert_(std::move(convert)), after_(std::move(after_batch)) {}
  ~chunk_converter() { stop(); }
  chunk_converter(const chunk_converter&) = delete;
  chunk_converter& operator=(const chunk_converter&) = delete;

  void start(session_core& s) {
    s_ = &s;
    thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_acquire))
        if (!drain(false)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }

  // Every worker left its hooks: the rest of their records, by the calling thread.
  void finish() {
    stop();
    if (!s_) return;
    drain(true);
    for (unsigned w = 0; w < s_->workers.size(); ++w) {
      auto& b = s_->workers[w];
      if (b.out.current) {
        convert_units(w, b.out.current->units, b.out.cur);
        b.out.cur = b.out.current->units;
      }
    }
    after_();
  }

 private:
  void stop() {
    stop_.store(true, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
  }

  void convert_units(unsigned w, const unit* p, const unit* e) {
    s_->workers[w].decoder.decode_batches(p, e,
                                          [&](const rec* b, const rec* f) { convert_(w, b, f); });
  }

  bool drain(bool all) {
    const bool did = drain_published(
        *s_, all, [&](unsigned w, chunk* c) { convert_units(w, c->units, c->units + c->count); });
    if (did) after_();
    return did;
  }

  convert_fn convert_;
  std::function<void()> after_;
  session_core* s_ = nullptr;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace grain::instrumentation::trace_detail
