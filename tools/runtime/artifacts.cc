#include "tools/runtime/artifacts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/runtime/file_io.h"

namespace toolexec {
namespace {

constexpr absl::string_view kUserPrefix = "user:";
using UserNames = ArtifactScope::UserNames;

// The spaces artifacts live in: "u-<hex user>" for a user's "user:" names,
// "c-<hex conversation_id>" for a conversation's, "s-<hex session id>" for a
// session's own (see ArtifactScope).
std::string OwnSpace(const ArtifactScope& scope) {
  return absl::StrCat(scope.session_owned ? "s-" : "c-",
                      absl::BytesToHexString(scope.conversation));
}

std::string UserSpace(const ArtifactScope& scope) {
  return absl::StrCat("u-", absl::BytesToHexString(scope.user_id));
}

absl::StatusOr<std::string> UserSpace(const ArtifactScope& scope, absl::string_view name) {
  if (scope.user_id.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "artifact '", name, "' is user-scoped (\"user:\" prefix) but the session has no user_id"));
  }
  return UserSpace(scope);
}

// Where a save or delete of `name` goes.
absl::StatusOr<std::string> WriteSpace(const ArtifactScope& scope, absl::string_view name) {
  if (!IsUserArtifactName(name)) return OwnSpace(scope);
  auto user = UserSpace(scope, name);
  if (!user.ok() || scope.user_names == UserNames::kShared) return user;
  return OwnSpace(scope);
}

// Where a load of `name` looks, in order: the first space holding a version
// of it wins (a child's staged "user:" versions hide the user's).
absl::StatusOr<std::vector<std::string>> ReadSpaces(const ArtifactScope& scope,
                                                    absl::string_view name) {
  auto write = WriteSpace(scope, name);
  if (!write.ok()) return write.status();
  std::vector<std::string> spaces = {*write};
  if (IsUserArtifactName(name) && scope.user_names == UserNames::kStaged) {
    spaces.push_back(UserSpace(scope));
  }
  return spaces;
}

// The spaces whose names List shows.
std::vector<std::string> ListSpaces(const ArtifactScope& scope) {
  std::vector<std::string> spaces = {OwnSpace(scope)};
  if (!scope.user_id.empty()) spaces.push_back(UserSpace(scope));
  return spaces;
}

// Sorted, each name once (a child's staged "user:" name is also the user's).
void SortUnique(std::vector<std::string>* names) {
  std::sort(names->begin(), names->end());
  names->erase(std::unique(names->begin(), names->end()), names->end());
}

absl::Status NotFound(absl::string_view name, int64_t version) {
  return absl::NotFoundError(version == 0 ? absl::StrCat("artifact '", name, "' not found")
                                          : absl::StrCat("artifact '", name, "' has no version ",
                                                         version));
}

// A delete found nothing in the scope's write space.
absl::Status DeleteNotFound(const ArtifactScope& scope, absl::string_view name, int64_t version) {
  if (scope.user_names != UserNames::kShared && IsUserArtifactName(name)) {
    return absl::NotFoundError(
        absl::StrCat("artifact '", name, "' has no ",
                     version == 0 ? "versions" : absl::StrCat("version ", version),
                     " saved by this child session; a child session cannot delete the user's "
                     "artifacts"));
  }
  return NotFound(name, version);
}

// What every backend's Save checks. A MIME type is one line of printable
// text (RFC 6838 allows no control characters), which also keeps the disk
// backend's one-line header intact.
absl::Status ValidateSave(absl::string_view name, const Artifact& artifact) {
  if (auto s = ValidateArtifactName(name); !s.ok()) return s;
  for (char c : artifact.mime_type) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid mime_type '", absl::CHexEscape(artifact.mime_type),
          "': it must not contain control characters such as a newline"));
    }
  }
  return absl::OkStatus();
}

class InMemoryArtifactStore final : public ArtifactStore {
 public:
  absl::StatusOr<int64_t> Save(const ArtifactScope& scope, absl::string_view name,
                               const Artifact& artifact) override {
    if (auto s = ValidateSave(name, artifact); !s.ok()) return s;
    auto space = WriteSpace(scope, name);
    if (!space.ok()) return space.status();
    absl::MutexLock lock(&mu_);
    auto& versions = store_[*space][std::string(name)];
    int64_t version = versions.empty() ? 1 : versions.rbegin()->first + 1;
    versions.emplace(version, artifact);
    return version;
  }

