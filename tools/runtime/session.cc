#include "tools/runtime/session.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/artifacts.h"
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
  versions_.insert_or_assign(std::string(key), ++clock_);
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
  versions_.insert_or_assign(std::string(key), ++clock_);
  return result;
}

uint64_t StateStore::clock() const {
  absl::MutexLock lock(&mu_);
  return clock_;
}

uint64_t StateStore::VersionOf(absl::string_view key) const {
  absl::MutexLock lock(&mu_);
  auto it = versions_.find(key);
  return it == versions_.end() ? 0 : it->second;
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
    : id_(std::move(id)), options_(std::move(options)), selections_(options_.selections) {
  if (!options_.tools.empty()) selections_.push_back(ToolSelection::Only(options_.tools));
}

bool Session::AllowsTool(const RegisteredTool& tool) const {
  return ChosenByAll(selections_, tool);
}

std::vector<std::string> Session::ToolNames(const ToolRegistry& registry) const {
  return ChosenNames(selections_, registry);
}

ArtifactScope Session::artifact_scope() const {
  bool child = !options_.parent_session_id.empty();
  ArtifactScope scope;
  scope.user_id = options_.user_id;
  scope.session_owned = child || options_.conversation_id.empty();
  scope.conversation = scope.session_owned ? id_ : options_.conversation_id;
  // An authenticated caller's conversations and users are its own: another
  // caller naming the same conversation_id or user_id reaches other spaces.
  // (Length-prefixed, so no owner and name pair can spell another's.)
  if (!options_.owner.empty()) {
    const std::string prefix = absl::StrCat(options_.owner.size(), ":", options_.owner, "/");
    if (!scope.user_id.empty()) scope.user_id = prefix + scope.user_id;
    if (!scope.session_owned) scope.conversation = prefix + scope.conversation;
  }
  if (child) scope.user_names = ArtifactScope::UserNames::kStaged;
  return scope;
}

absl::StatusOr<int64_t> Session::SaveArtifact(ArtifactStore& store, absl::string_view name,
                                              const Artifact& artifact) {
  ArtifactScope scope = artifact_scope();
  auto version = store.Save(scope, name, artifact);
  if (!version.ok()) return version;
  NoteArtifactSave(name, *version);
  // Only a top-level session's "user:" saves leave the session's own space.
  bool shared = IsUserArtifactName(name) && scope.user_names == ArtifactScope::UserNames::kShared;
  if (scope.session_owned && !shared && closed()) {
    // The close freed the session's space before this save landed: free it
    // again rather than keep what nothing can reach.
    (void)store.DeleteScope(scope);
    return absl::FailedPreconditionError(
        absl::StrCat("session ", id_, " closed while artifact '", name, "' was being saved"));
  }
  return version;
}

absl::Time Session::last_active() const {
  absl::MutexLock lock(&mu_);
  return last_active_;
}

void Session::Touch() {
  absl::MutexLock lock(&mu_);
  last_active_ = absl::Now();
}

void Session::BeginBatch() {
  absl::MutexLock lock(&mu_);
  ++running_batches_;
  last_active_ = absl::Now();
}

void Session::EndBatch() {
  absl::MutexLock lock(&mu_);
  --running_batches_;
  last_active_ = absl::Now();
}

bool Session::busy() const {
  absl::MutexLock lock(&mu_);
  return running_batches_ > 0;
}

void Session::NoteStateWrite(absl::string_view key) {
  absl::MutexLock lock(&mu_);
  written_keys_.emplace(key);
}

void Session::NoteArtifactSave(absl::string_view name, int64_t version) {
  absl::MutexLock lock(&mu_);
  saved_artifacts_[std::string(name)] = version;
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

void Session::NotifyPermissionRequest(const PermissionRequestEvent& event) {
  std::vector<std::shared_ptr<SessionListener>> listeners;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, l] : listeners_) listeners.push_back(l);
  }
  for (const auto& l : listeners) l->OnPermissionRequest(event);
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

SessionManager::SessionManager(const ToolRegistry* registry, Options options,
                               ArtifactStore* artifacts)
    : registry_(registry), options_(options), artifacts_(artifacts) {}

SessionManager::SessionManager(const LiveToolRegistry* tools, Options options,
                               ArtifactStore* artifacts)
    : live_(tools), options_(options), artifacts_(artifacts) {}

