#pragma once
// future, shared_future, promise, packaged_task, make_ready_future: shaped like the standard
// ones, so code written for std::future compiles with grain:: instead. Waiting inside a task
// suspends the user thread, never the worker; waiting on a plain OS thread blocks it. One
// header per concept under grain/futures/; this one includes them all.
#include "grain/futures/future.hpp"
#include "grain/futures/packaged_task.hpp"
#include "grain/futures/promise.hpp"
#include "grain/futures/ready_future.hpp"
#include "grain/futures/shared_future.hpp"
