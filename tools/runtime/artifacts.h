// Versioned artifacts [Artifacts]: named blobs (text, or bytes with a MIME type)
// that tools and the harness save and load. Each save makes a new version,
// numbered from 1. A name starting with "user:" is shared by every session of
// one user; any other name belongs to one conversation (its conversation_id,
// so a conversation's artifacts outlive its sessions, and a daemon restart on
// the disk backend).
//
// A session without a conversation_id, and every child session, has a space
// of its own instead (ArtifactScope::session_owned), kept apart from every
// conversation. Nothing can reach it once the session closes, so the session
// manager deletes it then (DeleteScope). A child also stages its "user:"
// saves there (ArtifactScope::UserNames::kStaged): they reach the user only
// when the child's close merges them under its artifact_prefixes [Delegation].
//
// Backends: in-memory (default) and a directory on disk (atomic writes:
// temp file + fsync + rename, so a crash leaves a whole version or none).
// Thread safety: every method may be called concurrently.
#ifndef TOOLEXEC_TOOLS_RUNTIME_ARTIFACTS_H_
#define TOOLEXEC_TOOLS_RUNTIME_ARTIFACTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace toolexec {

struct Artifact {
  bool is_text = true;
  std::string text;       // when is_text
  std::string data;       // bytes, when !is_text
  std::string mime_type;  // may be empty for text
};

// Who an artifact belongs to: the scope of the session saving or loading it.
struct ArtifactScope {
  std::string user_id;
  // The conversation_id; the session id when session_owned.
  std::string conversation;
  // The session's own space, not a conversation's (see above).
  bool session_owned = false;
  // Where "user:" names (which always need a user_id) are kept.
  enum class UserNames {
    kShared,   // in the user's space, shared by the user's sessions
    kStaged,   // a child's: saved in the session's own space; a load finds the
               // session's own versions if it saved any, else the user's. The
               // user's versions are never written or deleted through it.
    kOwnOnly,  // the session's own space only (what a child's merge reads)
  };
  UserNames user_names = UserNames::kShared;
};

// True for a "user:" name.
bool IsUserArtifactName(absl::string_view name);

// What a store holds, for accounting and tests.
struct ArtifactUsage {
  int64_t versions = 0;
  int64_t bytes = 0;  // content and MIME type of every version
};

// [Artifacts] names: not empty, no '/', '\' or NUL, not "." or "..", no "..", at most
// 256 bytes. InvalidArgument saying which rule.
absl::Status ValidateArtifactName(absl::string_view name);

class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  // Returns the new version (1 for the first save of a name). InvalidArgument
  // for a bad name or a mime_type with a control character (e.g. a newline).
  virtual absl::StatusOr<int64_t> Save(const ArtifactScope& scope, absl::string_view name,
                                       const Artifact& artifact) = 0;
  // version 0 = latest. NotFound when absent.
  virtual absl::StatusOr<std::pair<Artifact, int64_t>> Load(const ArtifactScope& scope,
                                                            absl::string_view name,
                                                            int64_t version) = 0;
  // The names visible to the scope (its own and the user's), sorted.
  virtual absl::StatusOr<std::vector<std::string>> List(const ArtifactScope& scope) = 0;
  // Newest first. NotFound when the name has no versions.
  virtual absl::StatusOr<std::vector<int64_t>> Versions(const ArtifactScope& scope,
                                                        absl::string_view name) = 0;
  // version 0 = every version. NotFound when absent.
  virtual absl::Status Delete(const ArtifactScope& scope, absl::string_view name,
                              int64_t version) = 0;
  // Deletes every artifact in the scope's own space (never the user's); OK
  // when there is none.
  virtual absl::Status DeleteScope(const ArtifactScope& scope) = 0;
  virtual ArtifactUsage Usage() = 0;
};

std::unique_ptr<ArtifactStore> NewInMemoryArtifactStore();
// Creates `dir` if missing. FailedPrecondition if it cannot be used.
absl::StatusOr<std::unique_ptr<ArtifactStore>> NewDirectoryArtifactStore(const std::string& dir);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_ARTIFACTS_H_
