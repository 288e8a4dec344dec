#pragma once
// The parallel algorithms and their policies and chunkers (docs/parallel-loops.md).
#include "grain/parallel/chunkers.hpp"
#include "grain/parallel/execution_policy.hpp"
#include "grain/parallel/for_chunks.hpp"
#include "grain/parallel/for_each.hpp"
#include "grain/parallel/for_loop.hpp"
#include "grain/parallel/loop_stats.hpp"
#include "grain/parallel/reduce.hpp"
#include "grain/parallel/transform.hpp"
#include "grain/parallel/transform_reduce.hpp"
