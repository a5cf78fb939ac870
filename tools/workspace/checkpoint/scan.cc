// CheckpointStore::Scan: the walk of a workspace into a manifest, reading
// only what the root's stat cache cannot vouch for; and that cache
// (CurrentCache, InstallCache). See store.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <iterator>
#include <utility>

#include "tools/workspace/checkpoint/store.h"
#include "tools/workspace/checkpoint/store_internal.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/sha256.h"
#include "tools/workspace/walker.h"

namespace toolexec::checkpoint {
namespace {

using internal::Compare;
using internal::Nanos;
using internal::PathFilter;
using internal::ReadAll;
using fs::PathLess;

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

}  // namespace

namespace internal {

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

}  // namespace internal

absl::StatusOr<Manifest> CheckpointStore::Scan(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                               const CacheData* cache, bool store,
                                               TakeStats* stats) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  const int64_t start_ns = Nanos(now);
  fs::ConfinedPath start;
  start.root = root;
  start.fd = UniqueFd(openat(root->fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!start.fd.valid()) return ErrnoStatus(errno, root->path(), "opening");
  start.is_dir = true;

  fs::WalkOptions walk;
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
  std::vector<Worker> workers(static_cast<size_t>(fs::WalkThreads(walk)));
  if (cache != nullptr) {
    // Each worker sees about its share of the entries the last walk found.
    const size_t share = cache->manifest->entries.size() / workers.size() + 64;
    for (Worker& w : workers) w.entries.reserve(share);
  }
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

  auto visit = [&](const fs::WalkEntry& we, int w) {
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
    e.hash = fs::Sha256Hex(data);
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
  absl::StatusOr<fs::WalkStats> walked = fs::Walk(start, walk, visit);
  if (!walked.ok()) return walked.status();
  Manifest m;
  m.left_out = std::move(ignored);
  // The entries in path order: the workers' entries are sorted by reference
  // and moved once, not moved about by the sort.
  std::vector<Entry*> order;
  for (Worker& w : workers) {
    if (!w.error.ok()) return w.error;
    if (stats != nullptr) {
      stats->files_read += w.files_read;
      stats->bytes_read += w.bytes_read;
      stats->bytes_stored += w.bytes_stored;
    }
    for (Entry& e : w.entries) order.push_back(&e);
    std::move(w.left_out.begin(), w.left_out.end(), std::back_inserter(m.left_out));
  }
  std::sort(order.begin(), order.end(),
            [](const Entry* a, const Entry* b) { return PathLess(a->path, b->path); });
  m.entries.reserve(order.size());
  for (Entry* e : order) m.entries.push_back(std::move(*e));
  std::sort(m.left_out.begin(), m.left_out.end(),
            [](const LeftOut& a, const LeftOut& b) { return PathLess(a.path, b.path); });
  if (stats != nullptr) stats->entries = m.entries.size();
  return m;
}

void CheckpointStore::InstallCache(RootCache& cache, std::shared_ptr<const Manifest> manifest) {
  auto data = std::make_shared<CacheData>();
  data->index.reserve(manifest->entries.size());
  for (size_t i = 0; i < manifest->entries.size(); ++i) {
    if (manifest->entries[i].type == EntryType::kFile) data->index.emplace(manifest->entries[i].path, i);
  }
  data->manifest = std::move(manifest);
  // The cache's uses of objects move from the old manifest to the new: only
  // the paths that changed between the two can change a count.
  static const std::vector<Entry> kNone;
  const std::vector<Entry>& was = cache.data != nullptr ? cache.data->manifest->entries : kNone;
  const auto changed = Compare(was, data->manifest->entries, PathFilter());
  absl::MutexLock lock(&mu_);
  for (const auto& [change, pair] : changed) {
    const bool old_file = pair.from != nullptr && pair.from->type == EntryType::kFile;
    const bool new_file = pair.to != nullptr && pair.to->type == EntryType::kFile;
    if (old_file && new_file && pair.from->hash == pair.to->hash) continue;  // the mode alone
    if (new_file) ++refs_[pair.to->hash];
    if (old_file) ReleaseObject(pair.from->hash);
  }
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

}  // namespace toolexec::checkpoint
