#include "server/auth.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/config/config.h"
#include "spdlog/spdlog.h"

namespace toolexec {
namespace {

// Token files and PEM files are small; a bigger one is a mistake.
constexpr uint64_t kMaxAuthFileBytes = 1 << 20;

std::array<unsigned char, 32> Sha256(absl::string_view text) {
  std::array<unsigned char, 32> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

// What an HTTP/2 header value can carry without folding or escaping.
bool IsTokenText(absl::string_view token) {
  return std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// A caller's name for a token line without NAME: a prefix of the token's
// digest (48 bits: distinct within any real token file; a random token
// cannot be found from it, a guessable one could be confirmed, as from any
// digest), so it follows the token, not its line.
std::string DerivedTokenName(const std::array<unsigned char, 32>& digest) {
  constexpr size_t kBytes = 6;
  return absl::StrCat("token-", absl::BytesToHexString(absl::string_view(
                                    reinterpret_cast<const char*>(digest.data()), kBytes)));
}

// PEM text of `path` that holds what `kind` says, or why not.
absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what, bool private_key) {
  auto text = ReadRegularFile(path, what, kMaxAuthFileBytes);
  if (!text.ok()) return text.status();
  BIO* bio = BIO_new_mem_buf(text->data(), static_cast<int>(text->size()));
  bool ok = false;
  if (bio != nullptr) {
    if (private_key) {
      EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
      ok = key != nullptr;
      EVP_PKEY_free(key);
    } else {
      X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
      ok = cert != nullptr;
      X509_free(cert);
    }
    BIO_free(bio);
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, " holds no PEM ", private_key ? "private key" : "certificate"));
  }
  return text;
}

// OK when the private key of `key_pem` is the one of the first certificate of
// `cert_pem` (both already read by ReadPem); else an error naming both files.
// gRPC would only fail to listen, saying nothing of why.
absl::Status CheckKeyMatchesCertificate(const std::string& cert_pem, const std::string& key_pem,
                                        const TlsOptions& tls) {
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  X509* cert = cert_bio ? PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr) : nullptr;
  EVP_PKEY* key = key_bio ? PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr) : nullptr;
  const bool match = cert != nullptr && key != nullptr && X509_check_private_key(cert, key) == 1;
  EVP_PKEY_free(key);
  X509_free(cert);
  BIO_free(key_bio);
  BIO_free(cert_bio);
  ERR_clear_error();  // X509_check_private_key queues why; we say it ourselves
  if (match) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "TLS key file ", tls.key_file, " does not match the certificate in TLS certificate file ",
      tls.cert_file, " (give the private key the certificate was issued for)"));
}

}  // namespace

absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view text,
                                                       absl::string_view path) {
  std::vector<TokenEntry> entries;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const std::string where = absl::StrCat("token file ", path, " line ", line_number);
    if (fields.size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has ", fields.size(), " fields; a line is TOKEN [NAME [PROFILE]]"));
    }
    if (!IsTokenText(fields[0])) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": the token has characters a header cannot carry (use printable ASCII)"));
    }
    TokenEntry entry;
    entry.digest = Sha256(fields[0]);
    entry.named = fields.size() > 1;
    entry.name = entry.named ? std::string(fields[1]) : DerivedTokenName(entry.digest);
    if (fields.size() > 2) entry.profile = std::string(fields[2]);
    entry.line = line_number;
    for (const TokenEntry& e : entries) {
      if (e.digest == entry.digest) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " repeats the token of line ", e.line));
      }
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", path, " has no token (lines are TOKEN [NAME [PROFILE]]; # comments)"));
  }
  return entries;
}

const TokenEntry* MatchToken(const std::vector<TokenEntry>& entries, absl::string_view token) {
  const std::array<unsigned char, 32> digest = Sha256(token);
  const TokenEntry* found = nullptr;
  for (const TokenEntry& e : entries) {
    // Every entry is compared, matched or not.
    bool same = CRYPTO_memcmp(e.digest.data(), digest.data(), digest.size()) == 0;
    if (same) found = &e;
  }
  return found;
}

absl::string_view BearerToken(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return "";
  }
  return absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
}

