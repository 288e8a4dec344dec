#pragma once
// Chunkers decide how the iterations of a parallel loop are grouped into chunks (the unit a
// worker claims at a time). They are HPX's executor parameters, used the same way:
//
//   grain::for_loop(grain::execution::par.with(grain::execution::dynamic_chunk_size(64)), 0, n, f);
//
// Every named chunker converts to the one value type `chunker`, so a chunker can also be chosen
// at run time (parse_chunker("guided:8")). Formulas: docs/parallel-loops.md.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grain {
class knob;
}

namespace grain::execution {

enum class chunk_kind : std::uint8_t { static_, dynamic, guided, auto_, adaptive, knob };

struct chunker {
  chunk_kind kind = chunk_kind::adaptive;
  // static, dynamic: the chunk size (static 0: one even share per worker);
  // guided: the minimum chunk; auto: iterations timed first (0: 1 % of the loop).
  std::size_t size = 0;
  // auto: the time a chunk should take.
  std::uint64_t target_ns = 0;
  // adaptive: lambda of "chunk time >= lambda x t_o"; negative: read the knob loop.lambda.
  double lambda = -1;
  // knob: the knob whose value is the chunk size.
  const grain::knob* size_knob = nullptr;

  // "static:0", "dynamic:64", "guided:1", "auto", "auto:100us", "adaptive", "adaptive:5",
  // "knob:NAME".
  std::string name() const;
};

// Parses the names written by chunker::name() (and "static", "dynamic", "guided" with their
// defaults); throws std::invalid_argument naming the accepted forms. "knob:NAME" needs a
// defined integer or real knob NAME.
chunker parse_chunker(std::string_view text);

// Chunks of `size` iterations dealt round-robin to the workers (chunk k to worker k mod P),
// like OpenMP schedule(static, size). size 0: one contiguous share of ceil(n/P) per worker.
struct static_chunk_size {
  std::size_t size = 0;
  constexpr explicit static_chunk_size(std::size_t n = 0) noexcept : size(n) {}
  operator chunker() const noexcept { return {chunk_kind::static_, size, 0, -1}; }  // NOLINT
};

// Chunks of `size` iterations claimed by whichever worker is free (OpenMP dynamic); default 1.
struct dynamic_chunk_size {
  std::size_t size = 1;
  constexpr explicit dynamic_chunk_size(std::size_t n = 1) noexcept : size(n) {}
  operator chunker() const noexcept { return {chunk_kind::dynamic, size, 0, -1}; }  // NOLINT
};

// Claimed chunks of max(min, ceil(remaining / P)): large first, smaller towards the end
// (OpenMP guided). Default minimum 1.
struct guided_chunk_size {
  std::size_t min = 1;
  constexpr explicit guided_chunk_size(std::size_t m = 1) noexcept : min(m) {}
  operator chunker() const noexcept { return {chunk_kind::guided, min, 0, -1}; }  // NOLINT
};

// Like HPX: the calling task first runs and times `timed_iterations` iterations (0: 1 % of the
// loop), then the rest is claimed in chunks of target / t_iter iterations (target 200 us, HPX's
// default), at most one even share per worker.
struct auto_chunk_size {
  std::uint64_t target_ns = 200'000;
  std::size_t timed_iterations = 0;
  constexpr explicit auto_chunk_size(std::uint64_t target = 200'000, std::size_t timed = 0) noexcept
      : target_ns(target), timed_iterations(timed) {}
  operator chunker() const noexcept {  // NOLINT
    return {chunk_kind::auto_, timed_iterations, target_ns, -1};
  }
};

// Chunk time >= lambda x t_o (t_o: the runtime's measured task overhead; lambda: the knob
// loop.lambda unless given). The caller first runs iterations itself until they took
// lambda x t_o (a loop that ends first was not worth a task); then every worker times its
// chunks and sizes the next one from the iteration time measured in this call, starting from
// one iteration and at most quadrupling, so the chunk follows the cost call by call.
struct adaptive_chunk_size {
  double lambda = -1;
  constexpr adaptive_chunk_size() noexcept = default;
  constexpr explicit adaptive_chunk_size(double l) noexcept : lambda(l) {}
  operator chunker() const noexcept { return {chunk_kind::adaptive, 0, 0, lambda}; }  // NOLINT
};

// Chunks claimed like dynamic ones, each of the knob's value at the moment it is claimed
// (rounded down, at least 1): a policy that moves the knob while the loop runs changes the
// size of every chunk not yet handed out, and every iteration still runs exactly once. The
// number of runners is fixed when the loop starts (one per worker, fewer when the knob's value
// then leaves fewer chunks). The knob must outlive the loop (registered knobs do).
struct knob_chunk_size {
  const grain::knob* source;
  constexpr explicit knob_chunk_size(const grain::knob& k) noexcept : source(&k) {}
  operator chunker() const noexcept { return {chunk_kind::knob, 0, 0, -1, source}; }  // NOLINT
};

}  // namespace grain::execution
