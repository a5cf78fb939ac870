// CheckpointStore::Restore: puts a tree back as a checkpoint had it, under
// the file tools' write locks, after an undo checkpoint. See store.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/cancellation.h"
#include "tools/workspace/checkpoint/store.h"
#include "tools/workspace/checkpoint/store_internal.h"
#include "tools/workspace/write_lock.h"

namespace toolexec::checkpoint {
namespace {

using internal::Base;
using internal::Compare;
using internal::Nanos;
using internal::OpenDir;
using internal::Pair;
using internal::Parent;
using internal::PathFilter;
using internal::Pins;

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
    // Directories that hold what the tree now leaves out (ignored, too large,
    // unreadable: content made since the checkpoint, which a restore never
    // deletes) stay, though the checkpoint did not have them.
    absl::flat_hash_set<std::string> holding;
    for (const LeftOut& l : current->left_out) {
      for (std::string dir = Parent(l.path); !dir.empty() && holding.insert(dir).second;
           dir = Parent(dir)) {
      }
    }
    for (auto& step : Compare(current->entries, target->entries, *filter)) {
      const Pair& p = step.second;
      // What the checkpoint left out is neither deleted nor replaced.
      if (p.to == nullptr && UnderLeftOut(left_out, p.from->path)) continue;
      if (p.from != nullptr && p.from->type == EntryType::kDir && holding.contains(p.from->path)) {
        if (p.to == nullptr) continue;
        if (p.to->type != EntryType::kDir) {
          // Its file or link cannot come back without deleting that content.
          result.not_restored.push_back(LeftOut{p.to->path, LeftOutReason::kInTheWay, 0});
          continue;
        }
      }
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
