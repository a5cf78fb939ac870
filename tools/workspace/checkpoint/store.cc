#include "tools/workspace/checkpoint/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/files/file_tools.h"
#include "tools/runtime/cancellation.h"
#include "tools/workspace/write_lock.h"
#include "tools/workspace/text.h"
#include "tools/search/confine.h"
#include "tools/search/walker.h"

namespace toolexec::checkpoint {

// The newest manifest of a root: the stat cache of its next Take. Its file
// hashes count as uses of their objects (refs_), so dropping the checkpoint
// it came from never deletes content the next Take reuses without reading.
struct CacheData {
  std::shared_ptr<const Manifest> manifest;
  absl::flat_hash_map<absl::string_view, size_t> index;  // path -> entry
};

struct CheckpointStore::RootCache {
  std::string root;
  absl::Mutex take_mu;  // one Take of the root at a time
  std::shared_ptr<const CacheData> data ABSL_GUARDED_BY(take_mu);
  bool seeded ABSL_GUARDED_BY(take_mu) = false;
};

namespace {

using search::PathLess;

int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Whether a time `t` read from a file's stat is safely before `start` (the
// coarse clock when the walk began): a later change of the file cannot carry
// the same time. Times with a fractional second come from a file system with
// fine timestamps (stamped from the same coarse clock), so 1 ms of margin
// covers any granularity down to that; whole-second times need an earlier
// second.
bool SafelyBefore(int64_t t, int64_t start) {
  constexpr int64_t kSecond = 1000000000;
  if (t % kSecond != 0) return t < start - 1000000;
  return t / kSecond < start / kSecond;
}

bool SameStat(const Entry& cached, const Entry& now) {
  return cached.type == EntryType::kFile && cached.mtime_ns >= 0 && cached.dev == now.dev &&
         cached.ino == now.ino && cached.size == now.size && cached.mtime_ns == now.mtime_ns &&
         cached.ctime_ns == now.ctime_ns && cached.mode == now.mode;
}

void FillStat(const struct stat& st, int64_t start, Entry* e) {
  e->dev = static_cast<uint64_t>(st.st_dev);
  e->ino = static_cast<uint64_t>(st.st_ino);
  e->size = static_cast<uint64_t>(st.st_size);
  e->mode = st.st_mode & 07777;
  e->mtime_ns = Nanos(st.st_mtim);
  e->ctime_ns = Nanos(st.st_ctim);
  if (!SafelyBefore(e->mtime_ns, start) || !SafelyBefore(e->ctime_ns, start)) e->mtime_ns = -1;
}

// Reads the open file `fd` to its end, at most `limit` bytes (0 = no limit);
// false on a read error or more than `limit` bytes.
bool ReadAll(int fd, uint64_t limit, std::string* out) {
  out->clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
    if (limit != 0 && out->size() > limit) return false;
  }
}

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

std::string Parent(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? "" : std::string(path.substr(0, slash));
}
std::string Base(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

// The paths a request names, relative to the root: "" (or ".") selects all.
class PathFilter {
 public:
  static absl::StatusOr<PathFilter> Make(const std::vector<std::string>& paths,
                                         const std::string& root) {
    PathFilter f;
    for (const std::string& raw : paths) {
      absl::string_view p = raw;
      if (absl::StartsWith(p, "/")) {
        if (!absl::ConsumePrefix(&p, root) || (!p.empty() && p[0] != '/')) {
          return absl::InvalidArgumentError(
              absl::StrCat("path '", raw, "' is outside the workspace ", root));
        }
      }
      std::vector<absl::string_view> parts;
      for (absl::string_view part : absl::StrSplit(p, '/', absl::SkipEmpty())) {
        if (part == ".") continue;
        if (part == "..") {
          return absl::InvalidArgumentError(
              absl::StrCat("path '", raw, "' has a '..' component: name paths inside the workspace"));
        }
        parts.push_back(part);
      }
      if (parts.empty()) return PathFilter();  // the whole tree
      f.paths_.push_back(absl::StrJoin(parts, "/"));
    }
    return f;
  }
  bool all() const { return paths_.empty(); }
  bool Selects(absl::string_view path) const {
    if (paths_.empty()) return true;
    for (const std::string& p : paths_) {
      if (path == p || (absl::StartsWith(path, p) && path.size() > p.size() && path[p.size()] == '/')) {
        return true;
      }
    }
    return false;
  }

 private:
  std::vector<std::string> paths_;
};

// A pair of entries at one path, either side may be missing.
struct Pair {
  const Entry* from = nullptr;
  const Entry* to = nullptr;
};

std::string ShownPath(const Entry& e) {
  return e.type == EntryType::kDir ? absl::StrCat(e.path, "/") : e.path;
}

// The changes from `a` to `b` among the paths `filter` selects, in path
// order, each with its entries.
std::vector<std::pair<FileChange, Pair>> Compare(const std::vector<Entry>& a,
                                                 const std::vector<Entry>& b,
                                                 const PathFilter& filter) {
  std::vector<std::pair<FileChange, Pair>> out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    Pair p;
    if (j == b.size() || (i < a.size() && PathLess(a[i].path, b[j].path))) {
      p.from = &a[i++];
    } else if (i == a.size() || PathLess(b[j].path, a[i].path)) {
      p.to = &b[j++];
    } else {
      p.from = &a[i++];
      p.to = &b[j++];
    }
    const Entry& any = p.from != nullptr ? *p.from : *p.to;
    if (!filter.Selects(any.path)) continue;
    FileChange c;
    if (p.from == nullptr) {
      c = {ShownPath(*p.to), ChangeKind::kAdded};
    } else if (p.to == nullptr) {
      c = {ShownPath(*p.from), ChangeKind::kDeleted};
    } else if (p.from->type != p.to->type) {
      c = {p.to->path, ChangeKind::kTypeChanged};
    } else if (p.from->type == EntryType::kFile && p.from->hash != p.to->hash) {
      c = {p.to->path, ChangeKind::kModified};
    } else if (p.from->type == EntryType::kSymlink && p.from->target != p.to->target) {
      c = {p.to->path, ChangeKind::kModified};
    } else if (p.from->type != EntryType::kSymlink && p.from->mode != p.to->mode) {
      c = {ShownPath(*p.to), ChangeKind::kModeChanged};
    } else {
      continue;
    }
    out.emplace_back(std::move(c), p);
  }
  return out;
}

std::string GitMode(const Entry& e) {
  switch (e.type) {
    case EntryType::kSymlink:
      return "120000";
    case EntryType::kDir:
      return "040000";
    case EntryType::kFile:
      break;
  }
  return absl::StrFormat("100%03o", e.mode & 0777);
}

// Opens the directory `rel` of the root without following symlinks: -1 with
// errno on failure.
int OpenDir(const fs::ConfinedRoot& root, absl::string_view rel) {
  return search::OpenSubdirNoFollow(root.fd(), rel);
}

// Whether `path` is, or lies below, a path the manifest left out.
bool UnderLeftOut(const absl::flat_hash_set<absl::string_view>& left_out, absl::string_view path) {
  if (left_out.empty()) return false;
  for (;;) {
    if (left_out.contains(path)) return true;
    const size_t slash = path.rfind('/');
    if (slash == absl::string_view::npos) return false;
    path = path.substr(0, slash);
  }
}

// How often a restore reads the tree again when other calls wrote what it
// is about to change (between its undo checkpoint and taking the locks).
constexpr int kRestoreAttempts = 4;

// Whether `name` in the directory `dir` is still what the scan recorded:
// `from` (nullptr: absent), to become `to`. Directories are not compared
// (their times change as entries come and go in them, and the restore itself
// may have made one). A write of the daemon replaces a file (WriteFileAtomic
// renames a new inode over it), so the inode tells even where the recorded
// times are too recent to be trusted.
bool StillAsScanned(int dir, const std::string& name, const Entry* from, const Entry* to) {
  struct stat st;
  if (from == nullptr) {
    if (to->type == EntryType::kDir) return true;
    return fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
  }
  if (from->type == EntryType::kDir) return true;
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (from->type == EntryType::kSymlink) {
    if (!S_ISLNK(st.st_mode)) return false;
    std::string target(from->target.size() + 1, '\0');
    const ssize_t n = readlinkat(dir, name.c_str(), target.data(), target.size());
    return n >= 0 && static_cast<size_t>(n) == from->target.size() &&
           target.compare(0, from->target.size(), from->target) == 0;
  }
  if (!S_ISREG(st.st_mode) || from->dev != static_cast<uint64_t>(st.st_dev) ||
      from->ino != static_cast<uint64_t>(st.st_ino) ||
      from->size != static_cast<uint64_t>(st.st_size) || from->mode != (st.st_mode & 07777)) {
    return false;
  }
  return from->mtime_ns < 0 ||
         (from->mtime_ns == Nanos(st.st_mtim) && from->ctime_ns == Nanos(st.st_ctim));
}

}  // namespace

