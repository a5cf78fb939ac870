// Shared by the checkpoint store's pieces: store.cc (opening the store,
// taking, listing and dropping checkpoints), scan.cc (the walk of a
// workspace and its stat cache), diff.cc and restore.cc. Not an API.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_STORE_INTERNAL_H_
#define TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_STORE_INTERNAL_H_

#include <time.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "tools/workspace/walker.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/checkpoint/manifest.h"
#include "tools/workspace/checkpoint/store.h"

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

namespace internal {

inline int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Reads the open file `fd` to its end, at most `limit` bytes (0 = no limit);
// false on a read error or more than `limit` bytes.
bool ReadAll(int fd, uint64_t limit, std::string* out);

inline std::string Parent(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? "" : std::string(path.substr(0, slash));
}
inline std::string Base(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

// Opens the directory `rel` of the root without following symlinks: -1 with
// errno on failure.
inline int OpenDir(const fs::ConfinedRoot& root, absl::string_view rel) {
  return fs::OpenSubdirNoFollow(root.fd(), rel);
}

// The paths a request names, relative to the root: "" (or ".") selects all.
class PathFilter {
 public:
  static absl::StatusOr<PathFilter> Make(const std::vector<std::string>& paths,
                                         const std::string& root);
  bool all() const { return paths_.empty(); }
  bool Selects(absl::string_view path) const;

 private:
  std::vector<std::string> paths_;
};

// A pair of entries at one path, either side may be missing.
struct Pair {
  const Entry* from = nullptr;
  const Entry* to = nullptr;
};

// The changes from `a` to `b` among the paths `filter` selects, in path
// order, each with its entries.
std::vector<std::pair<FileChange, Pair>> Compare(const std::vector<Entry>& a,
                                                 const std::vector<Entry>& b,
                                                 const PathFilter& filter);

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

}  // namespace internal
}  // namespace toolexec::checkpoint

#endif  // TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_STORE_INTERNAL_H_
