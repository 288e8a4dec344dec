// 2 MiB slabs for the workers' chunks (see chunk_memory.hpp).
#include "chunk_memory.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace grain::instrumentation::trace_detail {

chunk_slabs::~chunk_slabs() {
  for (void* s : slabs_) munmap(s, slab_bytes);
}

void* chunk_slabs::allocate() {
  slabs_.reserve(slabs_.size() + 1);  // before the mapping: nothing to undo if this throws
  // Twice the size, then the unaligned ends are given back: mmap aligns to 4 KiB only.
  void* raw =
      mmap(nullptr, 2 * slab_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  char* const base = static_cast<char*>(raw);
  const auto misalign = reinterpret_cast<std::uintptr_t>(raw) & (slab_bytes - 1);
  const std::size_t head = misalign ? slab_bytes - misalign : 0;
  char* const slab = base + head;
  if (head) munmap(base, head);
  munmap(slab + slab_bytes, slab_bytes - head);  // the tail: never empty (head < slab_bytes)
  // One call maps the whole slab instead of 512 first-touch faults. Where the kernel is older
  // than 5.14 (EINVAL) the pages fault in as they are written, as before.
#ifdef MADV_POPULATE_WRITE
  (void)madvise(slab, slab_bytes, MADV_POPULATE_WRITE);
#endif
  slabs_.push_back(slab);
  return slab;
}

}  // namespace grain::instrumentation::trace_detail