const char* ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded:
      return "added";
    case ChangeKind::kModified:
      return "modified";
    case ChangeKind::kDeleted:
      return "deleted";
    case ChangeKind::kModeChanged:
      return "mode changed";
    case ChangeKind::kTypeChanged:
      return "type changed";
  }
  return "changed";
}

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

absl::StatusOr<Manifest> CheckpointStore::Scan(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                               const CacheData* cache, bool store,
                                               TakeStats* stats) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  const int64_t start_ns = Nanos(now);
  search::ConfinedPath start;
  start.root = root;
  start.fd = UniqueFd(openat(root->fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!start.fd.valid()) return ErrnoStatus(errno, root->path(), "opening");
  start.is_dir = true;

  search::WalkOptions walk;
  walk.skip_hidden = false;
  walk.use_ignore_files = !options_.include_ignored;
  walk.visit_dirs = true;
  walk.visit_symlinks = true;
  walk.threads = options_.walk_threads;
  struct Worker {
    std::vector<Entry> entries;
    std::vector<LeftOut> left_out;
    uint64_t files_read = 0;
    uint64_t bytes_read = 0;
    uint64_t bytes_stored = 0;
    absl::Status error;
  };
  std::vector<Worker> workers(static_cast<size_t>(search::WalkThreads(walk)));
  absl::Mutex ignored_mu;
  std::vector<LeftOut> ignored;
  const std::function<void(absl::string_view, bool)> on_ignored = [&](absl::string_view path,
                                                                      bool is_dir) {
    absl::MutexLock lock(&ignored_mu);
    ignored.push_back(LeftOut{std::string(path),
                              is_dir ? LeftOutReason::kIgnoredDir : LeftOutReason::kIgnoredFile, 0});
  };
  walk.ignored = &on_ignored;
  const uint64_t max_bytes = options_.max_file_bytes;

  auto visit = [&](const search::WalkEntry& we, int w) {
    Worker& worker = workers[static_cast<size_t>(w)];
    const std::string name(we.name);
    struct stat st;
    if (fstatat(we.dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone since listed
    Entry e;
    e.path = std::string(we.path);
    e.mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode)) {
      e.type = EntryType::kDir;
      worker.entries.push_back(std::move(e));
      return;
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 256) + 1, '\0');
      const ssize_t n = readlinkat(we.dir_fd, name.c_str(), target.data(), target.size());
      if (n < 0 || static_cast<size_t>(n) == target.size()) {
        worker.left_out.push_back(LeftOut{std::move(e.path), LeftOutReason::kUnreadable, 0});
        return;
      }
      target.resize(static_cast<size_t>(n));
      e.type = EntryType::kSymlink;
      e.target = std::move(target);
      worker.entries.push_back(std::move(e));
      return;
    }
    if (!S_ISREG(st.st_mode)) return;
    if (max_bytes != 0 && static_cast<uint64_t>(st.st_size) > max_bytes) {
      worker.left_out.push_back(
          LeftOut{std::move(e.path), LeftOutReason::kTooLarge, static_cast<uint64_t>(st.st_size)});
      return;
    }
    FillStat(st, start_ns, &e);
    if (cache != nullptr) {
      auto it = cache->index.find(e.path);
      if (it != cache->index.end()) {
        const Entry& cached = cache->manifest->entries[it->second];
        if (SameStat(cached, e)) {
          e.hash = cached.hash;
          worker.entries.push_back(std::move(e));
          return;
        }
      }
    }
    UniqueFd fd(openat(we.dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat opened;
    std::string data;
    if (!fd.valid() || fstat(fd.get(), &opened) != 0 || !S_ISREG(opened.st_mode) ||
        !ReadAll(fd.get(), max_bytes, &data)) {
      const bool too_big = max_bytes != 0 && data.size() > max_bytes;
      worker.left_out.push_back(LeftOut{std::move(e.path),
                                        too_big ? LeftOutReason::kTooLarge : LeftOutReason::kUnreadable,
                                        too_big ? data.size() : 0});
      return;
    }
    ++worker.files_read;
    worker.bytes_read += data.size();
    FillStat(opened, start_ns, &e);
    if (data.size() != e.size) e.mtime_ns = -1;  // it changed while read: read it again next time
    e.size = data.size();
    e.hash = builtin::Sha256Hex(data);
    if (store) {
      absl::StatusOr<uint64_t> put = objects_->Put(e.hash, data);
      if (!put.ok()) {
        if (worker.error.ok()) worker.error = put.status();
        return;
      }
      worker.bytes_stored += *put;
    }
    worker.entries.push_back(std::move(e));
  };
  absl::StatusOr<search::WalkStats> walked = search::Walk(start, walk, visit);
  if (!walked.ok()) return walked.status();
  Manifest m;
  m.left_out = std::move(ignored);
  for (Worker& w : workers) {
    if (!w.error.ok()) return w.error;
    if (stats != nullptr) {
      stats->files_read += w.files_read;
      stats->bytes_read += w.bytes_read;
      stats->bytes_stored += w.bytes_stored;
    }
    std::move(w.entries.begin(), w.entries.end(), std::back_inserter(m.entries));
    std::move(w.left_out.begin(), w.left_out.end(), std::back_inserter(m.left_out));
  }
  std::sort(m.entries.begin(), m.entries.end(),
            [](const Entry& a, const Entry& b) { return PathLess(a.path, b.path); });
  std::sort(m.left_out.begin(), m.left_out.end(),
            [](const LeftOut& a, const LeftOut& b) { return PathLess(a.path, b.path); });
  if (stats != nullptr) stats->entries = m.entries.size();
  return m;
}

