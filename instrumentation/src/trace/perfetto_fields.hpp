#pragma once
// The field numbers and enum values of perfetto_trace.proto (Perfetto's
// protos/perfetto/trace/...) that the Perfetto back end writes (perfetto_backend.cpp).
#include <cstdint>

namespace grain::instrumentation::trace_detail::perfetto {

// Field numbers of perfetto_trace.proto (Perfetto's protos/perfetto/trace/...).
namespace f {
constexpr std::uint32_t trace_packet = 1;  // Trace.packet
// TracePacket
constexpr std::uint32_t clock_snapshot = 6, timestamp = 8, sequence_id = 10, track_event = 11,
                        interned_data = 12, sequence_flags = 13, packet_defaults = 59,
                        track_descriptor = 60;
// TracePacketDefaults / TrackEventDefaults
constexpr std::uint32_t defaults_clock_id = 58, track_event_defaults = 11, default_track = 11;
// ClockSnapshot / Clock
constexpr std::uint32_t clocks = 1, primary_trace_clock = 2;
constexpr std::uint32_t clock_id = 1, clock_timestamp = 2, clock_incremental = 3;
// TrackDescriptor / ProcessDescriptor / ThreadDescriptor / CounterDescriptor
constexpr std::uint32_t uuid = 1, track_name = 2, process = 3, thread = 4, parent_uuid = 5,
                        counter = 8;
constexpr std::uint32_t pid = 1, tid = 2, process_name = 6, thread_name = 5, unit_name = 6;
// TrackEvent
constexpr std::uint32_t debug_annotations = 4, legacy_event = 6, type = 9, name_iid = 10,
                        track_uuid = 11, name = 23, double_counter_value = 44, flow_ids = 47,
                        terminating_flow_ids = 48;
// LegacyEvent
constexpr std::uint32_t bind_id = 8, flow_direction = 13;
// DebugAnnotation
constexpr std::uint32_t bool_value = 2, uint_value = 3, int_value = 4, double_value = 5,
                        string_value = 6, annotation_name = 10;
// InternedData / EventName
constexpr std::uint32_t event_names = 2, iid = 1, interned_name = 2;
}  // namespace f

enum : std::uint64_t { slice_begin = 1, slice_end = 2, instant = 3, counter_event = 4 };
enum : std::uint64_t { flow_in = 1 };
enum : std::uint64_t { incremental_state_cleared = 1 };
constexpr std::uint64_t clock_monotonic = 3;     // BuiltinClock MONOTONIC
constexpr std::uint64_t clock_incremental = 64;  // sequence-scoped, deltas

}  // namespace grain::instrumentation::trace_detail::perfetto
