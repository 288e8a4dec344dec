#pragma once
// t_o: what one task costs the runtime beyond the work it does, in nanoseconds. Adaptive launch
// (inline when a kind's predicted duration < inline.lambda x t_o) and adaptive chunking (chunk
// time >= loop.lambda x t_o) scale their thresholds with it, so one lambda fits every machine.
//
// How it is measured (runtime/src/task_overhead.cpp, docs/inlining.md): the first runtime of a
// process runs a short calibration before its own workers start, on a private one-worker
// scheduler with no hooks installed (invisible to counters and traces): rounds of 256 empty
// tasks spawned and joined, t_o = median over rounds of (elapsed / tasks). It adds a few
// milliseconds to the first start-up. --grain:task-overhead=NS (GRAIN_TASK_OVERHEAD) skips it and
// uses NS instead.
namespace grain::detail {

// The measured t_o in ns (> 0) once a runtime has started in this process; before that, 0.
// One relaxed load; callable from any thread, inside or outside tasks.
double task_overhead_ns() noexcept;

}  // namespace grain::detail
