#pragma once
// The one header a grain user needs.
#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/dataflow.hpp"
#include "grain/distributed/distributed.hpp"
#include "grain/future.hpp"
#include "grain/knob.hpp"
#include "grain/launch.hpp"
#include "grain/lcos/barrier.hpp"
#include "grain/lcos/channel.hpp"
#include "grain/lcos/condition_variable.hpp"
#include "grain/lcos/counting_semaphore.hpp"
#include "grain/lcos/latch.hpp"
#include "grain/lcos/mutex.hpp"
#include "grain/parallel/algorithms.hpp"
#include "grain/runtime.hpp"
#include "grain/task_group.hpp"
#include "grain/this_task.hpp"
#include "grain/this_thread.hpp"
#include "grain/when_all.hpp"
#if __has_include("grain/instrumentation/app.hpp")
#include "grain/instrumentation/app.hpp"
#endif
