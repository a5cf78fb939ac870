#include "tools/runtime/trace_context.h"

#include <cstdint>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"

namespace toolexec {
namespace {

constexpr size_t kTraceIdHex = 32;
constexpr size_t kSpanIdHex = 16;
// "00-" + trace-id + "-" + parent-id + "-" + flags
constexpr size_t kTraceparentLength = 3 + kTraceIdHex + 1 + kSpanIdHex + 1 + 2;

bool IsLowerHex(absl::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool AllZeros(absl::string_view s) { return s.find_first_not_of('0') == absl::string_view::npos; }

// `hex_digits` random lower-case hex digits, never all zeros.
std::string RandomHex(size_t hex_digits) {
  thread_local absl::BitGen gen;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(hex_digits, '0');
  do {
    for (size_t i = 0; i < hex_digits; i += 16) {
      uint64_t bits = absl::Uniform<uint64_t>(gen);
      for (size_t k = 0; k < 16 && i + k < hex_digits; ++k)
        out[i + k] = kDigits[(bits >> (4 * k)) & 0xf];
    }
  } while (AllZeros(out));
  return out;
}

thread_local const std::string* current_trace = nullptr;

}  // namespace

std::optional<TraceContext> ParseTraceparent(absl::string_view h) {
  if (h.size() < kTraceparentLength) return std::nullopt;
  absl::string_view version = h.substr(0, 2);
  if (!IsLowerHex(version) || version == "ff") return std::nullopt;
  // Version 00 is exactly this long; a later version may append "-..." fields.
  if (version == "00" ? h.size() != kTraceparentLength
                      : (h.size() > kTraceparentLength && h[kTraceparentLength] != '-')) {
    return std::nullopt;
  }
  if (h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  absl::string_view trace_id = h.substr(3, kTraceIdHex);
  absl::string_view parent_id = h.substr(36, kSpanIdHex);
  absl::string_view flags = h.substr(53, 2);
  if (!IsLowerHex(trace_id) || !IsLowerHex(parent_id) || !IsLowerHex(flags)) return std::nullopt;
  if (AllZeros(trace_id) || AllZeros(parent_id)) return std::nullopt;
  TraceContext t;
  t.trace_id = std::string(trace_id);
  t.parent_id = std::string(parent_id);
  t.flags = std::string(flags);
  return t;
}

TraceContext TraceContext::FromTraceparent(absl::string_view header) {
  std::optional<TraceContext> parsed = ParseTraceparent(header);
  TraceContext t;
  if (parsed.has_value()) {
    t = *std::move(parsed);
    // Of a later version's flags only "sampled" is known here.
    if (header.substr(0, 2) != "00") t.flags = (t.flags.back() & 1) ? "01" : "00";
  } else {
    t.trace_id = RandomHex(kTraceIdHex);
    t.flags = "00";
  }
  t.span_id = RandomHex(kSpanIdHex);
  return t;
}

std::string TraceContext::Traceparent() const {
  return absl::StrCat("00-", trace_id, "-", span_id, "-", flags);
}

std::string NewTraceparent() { return TraceContext::FromTraceparent("").Traceparent(); }

ScopedTraceLog::ScopedTraceLog(const std::string& traceparent) : previous_(current_trace) {
  current_trace = traceparent.empty() ? nullptr : &traceparent;
}

ScopedTraceLog::~ScopedTraceLog() { current_trace = previous_; }

const std::string* CurrentTraceLog() { return current_trace; }

absl::string_view TraceIdOf(absl::string_view traceparent) {
  return traceparent.size() >= kTraceparentLength ? traceparent.substr(3, kTraceIdHex)
                                                  : absl::string_view();
}

absl::string_view SpanIdOf(absl::string_view traceparent) {
  return traceparent.size() >= kTraceparentLength ? traceparent.substr(36, kSpanIdHex)
                                                  : absl::string_view();
}

}  // namespace toolexec
