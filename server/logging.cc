#include "server/logging.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/runtime/rapidjson_config.h"  // before any RapidJSON header
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/trace_context.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

// The LogLine being written on this thread, for the JSON formatter.
thread_local const LogLine* current_line = nullptr;

bool PlainLogValue(absl::string_view value) {
  return std::all_of(value.begin(), value.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
}

void WriteJsonString(rapidjson::Writer<rapidjson::StringBuffer>& w, absl::string_view text) {
  // A value may quote what a client sent; JSON needs valid UTF-8.
  std::string repaired;
  if (!IsValidUtf8(text)) {
    repaired = SanitizeUtf8(text);
    text = repaired;
  }
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

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
    if (current_line != nullptr) {
      WriteJsonString(w, current_line->what());
      for (const LogLine::Field& field : current_line->fields()) {
        // The formatter's own members win over a field of the same name.
        if (field.key == "time" || field.key == "level" || field.key == "msg") continue;
        WriteJsonString(w, field.key);
        if (field.number) {
          w.RawValue(field.value.data(), field.value.size(), rapidjson::kNumberType);
        } else {
          WriteJsonString(w, field.value);
        }
      }
    } else {
      WriteJsonString(w, absl::string_view(msg.payload.data(), msg.payload.size()));
    }
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

LogLine& LogLine::Add(absl::string_view key, absl::string_view value) {
  fields_.push_back({std::string(key), std::string(value), false, !PlainLogValue(value)});
  return *this;
}

LogLine& LogLine::AddQuoted(absl::string_view key, absl::string_view value) {
  fields_.push_back({std::string(key), std::string(value), false, true});
  return *this;
}

LogLine& LogLine::AddNumber(absl::string_view key, double value, int decimals) {
  std::string text = std::isfinite(value) ? absl::StrFormat("%.*f", decimals, value) : "0";
  fields_.push_back({std::string(key), std::move(text), true, false});
  return *this;
}

LogLine& LogLine::AddPairs(absl::string_view pairs) {
  for (absl::string_view pair : absl::StrSplit(pairs, ' ', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      Add("detail", pairs);
      return *this;
    }
    Add(pair.substr(0, eq), pair.substr(eq + 1));
  }
  return *this;
}

std::string LogLine::Text() const {
  std::string out = what_;
  for (const Field& field : fields_) {
    if (field.quoted) {
      absl::StrAppend(&out, " ", field.key, "=\"", absl::CEscape(field.value), "\"");
    } else {
      absl::StrAppend(&out, " ", field.key, "=", field.value);
    }
  }
  return out;
}

void LogLine::Write(spdlog::level::level_enum level) const {
  const LogLine* previous = current_line;
  current_line = this;
  spdlog::log(level, "{}", Text());
  current_line = previous;
}

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("log_format (--log_format) '", name, "' is not one of text, json"));
}

std::unique_ptr<spdlog::formatter> NewLogFormatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonFormatter>();
  // UTC with its zone, as the JSON lines: a line's time reads the same anywhere.
  auto text = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  text->add_flag<TraceFlag>('&').set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v%&");
  return text;
}

void SetLogFormat(LogFormat format) { spdlog::set_formatter(NewLogFormatter(format)); }

}  // namespace toolexec