  absl::StatusOr<std::pair<Artifact, int64_t>> Load(const ArtifactScope& scope,
                                                    absl::string_view name,
                                                    int64_t version) override {
    if (auto s = ValidateArtifactName(name); !s.ok()) return s;
    auto spaces = ReadSpaces(scope, name);
    if (!spaces.ok()) return spaces.status();
    absl::MutexLock lock(&mu_);
    const auto* versions = FindFirst(*spaces, name);
    if (versions == nullptr) return NotFound(name, version);
    auto it = version == 0 ? std::prev(versions->end()) : versions->find(version);
    if (it == versions->end()) return NotFound(name, version);
    return std::make_pair(it->second, it->first);
  }

  absl::StatusOr<std::vector<std::string>> List(const ArtifactScope& scope) override {
    std::vector<std::string> names;
    absl::MutexLock lock(&mu_);
    for (const std::string& space : ListSpaces(scope)) {
      auto it = store_.find(space);
      if (it == store_.end()) continue;
      for (const auto& [name, versions] : it->second) names.push_back(name);
    }
    SortUnique(&names);
    return names;
  }

  absl::StatusOr<std::vector<int64_t>> Versions(const ArtifactScope& scope,
                                                absl::string_view name) override {
    if (auto s = ValidateArtifactName(name); !s.ok()) return s;
    auto spaces = ReadSpaces(scope, name);
    if (!spaces.ok()) return spaces.status();
    absl::MutexLock lock(&mu_);
    const auto* versions = FindFirst(*spaces, name);
    if (versions == nullptr) return NotFound(name, 0);
    std::vector<int64_t> out;
    for (auto it = versions->rbegin(); it != versions->rend(); ++it) out.push_back(it->first);
    return out;
  }

  absl::Status Delete(const ArtifactScope& scope, absl::string_view name,
                      int64_t version) override {
    if (auto s = ValidateArtifactName(name); !s.ok()) return s;
    auto space = WriteSpace(scope, name);
    if (!space.ok()) return space.status();
    absl::MutexLock lock(&mu_);
    auto owner = store_.find(*space);
    if (owner == store_.end()) return DeleteNotFound(scope, name, version);
    auto named = owner->second.find(std::string(name));
    if (named == owner->second.end()) return DeleteNotFound(scope, name, version);
    if (version != 0 && named->second.erase(version) == 0) {
      return DeleteNotFound(scope, name, version);
    }
    // No empty entries stay behind: a name without versions is gone.
    if (version == 0 || named->second.empty()) owner->second.erase(named);
    if (owner->second.empty()) store_.erase(owner);
    return absl::OkStatus();
  }

  absl::Status DeleteScope(const ArtifactScope& scope) override {
    absl::MutexLock lock(&mu_);
    store_.erase(OwnSpace(scope));
    return absl::OkStatus();
  }

  ArtifactUsage Usage() override {
    ArtifactUsage usage;
    absl::MutexLock lock(&mu_);
    for (const auto& [space, names] : store_) {
      for (const auto& [name, versions] : names) {
        for (const auto& [v, a] : versions) {
          ++usage.versions;
          usage.bytes += static_cast<int64_t>(a.text.size() + a.data.size() + a.mime_type.size());
        }
      }
    }
    return usage;
  }

 private:
  using Versions_ = std::map<int64_t, Artifact>;
  // The versions of `name` in the first of `spaces` that has any; null if none.
  const Versions_* FindFirst(const std::vector<std::string>& spaces, absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& space : spaces) {
      auto o = store_.find(space);
      if (o == store_.end()) continue;
      auto n = o->second.find(std::string(name));
      if (n != o->second.end() && !n->second.empty()) return &n->second;
    }
    return nullptr;
  }

  absl::Mutex mu_;
  // space -> name -> version -> artifact; a name is present only with versions.
  std::map<std::string, std::map<std::string, Versions_>> store_ ABSL_GUARDED_BY(mu_);
};

