#include "tools/process/pids_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/process/reaper.h"

namespace toolexec::command {
namespace {

constexpr absl::string_view kPrefix = "toolexec-";

bool HasWord(absl::string_view list, absl::string_view word, char sep) {
  for (absl::string_view w : absl::StrSplit(list, sep)) {
    if (absl::StripAsciiWhitespace(w) == word) return true;
  }
  return false;
}

absl::Status WriteFile(const std::string& path, absl::string_view text) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid() ||
      write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write \"", text, "\" to ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status Unavailable(absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(
      "run_command.rlimit_processes cannot be enforced here: ", why,
      ". toolexec limits a command's processes with a pids cgroup of its own (RLIMIT_NPROC "
      "counts every process of the daemon's user, its own threads included, and nothing at all "
      "for root). Run the daemon where it can create cgroups below its own pids cgroup (cgroup "
      "v1: a writable pids hierarchy; cgroup v2: a delegated cgroup with the pids controller), "
      "or remove rlimit_processes"));
}

// A mount of /proc/self/mountinfo: "id parent major:minor root mount-point
// options ... - fstype source super-options".
struct CgroupMount {
  std::string root;
  std::string point;
};

// The cgroup v1 mount carrying the pids controller and the cgroup2 mount.
void FindMounts(CgroupMount* v1_pids, CgroupMount* v2) {
  for (absl::string_view line : absl::StrSplit(ReadSmallFile("/proc/self/mountinfo"), '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash < 5 || dash + 3 >= f.size()) continue;
    if (f[dash + 1] == "cgroup" && HasWord(f[dash + 3], "pids", ',') && v1_pids->point.empty()) {
      *v1_pids = {std::string(f[3]), std::string(f[4])};
    } else if (f[dash + 1] == "cgroup2" && v2->point.empty()) {
      *v2 = {std::string(f[3]), std::string(f[4])};
    }
  }
}

// The directory of cgroup `path` (from /proc/self/cgroup) under `mount`, or
// "" if the mount does not show it.
std::string DirectoryOf(const CgroupMount& mount, absl::string_view path) {
  absl::string_view rest = path;
  if (mount.root != "/") {
    if (!absl::ConsumePrefix(&rest, mount.root)) return "";
    if (!rest.empty() && rest[0] != '/') return "";
  }
  std::string dir = absl::StrCat(mount.point, rest);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// Removes the (empty) command cgroups of daemons that are gone; a cgroup
// that still has processes stays (rmdir refuses it).
void RemoveStaleCgroups(const std::string& parent) {
  DIR* d = opendir(parent.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (struct dirent* e = readdir(d)) {
    absl::string_view run_id = e->d_name;
    if (absl::ConsumePrefix(&run_id, kPrefix) && !OwnerAlive(run_id)) {
      stale.push_back(absl::StrCat(parent, "/", e->d_name));
    }
  }
  closedir(d);
  for (const std::string& dir : stale) rmdir(dir.c_str());
}

}  // namespace

CommandCgroup::~CommandCgroup() {
  procs_.reset();
  // The last exits may still be leaving the cgroup for a moment.
  for (int i = 0; i < 100; ++i) {
    if (rmdir(path_.c_str()) == 0 || errno != EBUSY) return;
    absl::SleepFor(absl::Milliseconds(2));
  }
}

absl::StatusOr<std::shared_ptr<const PidsCgroups>> PidsCgroups::Find(uint64_t max_processes) {
  CgroupMount v1, v2;
  FindMounts(&v1, &v2);
  if (v1.point.empty() && v2.point.empty()) return Unavailable("no cgroup file system is mounted");
  std::string parent;
  for (absl::string_view line : absl::StrSplit(ReadSmallFile("/proc/self/cgroup"), '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    if (!v1.point.empty() && HasWord(f[1], "pids", ',')) {
      parent = DirectoryOf(v1, f[2]);
      if (parent.empty()) return Unavailable("the daemon's pids cgroup is not mounted");
    } else if (v1.point.empty() && f[0] == "0" && f[1].empty()) {
      parent = DirectoryOf(v2, f[2]);
      if (parent.empty()) return Unavailable("the daemon's cgroup is not mounted");
    }
  }
  if (parent.empty()) return Unavailable("the daemon's pids cgroup was not found");
  if (v1.point.empty()) {
    // cgroup v2: the pids controller must be enabled for the children of the
    // daemon's cgroup (which v2 allows only in a cgroup without processes of
    // its own, or in the root).
    if (!HasWord(ReadSmallFile(parent + "/cgroup.controllers"), "pids", ' ')) {
      return Unavailable(absl::StrCat("the pids controller is not available in ", parent));
    }
    if (!HasWord(ReadSmallFile(parent + "/cgroup.subtree_control"), "pids", ' ')) {
      if (absl::Status s = WriteFile(parent + "/cgroup.subtree_control", "+pids"); !s.ok()) {
        return Unavailable(absl::StrCat("the pids controller is not enabled below the daemon's "
                                        "cgroup and enabling it failed: ",
                                        s.message()));
      }
    }
  }
  RemoveStaleCgroups(parent);
  std::shared_ptr<const PidsCgroups> found(new PidsCgroups(parent, max_processes));
  // The proof: one cgroup made and removed.
  auto probe = found->Create();
  if (!probe.ok()) return Unavailable(probe.status().message());
  return found;
}

absl::StatusOr<std::unique_ptr<CommandCgroup>> PidsCgroups::Create() const {
  std::string dir = absl::StrCat(parent_, "/", kPrefix, NewRunId());
  if (mkdir(dir.c_str(), 0755) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the pids cgroup ", dir, ": ", strerror(errno)));
  }
  if (absl::Status s = WriteFile(dir + "/pids.max", absl::StrCat(max_)); !s.ok()) {
    rmdir(dir.c_str());
    return s;
  }
  UniqueFd procs(open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs.valid()) {
    int err = errno;
    rmdir(dir.c_str());
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", dir, "/cgroup.procs: ", strerror(err)));
  }
  return std::make_unique<CommandCgroup>(std::move(dir), std::move(procs));
}

}  // namespace toolexec::command
