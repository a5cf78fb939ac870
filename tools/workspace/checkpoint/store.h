// CheckpointStore: snapshots of a workspace tree, their differences, and
// putting a tree back as a snapshot had it.
//
// Take() walks the workspace with the workspace walker (workspace/walker.h: the
// same .gitignore, .ignore and .git/info/exclude rules as the search tools,
// hidden entries included, ".git" directories skipped) and writes a manifest
// (manifest.h). A file whose stat fields (size, mtime and ctime in ns, inode,
// device, mode) equal those the workspace's previous checkpoint recorded is
// taken to be unchanged and is not read, as git's index does; only new and
// changed files are read, hashed (SHA-256) and, when their content is new,
// stored once, compressed (objects.h). A file changed less than a
// millisecond (a second, on file systems with whole-second times) before the
// walk began is recorded as untrusted and read again next time, so a change
// that leaves size and mtime alike cannot be missed. So the cost of a
// checkpoint is one stat per entry plus reading what changed.
//
// Layout of store_dir (outside the workspace):
//   objects/<2 hex>/<62 hex>               file contents (objects.h)
//   sessions/<session dir>/<id>.manifest   one per checkpoint
// A store opened again (a restarted daemon) finds every checkpoint, and
// objects no manifest names (left by a crash) are removed. One daemon per
// store_dir. Neither objects nor manifests are fsynced (a checkpoint before
// every writing batch must not wait for the disk): checkpoints outlive the
// daemon, not a crash of the machine, and a damaged object is reported by
// the restore that needs it, never written.
//
// Bounds: after each Take the session keeps at most keep_per_session
// checkpoints and the store at most max_store_bytes (0 = no bound): the
// oldest are dropped first, the session's own for the first bound, any
// session's for the second; never the checkpoint just taken, and never one a
// running Restore or Diff uses (pinned).
//
// Restore(): first takes an undo checkpoint of the tree as it is, then
// deletes what the checkpoint did not have (deepest first), creates its
// directories, writes each file that differs with WriteFileAtomic (temp file,
// fsync, rename: a file is the old content or the new, never a mix), makes
// symlinks as links (temp name, rename), and sets modes, directories' last.
// Paths the checkpoint left out (ignored, too large, unreadable) are neither
// written nor deleted, and are reported. What the tree now leaves out is not
// deleted either, so a directory the checkpoint did not have that holds such
// an entry (a new package's __pycache__/) stays; where the checkpoint had a
// file or link instead, that one is not put back (RestoreResult::not_restored,
// LeftOutReason::kInTheWay). Every path resolves beneath the
// workspace without following symlinks (openat2 RESOLVE_NO_SYMLINKS or an
// O_NOFOLLOW walk): a link in the tree never leads a restore out of it.
//
// Restore and the file tools: a restore holds the write locks the file tools
// take (fs::FileWriteLock, tools/workspace/write_lock.h) of every path it
// deletes or writes, from before its changes until after the last, all taken
// at once by FileWriteLock::AcquireAll (one global order, so no deadlock with
// apply_patch's sets or single-file writers). So a write of another call (a
// session sharing the workspace, a parent or child) never interleaves with
// it: an edit that holds a file's lock finishes first. The locks are taken
// after the undo checkpoint, once the paths are known; a file or link another
// call wrote in between (its inode, size, mode or times no longer those the
// undo checkpoint recorded) makes the restore release them and start again
// from a new undo checkpoint, so the undo always holds what the restore
// replaces (the superseded undo checkpoint stays listed); after 4 tries it
// fails ABORTED with nothing changed. The missing directories of what it
// writes are made before locking (a lock's key is the file's directory), as
// a file tool makes them; only a path inside a directory the restore makes
// where a file or link is now goes unlocked. A restore is not cancelled
// while it waits: a holder's work is bounded local file I/O.
//
// A checkpoint covers the session's first (default) workspace root.
//
// Thread safety: every method may be called concurrently. Takes of one root
// run one at a time (they share its stat cache); dropping checkpoints waits
// for running Takes and Restores.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_STORE_H_
#define TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/checkpoint/manifest.h"
#include "tools/workspace/checkpoint/objects.h"

namespace toolexec::checkpoint {

struct CacheData;

struct StoreOptions {
  std::string store_dir;            // required; created if missing
  uint64_t max_store_bytes = 0;     // 0 = unbounded
  uint32_t keep_per_session = 0;    // 0 = unbounded
  uint64_t max_file_bytes = 0;      // larger files are left out; 0 = no limit
  bool include_ignored = false;     // also take what ignore files exclude
  int walk_threads = 0;             // 0 = the walker's default
};

// What a Take asks for.
struct TakeRequest {
  std::string session_id;
  std::string batch_id;
  std::vector<std::string> tools;
  std::string owner;  // CheckpointInfo::owner
};

// What one Take did (for metrics and tests).
struct TakeStats {
  uint64_t entries = 0;      // files, symlinks and directories recorded
  uint64_t files_read = 0;   // files whose content was read
  uint64_t bytes_read = 0;
  uint64_t bytes_stored = 0; // objects and manifest added to the store
  absl::Duration duration;
};

enum class ChangeKind { kAdded, kModified, kDeleted, kModeChanged, kTypeChanged };
const char* ChangeKindName(ChangeKind kind);  // "added", "modified", ...

// One path that differs. Directories end in "/".
struct FileChange {
  std::string path;
  ChangeKind kind = ChangeKind::kModified;
};

struct DiffResult {
  std::vector<FileChange> changes;  // sorted by path
  // git's format: "diff --git a/p b/p", mode lines, then `diff -u` hunks;
  // binary files are named ("Binary files a/p and b/p differ"), not shown.
  std::string unified_diff;
  bool diff_truncated = false;  // the text stopped at kMaxDiffBytes
};

struct RestoreResult {
  // What the restore changed (or, for a dry run, would change), as a change
  // from the tree as it was to the checkpoint's.
  std::vector<FileChange> changes;
  std::string undo_checkpoint_id;  // "" for a dry run
  TakeStats undo_stats;            // what taking the undo checkpoint cost
  // Paths the checkpoint left out, with why: a restore did not put them back.
  std::vector<LeftOut> not_restored;
};

// Judges the changes a restore is about to make; an error stops it before it
// changes anything.
using RestoreApproval = std::function<absl::Status(const std::vector<FileChange>& changes)>;

class CheckpointStore final {
 public:
  static constexpr size_t kMaxDiffBytes = 4 << 20;

