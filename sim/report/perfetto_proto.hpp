// The few pieces of the protobuf wire format that trace.pftrace needs, hand-encoded (no
// protobuf library): varints, length-delimited fields, 64-bit fields. The message and field
// numbers are Perfetto's public trace format, from github.com/google/perfetto protos/perfetto/
// trace/: trace.proto (Trace.packet = 1), trace_packet.proto (TracePacket), track_event/
// track_event.proto (TrackEvent), track_event/track_descriptor.proto (TrackDescriptor),
// track_event/process_descriptor.proto, track_event/counter_descriptor.proto,
// track_event/debug_annotation.proto (DebugAnnotation, DebugAnnotationName) and
// interned_data/interned_data.proto (InternedData; EventName and EventCategory in
// track_event/track_event.proto).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "sim/report/trace_text.hpp"

namespace trnsim::sim::perfetto {

// Wire types (protobuf encoding): varint, 64-bit, length-delimited.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kBytes = 2;

namespace field {
constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;  // trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
// TracePacket.SequenceFlags
constexpr uint64_t kIncrementalStateCleared = 1;
constexpr uint64_t kNeedsIncrementalState = 2;
// TrackDescriptor
constexpr uint32_t kUuid = 1;
constexpr uint32_t kTrackName = 2;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kCounter = 8;
constexpr uint32_t kChildOrdering = 11;  // ChildTracksOrdering: EXPLICIT = 3
constexpr uint32_t kSiblingOrderRank = 12;
constexpr uint64_t kExplicitOrdering = 3;
// ProcessDescriptor
constexpr uint32_t kPid = 1;
constexpr uint32_t kProcessName = 6;
// CounterDescriptor
constexpr uint32_t kUnitName = 6;
// TrackEvent
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;  // TYPE_SLICE_BEGIN 1, TYPE_SLICE_END 2, TYPE_INSTANT 3,
                               // TYPE_COUNTER 4
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kName = 23;  // the name as a string (not interned)
constexpr uint32_t kDoubleCounterValue = 44;
constexpr uint32_t kFlowIds = 47;             // repeated fixed64
constexpr uint32_t kTerminatingFlowIds = 48;  // repeated fixed64
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounterValue = 4;
// DebugAnnotation
constexpr uint32_t kAnnotationNameIid = 1;
constexpr uint32_t kUintValue = 3;
constexpr uint32_t kIntValue = 4;
constexpr uint32_t kDoubleValue = 5;
constexpr uint32_t kStringValue = 6;
// InternedData; each entry is {iid = 1, name = 2}
constexpr uint32_t kEventCategories = 1;
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kDebugAnnotationNames = 3;
constexpr uint32_t kIid = 1;
constexpr uint32_t kInternedName = 2;
}  // namespace field

inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// The per-event encoders write through a local pointer into room reserved once, then commit:
// a char store may alias the buffer's own end pointer, so field-by-field appends made the
// compiler reload and store it around every byte.
TRNSIM_TRACE_INLINE char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
TRNSIM_TRACE_INLINE char* put_uint(char* p, uint32_t number, uint64_t v) {
  p = put_varint(p, uint64_t{number} << 3 | kVarint);
  return put_varint(p, v);
}
TRNSIM_TRACE_INLINE char* put_bytes(char* p, uint32_t number, std::string_view s) {
  p = put_varint(p, uint64_t{number} << 3 | kBytes);
  p = put_varint(p, s.size());
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}
TRNSIM_TRACE_INLINE char* put_fixed64(char* p, uint32_t number, uint64_t v) {
  p = put_varint(p, uint64_t{number} << 3 | kFixed64);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
  return p + 8;
}

TRNSIM_TRACE_INLINE void varint(TraceText& out, uint64_t v) {
  char* p = out.room(10);
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  out.commit(p);
}

TRNSIM_TRACE_INLINE void tag(TraceText& out, uint32_t number, uint32_t wire_type) {
  varint(out, uint64_t{number} << 3 | wire_type);
}

// uint64, and int32/int64 (a negative value as its two's complement: ten bytes).
TRNSIM_TRACE_INLINE void uint_field(TraceText& out, uint32_t number, uint64_t v) {
  tag(out, number, kVarint);
  varint(out, v);
}
TRNSIM_TRACE_INLINE void int_field(TraceText& out, uint32_t number, int64_t v) {
  uint_field(out, number, static_cast<uint64_t>(v));
}

TRNSIM_TRACE_INLINE void bytes_field(TraceText& out, uint32_t number, std::string_view s) {
  tag(out, number, kBytes);
  varint(out, s.size());
  out.append(s.data(), s.size());
}

// double and fixed64: eight bytes, little-endian (the hosts trnsim builds on are).
TRNSIM_TRACE_INLINE void fixed64_field(TraceText& out, uint32_t number, uint64_t v) {
  tag(out, number, kFixed64);
  char* p = out.room(8);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
  out.commit(p + 8);
}
TRNSIM_TRACE_INLINE void double_field(TraceText& out, uint32_t number, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  fixed64_field(out, number, bits);
}

// An interned entry ({iid, name}) as field `number` of InternedData.
inline void interned_entry(TraceText& out, uint32_t number, uint64_t iid, std::string_view name) {
  tag(out, number, kBytes);
  varint(out, 1 + varint_size(iid) + 1 + varint_size(name.size()) + name.size());
  uint_field(out, field::kIid, iid);
  bytes_field(out, field::kInternedName, name);
}

}  // namespace trnsim::sim::perfetto
