#pragma once
// Everything a distributed grain program uses: localities, actions, remote async/post.
// docs/distributed.md explains how to run, serialization, progress, counters and faults.
#include "grain/distributed/abort_job.hpp"
#include "grain/distributed/action.hpp"
#include "grain/distributed/coalescing.hpp"
#include "grain/distributed/collectives.hpp"
#include "grain/distributed/locality.hpp"
#include "grain/distributed/remote_async.hpp"
#include "grain/distributed/serialization.hpp"