void CheckpointStore::Release(const Manifest& m) {
  for (const Entry& e : m.entries) {
    if (e.type != EntryType::kFile) continue;
    auto it = refs_.find(e.hash);
    if (it == refs_.end()) continue;
    if (--it->second == 0) {
      refs_.erase(it);
      unused_.push_back(e.hash);
    }
  }
}

void CheckpointStore::InstallCache(RootCache& cache, std::shared_ptr<const Manifest> manifest) {
  auto data = std::make_shared<CacheData>();
  data->index.reserve(manifest->entries.size());
  for (size_t i = 0; i < manifest->entries.size(); ++i) {
    if (manifest->entries[i].type == EntryType::kFile) data->index.emplace(manifest->entries[i].path, i);
  }
  data->manifest = std::move(manifest);
  absl::MutexLock lock(&mu_);
  for (const Entry& e : data->manifest->entries) {
    if (e.type == EntryType::kFile) ++refs_[e.hash];
  }
  if (cache.data != nullptr) Release(*cache.data->manifest);
  cache.data = std::move(data);
}

std::shared_ptr<const CacheData> CheckpointStore::CurrentCache(RootCache& cache) {
  if (cache.seeded) return cache.data;
  cache.seeded = true;
  // The first Take of a root since the store opened starts from the newest
  // checkpoint of that root on disk (a restarted daemon reads only what
  // changed since).
  const CheckpointInfo* newest = nullptr;
  CheckpointInfo found;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [session, index] : sessions_) {
      for (const CheckpointInfo& info : index.checkpoints) {
        if (info.root == cache.root && (newest == nullptr || newest->created_at < info.created_at)) {
          newest = &info;
        }
      }
    }
    if (newest == nullptr) return nullptr;
    found = *newest;
  }
  absl::StatusOr<Manifest> m = LoadManifest(found.session_id, found.id);
  if (m.ok()) InstallCache(cache, std::make_shared<const Manifest>(*std::move(m)));
  return cache.data;
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

