// The directory walk: listing directories (getdents64), the parallel walk
// with its filters, and Walk. The ignore rules it applies are in
// ignore_rules.cc. See walker.h.
#include "tools/workspace/walker.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <system_error>
#include <thread>
#include <utility>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "tools/runtime/executor.h"

namespace toolexec::fs {
namespace {

constexpr size_t kFileBatch = 32;
constexpr size_t kDentsBufferBytes = 64 * 1024;

// The kernel's getdents64 record.
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

struct RawEntry {
  std::string name;
  unsigned char type;
};

using SharedFd = std::shared_ptr<const UniqueFd>;

// Lists an open directory. False (errno set) on failure.
bool ListDirectory(int fd, std::vector<char>& buf, std::vector<RawEntry>* out) {
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf.data(), buf.size());
    if (n < 0) return false;
    if (n == 0) return true;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const LinuxDirent64*>(buf.data() + off);
      off += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      out->push_back(RawEntry{name, d->d_type});
    }
  }
}

EntryKind KindOf(int dir_fd, const RawEntry& e) {
  unsigned char type = e.type;
  if (type == DT_UNKNOWN) {
    struct stat st;
    if (fstatat(dir_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return EntryKind::kOther;
    if (S_ISREG(st.st_mode)) return EntryKind::kFile;
    if (S_ISDIR(st.st_mode)) return EntryKind::kDir;
    if (S_ISLNK(st.st_mode)) return EntryKind::kSymlink;
    return EntryKind::kOther;
  }
  switch (type) {
    case DT_REG:
      return EntryKind::kFile;
    case DT_DIR:
      return EntryKind::kDir;
    case DT_LNK:
      return EntryKind::kSymlink;
    default:
      return EntryKind::kOther;
  }
}

// One unit of work: a directory to list, or files of one directory to visit.
struct DirWork {
  SharedFd parent;  // null for the start directory
  std::string name;
  std::string path;  // workspace-relative
  std::shared_ptr<const IgnoreRules> ignore;
  int depth = 0;  // of the directory itself; the start directory is 0
};
struct FileWork {
  SharedFd dir;
  std::vector<std::pair<std::string, std::string>> files;  // name, workspace-relative path
  int depth = 1;
};
using Work = std::variant<DirWork, FileWork>;

// The helper threads of all walks in the process come from one budget (see
// walker.h), taken without waiting: a walk that finds it spent walks with
// fewer helpers, or on the calling thread alone.
std::atomic<int> helper_budget{kMaxWalkHelperThreads};

int TakeHelpers(int want) {
  int available = helper_budget.load();
  int take;
  do {
    take = std::clamp(want, 0, available);
  } while (take > 0 && !helper_budget.compare_exchange_weak(available, available - take));
  return take;
}

class ParallelWalk {
 public:
  ParallelWalk(const ConfinedPath& start, const WalkOptions& options, const WalkVisitor& visit,
               int threads)
      : start_(start), options_(options), visit_(visit), threads_(threads) {
    start_prefix_ = start.relative.empty() ? 0 : start.relative.size() + 1;
  }

  absl::StatusOr<WalkStats> Run(std::shared_ptr<const IgnoreRules> ancestors) {
    Push(DirWork{nullptr, "", start_.relative, std::move(ancestors), 0});
    // Sized once and never grown, so no started thread is moved or destroyed
    // before it is joined. A helper the system refuses (task or address-space
    // limit) just leaves the walk with fewer workers.
    std::vector<std::thread> helpers;
    const int granted = TakeHelpers(threads_ - 1);
    try {
      helpers.resize(static_cast<size_t>(granted));
    } catch (const std::bad_alloc&) {
      // The calling thread walks alone.
    }
    int worker = 0;
    for (std::thread& helper : helpers) {
      absl::StatusOr<std::thread> started = StartThread([this, i = worker + 1] { WorkerLoop(i); });
      if (!started.ok()) break;
      helper = *std::move(started);
      ++worker;
    }
    WorkerLoop(0);
    for (std::thread& helper : helpers) {
      if (helper.joinable()) helper.join();
    }
    helper_budget.fetch_add(granted);
    if (failure_ != nullptr) std::rethrow_exception(failure_);
    if (Cancelled()) return absl::CancelledError("the search was cancelled");
    if (!start_listed_) return start_error_;
    WalkStats stats;
    stats.dirs = dirs_.load();
    stats.files = files_.load();
    stats.unreadable = unreadable_.load();
    stats.left_out = left_out_.load();
    return stats;
  }

 private:
  // Stop early when the call is cancelled or a worker failed.
  bool Cancelled() const {
    return failed_.load() || (options_.cancellation && options_.cancellation->cancelled());
  }

  void Push(Work work) {
    absl::MutexLock lock(&mu_);
    stack_.push_back(std::move(work));
  }

  bool Pop(Work* out) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &ParallelWalk::HasWorkOrFinished));
    if (stack_.empty()) return false;  // nothing queued and nobody can add more
    *out = std::move(stack_.back());
    stack_.pop_back();
    ++active_;
    return true;
  }

  bool HasWorkOrFinished() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !stack_.empty() || active_ == 0;
  }

  void Done() {
    absl::MutexLock lock(&mu_);
    --active_;
  }

  // Never throws: what a unit of work throws (the visitor, or memory running
  // out under an address-space limit) stops the walk, and Run rethrows the
  // first such exception on the calling thread once every helper is joined.
  void WorkerLoop(int worker) {
    std::vector<char> dents;
    Work work;
    while (Pop(&work)) {
      if (!Cancelled()) {
        try {
          if (auto* dir = std::get_if<DirWork>(&work)) {
            if (dents.empty()) dents.resize(kDentsBufferBytes);
            ListDir(*dir, dents, worker);
          } else {
            VisitFiles(std::get<FileWork>(work), worker);
          }
        } catch (...) {
          Fail(std::current_exception());
        }
      }
      work = Work();  // release descriptors before waiting for more
      Done();
    }
  }

  void Fail(std::exception_ptr e) {
    absl::MutexLock lock(&mu_);
    if (failure_ == nullptr) failure_ = std::move(e);
    failed_.store(true);
  }

  // Applies the filters; true if the entry is kept.
  bool Keep(absl::string_view name, absl::string_view path, bool is_dir,
            const IgnoreRules* ignore) const {
    if (is_dir && name == ".git") return false;
    if (options_.overrides != nullptr) {
      const GlobPattern* p = options_.overrides->Match(path.substr(start_prefix_), is_dir);
      if (p != nullptr) {
        if (p->negated) return false;
        return true;  // a positive glob wins over hidden and ignore rules
      }
      if (!is_dir && options_.overrides->has_positive()) return false;
    }
    if (options_.skip_hidden && !name.empty() && name.front() == '.') return false;
    if (ignore != nullptr && options_.use_ignore_files &&
        ignore->Match(path, is_dir) == IgnoreRules::Verdict::kIgnore) {
      if (options_.ignored != nullptr && *options_.ignored) (*options_.ignored)(path, is_dir);
      return false;
    }
    return true;
  }

  void ListDir(DirWork& dir, std::vector<char>& dents, int worker) {
    int fd = -1;
    if (dir.parent == nullptr) {
      fd = openat(start_.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
      fd = openat(dir.parent->get(), dir.name.c_str(),
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    std::vector<RawEntry> raw;
    if (fd < 0) {
      if (dir.depth == 0) SetStartError(errno);
      ++unreadable_;
      return;
    }
    auto shared = std::make_shared<const UniqueFd>(fd);
    dir.parent.reset();  // the parent is not needed once this one is open
    if (!ListDirectory(fd, dents, &raw)) {
      if (dir.depth == 0) SetStartError(errno);
      ++unreadable_;
      return;
    }
    if (dir.depth == 0) start_listed_ = true;
    ++dirs_;

    std::shared_ptr<const IgnoreRules> ignore = dir.ignore;
    if (options_.use_ignore_files) {
      std::vector<std::string> names;
      for (const RawEntry& e : raw) {
        if (e.name.front() == '.') names.push_back(e.name);
      }
      if (!names.empty()) ignore = LoadIgnoreRules(fd, dir.path, names, std::move(ignore));
    }

    const int child_depth = dir.depth + 1;
    FileWork batch{shared, {}, child_depth};
    std::string path;
    for (const RawEntry& e : raw) {
      const EntryKind kind = KindOf(fd, e);
      if (kind == EntryKind::kOther) continue;
      path = JoinRelative(dir.path, e.name);
      const bool is_dir = kind == EntryKind::kDir;
      if (!Keep(e.name, path, is_dir, ignore.get())) continue;
      if (kind == EntryKind::kDir) {
        if (options_.visit_dirs) VisitOne(fd, e.name, path, kind, child_depth, worker);
        if (options_.max_depth == 0 || child_depth < options_.max_depth) {
          Push(DirWork{shared, e.name, path, ignore, child_depth});
        }
      } else if (kind == EntryKind::kSymlink) {
        if (options_.visit_symlinks) VisitOne(fd, e.name, path, kind, child_depth, worker);
      } else {
        batch.files.emplace_back(e.name, std::move(path));
        if (batch.files.size() == kFileBatch) {
          Push(std::move(batch));
          batch = FileWork{shared, {}, child_depth};
        }
      }
    }
    if (!batch.files.empty()) Push(std::move(batch));
  }

  void VisitFiles(const FileWork& work, int worker) {
    for (const auto& [name, path] : work.files) {
      if (Cancelled()) return;
      if (LeftOut(path)) continue;
      ++files_;
      VisitOne(work.dir->get(), name, path, EntryKind::kFile, work.depth, worker);
    }
  }

  // The policy keeps the entry at `path` (relative to the root) from the
  // visitor; counted.
  bool LeftOut(absl::string_view path) {
    if (options_.left_out == nullptr || !*options_.left_out) return false;
    const std::string& root = start_.root->path();
    if (!(*options_.left_out)(absl::StrCat(root, root == "/" ? "" : "/", path))) return false;
    ++left_out_;
    return true;
  }

  void VisitOne(int dir_fd, absl::string_view name, absl::string_view path, EntryKind kind,
                int depth, int worker) {
    if (kind != EntryKind::kFile && LeftOut(path)) return;  // files: in VisitFiles
    WalkEntry entry;
    entry.dir_fd = dir_fd;
    entry.name = name;
    entry.path = path;
    entry.start_path = path.substr(std::min(start_prefix_, path.size()));
    entry.kind = kind;
    entry.depth = depth;
    visit_(entry, worker);
  }

  void SetStartError(int err) {
    absl::MutexLock lock(&mu_);
    start_error_ = ErrnoStatus(err, start_.Display(start_.relative), "listing");
  }

  const ConfinedPath& start_;
  const WalkOptions& options_;
  const WalkVisitor& visit_;
  const int threads_;
  size_t start_prefix_ = 0;

  absl::Mutex mu_;
  std::vector<Work> stack_ ABSL_GUARDED_BY(mu_);
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status start_error_ = absl::UnknownError("the start directory was not listed");
  std::atomic<bool> start_listed_{false};
  std::atomic<bool> failed_{false};
  std::exception_ptr failure_;  // written under mu_, read after the helpers joined
  std::atomic<uint64_t> dirs_{0};
  std::atomic<uint64_t> files_{0};
  std::atomic<uint64_t> unreadable_{0};
  std::atomic<uint64_t> left_out_{0};
};

// `base` and the ignore rules of the directories from the workspace root
// down to (not including) `rel`, read through the workspace descriptor.
std::shared_ptr<const IgnoreRules> AncestorRules(std::shared_ptr<const IgnoreRules> base,
                                                 int workspace_fd, absl::string_view rel) {
  std::shared_ptr<const IgnoreRules> rules = std::move(base);
  if (rel.empty()) return rules;
  std::vector<absl::string_view> parts = absl::StrSplit(rel, '/');
  parts.pop_back();  // the start directory reads its own
  std::string dir;
  UniqueFd cur(openat(workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (size_t i = 0;; ++i) {
    if (!cur.valid()) return rules;
    const std::vector<std::string> names = {".rgignore", ".ignore", ".gitignore", ".git"};
    rules = LoadIgnoreRules(cur.get(), dir, names, std::move(rules));
    if (i == parts.size()) return rules;
    dir = JoinRelative(dir, parts[i]);
    cur.reset(openat(cur.get(), std::string(parts[i]).c_str(),
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
}

}  // namespace

bool ReadEntries(int dir_fd, std::vector<DirEntry>* out) {
  std::vector<char> buf(kDentsBufferBytes);
  std::vector<RawEntry> raw;
  if (!ListDirectory(dir_fd, buf, &raw)) return false;
  out->reserve(out->size() + raw.size());
  for (RawEntry& e : raw) {
    const EntryKind kind = KindOf(dir_fd, e);
    out->push_back(DirEntry{std::move(e.name), kind});
  }
  return true;
}

int OpenSubdirNoFollow(int base_fd, absl::string_view rel) {
  const std::string path(rel.empty() ? "." : rel);
  const long fd = Openat2(base_fd, path.c_str(), O_RDONLY | O_DIRECTORY,
                              RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
  UniqueFd cur(openat(base_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (absl::string_view part : absl::StrSplit(rel, '/', absl::SkipEmpty())) {
    if (!cur.valid()) return -1;
    if (part == "..") {
      errno = EXDEV;
      return -1;
    }
    cur.reset(openat(cur.get(), std::string(part).c_str(),
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  return cur.release();
}

int DefaultWalkThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(n, 1u, 12u));
}

absl::StatusOr<WalkStats> Walk(const ConfinedPath& start, const WalkOptions& options,
                               const WalkVisitor& visit) {
  if (!start.is_dir) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", start.Display(start.relative), "' is a file, not a directory"));
  }
  std::shared_ptr<const IgnoreRules> ancestors;
  if (options.use_ignore_files) {
    ancestors =
        AncestorRules(RepositoryRules(start.root->path()), start.root->fd(), start.relative);
  }
  ParallelWalk walk(start, options, visit, WalkThreads(options));
  return walk.Run(std::move(ancestors));
}

}  // namespace toolexec::fs
