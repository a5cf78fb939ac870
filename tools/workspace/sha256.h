// SHA-256 of file contents (OpenSSL libcrypto): the file tools' content
// hashes and the checkpoint store's object names.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_SHA256_H_
#define TOOLEXEC_TOOLS_WORKSPACE_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace toolexec::fs {

// Incremental SHA-256 (OpenSSL libcrypto). Not thread-safe; one per use.
class Sha256 final {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(absl::string_view data);
  // Lower-case hex of the digest. Call once.
  std::string HexDigest();

 private:
  EVP_MD_CTX* ctx_;
};
std::string Sha256Hex(absl::string_view data);

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_SHA256_H_
