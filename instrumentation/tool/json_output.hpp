#pragma once
// grain-trace-read's JSON: the aggregate document scripts/grain-trace reads (print_aggregate),
// and the pieces the columnar output's header shares with it.
#include <cstdio>
#include <string>

#include "trace_state.hpp"

namespace grain::trace_read {

void put_string(std::FILE* f, const std::string& v);
// Python's json reads NaN and Infinity; an integral double keeps a ".0" so that it stays a
// float there (the script formats ints and floats differently).
void put_double(std::FILE* f, double v);
void put_value(std::FILE* f, const value& v);
// "decisions":[...] (each with its location index, attributes and Parameter events), one per
// line or all on one line (the columnar header is one line).
void put_decisions(std::FILE* f, const state& s, bool lines);
// "units":{member name: unit, ...}
void put_units(std::FILE* f, const state& s);

// The aggregate: clock, locations with busy/idle/span, regions, decisions, metric samples.
void print_aggregate(const state& s, std::FILE* f);

}  // namespace grain::trace_read
