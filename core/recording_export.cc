#include "core/recording_export.h"

#include <deque>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/recorder.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/provider_format.h"

namespace toolexec {
namespace {

using builtin::Member;
using builtin::StringField;

}  // namespace

absl::StatusOr<Recording> ParseRecording(absl::string_view text) {
  Recording out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == absl::string_view::npos) {
      out.torn_tail = true;
      break;
    }
    absl::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    ++line_no;
    auto parsed = ParseJson(line);
    if (!parsed.ok() || !parsed->IsObject()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_no, " of the recording is not a JSON object",
          parsed.ok() ? "" : absl::StrCat(": ", parsed.status().message())));
    }
    if (line_no == 1) {
      if (StringField(*parsed, "format") != kRecordingFormatVersion) {
        return absl::InvalidArgumentError(absl::StrCat(
            "not a toolexec recording: the first line's \"format\" is not \"",
            kRecordingFormatVersion, "\""));
      }
      out.header = *std::move(parsed);
    } else {
      out.events.push_back(*std::move(parsed));
    }
  }
  if (line_no == 0) return absl::InvalidArgumentError("the recording is empty");
  return out;
}

std::string RecordingOwner(const Recording& recording) {
  for (const Json& e : recording.events) {
    if (StringField(e, "type") != "open_session") continue;
    const JsonValue* session = Member(e, "session");
    return session != nullptr ? StringField(*session, "owner") : "";
  }
  return "";
}

std::string RecordingTranscript(const Recording& recording, RecordingFormat format) {
  TranscriptFormat f = TranscriptFormat::kOpenAi;
  switch (format) {
    case RecordingFormat::kNative:
    case RecordingFormat::kOpenAi: f = TranscriptFormat::kOpenAi; break;
    case RecordingFormat::kOpenAiResponses: f = TranscriptFormat::kOpenAiResponses; break;
    case RecordingFormat::kAnthropic: f = TranscriptFormat::kAnthropic; break;
    case RecordingFormat::kGemini: f = TranscriptFormat::kGemini; break;
  }
  // Batches in the order they started; results by batch, in call order
  // (the recorder writes them so).
  std::vector<uint64_t> order;
  std::map<uint64_t, std::vector<const JsonValue*>> calls, results;
  for (const Json& e : recording.events) {
    const std::string type = StringField(e, "type");
    if (type == "batch") {
      const uint64_t b = builtin::UintField(e, "batch");
      order.push_back(b);
      if (const JsonValue* list = Member(e, "calls"); list != nullptr && list->IsArray()) {
        for (const auto& c : list->GetArray()) calls[b].push_back(&c);
      }
    } else if (type == "result") {
      if (const JsonValue* r = Member(e, "result"); r != nullptr && r->IsObject()) {
        results[builtin::UintField(e, "batch")].push_back(r);
      }
    }
  }
  Json messages;
  messages.SetArray();
  auto& a = messages.GetAllocator();
  // A call made without an id (Gemini's functionCall may have none) is given
  // one in the formats whose results name their call (OpenAI, Responses,
  // Anthropic), unique in the transcript: toolexec_<batch>_<index>, on the
  // call and on its result. Gemini's transcript leaves it out, as the model
  // did.
  std::deque<Json> named;  // the copies given an id (a deque: their addresses stay)
  auto with_id = [&](const JsonValue* v, uint64_t b) -> const JsonValue* {
    if (f == TranscriptFormat::kGemini || !StringField(*v, "id").empty()) return v;
    Json& copy = named.emplace_back();
    copy.CopyFrom(*v, copy.GetAllocator());
    copy.RemoveMember("id");
    const std::string id = absl::StrCat("toolexec_", b, "_", builtin::UintField(*v, "index"));
    AddMember(copy, "id", MakeString(id, copy.GetAllocator()), copy.GetAllocator());
    return &copy;
  };
  for (uint64_t b : order) {
    if (calls[b].empty()) continue;
    for (const JsonValue*& c : calls[b]) c = with_id(c, b);
    for (const JsonValue*& r : results[b]) r = with_id(r, b);
    AppendToolCallTurn(f, calls[b], messages, a);
    if (!results[b].empty()) AppendToolResultMessages(f, results[b], messages, a);
  }
  std::string out = "[";
  bool first = true;
  for (const auto& m : messages.GetArray()) {
    absl::StrAppend(&out, first ? "\n" : ",\n", ToJsonString(m));
    first = false;
  }
  out.append("\n]\n");
  return out;
}

}  // namespace toolexec