// Layout: <root>/<space>/<hex(name)>/<version>, each file a one-line header
// ("text <mime>" or "data <mime>") followed by the content.
class DirectoryArtifactStore final : public ArtifactStore {
 public:
  explicit DirectoryArtifactStore(std::string root) : root_(std::move(root)) {}

  absl::StatusOr<int64_t> Save(const ArtifactScope& scope, absl::string_view name,
                               const Artifact& artifact) override {
    if (auto s = ValidateSave(name, artifact); !s.ok()) return s;
    auto dir = WriteDir(scope, name);
    if (!dir.ok()) return dir.status();
    absl::MutexLock lock(&mu_);  // version allocation and the rename are one step
    std::string owner_dir = dir->substr(0, dir->rfind('/'));
    for (const std::string& d : {owner_dir, *dir}) {
      if (mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return Errno("create", d);
    }
    auto versions = ReadVersions(*dir);
    int64_t version = versions.empty() ? 1 : versions.front() + 1;
    std::string content = absl::StrCat(artifact.is_text ? "text " : "data ", artifact.mime_type,
                                       "\n", artifact.is_text ? artifact.text : artifact.data);
    // Written whole or not at all: a reader (or a daemon after a crash)
    // never sees part of a version.
    UniqueFd dir_fd(open(dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd.valid()) return Errno("open", *dir);
    AtomicWriteOptions write;
    write.replace_existing = true;
    write.mode = 0600;
    write.display = absl::StrCat(*dir, "/", version);
    if (absl::Status s = WriteFileAtomic(dir_fd.get(), absl::StrCat(version), content, write);
        !s.ok()) {
      return absl::InternalError(absl::StrCat("artifact store: ", s.message()));
    }
    return version;
  }

  absl::StatusOr<std::pair<Artifact, int64_t>> Load(const ArtifactScope& scope,
                                                    absl::string_view name,
                                                    int64_t version) override {
    if (auto s = ValidateArtifactName(name); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    auto dir = LoadDir(scope, name);
    if (!dir.ok()) return dir.status();
    if (version == 0) {
      auto versions = ReadVersions(*dir);
      if (versions.empty()) return NotFound(name, 0);
      version = versions.front();
    }
    std::string content;
    if (!ReadFile(absl::StrCat(*dir, "/", version), &content)) return NotFound(name, version);
    size_t nl = content.find('\n');
    if (nl == std::string::npos) {
      return absl::DataLossError(absl::StrCat("artifact '", name, "' version ", version,
                                              " is corrupt (no header)"));
    }
    absl::string_view header(content.data(), nl);
    Artifact a;
    a.is_text = absl::StartsWith(header, "text ");
    a.mime_type = std::string(header.substr(5));
    (a.is_text ? a.text : a.data) = content.substr(nl + 1);
    return std::make_pair(std::move(a), version);
  }

  absl::StatusOr<std::vector<std::string>> List(const ArtifactScope& scope) override {
    std::vector<std::string> names;
    absl::MutexLock lock(&mu_);
    for (const auto& space : ListSpaces(scope)) {
      std::string owner = absl::StrCat(root_, "/", space);
      for (const auto& entry : ReadDir(owner)) {
        if (ReadVersions(absl::StrCat(owner, "/", entry)).empty()) continue;
        names.push_back(absl::HexStringToBytes(entry));
      }
    }
    SortUnique(&names);
    return names;
  }

  absl::StatusOr<std::vector<int64_t>> Versions(const ArtifactScope& scope,
                                                absl::string_view name) override {
    if (auto s = ValidateArtifactName(name); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    auto dir = LoadDir(scope, name);
    if (!dir.ok()) return dir.status();
    auto versions = ReadVersions(*dir);
    if (versions.empty()) return NotFound(name, 0);
    return versions;
  }

  absl::Status Delete(const ArtifactScope& scope, absl::string_view name,
                      int64_t version) override {
    if (auto s = ValidateArtifactName(name); !s.ok()) return s;
    auto dir = WriteDir(scope, name);
    if (!dir.ok()) return dir.status();
    absl::MutexLock lock(&mu_);
    auto versions = ReadVersions(*dir);
    if (versions.empty()) return DeleteNotFound(scope, name, version);
    if (version != 0 && std::find(versions.begin(), versions.end(), version) == versions.end()) {
      return DeleteNotFound(scope, name, version);
    }
    for (int64_t v : versions) {
      if (version != 0 && v != version) continue;
      std::string path = absl::StrCat(*dir, "/", v);
      if (unlink(path.c_str()) != 0) return Errno("delete", path);
    }
    // No empty directories stay behind (rmdir fails, harmlessly, if not empty).
    rmdir(dir->c_str());
    rmdir(dir->substr(0, dir->rfind('/')).c_str());
    return absl::OkStatus();
  }

  absl::Status DeleteScope(const ArtifactScope& scope) override {
    std::string dir = absl::StrCat(root_, "/", OwnSpace(scope));
    absl::MutexLock lock(&mu_);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("artifact store: cannot delete ", dir, ": ", ec.message()));
    }
    return absl::OkStatus();
  }

  ArtifactUsage Usage() override {
    ArtifactUsage usage;
    absl::MutexLock lock(&mu_);
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root_, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file(ec) || it->path().filename().string()[0] == '.') continue;
      ++usage.versions;
      usage.bytes += static_cast<int64_t>(it->file_size(ec));
    }
    return usage;
  }

