// CheckpointStore: opening a store (the checkpoints on disk), taking and
// listing checkpoints, and dropping them past the bounds. The walk is in
// scan.cc, Diff in diff.cc, Restore in restore.cc.
#include "tools/workspace/checkpoint/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/workspace/checkpoint/store_internal.h"

namespace toolexec::checkpoint {
namespace {

using internal::Compare;
using internal::PathFilter;
using internal::ReadAll;

bool SafeName(absl::string_view s) {
  if (s.empty() || s.size() > 200 || s[0] == '.') return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// A session's directory name: the id itself when it is a plain name, else
// "x" and its hex.
std::string SessionDir(absl::string_view session_id) {
  if (SafeName(session_id)) return std::string(session_id);
  std::string out = "x";
  for (unsigned char c : session_id) absl::StrAppendFormat(&out, "%02x", c);
  return out;
}

absl::Status MakeDir(const std::string& path) { return MakeDirectories(path, 0700); }

absl::StatusOr<std::string> ReadPath(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  std::string text;
  if (!fd.valid() || !ReadAll(fd.get(), 0, &text)) return ErrnoStatus(errno, path, "reading");
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointStore>> CheckpointStore::Open(StoreOptions options) {
  if (options.store_dir.empty() || options.store_dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoints.store_dir must be an absolute path, not '", options.store_dir,
                     "'"));
  }
  while (options.store_dir.size() > 1 && options.store_dir.back() == '/') options.store_dir.pop_back();
  auto store = std::unique_ptr<CheckpointStore>(new CheckpointStore(std::move(options)));
  if (absl::Status s = store->Load(); !s.ok()) return s;
  return store;
}

absl::Status CheckpointStore::Load() {
  const std::string& dir = options_.store_dir;
  for (const std::string& d : {dir, absl::StrCat(dir, "/sessions")}) {
    if (absl::Status s = MakeDir(d); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<ObjectStore>> objects = ObjectStore::Open(absl::StrCat(dir, "/objects"));
  if (!objects.ok()) return objects.status();
  objects_ = *std::move(objects);

  absl::MutexLock lock(&mu_);
  const std::string sessions = absl::StrCat(dir, "/sessions");
  DIR* top = opendir(sessions.c_str());
  if (top == nullptr) return ErrnoStatus(errno, sessions, "listing");
  while (struct dirent* s = readdir(top)) {
    if (s->d_name[0] == '.') continue;
    const std::string sdir = absl::StrCat(sessions, "/", s->d_name);
    DIR* sd = opendir(sdir.c_str());
    if (sd == nullptr) continue;
    while (struct dirent* m = readdir(sd)) {
      const absl::string_view name = m->d_name;
      const std::string path = absl::StrCat(sdir, "/", name);
      if (absl::StartsWith(name, ".")) {
        if (absl::StrContains(name, ".tmp-")) unlink(path.c_str());  // a write a crash cut short
        continue;
      }
      if (!absl::EndsWith(name, ".manifest")) continue;
      absl::StatusOr<std::string> text = ReadPath(path);
      if (!text.ok()) return text.status();
      absl::StatusOr<Manifest> manifest = ParseManifest(*text, path);
      if (!manifest.ok()) return manifest.status();
      for (const Entry& e : manifest->entries) {
        if (e.type == EntryType::kFile) ++refs_[e.hash];
      }
      store_bytes_ += text->size();
      last_id_ns_ = std::max(last_id_ns_, absl::ToUnixNanos(manifest->info.created_at));
      sessions_[manifest->info.session_id].checkpoints.push_back(std::move(manifest->info));
    }
    closedir(sd);
  }
  closedir(top);
  for (auto& [id, index] : sessions_) {
    std::sort(index.checkpoints.begin(), index.checkpoints.end(),
              [](const CheckpointInfo& a, const CheckpointInfo& b) {
                return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
              });
  }
  std::vector<std::string> orphans;
  objects_->ForEach([&](const std::string& hash, uint64_t bytes) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (refs_.contains(hash)) {
      store_bytes_ += bytes;
    } else {
      orphans.push_back(hash);
    }
  });
  for (const std::string& hash : orphans) objects_->Remove(hash);
  return absl::OkStatus();
}

std::string CheckpointStore::ManifestPath(absl::string_view session_id, absl::string_view id) const {
  return absl::StrCat(options_.store_dir, "/sessions/", SessionDir(session_id), "/", id, ".manifest");
}

absl::StatusOr<Manifest> CheckpointStore::LoadManifest(absl::string_view session_id,
                                                       absl::string_view id) const {
  const std::string path = ManifestPath(session_id, id);
  absl::StatusOr<std::string> text = ReadPath(path);
  if (!text.ok()) return text.status();
  return ParseManifest(*text, path);
}

std::shared_ptr<CheckpointStore::RootCache> CheckpointStore::CacheFor(const std::string& root) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<RootCache>& cache = caches_[root];
  if (cache == nullptr) {
    cache = std::make_shared<RootCache>();
    cache->root = root;
  }
  return cache;
}

absl::Status CheckpointStore::CheckKnown(absl::string_view session_id, absl::string_view id) const {
  auto it = sessions_.find(session_id);
  if (it != sessions_.end() &&
      std::any_of(it->second.checkpoints.begin(), it->second.checkpoints.end(),
                  [&](const CheckpointInfo& c) { return c.id == id; })) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("session '", session_id, "' has no checkpoint '", id,
                                          "' (toolexec checkpoints SESSION lists them)"));
}

uint64_t CheckpointStore::store_bytes() const {
  absl::MutexLock lock(&mu_);
  return store_bytes_;
}

std::vector<CheckpointInfo> CheckpointStore::List(absl::string_view session_id) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return {};
  return it->second.checkpoints;
}