absl::StatusOr<std::string> CheckpointStore::Content(const Entry& e,
                                                     const fs::ConfinedRoot* now_root) const {
  if (e.type == EntryType::kSymlink) return e.target;
  if (e.type != EntryType::kFile) return std::string();
  if (now_root == nullptr) return objects_->Get(e.hash, e.size);
  UniqueFd dir(OpenDir(*now_root, Parent(e.path)));
  UniqueFd fd(dir.valid() ? openat(dir.get(), Base(e.path).c_str(),
                                   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
                          : -1);
  std::string data;
  if (!fd.valid() || !ReadAll(fd.get(), 0, &data)) return ErrnoStatus(errno, e.path, "reading");
  return data;
}

namespace {

// Pins checkpoints against Prune for a scope.
class Pins {
 public:
  Pins(absl::Mutex* mu, absl::flat_hash_map<std::string, int>* pins) : mu_(mu), pins_(pins) {}
  ~Pins() {
    absl::MutexLock lock(mu_);
    for (const std::string& id : ids_) {
      if (--(*pins_)[id] == 0) pins_->erase(id);
    }
  }
  void Add(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++(*pins_)[id];
    ids_.push_back(id);
  }

 private:
  absl::Mutex* mu_;
  absl::flat_hash_map<std::string, int>* pins_;
  std::vector<std::string> ids_;
};

}  // namespace

absl::StatusOr<DiffResult> CheckpointStore::Diff(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                                 absl::string_view session_id,
                                                 absl::string_view from_id, absl::string_view to_id,
                                                 const std::vector<std::string>& paths) {
  absl::StatusOr<PathFilter> filter = PathFilter::Make(paths, root->path());
  if (!filter.ok()) return filter.status();
  Pins pins(&mu_, &pins_);
  {
    absl::MutexLock lock(&mu_);
    for (absl::string_view id : {from_id, to_id}) {
      if (id.empty() && id.data() == to_id.data()) continue;  // to the tree now
      if (absl::Status known = CheckKnown(session_id, id); !known.ok()) return known;
      pins.Add(std::string(id));
    }
  }
  // The stat cache first: a Take holds its root's lock before gc_mu_.
  std::shared_ptr<const CacheData> data;
  if (to_id.empty()) {
    std::shared_ptr<RootCache> cache = CacheFor(root->path());
    absl::MutexLock take_lock(&cache->take_mu);
    data = CurrentCache(*cache);
  }
  absl::ReaderMutexLock gc(&gc_mu_);
  absl::StatusOr<Manifest> from = LoadManifest(session_id, from_id);
  if (!from.ok()) return from.status();
  absl::StatusOr<Manifest> to;
  if (to_id.empty()) {
    to = Scan(root, data.get(), false, nullptr);
  } else {
    to = LoadManifest(session_id, to_id);
  }
  if (!to.ok()) return to.status();
  const fs::ConfinedRoot* now_root = to_id.empty() ? root.get() : nullptr;

  DiffResult out;
  for (auto& [change, pair] : Compare(from->entries, to->entries, *filter)) {
    out.changes.push_back(change);
    if (out.diff_truncated) continue;
    const Entry* a = pair.from;
    const Entry* b = pair.to;
    if ((a != nullptr && a->type == EntryType::kDir) || (b != nullptr && b->type == EntryType::kDir)) {
      continue;  // a directory has no text; its entries have their own
    }
    const std::string& path = (b != nullptr ? b : a)->path;
    std::string text = absl::StrCat("diff --git a/", path, " b/", path, "\n");
    if (a == nullptr) {
      absl::StrAppend(&text, "new file mode ", GitMode(*b), "\n");
    } else if (b == nullptr) {
      absl::StrAppend(&text, "deleted file mode ", GitMode(*a), "\n");
    } else if (GitMode(*a) != GitMode(*b)) {
      absl::StrAppend(&text, "old mode ", GitMode(*a), "\nnew mode ", GitMode(*b), "\n");
    }
    if (change.kind != ChangeKind::kModeChanged) {
      std::string old_text, new_text;
      if (a != nullptr) {
        absl::StatusOr<std::string> c = Content(*a, nullptr);
        if (!c.ok()) return c.status();
        old_text = *std::move(c);
      }
      if (b != nullptr) {
        absl::StatusOr<std::string> c = Content(*b, now_root);
        if (!c.ok()) return c.status();
        new_text = *std::move(c);
      }
      auto head = [](const std::string& t) { return absl::string_view(t).substr(0, fs::kBinarySniffBytes); };
      if (fs::LooksBinary(head(old_text)) || fs::LooksBinary(head(new_text))) {
        absl::StrAppend(&text, "Binary files ", a != nullptr ? "a/" + path : "/dev/null", " and ",
                        b != nullptr ? "b/" + path : "/dev/null", " differ\n");
      } else {
        builtin::DiffStats stats;
        bool cut = false;
        const size_t room = kMaxDiffBytes > out.unified_diff.size() + text.size()
                                ? kMaxDiffBytes - out.unified_diff.size() - text.size()
                                : 0;
        absl::StrAppend(&text, builtin::UnifiedDiff(old_text, new_text, path, 3, &stats, nullptr,
                                                    room, &cut));
        if (cut) out.diff_truncated = true;
      }
    }
    if (out.unified_diff.size() + text.size() > kMaxDiffBytes) {
      out.diff_truncated = true;
      continue;
    }
    out.unified_diff += text;
  }
  return out;
}

absl::StatusOr<RestoreResult> CheckpointStore::Restore(
    const std::shared_ptr<const fs::ConfinedRoot>& root, absl::string_view session_id,
    absl::string_view id, const std::vector<std::string>& paths, bool dry_run,
    const TakeRequest& undo, const RestoreApproval& approve) {
  absl::StatusOr<PathFilter> filter = PathFilter::Make(paths, root->path());
  if (!filter.ok()) return filter.status();
  Pins pins(&mu_, &pins_);
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status known = CheckKnown(session_id, id); !known.ok()) return known;
    pins.Add(std::string(id));
  }
  absl::StatusOr<Manifest> target = LoadManifest(session_id, id);
  if (!target.ok()) return target.status();
  if (target->info.root != root->path()) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint '", id, "' is of the workspace ", target->info.root, ", not ",
                     root->path()));
  }
  // The tree is read and the plan made again until the plan's paths, once
  // locked, are still as read: a write of another call (another session, a
  // parent or child sharing the workspace) may land between the two.
  RestoreResult result;
  absl::StatusOr<Manifest> current;
  std::vector<std::pair<FileChange, Pair>> plan;
  std::vector<fs::FileWriteLock> locks;
  const CancellationToken never;  // a restore is not cancelled; lock holders finish
  // Directories the restore writes in or keys a lock by, opened or made, by
  // path relative to the root.
  absl::flat_hash_map<std::string, int> dir_fds;
  auto close_all = [&dir_fds] {
    for (auto& [path, fd] : dir_fds) close(fd);
    dir_fds.clear();
  };
  absl::Cleanup close_at_end = close_all;
  // The directory `rel`, made (with its missing parents) when absent.
  std::function<int(const std::string&)> dir_of = [&](const std::string& rel) -> int {
    auto it = dir_fds.find(rel);
    if (it != dir_fds.end()) return it->second;
    int fd = OpenDir(*root, rel);
    if (fd < 0 && errno == ENOENT && !rel.empty()) {
      const int parent = dir_of(Parent(rel));
      if (parent < 0) return -1;
      if (mkdirat(parent, Base(rel).c_str(), 0700) != 0 && errno != EEXIST) return -1;
      fd = OpenDir(*root, rel);
    }
    if (fd >= 0) dir_fds.emplace(rel, fd);
    return fd;
  };
  // The directory `rel` for a lock's key; made, when `make` and absent, as
  // step 2 below would make it.
  auto lock_dir = [&](const std::string& rel, bool make) -> int {
    if (make) return dir_of(rel);
    if (auto it = dir_fds.find(rel); it != dir_fds.end()) return it->second;
    const int fd = OpenDir(*root, rel);
    if (fd >= 0) dir_fds.emplace(rel, fd);
    return fd;
  };
  for (int attempt = 1;; ++attempt) {
    plan.clear();
    result = RestoreResult();
    // The tree as it is: an undo checkpoint, or for a dry run a scan that
    // stores nothing.
    if (dry_run) {
      std::shared_ptr<RootCache> cache = CacheFor(root->path());
      std::shared_ptr<const CacheData> data;
      {
        absl::MutexLock take_lock(&cache->take_mu);
        data = CurrentCache(*cache);
      }
      current = Scan(root, data.get(), false, nullptr);
    } else {
      absl::StatusOr<CheckpointInfo> taken = Take(root, undo, &result.undo_stats);
      if (!taken.ok()) return taken.status();
      result.undo_checkpoint_id = taken->id;
      {
        absl::MutexLock lock(&mu_);
        pins.Add(taken->id);
      }
      current = LoadManifest(session_id, taken->id);
    }
    if (!current.ok()) return current.status();

    absl::flat_hash_set<absl::string_view> left_out;
    for (const LeftOut& l : target->left_out) {
      if (filter->Selects(l.path)) result.not_restored.push_back(l);
      left_out.insert(l.path);
    }
    for (auto& step : Compare(current->entries, target->entries, *filter)) {
      const Pair& p = step.second;
      // What the checkpoint left out is neither deleted nor replaced.
      if (p.to == nullptr && UnderLeftOut(left_out, p.from->path)) continue;
      plan.push_back(std::move(step));
    }
    for (const auto& [change, pair] : plan) result.changes.push_back(change);
    if (approve) {
      if (absl::Status ok = approve(result.changes); !ok.ok()) return ok;
    }
    if (dry_run || plan.empty()) return result;

    // The write locks the file tools take (fs::FileWriteLock), of every path
    // the restore deletes or writes, all at once (one global order, so no
    // deadlock). A lock's key is the path's directory, so the missing
    // directories of what the restore writes are made first, as a file tool
    // makes them before locking; a path whose directory cannot be opened yet
    // (it is a file or link now, which the restore replaces) is not locked.
    std::vector<fs::FileWriteLock::Target> targets;
    targets.reserve(plan.size());
    for (const auto& [change, pair] : plan) {
      const std::string& path = (pair.to != nullptr ? pair.to : pair.from)->path;
      const int dir = lock_dir(Parent(path), pair.to != nullptr);
      if (dir < 0) continue;
      targets.push_back(fs::FileWriteLock::Target{dir, Base(path), path});
    }
    absl::StatusOr<std::vector<fs::FileWriteLock>> acquired =
        fs::FileWriteLock::AcquireAll(targets, never);
    if (!acquired.ok()) return acquired.status();
    locks = *std::move(acquired);
    // Locked, each file and link is still what the undo checkpoint recorded,
    // or another call wrote it after the scan: the restore would lose that
    // write (and its undo checkpoint not hold it), so it reads the tree again.
    const std::string* moved = nullptr;
    size_t t = 0;
    for (const auto& [change, pair] : plan) {
      const Entry* e = pair.to != nullptr ? pair.to : pair.from;
      if (t == targets.size() || targets[t].display != e->path) continue;  // not locked
      const int dir = targets[t++].dir_fd;
      if (!StillAsScanned(dir, Base(e->path), pair.from, pair.to)) {
        moved = &e->path;
        break;
      }
    }
    if (moved == nullptr) break;
    locks.clear();
    if (attempt == kRestoreAttempts) {
      return absl::AbortedError(absl::StrCat(
          "other calls kept writing '", *moved, "' as the restore of checkpoint '", id,
          "' began, ", kRestoreAttempts, " times; no file was changed (restore again once they "
          "have finished)"));
    }
  }

  absl::ReaderMutexLock gc(&gc_mu_);
  std::vector<std::string> failures;
  auto fail = [&](absl::string_view path, const absl::Status& why) {
    failures.push_back(absl::StrCat(path, ": ", why.message()));
  };
  // 1. Deletions (and the old side of a type change), deepest first.
  for (auto it = plan.rbegin(); it != plan.rend(); ++it) {
    const Entry* now = it->second.from;
    const Entry* want = it->second.to;
    if (now == nullptr || (want != nullptr && want->type == now->type)) continue;
    UniqueFd dir(OpenDir(*root, Parent(now->path)));
    const int flags = now->type == EntryType::kDir ? AT_REMOVEDIR : 0;
    if (!dir.valid() || unlinkat(dir.get(), Base(now->path).c_str(), flags) != 0) {
      if (errno == ENOENT) continue;
      fail(now->path, ErrnoStatus(errno, now->path, "removing"));
    }
  }
  // 2. Directories, files and links, parents first.
  uint64_t temp = 0;
  for (const auto& [change, pair] : plan) {
    const Entry* now = pair.from;
    const Entry* want = pair.to;
    if (want == nullptr) continue;
    const bool same_type = now != nullptr && now->type == want->type;
    if (want->type == EntryType::kDir) {
      if (dir_of(want->path) < 0) fail(want->path, ErrnoStatus(errno, want->path, "creating"));
      continue;  // modes in step 3
    }
    const int dir = dir_of(Parent(want->path));
    if (dir < 0) {
      fail(want->path, ErrnoStatus(errno, Parent(want->path), "opening"));
      continue;
    }
    const std::string name = Base(want->path);
    if (want->type == EntryType::kSymlink) {
      const std::string tmp = absl::StrCat(".", name, ".restore-", getpid(), "-", ++temp);
      if (symlinkat(want->target.c_str(), dir, tmp.c_str()) != 0 ||
          renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
        const int err = errno;
        unlinkat(dir, tmp.c_str(), 0);
        fail(want->path, ErrnoStatus(err, want->path, "linking"));
      }
      continue;
    }
    if (same_type && now->hash == want->hash) {  // the mode alone differs
      if (fchmodat(dir, name.c_str(), want->mode, AT_SYMLINK_NOFOLLOW) != 0) {
        fail(want->path, ErrnoStatus(errno, want->path, "changing the mode of"));
      }
      continue;
    }
    absl::StatusOr<std::string> data = objects_->Get(want->hash, want->size);
    if (!data.ok()) {
      fail(want->path, data.status());
      continue;
    }
    AtomicWriteOptions write;
    write.replace_existing = true;
    write.mode = want->mode;
    write.display = want->path;
    if (absl::Status w = WriteFileAtomic(dir, name, *data, write); !w.ok()) fail(want->path, w);
  }
  // 3. Directory modes, deepest first (a read-only directory is filled first).
  absl::flat_hash_map<absl::string_view, uint32_t> now_modes;
  for (const Entry& e : current->entries) {
    if (e.type == EntryType::kDir) now_modes.emplace(e.path, e.mode);
  }
  for (auto it = target->entries.rbegin(); it != target->entries.rend(); ++it) {
    if (it->type != EntryType::kDir) continue;
    if (!filter->Selects(it->path) && !dir_fds.contains(it->path)) continue;
    auto now = now_modes.find(it->path);
    if (now != now_modes.end() && now->second == it->mode) continue;
    UniqueFd parent(OpenDir(*root, Parent(it->path)));
    if (!parent.valid() ||
        fchmodat(parent.get(), Base(it->path).c_str(), it->mode, AT_SYMLINK_NOFOLLOW) != 0) {
      fail(it->path, ErrnoStatus(errno, it->path, "changing the mode of"));
    }
  }
  close_all();
  if (!failures.empty()) {
    return absl::AbortedError(absl::StrCat(
        "the restore of checkpoint '", id, "' put back all but ", failures.size(),
        " path(s): ", absl::StrJoin(failures, "; "), ". The tree before the restore is checkpoint '",
        result.undo_checkpoint_id, "'"));
  }
  return result;
}

}  // namespace toolexec::checkpoint