  // Opens (creating) the store and reads every checkpoint in it.
  static absl::StatusOr<std::unique_ptr<CheckpointStore>> Open(StoreOptions options);

  // Snapshots `root` for `request.session_id`.
  absl::StatusOr<CheckpointInfo> Take(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                      const TakeRequest& request, TakeStats* stats = nullptr);

  // The session's checkpoints, oldest first.
  std::vector<CheckpointInfo> List(absl::string_view session_id) const;

  // From checkpoint `from_id` to `to_id` ("" = the tree now), limited to
  // `paths` (each a file or a directory, relative to the root; empty = all).
  // NotFound for an id the session does not have.
  absl::StatusOr<DiffResult> Diff(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                  absl::string_view session_id, absl::string_view from_id,
                                  absl::string_view to_id, const std::vector<std::string>& paths);

  // Puts `paths` (empty = all) of `root` back as checkpoint `id` of the
  // session had them. Unless `dry_run`, first takes an undo checkpoint
  // (`undo` names its batch and tools). `approve` (may be null) sees the
  // changes before any is made.
  absl::StatusOr<RestoreResult> Restore(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                        absl::string_view session_id, absl::string_view id,
                                        const std::vector<std::string>& paths, bool dry_run,
                                        const TakeRequest& undo, const RestoreApproval& approve);

  // Bytes the store holds (objects and manifests).
  uint64_t store_bytes() const;
  const StoreOptions& options() const { return options_; }

 private:
  struct RootCache;
  struct SessionIndex {
    std::vector<CheckpointInfo> checkpoints;  // oldest first
  };

  explicit CheckpointStore(StoreOptions options) : options_(std::move(options)) {}
  absl::Status Load();

  // Walks `root`: the manifest (without info) of the tree now. Reads files
  // the cache cannot vouch for; stores their content when `store` is set.
  absl::StatusOr<Manifest> Scan(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                const CacheData* cache, bool store, TakeStats* stats);
  // The stat cache of `cache` (seeded from disk the first time). The caller
  // holds cache.take_mu (not annotated: RootCache is incomplete here, which
  // clang's thread-safety analysis refuses).
  std::shared_ptr<const CacheData> CurrentCache(RootCache& cache);
  // Makes `manifest` the root's cache, moving its objects' uses. The caller
  // holds cache.take_mu.
  void InstallCache(RootCache& cache, std::shared_ptr<const Manifest> manifest);
  // One use fewer of each file of `m`; objects left unused are deleted at
  // the next Prune.
  void Release(const Manifest& m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseObject(const std::string& hash) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Manifest> LoadManifest(absl::string_view session_id, absl::string_view id) const;
  std::string ManifestPath(absl::string_view session_id, absl::string_view id) const;
  std::shared_ptr<RootCache> CacheFor(const std::string& root);
  // Drops checkpoints past the bounds, keeping `keep_id`.
  void Prune(const std::string& session_id, const std::string& keep_id);
  void Drop(const CheckpointInfo& info) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NotFound unless the session has checkpoint `id`.
  absl::Status CheckKnown(absl::string_view session_id, absl::string_view id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The content of a file of `m`, or (for the tree now) read from `root`.
  absl::StatusOr<std::string> Content(const Entry& e, const fs::ConfinedRoot* now_root) const;

  const StoreOptions options_;
  std::unique_ptr<ObjectStore> objects_;
  // Held shared by Takes, Restores and Diffs while they use objects; held
  // exclusively to drop checkpoints (and delete their objects).
  mutable absl::Mutex gc_mu_;
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(gc_mu_);
  absl::flat_hash_map<std::string, SessionIndex> sessions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint32_t> refs_ ABSL_GUARDED_BY(mu_);  // object -> uses
  absl::flat_hash_map<std::string, int> pins_ ABSL_GUARDED_BY(mu_);       // checkpoint -> users
  absl::flat_hash_map<std::string, std::shared_ptr<RootCache>> caches_ ABSL_GUARDED_BY(mu_);
  uint64_t store_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_id_ns_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> unused_ ABSL_GUARDED_BY(mu_);  // objects whose uses fell to 0
};

}  // namespace toolexec::checkpoint

#endif  // TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_STORE_H_