void CheckpointStore::Release(const Manifest& m) {
  for (const Entry& e : m.entries) {
    if (e.type == EntryType::kFile) ReleaseObject(e.hash);
  }
}

void CheckpointStore::ReleaseObject(const std::string& hash) {
  auto it = refs_.find(hash);
  if (it == refs_.end()) return;
  if (--it->second == 0) {
    refs_.erase(it);
    unused_.push_back(hash);
  }
}

absl::StatusOr<CheckpointInfo> CheckpointStore::Take(
    const std::shared_ptr<const fs::ConfinedRoot>& root, const TakeRequest& request,
    TakeStats* stats) {
  const absl::Time began = absl::Now();
  TakeStats local;
  TakeStats& s = stats != nullptr ? *stats : local;
  s = TakeStats();
  std::shared_ptr<RootCache> cache = CacheFor(root->path());
  CheckpointInfo info;
  {
    absl::MutexLock take_lock(&cache->take_mu);
    std::shared_ptr<const CacheData> previous = CurrentCache(*cache);
    auto manifest = std::make_shared<Manifest>();
    {
      absl::ReaderMutexLock gc(&gc_mu_);
      absl::StatusOr<Manifest> scanned = Scan(root, previous.get(), true, &s);
      if (!scanned.ok()) return scanned.status();
      *manifest = *std::move(scanned);

      // The session's previous checkpoint, to count what changed since.
      std::optional<CheckpointInfo> last;
      {
        absl::MutexLock lock(&mu_);
        const int64_t now_ns = absl::ToUnixNanos(absl::Now());
        last_id_ns_ = std::max(last_id_ns_ + 1, now_ns);
        info.id = absl::StrFormat("cp%016x", static_cast<uint64_t>(last_id_ns_));
        info.created_at = absl::FromUnixNanos(last_id_ns_);
        auto it = sessions_.find(request.session_id);
        if (it != sessions_.end() && !it->second.checkpoints.empty()) last = it->second.checkpoints.back();
      }
      std::shared_ptr<const Manifest> before;
      if (last.has_value()) {
        if (previous != nullptr && previous->manifest->info.id == last->id) {
          before = previous->manifest;
        } else if (absl::StatusOr<Manifest> m = LoadManifest(last->session_id, last->id); m.ok()) {
          before = std::make_shared<const Manifest>(*std::move(m));
        }
      }
      info.session_id = request.session_id;
      info.batch_id = request.batch_id;
      info.tools = request.tools;
      info.root = root->path();
      info.owner = request.owner;
      info.files_changed = static_cast<uint32_t>(
          Compare(before != nullptr ? before->entries : std::vector<Entry>(), manifest->entries,
                  PathFilter())
              .size());
      info.bytes_stored = s.bytes_stored;
      manifest->info = info;
      std::string text = SerializeManifest(*manifest);
      // The manifest counts itself (its bytes_stored field has a fixed width).
      info.bytes_stored += text.size();
      manifest->info.bytes_stored = info.bytes_stored;
      SetBytesStored(&text, info.bytes_stored);
      const std::string dir = absl::StrCat(options_.store_dir, "/sessions/", SessionDir(info.session_id));
      if (absl::Status made = MakeDir(dir); !made.ok()) return made;
      UniqueFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dir_fd.valid()) return ErrnoStatus(errno, dir, "opening");
      // Not fsynced, like the objects it names: a checkpoint outlives the
      // daemon, not a crash of the machine.
      if (absl::Status w = WriteUnsynced(dir_fd.get(), absl::StrCat(info.id, ".manifest"), text,
                                         false, absl::StrCat(dir, "/", info.id, ".manifest"));
          !w.ok()) {
        return w;
      }
      absl::MutexLock lock(&mu_);
      for (const Entry& e : manifest->entries) {
        if (e.type == EntryType::kFile) ++refs_[e.hash];
      }
      store_bytes_ += info.bytes_stored;
      sessions_[info.session_id].checkpoints.push_back(info);
    }
    InstallCache(*cache, std::move(manifest));
  }
  s.bytes_stored = info.bytes_stored;
  Prune(info.session_id, info.id);
  s.duration = absl::Now() - began;
  return info;
}