std::shared_ptr<const ToolRegistry> SessionManager::CurrentTools() const {
  return live_ != nullptr ? live_->Snapshot() : UnownedSnapshot(registry_);
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Open(SessionOptions options) {
  std::vector<std::string> unknown;
  const std::shared_ptr<const ToolRegistry> tools = CurrentTools();
  for (const auto& name : options.tools) {
    if (tools->Find(name) == nullptr) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown tool(s): ", absl::StrJoin(unknown, ", "), "; registered: ",
        absl::StrJoin(tools->names(), ", ")));
  }
  if (options.parent_session_id.empty() && !options.state_keys.empty()) {
    return absl::InvalidArgumentError("state_keys applies only with parent_session_id");
  }
  for (const auto& k : options.state_keys) {
    if (absl::Status s = ValidateStateKey(k); !s.ok()) return s;
  }
  // 128 random bits: ids are capabilities for a session's state.
  absl::BitGen gen;
  std::string id = absl::StrFormat("s-%016x%016x", absl::Uniform<uint64_t>(gen),
                                   absl::Uniform<uint64_t>(gen));
  absl::MutexLock lock(&mu_);
  if (closed_all_) return absl::UnavailableError("toolexecd is shutting down and opens no sessions");
  if (sessions_.size() >= options_.max_sessions) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many open sessions (", options_.max_sessions,
        "): close the sessions you no longer need with CloseSession; ",
        options_.idle_ttl > absl::ZeroDuration()
            ? absl::StrCat("sessions unused for ", absl::FormatDuration(options_.idle_ttl),
                           " are closed automatically (sessions.idle_ttl_ms)")
            : "the daemon has no idle TTL (sessions.idle_ttl_ms is 0), so forgotten sessions "
              "stay open until closed"));
  }
  std::shared_ptr<Session> parent;
  if (!options.parent_session_id.empty()) {
    auto it = sessions_.find(options.parent_session_id);
    if (it == sessions_.end() || it->second->owner() != options.owner) {
      return absl::NotFoundError(
          absl::StrCat("no open parent session '", options.parent_session_id, "'"));
    }
    parent = it->second;
    if (parent->depth() + 1 > options_.max_depth) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a child of session ", parent->id(), " would be at depth ", parent->depth() + 1,
          "; the maximum depth is ", options_.max_depth));
    }
    // A child acts for its parent's user: another user_id would let it read
    // and write that user's artifacts.
    if (!options.user_id.empty() && options.user_id != parent->user_id()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "user_id '", options.user_id, "' is not the parent session's (",
          parent->user_id().empty() ? "it has none" : absl::StrCat("'", parent->user_id(), "'"),
          "): a child session belongs to its parent's user; leave user_id empty to inherit it"));
    }
    options.user_id = parent->user_id();
    options.owner = parent->owner();
    if (options.conversation_id.empty()) options.conversation_id = parent->conversation_id();
    if (options.workspaces.empty()) options.workspaces = parent->workspaces();
  }
  if (!options.owner.empty() &&
      per_owner_[options.owner] >= options_.max_sessions_per_owner) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "caller '", options.owner, "' has ", options_.max_sessions_per_owner,
        " open sessions, the most one caller may have (limits.max_sessions_per_caller): close "
        "the sessions you no longer need with CloseSession"));
  }
  std::vector<std::string> state_keys = options.state_keys;
  auto session = std::make_shared<Session>(id, std::move(options));
  if (parent != nullptr) {
    session->depth_ = parent->depth() + 1;
    // Snapshot only the named keys, and remember the parent's clock so the
    // merge can tell which keys the parent changed meanwhile.
    session->parent_clock_at_open_ = parent->tool_state().clock();
    Json snapshot = parent->tool_state().Snapshot(state_keys);
    if (!state_keys.empty()) {
      for (const auto& m : snapshot.GetObject()) {
        session->tool_state().Set(absl::string_view(m.name.GetString(), m.name.GetStringLength()),
                                  m.value);
      }
    }
    absl::MutexLock plock(&parent->mu_);
    parent->children_.push_back(id);
  }
  sessions_.emplace(id, session);
  if (!session->owner().empty()) ++per_owner_[session->owner()];
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

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Get(absl::string_view id,
                                                             absl::string_view owner) const {
  auto session = Get(id);
  if (session.ok() && (*session)->owner() != owner) {
    return absl::NotFoundError(absl::StrCat("no open session '", id, "'"));
  }
  return session;
}

