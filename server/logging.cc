#include "server/logging.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/trace_context.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

// "%&" in the text pattern: " trace_id=... span_id=..." while a trace is
// active on the thread, else nothing.
class TraceFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string* traceparent = CurrentTraceLog();
    if (traceparent == nullptr) return;
    std::string fields =
        absl::StrCat(" trace_id=", TraceIdOf(*traceparent), " span_id=", SpanIdOf(*traceparent));
    dest.append(fields.data(), fields.data() + fields.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<TraceFlag>();
  }
};

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    w.Key("time");
    std::string time =
        absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromChrono(msg.time), absl::UTCTimeZone());
    w.String(time.data(), static_cast<rapidjson::SizeType>(time.size()));
    w.Key("level");
    const auto& level = spdlog::level::to_string_view(msg.level);
    w.String(level.data(), static_cast<rapidjson::SizeType>(level.size()));
    w.Key("msg");
    // A message may quote what a client sent; JSON needs valid UTF-8.
    absl::string_view text(msg.payload.data(), msg.payload.size());
    std::string repaired;
    if (!IsValidUtf8(text)) {
      repaired = SanitizeUtf8(text);
      text = repaired;
    }
    w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
    if (const std::string* traceparent = CurrentTraceLog()) {
      absl::string_view trace_id = TraceIdOf(*traceparent);
      absl::string_view span_id = SpanIdOf(*traceparent);
      w.Key("trace_id");
      w.String(trace_id.data(), static_cast<rapidjson::SizeType>(trace_id.size()));
      w.Key("span_id");
      w.String(span_id.data(), static_cast<rapidjson::SizeType>(span_id.size()));
    }
    w.EndObject();
    dest.append(buffer.GetString(), buffer.GetString() + buffer.GetSize());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return spdlog::details::make_unique<JsonFormatter>();
  }
};

}  // namespace

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("log_format (--log_format) '", name, "' is not one of text, json"));
}

std::unique_ptr<spdlog::formatter> NewLogFormatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonFormatter>();
  auto text = std::make_unique<spdlog::pattern_formatter>();
  text->add_flag<TraceFlag>('&').set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v%&");
  return text;
}

void SetLogFormat(LogFormat format) { spdlog::set_formatter(NewLogFormatter(format)); }

}  // namespace toolexec