void CheckpointStore::Drop(const CheckpointInfo& info) {
  const std::string path = ManifestPath(info.session_id, info.id);
  absl::StatusOr<std::string> text = ReadPath(path);
  if (text.ok()) {
    if (absl::StatusOr<Manifest> m = ParseManifest(*text, path); m.ok()) Release(*m);
    if (unlink(path.c_str()) == 0) store_bytes_ -= std::min<uint64_t>(store_bytes_, text->size());
  }
  auto it = sessions_.find(info.session_id);
  if (it == sessions_.end()) return;
  std::vector<CheckpointInfo>& list = it->second.checkpoints;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const CheckpointInfo& c) { return c.id == info.id; }),
             list.end());
  if (list.empty()) sessions_.erase(it);
}

void CheckpointStore::Prune(const std::string& session_id, const std::string& keep_id) {
  absl::WriterMutexLock gc(&gc_mu_);
  absl::MutexLock lock(&mu_);
  auto droppable = [&](const CheckpointInfo& c) { return c.id != keep_id && !pins_.contains(c.id); };
  if (options_.keep_per_session > 0) {
    for (;;) {
      auto it = sessions_.find(session_id);
      if (it == sessions_.end() || it->second.checkpoints.size() <= options_.keep_per_session) break;
      const std::vector<CheckpointInfo>& list = it->second.checkpoints;
      auto victim = std::find_if(list.begin(), list.end(), droppable);
      if (victim == list.end()) break;
      const CheckpointInfo copy = *victim;
      Drop(copy);
    }
  }
  // Objects no checkpoint uses any more go before the size bound is judged.
  auto sweep = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const std::string& hash : unused_) {
      if (!refs_.contains(hash)) store_bytes_ -= std::min(store_bytes_, objects_->Remove(hash));
    }
    unused_.clear();
  };
  sweep();
  while (options_.max_store_bytes > 0 && store_bytes_ > options_.max_store_bytes) {
    const CheckpointInfo* oldest = nullptr;
    for (const auto& [session, index] : sessions_) {
      for (const CheckpointInfo& c : index.checkpoints) {
        if (droppable(c) && (oldest == nullptr || c.created_at < oldest->created_at)) oldest = &c;
      }
    }
    if (oldest == nullptr) break;
    const CheckpointInfo copy = *oldest;
    Drop(copy);
    sweep();
  }
}

}  // namespace toolexec::checkpoint
