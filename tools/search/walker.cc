#include "tools/search/walker.h"

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
#include <initializer_list>
#include <new>
#include <system_error>
#include <thread>
#include <utility>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "tools/runtime/executor.h"

namespace toolexec::search {
namespace {

constexpr size_t kMaxIgnoreFileBytes = 1 << 20;
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

// Reads a small regular file at `name` under `dir_fd` (without following a
// symlink unless `follow`); empty if absent, not regular or unreadable.
std::string ReadSmallFile(int dir_fd, const char* name, bool follow = false) {
  UniqueFd fd(openat(dir_fd, name,
                     O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (follow ? 0 : O_NOFOLLOW)));
  if (!fd.valid()) return "";
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  std::string text(std::min<size_t>(static_cast<size_t>(st.st_size), kMaxIgnoreFileBytes), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

std::unique_ptr<GlobSet> ParseIgnoreFile(absl::string_view text) {
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");  // git skips a UTF-8 byte order mark
  std::vector<GlobPattern> patterns;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (std::optional<GlobPattern> p = ParseGitignoreLine(line)) patterns.push_back(std::move(*p));
  }
  if (patterns.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<GlobSet>> set = GlobSet::Create(std::move(patterns), true);
  if (!set.ok() || (*set)->empty()) return nullptr;
  return *std::move(set);
}

// The directory git keeps a repository's shared files in (info/exclude,
// config) for the ".git" entry of `dir_fd`: ".git" itself, or what a ".git"
// file ("gitdir: <path>", a linked worktree or submodule) points to, and its
// "commondir" when it has one. Invalid if there is none.
UniqueFd OpenGitCommonDir(int dir_fd) {
  UniqueFd git(openat(dir_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (git.valid()) return git;
  std::string pointer = ReadSmallFile(dir_fd, ".git");
  absl::string_view target = absl::StripAsciiWhitespace(pointer);
  if (!absl::ConsumePrefix(&target, "gitdir:")) return UniqueFd();
  target = absl::StripAsciiWhitespace(target);
  if (target.empty()) return UniqueFd();
  git.reset(openat(dir_fd, std::string(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!git.valid()) return git;
  const std::string common = ReadSmallFile(git.get(), "commondir");
  const absl::string_view common_path = absl::StripAsciiWhitespace(common);
  if (common_path.empty()) return git;
  UniqueFd shared(
      openat(git.get(), std::string(common_path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return shared.valid() ? std::move(shared) : std::move(git);
}

// The repository's info/exclude for the ".git" entry of `dir_fd`.
std::string ReadGitExclude(int dir_fd) {
  UniqueFd git = OpenGitCommonDir(dir_fd);
  if (!git.valid()) return "";
  UniqueFd info(openat(git.get(), "info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!info.valid()) return "";
  return ReadSmallFile(info.get(), "exclude");
}

std::string Env(const char* name) {
  const char* v = getenv(name);
  return v == nullptr ? "" : v;
}

// git's reading of a boolean environment variable that is set.
bool EnvTrue(const char* name) {
  const std::string v = absl::AsciiStrToLower(Env(name));
  return !v.empty() && v != "0" && v != "false" && v != "no" && v != "off";
}

// A git config value: quotes removed, escapes resolved, comments dropped.
std::string ConfigValue(absl::string_view raw) {
  std::string out;
  size_t keep = 0;  // length of `out` without trailing unquoted whitespace
  bool quoted = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '"') {
      quoted = !quoted;
      keep = out.size();
    } else if (c == '\\' && i + 1 < raw.size()) {
      const char e = raw[++i];
      out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'b' ? '\b' : e);
      keep = out.size();
    } else if (!quoted && (c == '#' || c == ';')) {
      break;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (!out.empty()) out.push_back(c);
    } else {
      out.push_back(c);
      keep = out.size();
    }
  }
  out.resize(keep);
  return out;
}

// Sets *value to the last core.excludesFile in the git config text, if any.
void FindExcludesFile(absl::string_view text, std::string* value) {
  bool in_core = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && line.front() == '[') {
      const size_t close = line.find(']');
      if (close == absl::string_view::npos) continue;
      in_core = absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(1, close - 1)), "core");
      line = absl::StripAsciiWhitespace(line.substr(close + 1));
    }
    if (!in_core || line.empty() || line.front() == '#' || line.front() == ';') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(0, eq)), "excludesfile")) {
      continue;
    }
    *value = ConfigValue(absl::StripLeadingAsciiWhitespace(line.substr(eq + 1)));
  }
}

// The global excludes file git uses for the repository at `repo` (whose
// shared git directory is `git_fd`, or -1 when its config is not to be read).
std::string GlobalExcludesPath(const std::string& repo, int git_fd) {
  const std::string home = Env("HOME");
  const std::string xdg = Env("XDG_CONFIG_HOME");
  const std::string xdg_git = !xdg.empty() ? xdg + "/git" : home.empty() ? "" : home + "/.config/git";
  std::string value;
  if (!EnvTrue("GIT_CONFIG_NOSYSTEM")) {
    const std::string system = Env("GIT_CONFIG_SYSTEM");
    FindExcludesFile(ReadSmallFile(AT_FDCWD, system.empty() ? "/etc/gitconfig" : system.c_str(),
                                   true),
                     &value);
  }
  if (const char* global = getenv("GIT_CONFIG_GLOBAL"); global != nullptr) {
    if (*global != '\0') FindExcludesFile(ReadSmallFile(AT_FDCWD, global, true), &value);
  } else {
    if (!xdg_git.empty()) {
      FindExcludesFile(ReadSmallFile(AT_FDCWD, (xdg_git + "/config").c_str(), true), &value);
    }
    if (!home.empty()) {
      FindExcludesFile(ReadSmallFile(AT_FDCWD, (home + "/.gitconfig").c_str(), true), &value);
    }
  }
  if (git_fd >= 0) FindExcludesFile(ReadSmallFile(git_fd, "config", true), &value);
  if (value.empty()) return xdg_git.empty() ? "" : xdg_git + "/ignore";
  if (absl::StartsWith(value, "~/")) return home.empty() ? "" : home + value.substr(1);
  if (value.front() != '/') return repo + "/" + value;  // git runs at the top of the work tree
  return value;
}

// The patterns of the ignore files `files` (in precedence order) of `dir_fd`.
std::vector<std::unique_ptr<GlobSet>> ReadIgnoreSets(int dir_fd,
                                                     std::initializer_list<const char*> files) {
  std::vector<std::unique_ptr<GlobSet>> sets;
  for (const char* file : files) {
    if (auto set = ParseIgnoreFile(ReadSmallFile(dir_fd, file))) sets.push_back(std::move(set));
  }
  return sets;
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
            ListDir(*dir, dents);
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
      return false;
    }
    return true;
  }