std::vector<std::shared_ptr<Session>> SessionManager::DetachTree(absl::string_view id) {
  std::vector<std::shared_ptr<Session>> out;
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return out;
  std::shared_ptr<Session> session = it->second;
  std::vector<std::string> children;
  {
    absl::MutexLock slock(&session->mu_);
    children = session->children_;
  }
  for (const auto& child : children) {
    auto sub = DetachTree(child);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  sessions_.erase(session->id());
  if (!session->owner().empty()) {
    auto count = per_owner_.find(session->owner());
    if (count != per_owner_.end() && --count->second == 0) per_owner_.erase(count);
  }
  out.push_back(std::move(session));
  return out;
}

absl::StatusOr<MergeResult> SessionManager::Close(absl::string_view id, const MergeOptions& merge) {
  bool has_merge_options = !merge.output_state_keys.empty() || merge.reject_conflicts ||
                           !merge.exempt_keys.empty() || !merge.artifact_prefixes.empty();
  if (merge.discard && has_merge_options) {
    return absl::InvalidArgumentError(
        "discard closes a session merging nothing: give it without output_state_keys, "
        "merge_policy, merge_exempt_keys and artifact_prefixes");
  }
  auto found = Get(id);
  if (!found.ok()) return found.status();
  std::shared_ptr<Session> session = std::move(*found);
  MergeResult result;
  std::vector<std::shared_ptr<Session>> closing;
  {
    absl::MutexLock close_lock(&session->close_mu_);
    std::shared_ptr<Session> parent;
    {
      absl::MutexLock lock(&mu_);
      auto it = sessions_.find(id);
      if (it == sessions_.end() || it->second != session) {
        return absl::NotFoundError(absl::StrCat(
            "no open session '", id, "': it was closed meanwhile (by another CloseSession, its "
            "parent's close or the idle TTL)"));
      }
      if (!session->parent_session_id().empty()) {
        auto p = sessions_.find(session->parent_session_id());
        if (p != sessions_.end()) parent = p->second;
      }
    }
    if (session->parent_session_id().empty() && has_merge_options) {
      return absl::InvalidArgumentError(
          "merge options (output_state_keys, merge_policy, merge_exempt_keys, artifact_prefixes) "
          "apply only to child sessions");
    }
    if (parent != nullptr && !merge.discard) {
      auto merged = Merge(*session, *parent, merge);
      if (!merged.ok()) return merged.status();
      result = std::move(*merged);
    }
    absl::MutexLock lock(&mu_);
    closing = DetachTree(id);
    if (parent != nullptr) {
      absl::MutexLock plock(&parent->mu_);
      auto& c = parent->children_;
      c.erase(std::remove(c.begin(), c.end(), session->id()), c.end());
    }
  }
  for (auto& s : closing) Finish(s);
  return result;
}

absl::StatusOr<MergeResult> SessionManager::Merge(Session& child, Session& parent,
                                                  const MergeOptions& merge) {
  std::set<std::string> written;
  std::map<std::string, int64_t> saved;
  {
    absl::MutexLock lock(&child.mu_);
    written = child.written_keys_;
    saved = child.saved_artifacts_;
  }
  auto contains = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<std::string> violations;
  std::vector<std::string> unlisted_keys, conflicting_keys, unlisted_artifacts;
  for (const auto& key : written) {
    if (!contains(merge.output_state_keys, key)) {
      violations.push_back(absl::StrCat("attempted unauthorized state write to '", key, "'"));
      unlisted_keys.push_back(key);
    } else if (merge.reject_conflicts && !contains(merge.exempt_keys, key) &&
               parent.tool_state().VersionOf(key) > child.parent_clock_at_open_) {
      violations.push_back(
          absl::StrCat("state key '", key, "' conflicts with a concurrent parent update"));
      conflicting_keys.push_back(key);
    }
  }
  for (const auto& [name, version] : saved) {
    bool allowed = std::any_of(merge.artifact_prefixes.begin(), merge.artifact_prefixes.end(),
                               [&name = name](const std::string& p) {
                                 return absl::StartsWith(name, p);
                               });
    if (!allowed) {
      violations.push_back(absl::StrCat("unauthorized artifact write to '", name, "'"));
      unlisted_artifacts.push_back(name);
    }
  }
  if (!violations.empty()) {
    std::vector<std::string> remedies;
    if (!unlisted_keys.empty()) {
      remedies.push_back(absl::StrCat("list the key(s) in output_state_keys (",
                                      absl::StrJoin(unlisted_keys, ", "), ")"));
    }
    if (!conflicting_keys.empty()) {
      remedies.push_back(absl::StrCat("name the conflicting key(s) in merge_exempt_keys (",
                                      absl::StrJoin(conflicting_keys, ", "),
                                      ") or merge with STATE_MERGE_POLICY_OVERWRITE"));
    }
    if (!unlisted_artifacts.empty()) {
      remedies.push_back(absl::StrCat("give artifact_prefixes that cover the artifact(s) (",
                                      absl::StrJoin(unlisted_artifacts, ", "), ")"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "session ", child.id(), " cannot merge into ", parent.id(), ": ",
        absl::StrJoin(violations, "; "),
        ". Nothing was merged and the session is still open. To merge these writes, ",
        absl::StrJoin(remedies, "; "),
        "; or close it with discard to end it without merging anything"));
  }
  // Read everything first, so that a read failure leaves the parent untouched.
  std::vector<std::pair<std::string, Json>> values;
  for (const auto& key : written) {
    auto value = child.tool_state().Get(key);
    if (value.has_value()) values.emplace_back(key, std::move(*value));
  }
  std::vector<std::pair<std::string, Artifact>> artifacts;
  if (artifacts_ != nullptr) {
    // Only the child's own versions: a "user:" name it saved and then
    // deleted must not bring the user's version back as a new one.
    ArtifactScope from = child.artifact_scope();
    from.user_names = ArtifactScope::UserNames::kOwnOnly;
    for (const auto& [name, version] : saved) {
      auto loaded = artifacts_->Load(from, name, 0);
      if (absl::IsNotFound(loaded.status())) continue;  // the child deleted it
      if (!loaded.ok()) return loaded.status();
      artifacts.emplace_back(name, std::move(loaded->first));
    }
  }
  MergeResult result;
  auto& alloc = result.state_delta.GetAllocator();
  for (const auto& [key, value] : values) {
    parent.tool_state().Set(key, value);
    parent.NoteStateWrite(key);
    result.state_delta.AddMember(JsonValue(key, alloc), JsonValue(value, alloc), alloc);
  }
  for (const auto& [name, artifact] : artifacts) {
    // Into the parent's scope: a parent that is itself a child stages them in
    // turn, to merge on its own close.
    auto saved_version = parent.SaveArtifact(*artifacts_, name, artifact);
    if (!saved_version.ok()) return saved_version.status();
    result.artifact_delta[name] = *saved_version;
  }
  return result;
}

void SessionManager::CloseAll() {
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> all;
  {
    absl::MutexLock lock(&mu_);
    closed_all_ = true;
    all.swap(sessions_);
    per_owner_.clear();
  }
  for (auto& [id, s] : all) Finish(s);
}

size_t SessionManager::SweepIdle(absl::Time now) {
  if (options_.idle_ttl <= absl::ZeroDuration()) return 0;
  std::vector<std::shared_ptr<Session>> idle;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, s] : sessions_) {
      if (!s->busy() && now - s->last_active() > options_.idle_ttl) idle.push_back(s);
    }
  }
  size_t closed = 0;
  for (const auto& session : idle) {
    // A session a CloseSession is closing is left to it (it may be merging).
    if (!session->close_mu_.TryLock()) continue;
    std::vector<std::shared_ptr<Session>> closing;
    {
      absl::MutexLock lock(&mu_);
      closing = DetachTree(session->id());
    }
    session->close_mu_.Unlock();
    for (auto& s : closing) Finish(s);
    closed += closing.size();
  }
  return closed;
}

void SessionManager::Finish(const std::shared_ptr<Session>& session) {
  session->MarkClosed();
  for (const auto& t : CurrentTools()->tools()) t->tool->cleanup_session(session->id());
  // Nothing reaches a session's own artifact space once it is closed (a
  // conversation's artifacts stay for the conversation's next session).
  ArtifactScope scope = session->artifact_scope();
  if (artifacts_ != nullptr && scope.session_owned) {
    // Best effort: the close has happened either way, and on disk a failure
    // leaves only files that nothing reads.
    (void)artifacts_->DeleteScope(scope);
  }
}

size_t SessionManager::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace toolexec
