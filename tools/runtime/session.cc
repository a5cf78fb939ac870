#include "tools/runtime/session.h"

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

absl::Status ValidateStateKey(absl::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("state key must not be empty");
  if (key.size() > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("state key is ", key.size(), " bytes; the limit is 256"));
  }
  if (key.find_first_of(absl::string_view("/\\\0", 3)) != absl::string_view::npos ||
      key.find("..") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("state key '", absl::CHexEscape(key), "' may not contain '/', '\\', '..' or NUL"));
  }
  return absl::OkStatus();
}

// ---- StateStore ----

std::optional<Json> StateStore::Get(absl::string_view key) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return CopyJson(it->second);
}

void StateStore::Set(absl::string_view key, const JsonValue& value) {
  Json copy = CopyJson(value);
  absl::MutexLock lock(&mu_);
  values_.insert_or_assign(std::string(key), std::move(copy));
}

Json StateStore::Update(absl::string_view key,
                        const std::function<Json(const JsonValue* current)>& fn) {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(key);
  Json next = fn(it == values_.end() ? nullptr : &it->second);
  Json result = CopyJson(next);
  if (it == values_.end()) {
    values_.emplace(std::string(key), std::move(next));
  } else {
    it->second = std::move(next);
  }
  return result;
}

Json StateStore::Snapshot(const std::vector<std::string>& keys) const {
  Json out = MakeObject();
  auto& alloc = out.GetAllocator();
  absl::MutexLock lock(&mu_);
  auto add = [&](const std::string& k, const Json& v) {
    out.AddMember(JsonValue(k, alloc), JsonValue(v, alloc), alloc);
  };
  if (keys.empty()) {
    for (const auto& [k, v] : values_) add(k, v);
  } else {
    for (const auto& k : keys) {
      auto it = values_.find(k);
      if (it != values_.end() && !out.HasMember(k)) add(k, it->second);
    }
  }
  return out;
}

// ---- Session ----

Session::Session(std::string id, SessionOptions options)
    : id_(std::move(id)), options_(std::move(options)) {
  allowed_.insert(options_.tools.begin(), options_.tools.end());
}

bool Session::AllowsTool(absl::string_view name) const {
  return allowed_.empty() || allowed_.contains(name);
}

bool Session::idle() const {
  absl::MutexLock lock(&mu_);
  return idle_;
}

void Session::set_idle(bool idle) {
  absl::MutexLock lock(&mu_);
  idle_ = idle;
}

bool Session::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

absl::Status Session::Send(absl::string_view text, absl::string_view tool_name) {
  std::vector<std::shared_ptr<SessionListener>> listeners;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::FailedPreconditionError(absl::StrCat("session ", id_, " is closed"));
    }
    for (const auto& [id, l] : listeners_) listeners.push_back(l);
  }
  ContextMessage message{id_, std::string(text), std::string(tool_name)};
  for (const auto& l : listeners) l->OnMessage(message);
  return absl::OkStatus();
}

int Session::AddListener(std::shared_ptr<SessionListener> listener) {
  {
    absl::MutexLock lock(&mu_);
    if (!closed_) {
      int id = next_listener_++;
      listeners_.emplace(id, std::move(listener));
      return id;
    }
  }
  listener->OnSessionClosed();
  return 0;
}

void Session::RemoveListener(int id) {
  absl::MutexLock lock(&mu_);
  listeners_.erase(id);
}

void Session::MarkClosed() {
  std::map<int, std::shared_ptr<SessionListener>> listeners;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    listeners.swap(listeners_);
  }
  for (const auto& [id, l] : listeners) l->OnSessionClosed();
}

// ---- SessionManager ----

SessionManager::SessionManager(const ToolRegistry* registry, Options options)
    : registry_(registry), options_(options) {}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Open(SessionOptions options) {
  std::vector<std::string> unknown;
  for (const auto& name : options.tools) {
    if (registry_->Find(name) == nullptr) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown tool(s): ", absl::StrJoin(unknown, ", "), "; registered: ",
        absl::StrJoin(registry_->names(), ", ")));
  }
  // 128 random bits: ids are capabilities for a session's state.
  absl::BitGen gen;
  std::string id = absl::StrFormat("s-%016x%016x", absl::Uniform<uint64_t>(gen),
                                   absl::Uniform<uint64_t>(gen));
  auto session = std::make_shared<Session>(id, std::move(options));
  absl::MutexLock lock(&mu_);
  if (sessions_.size() >= options_.max_sessions) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many open sessions (", options_.max_sessions, "); close some with CloseSession"));
  }
  sessions_.emplace(id, session);
  return session;
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Get(absl::string_view id) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("no open session '", id, "'"));
  }
  return it->second;
}

absl::Status SessionManager::Close(absl::string_view id) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) {
      return absl::NotFoundError(absl::StrCat("no open session '", id, "'"));
    }
    session = std::move(it->second);
    sessions_.erase(it);
  }
  Finish(session);
  return absl::OkStatus();
}

void SessionManager::CloseAll() {
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> all;
  {
    absl::MutexLock lock(&mu_);
    all.swap(sessions_);
  }
  for (auto& [id, s] : all) Finish(s);
}

void SessionManager::Finish(const std::shared_ptr<Session>& session) {
  session->MarkClosed();
  for (const auto& t : registry_->tools()) t->tool->cleanup_session(session->id());
}

size_t SessionManager::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace toolexec