  void ListDir(DirWork& dir, std::vector<char>& dents) {
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
        if (options_.visit_dirs) VisitOne(fd, e.name, path, kind, child_depth, 0);
        if (options_.max_depth == 0 || child_depth < options_.max_depth) {
          Push(DirWork{shared, e.name, path, ignore, child_depth});
        }
      } else if (kind == EntryKind::kSymlink) {
        if (options_.visit_symlinks) VisitOne(fd, e.name, path, kind, child_depth, 0);
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
    start_error_ = fs::ErrnoStatus(err, start_.Display(start_.relative), "listing");
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
  const long fd = fs::Openat2(base_fd, path.c_str(), O_RDONLY | O_DIRECTORY,
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

struct IgnoreRules::NameIndex {
  struct Best {
    Decision file;  // without directory-only patterns
    Decision dir;
  };
  absl::flat_hash_map<std::string, Best> names;
  std::vector<std::pair<std::string, Best>> suffixes;
};

IgnoreRules::IgnoreRules(std::shared_ptr<const IgnoreRules> parent, absl::string_view dir,
                         std::vector<std::unique_ptr<GlobSet>> sets)
    : parent_(std::move(parent)),
      strip_(dir.empty() ? 0 : dir.size() + 1),
      depth_(dir.empty() ? 0 : 1 + static_cast<int>(std::count(dir.begin(), dir.end(), '/'))),
      level_(parent_ ? parent_->level_ + 1 : 1),
      sets_(std::move(sets)) {
  std::shared_ptr<NameIndex> names;
  bool has_other = false;
  std::vector<std::string> own_suffixes;
  for (size_t s = 0; s < sets_.size(); ++s) {
    const std::vector<GlobPattern>& patterns = sets_[s]->patterns();
    for (size_t i = 0; i < patterns.size(); ++i) {
      const GlobPattern& p = patterns[i];
      const GlobSet::Kind kind = GlobSet::KindOf(p);
      if (kind == GlobSet::kFixedPath) {
        has_fixed_ = true;
        fixed_lengths_ |= uint64_t{1} << p.components;
        continue;
      }
      if (kind != GlobSet::kNameLiteral) {
        has_other = true;
        if (p.anchored || p.suffix.empty()) {
          other_unfiltered_ = true;
        } else if (std::find(own_suffixes.begin(), own_suffixes.end(), p.suffix) ==
                   own_suffixes.end()) {
          own_suffixes.push_back(p.suffix);
        }
        continue;
      }
      if (names == nullptr) {
        names = parent_ && parent_->names_ ? std::make_shared<NameIndex>(*parent_->names_)
                                           : std::make_shared<NameIndex>();
      }
      NameIndex::Best* best = nullptr;
      if (p.form == GlobPattern::Form::kLiteral) {
        best = &names->names[p.literal];
      } else {
        for (auto& [suffix, b] : names->suffixes) {
          if (suffix == p.literal) best = &b;
        }
        if (best == nullptr) best = &names->suffixes.emplace_back(p.literal, NameIndex::Best()).second;
      }
      const Decision d{&p, (level_ << 32) | ((sets_.size() - 1 - s) << 24) | i};
      if (!p.dir_only && d.rank > best->file.rank) best->file = d;
      if (d.rank > best->dir.rank) best->dir = d;
    }
  }
  names_ = names != nullptr ? std::move(names) : parent_ ? parent_->names_ : nullptr;
  if (parent_) fixed_lengths_ |= parent_->fixed_lengths_;
  other_ = has_other ? this : parent_ ? parent_->other_ : nullptr;
  if (parent_) other_unfiltered_ |= parent_->other_unfiltered_;
  other_suffixes_ = parent_ ? parent_->other_suffixes_ : nullptr;
  if (!own_suffixes.empty()) {
    auto merged = other_suffixes_ ? std::make_shared<std::vector<std::string>>(*other_suffixes_)
                                  : std::make_shared<std::vector<std::string>>();
    for (std::string& suffix : own_suffixes) {
      if (std::find(merged->begin(), merged->end(), suffix) == merged->end()) {
        merged->push_back(std::move(suffix));
      }
    }
    other_suffixes_ = std::move(merged);
  }
}

std::shared_ptr<const IgnoreRules> IgnoreRules::Above(std::shared_ptr<const IgnoreRules> parent,
                                                      std::string lead,
                                                      std::vector<std::unique_ptr<GlobSet>> sets) {
  auto rules = std::make_shared<IgnoreRules>(std::move(parent), "", std::move(sets));
  if (!lead.empty()) {
    rules->depth_ = -1 - static_cast<int>(std::count(lead.begin(), lead.end(), '/'));
    rules->lead_ = std::move(lead);
  }
  return rules;
}

IgnoreRules::Decision IgnoreRules::MatchLevel(const GlobTarget& whole, absl::string_view path,
                                              bool is_dir, unsigned kinds) const {
  GlobTarget target = whole;
  std::string joined;
  if (!lead_.empty()) {
    joined = absl::StrCat(lead_, "/", path);
    target.path = joined;
  } else {
    if (path.size() <= strip_) return Decision();
    target.path = path.substr(strip_);
  }
  target.components = whole.components - depth_;
  for (size_t s = 0; s < sets_.size(); ++s) {
    if (const GlobPattern* p = sets_[s]->Match(target, is_dir, kinds)) {
      const uint64_t index = static_cast<uint64_t>(p - sets_[s]->patterns().data());
      return Decision{p, (level_ << 32) | ((sets_.size() - 1 - s) << 24) | index};
    }
  }
  return Decision();
}

IgnoreRules::Verdict IgnoreRules::Match(absl::string_view path, bool is_dir) const {
  const GlobTarget whole = MakeGlobTarget(path);
  Decision best;
  auto consider = [&best](const Decision& d) {
    if (d.pattern != nullptr && d.rank > best.rank) best = d;
  };
  if (names_ != nullptr) {
    auto pick = [is_dir](const NameIndex::Best& b) { return is_dir ? b.dir : b.file; };
    if (auto it = names_->names.find(whole.name); it != names_->names.end()) consider(pick(it->second));
    for (const auto& [suffix, b] : names_->suffixes) {
      if (absl::EndsWith(whole.name, suffix)) consider(pick(b));
    }
  }
  for (uint64_t lengths = fixed_lengths_; lengths != 0; lengths &= lengths - 1) {
    const int level_depth = whole.components - __builtin_ctzll(lengths);
    for (const IgnoreRules* r = this; r != nullptr && r->depth_ >= level_depth;
         r = r->parent_.get()) {
      if (r->depth_ == level_depth && r->has_fixed_) {
        consider(r->MatchLevel(whole, path, is_dir, GlobSet::kFixedPath));
      }
    }
  }
  bool others_may_match = other_unfiltered_;
  for (size_t i = 0; !others_may_match && other_suffixes_ && i < other_suffixes_->size(); ++i) {
    others_may_match = absl::EndsWith(whole.name, (*other_suffixes_)[i]);
  }
  for (const IgnoreRules* r = others_may_match ? other_ : nullptr; r != nullptr;
       r = r->parent_ != nullptr ? r->parent_->other_ : nullptr) {
    if ((best.rank >> 32) > r->level_) break;  // a deeper level decided already
    const Decision d = r->MatchLevel(whole, path, is_dir, GlobSet::kOther);
    if (d.pattern != nullptr) {
      consider(d);
      break;
    }
  }
  if (best.pattern == nullptr) return Verdict::kNone;
  return best.pattern->negated ? Verdict::kWhitelist : Verdict::kIgnore;
}

std::shared_ptr<const IgnoreRules> RepositoryRules(const std::string& root) {
  // The repository: the nearest directory at or above the root with a .git.
  std::string repo = root;
  for (;;) {
    struct stat st;
    const std::string git = (repo == "/" ? "" : repo) + "/.git";
    if (lstat(git.c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) break;
    if (repo == "/" || repo.empty()) return nullptr;  // not in a repository
    const size_t slash = repo.rfind('/');
    repo = slash == 0 ? "/" : repo.substr(0, slash);
  }
  const bool inside = repo == root;  // the walk reads the root's own files
  UniqueFd repo_fd(open(repo.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!repo_fd.valid()) return nullptr;
  UniqueFd git;
  if (!inside) git = OpenGitCommonDir(repo_fd.get());

  std::shared_ptr<const IgnoreRules> rules;
  const std::string lead = inside ? "" : root.substr(repo == "/" ? 1 : repo.size() + 1);
  const std::string excludes = GlobalExcludesPath(repo, git.valid() ? git.get() : -1);
  if (!excludes.empty()) {
    if (auto set = ParseIgnoreFile(ReadSmallFile(AT_FDCWD, excludes.c_str(), true))) {
      std::vector<std::unique_ptr<GlobSet>> sets;
      sets.push_back(std::move(set));
      rules = IgnoreRules::Above(nullptr, lead, std::move(sets));
    }
  }
  if (inside) return rules;
  // From the repository's top down to the root's parent, each directory's
  // ignore files; the top's after them its info/exclude.
  std::vector<absl::string_view> parts = absl::StrSplit(lead, '/');
  UniqueFd dir = std::move(repo_fd);
  for (size_t i = 0; i < parts.size() && dir.valid(); ++i) {
    std::vector<std::unique_ptr<GlobSet>> sets =
        ReadIgnoreSets(dir.get(), {".rgignore", ".ignore", ".gitignore"});
    if (i == 0) {
      if (auto set = ParseIgnoreFile(ReadGitExclude(dir.get()))) sets.push_back(std::move(set));
    }
    if (!sets.empty()) {
      rules = IgnoreRules::Above(std::move(rules), absl::StrJoin(parts.begin() + i, parts.end(), "/"),
                                 std::move(sets));
    }
    dir.reset(openat(dir.get(), std::string(parts[i]).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  return rules;
}

std::shared_ptr<const IgnoreRules> LoadIgnoreRules(int dir_fd, absl::string_view dir_path,
                                                   const std::vector<std::string>& names,
                                                   std::shared_ptr<const IgnoreRules> parent) {
  auto has = [&](absl::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<std::unique_ptr<GlobSet>> sets;
  for (const char* file : {".rgignore", ".ignore", ".gitignore"}) {
    if (!has(file)) continue;
    if (auto set = ParseIgnoreFile(ReadSmallFile(dir_fd, file))) sets.push_back(std::move(set));
  }
  if (has(".git")) {
    if (auto set = ParseIgnoreFile(ReadGitExclude(dir_fd))) sets.push_back(std::move(set));
  }
  if (sets.empty()) return parent;
  return std::make_shared<const IgnoreRules>(std::move(parent), dir_path, std::move(sets));
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

}  // namespace toolexec::search