 private:
  std::string NameDir(const std::string& space, absl::string_view name) const {
    return absl::StrCat(root_, "/", space, "/", absl::BytesToHexString(name));
  }

  absl::StatusOr<std::string> WriteDir(const ArtifactScope& scope, absl::string_view name) const {
    auto space = WriteSpace(scope, name);
    if (!space.ok()) return space.status();
    return NameDir(*space, name);
  }

  // Where a load of `name` reads: the first of its spaces holding a version.
  absl::StatusOr<std::string> LoadDir(const ArtifactScope& scope, absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto spaces = ReadSpaces(scope, name);
    if (!spaces.ok()) return spaces.status();
    for (const auto& space : *spaces) {
      std::string dir = NameDir(space, name);
      if (!ReadVersions(dir).empty()) return dir;
    }
    return NameDir(spaces->front(), name);
  }

  static absl::Status Errno(absl::string_view what, const std::string& path) {
    return absl::InternalError(
        absl::StrCat("artifact store: cannot ", what, " ", path, ": ", strerror(errno)));
  }

  static std::vector<std::string> ReadDir(const std::string& dir) {
    std::vector<std::string> out;
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return out;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    }
    closedir(d);
    return out;
  }

  // Newest first.
  static std::vector<int64_t> ReadVersions(const std::string& dir) {
    std::vector<int64_t> versions;
    for (const auto& entry : ReadDir(dir)) {
      int64_t v;
      if (absl::SimpleAtoi(entry, &v) && v > 0) versions.push_back(v);
    }
    std::sort(versions.rbegin(), versions.rend());
    return versions;
  }

  static bool ReadFile(const std::string& path, std::string* out) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[65536];
    while (true) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out->append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return true;
  }

  const std::string root_;
  absl::Mutex mu_;
};

}  // namespace

bool IsUserArtifactName(absl::string_view name) { return absl::StartsWith(name, kUserPrefix); }

absl::Status ValidateArtifactName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("artifact name must not be empty");
  if (name.size() > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact name is ", name.size(), " bytes; the limit is 256"));
  }
  absl::string_view bare = name;
  if (IsUserArtifactName(bare)) bare.remove_prefix(kUserPrefix.size());
  if (bare.empty() || bare == "." || bare.find("..") != absl::string_view::npos ||
      bare.find_first_of(absl::string_view("/\\\0", 3)) != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid artifact name '", absl::CHexEscape(name),
        "': it must not be empty, '.', contain '..', '/', '\\' or NUL"));
  }
  return absl::OkStatus();
}

std::unique_ptr<ArtifactStore> NewInMemoryArtifactStore() {
  return std::make_unique<InMemoryArtifactStore>();
}

absl::StatusOr<std::unique_ptr<ArtifactStore>> NewDirectoryArtifactStore(const std::string& dir) {
  if (dir.empty() || dir[0] != '/') {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact directory must be an absolute path, got '", dir, "'"));
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create artifact directory ", dir, ": ", strerror(errno)));
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || access(dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact directory ", dir, " is not a writable directory"));
  }
  return std::unique_ptr<ArtifactStore>(new DirectoryArtifactStore(dir));
}

}  // namespace toolexec
