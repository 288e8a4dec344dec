// The chunk hand-off between a worker and the back end (see chunk_buffer.hpp).
#include "chunk_buffer.hpp"

#include <new>

namespace grain::instrumentation::trace_detail {

// The chunks' memory goes with `slabs`.
chunk_buffer::~chunk_buffer() = default;

bool chunk_buffer::next_chunk() {
  const bool publish = current != nullptr;
  if (publish) {
    current->count = static_cast<std::uint32_t>(cur - current->units);
    units_published += current->count;
    chunk* c = current;
    c->next = published.load(std::memory_order_relaxed);
    while (!published.compare_exchange_weak(c->next, c, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
    unconverted.fetch_add(1, std::memory_order_relaxed);
  }
  if (!spare) spare = returned.exchange(nullptr, std::memory_order_acquire);
  if (!spare) {
    auto* slab = static_cast<chunk*>(slabs.allocate());
    for (std::size_t i = chunk_slabs::slab_bytes / sizeof(chunk); i-- > 0;) {
      chunk* c = new (slab + i) chunk;
      c->next = spare;
      spare = c;
    }
  }
  chunk* n = spare;
  spare = n->next;
  n->next = nullptr;
  n->count = 0;
  current = n;
  cur = n->units;
  end = n->units + chunk_units;
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
