#include "client/replay.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/audit_log.h"
#include "core/recording_export.h"
#include "google/protobuf/util/json_util.h"
#include "re2/re2.h"
#include "tools/runtime/json.h"

namespace toolexec {

const std::vector<std::string>& ReplayRules::ComparedFields() {
  static const auto* const kFields = new std::vector<std::string>{
      "status",        "payload",         "error_message",      "exception.code",
      "exception.message", "model_content", "compact_summary",  "display.title",
      "display.content",   "actions.state_delta", "actions.artifact_delta",
      "actions.escalate",  "actions.skip_summarization", "actions.transfer_to_agent"};
  return *kFields;
}

const std::vector<std::string>& ReplayRules::IgnoredKeys() {
  // stdout_bytes and stderr_bytes count a command's streams as they were,
  // whose text is compared normalized: a workspace path or a duration of
  // another length in the output changes them.
  static const auto* const kKeys = new std::vector<std::string>{
      "duration_ms", "elapsed_ms", "started_at", "ended_at", "stdout_bytes", "stderr_bytes"};
  return *kKeys;
}

const std::vector<ReplayRules::Pattern>& ReplayRules::Patterns() {
  static const auto* const kPatterns = new std::vector<Pattern>{
      {R"(s-[0-9a-f]{32})", "<session>"},
      {R"(perm-[0-9a-f]{16}-\d+)", "<request>"},
      {R"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)", "<time>"},
      {R"(\b\d+ms\b|\b\d+\.\d+s\b)", "<duration>"},
      {R"(/tmp/[^\s"'`:,;)\]}]+)", "<tmp>"},
  };
  return *kPatterns;
}

namespace {

const JsonValue* Member(const JsonValue& o, absl::string_view key) {
  if (!o.IsObject()) return nullptr;
  auto it = o.FindMember(JsonValue(rapidjson::StringRef(key.data(), key.size())));
  return it == o.MemberEnd() ? nullptr : &it->value;
}

std::string StringOf(const JsonValue& o, absl::string_view key) {
  const JsonValue* v = Member(o, key);
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : "";
}

uint64_t UintOf(const JsonValue& o, absl::string_view key) {
  const JsonValue* v = Member(o, key);
  return v != nullptr && v->IsUint64() ? v->GetUint64() : 0;
}

// Normalizes strings and drops ignored keys, in place (ReplayRules).
class Normalizer {
 public:
  explicit Normalizer(std::vector<std::string> workspaces) {
    // Longest first, so a workspace inside another is replaced whole.
    std::sort(workspaces.begin(), workspaces.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (auto& w : workspaces) {
      if (!w.empty() && w != "/") workspaces_.push_back(std::move(w));
    }
    for (const auto& p : ReplayRules::Patterns()) {
      patterns_.push_back({std::make_unique<RE2>(p.regex), p.placeholder});
    }
  }

  std::string Text(std::string s) const {
    for (const auto& w : workspaces_) {
      size_t at = 0;
      while ((at = s.find(w, at)) != std::string::npos) {
        s.replace(at, w.size(), "<workspace>");
        at += 11;
      }
    }
    for (const auto& [re, placeholder] : patterns_) RE2::GlobalReplace(&s, *re, placeholder);
    return s;
  }

  void Value(JsonValue& v, Json::AllocatorType& a) const {
    if (v.IsString()) {
      v.SetString(Text(std::string(v.GetString(), v.GetStringLength())), a);
    } else if (v.IsArray()) {
      for (auto& item : v.GetArray()) Value(item, a);
    } else if (v.IsObject()) {
      for (const auto& key : ReplayRules::IgnoredKeys()) v.RemoveMember(key.c_str());
      for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) Value(m->value, a);
    }
  }

 private:
  std::vector<std::string> workspaces_;
  std::vector<std::pair<std::unique_ptr<RE2>, std::string>> patterns_;
};

// Objects' members in key order, at any depth: a Struct on the wire keeps no
// order.
void SortKeys(JsonValue& v, Json::AllocatorType& a) {
  if (v.IsArray()) {
    for (auto& item : v.GetArray()) SortKeys(item, a);
    return;
  }
  if (!v.IsObject()) return;
  std::vector<std::pair<std::string, JsonValue>> members;
  for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
    SortKeys(m->value, a);
    members.emplace_back(std::string(m->name.GetString(), m->name.GetStringLength()),
                         std::move(m->value));
  }
  std::sort(members.begin(), members.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  v.SetObject();
  for (auto& [key, value] : members) v.AddMember(JsonValue(key, a), value, a);
}

// The field `path` ("a" or "a.b") of a result, normalized, as JSON text;
// "" when absent.
std::string FieldText(const JsonValue& result, const std::string& path,
                      const Normalizer& normalize) {
  const JsonValue* v = &result;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    v = Member(*v, part);
    if (v == nullptr) return "";
  }
  Json copy = CopyJson(*v);
  IntegralNumbersToIntegers(copy);
  normalize.Value(copy, copy.GetAllocator());
  SortKeys(copy, copy.GetAllocator());
  // Absent and empty compare equal (proto JSON leaves defaults out).
  if ((copy.IsObject() && copy.ObjectEmpty()) || (copy.IsString() && copy.GetStringLength() == 0) ||
      (copy.IsBool() && !copy.GetBool()) || copy.IsNull()) {
    return "";
  }
  return ToJsonString(copy);
}

// A replayed result in the recording's shape: .proto names, masked as the
// recorder masks.
absl::StatusOr<Json> ReplayedJson(const v1::ToolResult& result) {
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  print.always_print_primitive_fields = true;  // a SUCCESS status is its enum's 0
  std::string text;
  if (auto s = google::protobuf::util::MessageToJsonString(result, &text, print); !s.ok()) {
    return absl::InternalError(absl::StrCat("cannot print a result: ", s.ToString()));
  }
  auto parsed = ParseJson(text);
  if (!parsed.ok()) return parsed.status();
  Json masked;
  AuditLog::MaskInto(*parsed, masked, masked.GetAllocator());
  return masked;
}

struct RecordedBatch {
  const JsonValue* event = nullptr;
  std::map<uint32_t, const JsonValue*> results;  // by index
  std::vector<std::string> answers;              // decisions, in order
};

v1::PermissionDecision DecisionOf(absl::string_view d) {
  if (d == "allow_once") return v1::PERMISSION_DECISION_ALLOW_ONCE;
  if (d == "allow_session") return v1::PERMISSION_DECISION_ALLOW_SESSION;
  return v1::PERMISSION_DECISION_DENY;
}

}  // namespace

absl::StatusOr<ReplayReport> Replay(Client& client, absl::string_view text,
                                    const ReplayOptions& options) {
  auto recording = ParseRecording(text);
  if (!recording.ok()) return recording.status();
  ReplayReport report;
  report.recorded_session = StringOf(recording->header, "session_id");
  const JsonValue* session = nullptr;
  std::vector<uint64_t> order;
  std::map<uint64_t, RecordedBatch> batches;
  for (const Json& e : recording->events) {
    const std::string type = StringOf(e, "type");
    const uint64_t b = UintOf(e, "batch");
    if (type == "open_session") {
      session = Member(e, "session");
    } else if (type == "batch") {
      order.push_back(b);
      batches[b].event = &e;
    } else if (type == "result") {
      if (const JsonValue* r = Member(e, "result")) {
        batches[b].results[static_cast<uint32_t>(UintOf(*r, "index"))] = r;
      }
    } else if (type == "permission_answer") {
      batches[b].answers.push_back(StringOf(e, "decision"));
    }
  }
  if (session == nullptr) {
    return absl::InvalidArgumentError("the recording has no open_session event");
  }

  // ---- the workspace as the recorded session found it ----
  // Its first checkpoint was taken before its first batch that could write;
  // the batches before that one only read. Restored unless a workspace is
  // given (then the replay runs in that one as it is).
  if (options.workspace.empty()) {
    for (const Json& e : recording->events) {
      const JsonValue* cp = StringOf(e, "type") == "checkpoint" ? Member(e, "checkpoint") : nullptr;
      if (cp == nullptr) continue;
      v1::RestoreCheckpointRequest restore;
      restore.set_session_id(StringOf(*cp, "session_id"));
      restore.set_checkpoint_id(StringOf(*cp, "id"));
      auto restored = client.RestoreCheckpoint(restore);
      if (!restored.ok()) {
        return absl::Status(
            restored.status().code(),
            absl::StrCat("cannot start from the recorded session's first checkpoint ",
                         restore.checkpoint_id(), ": ", restored.status().message(),
                         " (give --workspace DIR to replay in a workspace as it is)"));
      }
      report.start_checkpoint = restore.checkpoint_id();
      report.undo_checkpoint = restored->undo_checkpoint_id();
      break;
    }
  }

  // ---- the replay session, like the recorded one ----
  v1::OpenSessionRequest open;
  open.set_conversation_id(StringOf(*session, "conversation_id"));
  open.set_user_id(StringOf(*session, "user_id"));
  open.set_policy_profile(StringOf(*session, "policy_profile"));
  std::vector<std::string> recorded_workspaces;
  if (const JsonValue* ws = Member(*session, "workspaces"); ws != nullptr && ws->IsArray()) {
    for (const auto& w : ws->GetArray()) {
      if (w.IsString()) recorded_workspaces.emplace_back(w.GetString(), w.GetStringLength());
    }
  }
  if (!options.workspace.empty()) {
    open.add_workspaces(options.workspace);
  } else {
    for (const auto& w : recorded_workspaces) open.add_workspaces(w);
  }
  if (const JsonValue* tools = Member(*session, "tools"); tools != nullptr && tools->IsArray()) {
    for (const auto& t : tools->GetArray()) {
      if (t.IsString()) open.add_enabled_tools(std::string(t.GetString(), t.GetStringLength()));
    }
  }
  auto opened = client.OpenSession(open);
  if (!opened.ok()) return opened.status();
  report.replay_session = opened->session_id();
  std::vector<std::string> workspaces = recorded_workspaces;
  workspaces.insert(workspaces.end(), opened->workspaces().begin(), opened->workspaces().end());
  const Normalizer normalize(std::move(workspaces));

  // Tools the harness or the provider runs: answered from the recording.
  std::set<std::string> elsewhere;
  v1::ListToolsRequest list;
  list.set_session_id(opened->session_id());
  auto listed = client.ListTools(list);
  if (!listed.ok()) return listed.status();
  for (const auto& t : listed->tools()) {
    if (t.executor() != v1::EXECUTOR_DAEMON) elsewhere.insert(t.name());
  }

  absl::Status failed;
  for (uint64_t b : order) {
    const RecordedBatch& recorded = batches[b];
    const JsonValue& event = *recorded.event;
    ReplayBatch out;
    out.batch = b;
    v1::ExecuteBatchRequest request;
    request.set_session_id(opened->session_id());
    if (const JsonValue* ms = Member(event, "timeout_ms"); ms != nullptr && ms->IsInt64()) {
      request.mutable_timeout()->set_seconds(ms->GetInt64() / 1000);
      request.mutable_timeout()->set_nanos(static_cast<int32_t>(ms->GetInt64() % 1000) * 1000000);
    }
    request.set_model_content_max_chars(
        static_cast<uint32_t>(UintOf(event, "model_content_max_chars")));
    std::vector<uint32_t> sent;  // recorded index of each call sent
    if (const JsonValue* calls = Member(event, "calls"); calls != nullptr && calls->IsArray()) {
      for (const auto& c : calls->GetArray()) {
        ++out.calls;
        const uint32_t index = static_cast<uint32_t>(UintOf(c, "index"));
        const std::string name = StringOf(c, "name");
        auto r = recorded.results.find(index);
        const bool harness =
            elsewhere.count(name) > 0 ||
            (r != recorded.results.end() &&
             Member(*r->second, "exception") != nullptr &&
             StringOf(*Member(*r->second, "exception"), "code") ==
                 "ERROR_CODE_NOT_EXECUTABLE_HERE");
        if (harness) {
          ++out.from_recording;
          continue;
        }
        // The arguments as recorded: parsed ("args") or as text ("args_json").
        const JsonValue* args = Member(c, "args");
        const std::string args_text =
            args != nullptr ? ToJsonString(*args) : StringOf(c, "args_json");
        if (absl::StrContains(args_text, kRedacted)) {
          out.notes.push_back(absl::StrCat(
              "call ", index, " (", name, ") was recorded with a masked value (", kRedacted,
              ") in its arguments and is sent so: it, and what follows from what it does, may "
              "differ"));
        }
        v1::ToolCall call;
        if (args != nullptr && args->IsObject()) {
          auto made = MakeCall(StringOf(c, "id"), name, args_text);
          if (!made.ok()) return made.status();
          call = *std::move(made);
        } else {
          call.set_id(StringOf(c, "id"));
          call.set_name(name);
          call.set_args_json(args_text);
        }
        call.set_step_id(StringOf(c, "step_id"));
        *request.add_calls() = std::move(call);
        sent.push_back(index);
      }
    }
    std::vector<v1::ToolResult> results;
    size_t asked = 0;
    if (!sent.empty()) {
      absl::Status status = client.ExecuteBatch(request, [&](const v1::ExecuteBatchResponse& e) {
        if (e.has_result()) results.push_back(e.result());
        if (e.has_permission_request()) {
          std::string decision =
              asked < recorded.answers.size() ? recorded.answers[asked] : "deny";
          ++asked;
          // Nobody answered it when recorded: it is left to time out again.
          if (decision == "timeout") return;
          v1::RespondPermissionRequest answer;
          answer.set_request_id(e.permission_request().request_id());
          answer.set_decision(DecisionOf(decision));
          answer.set_reason("replayed from the recording");
          if (auto s = client.RespondPermission(answer); !s.ok()) failed.Update(s.status());
        }
      });
      if (!status.ok()) return status;
      if (!failed.ok()) return failed;
    }
    if (asked != recorded.answers.size()) {
      out.notes.push_back(absl::StrCat("the recording answered ", recorded.answers.size(),
                                       " permission request(s); the replay was asked ", asked));
    }
    for (const v1::ToolResult& result : results) {
      if (result.index() >= sent.size()) continue;
      const uint32_t index = sent[result.index()];
      auto r = recorded.results.find(index);
      if (r == recorded.results.end()) {
        out.notes.push_back(
            absl::StrCat("call ", index, ": the recording has no result (it was cut)"));
        continue;
      }
      auto replayed = ReplayedJson(result);
      if (!replayed.ok()) return replayed.status();
      ++out.compared;
      ReplayDifference diff{b, index, result.id(), result.name(), {}};
      for (const std::string& field : ReplayRules::ComparedFields()) {
        std::string want = FieldText(*r->second, field, normalize);
        std::string got = FieldText(*replayed, field, normalize);
        if (want != got) diff.fields.push_back({field, std::move(want), std::move(got)});
      }
      if (!diff.fields.empty()) out.differences.push_back(std::move(diff));
    }
    report.differences += out.differences.size();
    report.batches.push_back(std::move(out));
  }
  v1::CloseSessionRequest close;
  close.set_session_id(opened->session_id());
  close.set_discard(true);
  client.CloseSession(close).status().IgnoreError();
  return report;
}

namespace {

std::string Short(const std::string& s) {
  return s.size() <= 200 ? s : absl::StrCat(s.substr(0, 200), "…");
}

}  // namespace

std::string ReplayReportText(const ReplayReport& report) {
  std::string out;
  for (const ReplayBatch& b : report.batches) {
    absl::StrAppend(&out, "batch ", b.batch, ": ", b.calls, " call(s), ", b.compared,
                    " compared", b.from_recording > 0
                                     ? absl::StrCat(", ", b.from_recording, " from the recording")
                                     : "",
                    ", ", b.differences.size(), " differ\n");
    for (const auto& note : b.notes) absl::StrAppend(&out, "  note: ", note, "\n");
    for (const ReplayDifference& d : b.differences) {
      absl::StrAppend(&out, "  call ", d.index, " (", d.name, d.id.empty() ? "" : " id=", d.id,
                      ") differs\n");
      for (const auto& f : d.fields) {
        absl::StrAppend(&out, "    ", f.field, "\n      recorded: ", Short(f.recorded),
                        "\n      replayed: ", Short(f.replayed), "\n");
      }
    }
  }
  absl::StrAppend(&out, report.batches.size(), " batch(es) replayed, ", report.differences,
                  " result(s) differ\n");
  if (!report.start_checkpoint.empty()) {
    absl::StrAppend(&out, "started from checkpoint ", report.start_checkpoint,
                    " (the workspace before it: checkpoint ", report.undo_checkpoint, ")\n");
  }
  return out;
}

std::string ReplayReportJson(const ReplayReport& report) {
  Json doc = MakeObject();
  auto& a = doc.GetAllocator();
  auto str = [&](const std::string& s) { return JsonValue(s, a); };
  doc.AddMember("recorded_session", str(report.recorded_session), a);
  doc.AddMember("replay_session", str(report.replay_session), a);
  doc.AddMember("differences", JsonValue(static_cast<uint64_t>(report.differences)), a);
  doc.AddMember("start_checkpoint", str(report.start_checkpoint), a);
  doc.AddMember("undo_checkpoint", str(report.undo_checkpoint), a);
  JsonValue batches(rapidjson::kArrayType);
  for (const ReplayBatch& b : report.batches) {
    JsonValue o(rapidjson::kObjectType);
    o.AddMember("batch", JsonValue(static_cast<uint64_t>(b.batch)), a);
    o.AddMember("calls", JsonValue(static_cast<uint64_t>(b.calls)), a);
    o.AddMember("from_recording", JsonValue(static_cast<uint64_t>(b.from_recording)), a);
    o.AddMember("compared", JsonValue(static_cast<uint64_t>(b.compared)), a);
    JsonValue diffs(rapidjson::kArrayType);
    for (const ReplayDifference& d : b.differences) {
      JsonValue x(rapidjson::kObjectType);
      x.AddMember("index", JsonValue(d.index), a);
      x.AddMember("id", str(d.id), a);
      x.AddMember("name", str(d.name), a);
      JsonValue fields(rapidjson::kArrayType);
      for (const auto& f : d.fields) {
        JsonValue y(rapidjson::kObjectType);
        y.AddMember("field", str(f.field), a);
        y.AddMember("recorded", str(f.recorded), a);
        y.AddMember("replayed", str(f.replayed), a);
        fields.PushBack(y, a);
      }
      x.AddMember("fields", fields, a);
      diffs.PushBack(x, a);
    }
    o.AddMember("differences", diffs, a);
    JsonValue notes(rapidjson::kArrayType);
    for (const auto& n : b.notes) notes.PushBack(str(n), a);
    o.AddMember("notes", notes, a);
    batches.PushBack(o, a);
  }
  doc.AddMember("batches", batches, a);
  return ToJsonString(doc) + "\n";
}

}  // namespace toolexec
