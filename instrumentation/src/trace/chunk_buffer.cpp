// The chunk hand-off between a worker and the back end (see chunk_buffer.hpp).
#include "chunk_buffer.hpp"

namespace grain::instrumentation::trace_detail {

chunk_buffer::~chunk_buffer() {
  auto free_list = [](chunk* c) {
    while (c) {
      chunk* n = c->next;
      delete c;
      c = n;
    }
  };
  free_list(published.exchange(nullptr));
  free_list(returned.exchange(nullptr));
  free_list(spare);
  free_list(taken);
  delete current;
}

bool chunk_buffer::next_chunk() {
  const bool publish = current != nullptr;
  if (publish) {
    current->count = static_cast<std::uint32_t>(cur - current->words);
    words_published += current->count;
    chunk* c = current;
    c->next = published.load(std::memory_order_relaxed);
    while (!published.compare_exchange_weak(c->next, c, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
    unconverted.fetch_add(1, std::memory_order_relaxed);
  }
  if (!spare) spare = returned.exchange(nullptr, std::memory_order_acquire);
  chunk* n = spare;
  if (n)
    spare = n->next;
  else
    n = new chunk;
  n->next = nullptr;
  n->count = 0;
  current = n;
  cur = n->words;
  end = n->words + chunk_words;
  return publish;
}

chunk* chunk_buffer::take_published() noexcept {
  chunk* c = published.exchange(nullptr, std::memory_order_acquire);
  chunk* fifo = nullptr;
  while (c) {
    chunk* n = c->next;
    c->next = fifo;
    fifo = c;
    c = n;
  }
  return fifo;
}

chunk* chunk_buffer::next_published() noexcept {
  if (!taken) taken = take_published();
  chunk* c = taken;
  if (c) taken = c->next;
  return c;
}

void chunk_buffer::give_back(chunk* c) noexcept {
  unconverted.fetch_sub(1, std::memory_order_relaxed);
  c->next = returned.load(std::memory_order_relaxed);
  while (!returned.compare_exchange_weak(c->next, c, std::memory_order_release,
                                         std::memory_order_relaxed)) {
  }
}

}  // namespace grain::instrumentation::trace_detail
