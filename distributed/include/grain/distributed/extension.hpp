#pragma once
// The distributed part as a runtime extension (grain::runtime adds it first, so that the
// locality is known before the other parts name their counters; it stops last).
#include <memory>

#include "grain/ext/extension.hpp"

namespace grain {
class runtime_core;
}

namespace grain::distributed {

std::unique_ptr<extension> make_extension();

// On a rank other than 0: serves actions until rank 0's program has ended and no parcel is in
// flight, then returns true (the caller stops its runtime and ends the process). On rank 0,
// or as the only locality: returns false at once.
bool serve_if_not_root(runtime_core& rt);

}  // namespace grain::distributed
