#include "tools/runtime/tool_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/runtime/session.h"

namespace toolexec {

ToolContext::ToolContext(CallInfo info, std::weak_ptr<Session> session,
                         const CancellationToken* cancellation, ProgressFn progress)
    : info_(std::move(info)),
      session_(std::move(session)),
      cancellation_(cancellation),
      progress_(std::move(progress)) {}

absl::StatusOr<std::shared_ptr<Session>> ToolContext::LiveSession() const {
  std::shared_ptr<Session> s = session_.lock();
  if (s == nullptr || s->closed()) {
    return absl::FailedPreconditionError(
        info_.session_id.empty()
            ? absl::StrCat("tool '", info_.tool_name, "' has no session context")
            : absl::StrCat("session ", info_.session_id, " is closed"));
  }
  return s;
}

std::optional<std::string> ToolContext::conversation_id() const {
  auto s = LiveSession();
  if (!s.ok()) return std::nullopt;
  return (*s)->conversation_id();
}

std::optional<bool> ToolContext::is_idle() const {
  auto s = LiveSession();
  if (!s.ok()) return std::nullopt;
  return (*s)->idle();
}

absl::Status ToolContext::send(absl::string_view text) {
  auto s = LiveSession();
  if (!s.ok()) return s.status();
  return (*s)->Send(text, info_.tool_name);
}

absl::StatusOr<std::optional<Json>> ToolContext::get_state(absl::string_view key) const {
  auto s = LiveSession();
  if (!s.ok()) return s.status();
  return (*s)->tool_state().Get(key);
}

absl::Status ToolContext::set_state(absl::string_view key, const JsonValue& value) {
  if (absl::Status v = ValidateStateKey(key); !v.ok()) return v;
  auto s = LiveSession();
  if (!s.ok()) return s.status();
  (*s)->tool_state().Set(key, value);
  (*s)->NoteStateWrite(key);
  RecordWrite(key, value);
  return absl::OkStatus();
}

absl::StatusOr<Json> ToolContext::update_state(
    absl::string_view key, const std::function<Json(const JsonValue* current)>& fn) {
  if (absl::Status v = ValidateStateKey(key); !v.ok()) return v;
  auto s = LiveSession();
  if (!s.ok()) return s.status();
  Json next = (*s)->tool_state().Update(key, fn);
  (*s)->NoteStateWrite(key);
  RecordWrite(key, next);
  return next;
}

void ToolContext::RecordWrite(absl::string_view key, const JsonValue& value) {
  absl::MutexLock lock(&delta_mu_);
  Json& delta = actions_.state_delta;
  auto& alloc = delta.GetAllocator();
  auto it = delta.FindMember(JsonValue(rapidjson::StringRef(key.data(), key.size())));
  if (it != delta.MemberEnd()) {
    it->value.CopyFrom(value, alloc);
  } else {
    delta.AddMember(JsonValue(key.data(), static_cast<rapidjson::SizeType>(key.size()), alloc),
                    JsonValue(value, alloc), alloc);
  }
}

absl::StatusOr<ArtifactScope> ToolContext::Scope(const Session& session) const {
  if (info_.artifacts == nullptr) {
    return absl::FailedPreconditionError("no artifact store is configured");
  }
  return session.artifact_scope();
}

absl::StatusOr<int64_t> ToolContext::save_artifact(absl::string_view name,
                                                   const Artifact& artifact) {
  auto s = LiveSession();
  if (!s.ok()) return s.status();
  if (auto scope = Scope(**s); !scope.ok()) return scope.status();
  // A child's saves, "user:" names included, are staged for its merge [Delegation].
  auto version = (*s)->SaveArtifact(*info_.artifacts, name, artifact);
  if (!version.ok()) return version.status();
  absl::MutexLock lock(&delta_mu_);
  actions_.artifact_delta[std::string(name)] = *version;
  return version;
}

absl::StatusOr<std::pair<Artifact, int64_t>> ToolContext::load_artifact(absl::string_view name,
                                                                        int64_t version) const {
  auto s = LiveSession();
  if (!s.ok()) return s.status();
  auto scope = Scope(**s);
  if (!scope.ok()) return scope.status();
  return info_.artifacts->Load(*scope, name, version);
}

void ToolContext::progress(absl::string_view stream, absl::string_view text) const {
  if (progress_) progress_(stream, text);
}

EventActions ToolContext::TakeActions() {
  absl::MutexLock lock(&delta_mu_);
  return std::move(actions_);
}

}  // namespace toolexec
