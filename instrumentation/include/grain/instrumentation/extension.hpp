#pragma once
// The instrumentation extension: counters of the running runtime, the sampler thread, the
// --grain:print-counter output, the run summary, PAPI and the t_d1 calibration. grain::runtime
// constructs it first in its extension list. Options (see docs/counters.md):
//   --grain:sample-interval=MS           sampler period (default 10; 0: no periodic samples)
//   --grain:print-counter=NAME           print counters (repeatable, '*' wildcards)
//   --grain:print-counter-interval=MS    print period (default 0: once, at exit)
//   --grain:print-counter-format=FMT     csv (default) or table
//   --grain:print-counter-destination=F  file instead of stdout
//   --grain:list-counters                list name, unit, description; exit 0
//   --grain:summary=FILE.json            run summary (docs/summary-schema.json)
//   --grain:papi=EV1,EV2                 PAPI events per worker
//   --grain:calibration=FILE             t_d1 for the wait-time-inflation counters
//   --grain:save-calibration=FILE        save this (one-worker) run's t_d as t_d1
//   --grain:app-name=NAME                calibration key (default: argv[0] basename)
#include <memory>

#include "grain/ext/extension.hpp"

namespace grain::instrumentation {

std::unique_ptr<grain::extension> make_extension();

}  // namespace grain::instrumentation