absl::StatusOr<std::vector<TokenEntry>> Authenticator::LoadTokens() const {
  const std::string& path = options_.token_file;
  auto text = ReadRegularFile(path, "token file", kMaxAuthFileBytes);
  if (!text.ok()) return text.status();
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    spdlog::warn("token file {} can be read by other users (mode {:o}); chmod 600 it", path,
                 st.st_mode & 0777);
  }
  auto entries = ParseTokenFile(*text, path);
  if (!entries.ok()) return entries.status();
  for (const TokenEntry& e : *entries) {
    if (e.profile.empty() || check_profile_ == nullptr) continue;
    if (absl::Status s = check_profile_(e.profile); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token file ", path, " line ", e.line, ": ", s.message()));
    }
  }
  for (const TokenEntry& e : *entries) {
    if (e.named) continue;
    spdlog::warn("token file {} line {}: the token has no NAME, so its caller is named {} "
                 "(from the token's digest); give it a NAME",
                 path, e.line, e.name);
  }
  return entries;
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(const AuthOptions& options,
                                                                     ProfileCheck check_profile) {
  std::unique_ptr<Authenticator> auth(new Authenticator(options, std::move(check_profile)));
  if (!options.token_file.empty()) {
    auto tokens = auth->LoadTokens();
    if (!tokens.ok()) return tokens.status();
    absl::MutexLock lock(&auth->mu_);
    auth->tokens_ = std::make_shared<const std::vector<TokenEntry>>(*std::move(tokens));
  }
  return auth;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Authenticator::TcpCredentials(
    const TlsOptions& tls) {
  if (tls.cert_file.empty()) return grpc::InsecureServerCredentials();
  auto cert = ReadPem(tls.cert_file, "TLS certificate file", /*private_key=*/false);
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(tls.key_file, "TLS key file", /*private_key=*/true);
  if (!key.ok()) return key.status();
  if (absl::Status s = CheckKeyMatchesCertificate(*cert, *key, tls); !s.ok()) return s;
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!tls.client_ca_file.empty()) {
    auto ca = ReadPem(tls.client_ca_file, "TLS client CA file", /*private_key=*/false);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  ssl.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  return grpc::SslServerCredentials(ssl);
}

absl::StatusOr<CallerIdentity> Authenticator::Authenticate(
    const grpc::ServerContextBase& context) const {
  std::shared_ptr<const std::vector<TokenEntry>> tokens;
  std::optional<uint32_t> uid;
  // Connections of the unix listener are "fd:N" (see NoteUnixPeer).
  const std::string peer = context.peer();
  int fd = -1;
  const bool fd_peer = absl::StartsWith(peer, "fd:") && absl::SimpleAtoi(peer.substr(3), &fd);
  {
    absl::MutexLock lock(&mu_);
    tokens = tokens_;
    if (fd_peer) {
      if (auto it = unix_peers_.find(fd); it != unix_peers_.end()) uid = it->second;
    }
  }
  CallerIdentity caller;
  if (uid.has_value()) {
    const auto& allowed = options_.unix_socket.allowed_uids;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), *uid) == allowed.end()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "uid ", *uid, " may not call this toolexecd (auth.unix_socket.allowed_uids)"));
    }
  } else if (fd_peer) {
    return absl::UnauthenticatedError("the unix-socket peer's uid is unknown");
  }
  const TokenEntry* entry = nullptr;
  if (tokens != nullptr) {
    absl::string_view token;
    for (auto [it, end] = context.client_metadata().equal_range("authorization"); it != end;
         ++it) {
      token = BearerToken(absl::string_view(it->second.data(), it->second.size()));
    }
    auto matched = CheckBearer(*tokens, token,
                               "send metadata 'authorization: Bearer <token>' (toolexec "
                               "--token-file, or TOOLEXEC_TOKEN)");
    if (!matched.ok()) return matched.status();
    entry = *matched;
    if (entry->named) caller.name = entry->name;
    caller.profile = entry->profile;
  }
  if (caller.name.empty()) {
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      std::vector<grpc::string_ref> ids = auth->GetPeerIdentity();
      if (!ids.empty()) caller.name.assign(ids.front().data(), ids.front().size());
    }
  }
  if (caller.name.empty() && uid.has_value()) caller.name = absl::StrCat("uid:", *uid);
  if (caller.name.empty() && entry != nullptr) caller.name = entry->name;
  return caller;
}

absl::Status Authenticator::ReloadTokens() {
  if (options_.token_file.empty()) return absl::OkStatus();
  auto tokens = LoadTokens();
  if (!tokens.ok()) return tokens.status();
  auto fresh = std::make_shared<const std::vector<TokenEntry>>(*std::move(tokens));
  size_t count = fresh->size();
  {
    absl::MutexLock lock(&mu_);
    tokens_.swap(fresh);
  }
  // The old set goes here, outside the lock.
  spdlog::info("reloaded token file {}: {} token(s)", options_.token_file, count);
  return absl::OkStatus();
}

absl::StatusOr<const TokenEntry*> Authenticator::CheckBearer(const std::vector<TokenEntry>& tokens,
                                                             absl::string_view token,
                                                             absl::string_view how_to_send) {
  if (token.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat("this toolexecd needs a bearer token: ", how_to_send));
  }
  const TokenEntry* entry = MatchToken(tokens, token);
  if (entry == nullptr) return absl::UnauthenticatedError("the bearer token is not valid");
  return entry;
}

// ---- HTTP callers (the MCP endpoint) ----
absl::StatusOr<CallerIdentity> Authenticator::AuthenticateBearer(
    absl::string_view authorization) const {
  std::shared_ptr<const std::vector<TokenEntry>> tokens;
  {
    absl::MutexLock lock(&mu_);
    tokens = tokens_;
  }
  CallerIdentity caller;
  if (tokens == nullptr) return caller;
  auto entry = CheckBearer(*tokens, BearerToken(authorization),
                           "send the header 'Authorization: Bearer <token>'");
  if (!entry.ok()) return entry.status();
  caller.name = (*entry)->name;
  caller.profile = (*entry)->profile;
  return caller;
}
// ---- end HTTP callers ----

absl::StatusOr<CallerIdentity> AuthenticateCall(const Authenticator* auth,
                                                const grpc::ServerContextBase& context) {
  if (auth == nullptr) return CallerIdentity{};
  return auth->Authenticate(context);
}

void Authenticator::NoteUnixPeer(int fd, uint32_t uid) {
  absl::MutexLock lock(&mu_);
  unix_peers_[fd] = uid;
}

}  // namespace toolexec
