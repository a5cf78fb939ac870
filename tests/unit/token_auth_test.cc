// The token file parser and the constant-time token matcher (server/auth.h).
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/auth.h"
#include "server/config/config.h"
#include "tests/unit/builtin/file_test_util.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(TokenFileTest, LinesCommentsNamesAndProfiles) {
  auto tokens = ParseTokenFile(
      "# the gateway\n"
      "\n"
      "   \t\n"
      "tok-one\n"
      "  tok-two   gateway \n"
      "tok-three\tci\tread_only\r\n",
      "/etc/toolexec/tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_FALSE((*tokens)[0].named);
  EXPECT_THAT((*tokens)[0].name, ::testing::MatchesRegex("token-[0-9a-f]{12}"));
  EXPECT_EQ((*tokens)[0].line, 4);
  EXPECT_TRUE((*tokens)[1].named);
  EXPECT_EQ((*tokens)[1].name, "gateway");
  EXPECT_EQ((*tokens)[1].profile, "");
  EXPECT_EQ((*tokens)[2].name, "ci");
  EXPECT_EQ((*tokens)[2].profile, "read_only");
  EXPECT_EQ(MatchToken(*tokens, "tok-three"), &(*tokens)[2]);
}

TEST(TokenFileTest, MalformedFilesNameTheLineAndNeverTheToken) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"tok-a a\nsecret-b b read_only extra\n", "line 2 has 4 fields"},
      {"# only comments\n\n", "has no token"},
      {"", "has no token"},
      {"secret-c x\nsecret-c y\n", "line 2 repeats the token of line 1"},
      {"secret-\x01-d\n", "line 1: the token has characters a header cannot carry"},
  };
  for (const Case& c : cases) {
    auto tokens = ParseTokenFile(c.text, "tokens.txt");
    ASSERT_FALSE(tokens.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(tokens.status()));
    EXPECT_THAT(tokens.status().message(), HasSubstr("token file tokens.txt"));
    EXPECT_THAT(tokens.status().message(), HasSubstr(c.expected));
    EXPECT_THAT(tokens.status().message(), Not(HasSubstr("secret")));
  }
}

// A line without NAME is named after its token, not its position: removing
// or reordering other lines cannot hand its sessions to another caller.
TEST(TokenFileTest, AnUnnamedTokenIsNamedAfterTheTokenNotItsLine) {
  auto before = ParseTokenFile("tok-alpha-1\ntok-bravo-2\ntok-charlie-3\n", "t");
  auto after = ParseTokenFile("# alpha revoked\ntok-charlie-3\ntok-bravo-2\n", "t");
  ASSERT_TRUE(before.ok() && after.ok());
  const std::string bravo = MatchToken(*before, "tok-bravo-2")->name;
  const std::string charlie = MatchToken(*before, "tok-charlie-3")->name;
  EXPECT_EQ(MatchToken(*after, "tok-bravo-2")->name, bravo);
  EXPECT_EQ(MatchToken(*after, "tok-charlie-3")->name, charlie);
  EXPECT_NE(bravo, charlie);
  EXPECT_NE(MatchToken(*before, "tok-alpha-1")->name, bravo);
  EXPECT_THAT(bravo, ::testing::MatchesRegex("token-[0-9a-f]{12}"));
  EXPECT_THAT(bravo, Not(HasSubstr("bravo")));
}

void WriteTokens(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
  chmod(path.c_str(), 0600);
}

std::string CallerName(const Authenticator& auth, const std::string& token) {
  auto caller = auth.AuthenticateBearer("Bearer " + token);
  return caller.ok() ? caller->name : std::string(caller.status().message());
}

TEST(AuthenticatorTest, AReloadThatRemovesALineKeepsTheOthersNames) {
  testing::TempTree dir;
  AuthOptions options;
  options.token_file = dir.path() + "/tokens";
  WriteTokens(options.token_file, "tok-alpha-1\ntok-bravo-2\ntok-charlie-3\n");
  auto auth = Authenticator::Create(options);
  ASSERT_TRUE(auth.ok()) << auth.status();
  const std::string bravo = CallerName(**auth, "tok-bravo-2");
  const std::string charlie = CallerName(**auth, "tok-charlie-3");
  EXPECT_NE(bravo, charlie);

  WriteTokens(options.token_file, "tok-bravo-2\ntok-charlie-3\n");
  ASSERT_TRUE((*auth)->ReloadTokens().ok());
  EXPECT_EQ(CallerName(**auth, "tok-bravo-2"), bravo);
  EXPECT_EQ(CallerName(**auth, "tok-charlie-3"), charlie);
  EXPECT_THAT(CallerName(**auth, "tok-alpha-1"), HasSubstr("not valid"));
}

// A PROFILE the daemon does not have is refused, at start-up and at reload
// (where the tokens in use stay), naming the line and never the token.
TEST(AuthenticatorTest, AnUnknownProfileIsRefusedAtStartAndAtReload) {
  testing::TempTree dir;
  AuthOptions options;
  options.token_file = dir.path() + "/tokens";
  auto check = [](const std::string& profile) {
    return profile == "read_only" ? absl::OkStatus()
                                  : absl::InvalidArgumentError(absl::StrCat(
                                        "unknown policy profile '", profile, "'"));
  };
  WriteTokens(options.token_file, "secret-a alice read_only\nsecret-b bob readonly\n");
  auto refused = Authenticator::Create(options, check);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("token file " + options.token_file + " line 2: unknown policy profile "
                        "'readonly'"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("secret")));

  WriteTokens(options.token_file, "secret-a alice read_only\n");
  auto auth = Authenticator::Create(options, check);
  ASSERT_TRUE(auth.ok()) << auth.status();
  WriteTokens(options.token_file, "secret-b bob read_only\n# comment\nsecret-c carol nosuch\n");
  absl::Status reload = (*auth)->ReloadTokens();
  EXPECT_THAT(reload.message(), HasSubstr("line 3: unknown policy profile 'nosuch'"));
  EXPECT_EQ(CallerName(**auth, "secret-a"), "alice");  // the set in use stays
  EXPECT_THAT(CallerName(**auth, "secret-b"), HasSubstr("not valid"));
}

TEST(TokenMatchTest, OnlyTheWholeTokenMatches) {
  auto tokens = ParseTokenFile("alpha-token-1 a\nbeta-token-2 b\n", "t");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(MatchToken(*tokens, "alpha-token-1"), &(*tokens)[0]);
  EXPECT_EQ(MatchToken(*tokens, "beta-token-2"), &(*tokens)[1]);
  for (const char* wrong : {"", "alpha-token-", "alpha-token-12", "ALPHA-TOKEN-1",
                            "alpha-token-1 ", "beta-token-2\n", "gamma"}) {
    EXPECT_EQ(MatchToken(*tokens, wrong), nullptr) << wrong;
  }
  EXPECT_EQ(MatchToken({}, "alpha-token-1"), nullptr);
}

TEST(BearerTokenTest, SchemeInAnyCase) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer  abc "), "abc");
  EXPECT_EQ(BearerToken("BEARER abc"), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearer"), "");
  EXPECT_EQ(BearerToken("Bearer "), "");
  EXPECT_EQ(BearerToken("abc"), "");
}

// The auth settings, from the config file, checked as one.
TEST(AuthOptionsTest, ConfigAppliesAndValidateRefusesWhatDoesNotFit) {
  v1::DaemonConfig config;
  config.set_listen("0.0.0.0:50051");
  config.mutable_auth()->set_token_file("/etc/toolexec/tokens");
  config.mutable_limits()->set_max_sessions_per_caller(7);
  DaemonOptions options;
  options.engine.workspace = "/tmp";
  std::string log_level;
  ASSERT_TRUE(ApplyConfig(config, &options, &log_level).ok());
  EXPECT_EQ(options.server.auth.token_file, "/etc/toolexec/tokens");
  EXPECT_EQ(options.engine.max_sessions_per_caller, 7u);
  EXPECT_TRUE(ValidateOptions(options).ok());  // a token file admits 0.0.0.0

  struct Case {
    std::string listen;
    AuthOptions auth;
    std::string error;  // "" = valid
  };
  AuthOptions tls_only;
  tls_only.tls = {"cert.pem", "key.pem", ""};
  AuthOptions mtls;
  mtls.tls = {"cert.pem", "key.pem", "ca.pem"};
  AuthOptions cert_without_key;
  cert_without_key.tls.cert_file = "cert.pem";
  AuthOptions ca_without_tls;
  ca_without_tls.tls.client_ca_file = "ca.pem";
  AuthOptions uids;
  uids.unix_socket.allowed_uids = {1000};
  AuthOptions bad_mode;
  bad_mode.unix_socket.mode = 01777;
  const std::vector<Case> cases = {
      {"0.0.0.0:1", tls_only, "without authentication"},  // TLS alone names nobody
      {"0.0.0.0:1", mtls, ""},
      {"127.0.0.1:1", cert_without_key, "needs both cert_file"},
      {"127.0.0.1:1", ca_without_tls, "needs TLS"},
      {"unix:/run/t.sock", tls_only, "applies to TCP"},
      {"127.0.0.1:1", uids, "applies to a unix:/path listen address"},
      {"unix:/run/t.sock", uids, ""},
      {"unix:/run/t.sock", bad_mode, "is 01777"},
  };
  for (const Case& c : cases) {
    DaemonOptions o;
    o.server.listen = c.listen;
    o.server.auth = c.auth;
    absl::Status s = ValidateOptions(o);
    if (c.error.empty()) {
      EXPECT_TRUE(s.ok()) << c.listen << ": " << s;
    } else {
      EXPECT_THAT(s.message(), HasSubstr(c.error)) << c.listen;
    }
  }
}

// The auth flags over the config file's auth settings: each replaces the
// file's (a list whole), given as "" too.
TEST(AuthOptionsTest, FlagsReplaceTheFilesAuthSettings) {
  v1::DaemonConfig file;
  file.set_listen("unix:/run/toolexec.sock");
  file.mutable_auth()->mutable_unix_socket()->set_mode(0660);
  file.mutable_auth()->mutable_unix_socket()->add_allowed_uids(1);
  file.mutable_auth()->mutable_unix_socket()->add_allowed_uids(2);
  auto apply = [&](const std::map<std::string, std::string>& flags) -> absl::StatusOr<AuthOptions> {
    auto overlay = FlagsOverlay(flags);
    if (!overlay.ok()) return overlay.status();
    v1::DaemonConfig config = file;
    MergeOverlay(*overlay, &config);
    DaemonOptions options;
    std::string log_level;
    if (absl::Status s = ApplyConfig(config, &options, &log_level); !s.ok()) return s;
    if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
    return options.server.auth;
  };
  auto unchanged = apply({});
  ASSERT_TRUE(unchanged.ok()) << unchanged.status();
  EXPECT_EQ(unchanged->unix_socket.mode, 0660u);
  EXPECT_THAT(unchanged->unix_socket.allowed_uids, ::testing::ElementsAre(1u, 2u));
  auto replaced = apply({{"unix_socket_mode", "0600"}, {"unix_socket_allowed_uids", "7, 8"}});
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(replaced->unix_socket.mode, 0600u);
  EXPECT_THAT(replaced->unix_socket.allowed_uids, ::testing::ElementsAre(7u, 8u));
  auto cleared = apply({{"unix_socket_mode", "0"}, {"unix_socket_allowed_uids", ""}});
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_EQ(cleared->unix_socket.mode, 0u);
  EXPECT_TRUE(cleared->unix_socket.allowed_uids.empty());
  EXPECT_EQ(apply({{"unix_socket_mode", "0777"}, {"unix_socket_allowed_uids", "x"}})
                .status()
                .message(),
            "--unix_socket_allowed_uids: 'x' is not a uid (give numbers: 0,1000)");
  EXPECT_EQ(apply({{"unix_socket_mode", "660x"}}).status().message(),
            "--unix_socket_mode '660x' is not octal permission bits (e.g. 0660)");

  // --token_file= drops the file's token file: 0.0.0.0 is refused again.
  file.Clear();
  file.set_listen("0.0.0.0:50051");
  file.mutable_auth()->set_token_file("/etc/toolexec/tokens");
  ASSERT_TRUE(apply({}).ok());
  EXPECT_THAT(apply({{"token_file", ""}}).status().message(),
              HasSubstr("refusing to listen on 0.0.0.0:50051 without authentication"));
}

// The MCP HTTP endpoint checks bearer tokens only: beyond loopback it needs a
// token file (mTLS does not reach it) or --insecure_allow_unauthenticated.
TEST(AuthOptionsTest, McpListenBeyondLoopbackNeedsATokenFile) {
  v1::DaemonConfig config;
  config.set_mcp_listen("127.0.0.1:8765");
  DaemonOptions applied;
  std::string log_level;
  ASSERT_TRUE(ApplyConfig(config, &applied, &log_level).ok());
  EXPECT_EQ(applied.server.mcp_listen, "127.0.0.1:8765");

  AuthOptions tokens;
  tokens.token_file = "/etc/toolexec/tokens";
  AuthOptions mtls;
  mtls.tls = {"cert.pem", "key.pem", "ca.pem"};
  struct Case {
    std::string mcp_listen;
    AuthOptions auth;
    bool insecure;
    std::string error;  // "" = valid
  };
  const std::vector<Case> cases = {
      {"127.0.0.1:0", {}, false, ""},
      {"[::1]:8765", {}, false, ""},
      {"localhost:8765", {}, false, ""},
      {"0.0.0.0:8765", {}, false, "refusing to listen on 0.0.0.0:8765 (mcp_listen)"},
      {"0.0.0.0:8765", mtls, false, "a client CA does not apply"},
      {"0.0.0.0:8765", tokens, false, ""},
      {"0.0.0.0:8765", {}, true, ""},
      {"8765", {}, false, "mcp_listen (--mcp_listen) '8765' is not host:port"},
      {"127.0.0.1:99999", {}, false, "no port number"},
  };
  for (const Case& c : cases) {
    DaemonOptions o;
    o.server.mcp_listen = c.mcp_listen;
    o.server.auth = c.auth;
    o.server.insecure_allow_unauthenticated = c.insecure;
    absl::Status s = ValidateOptions(o);
    if (c.error.empty()) {
      EXPECT_TRUE(s.ok()) << c.mcp_listen << ": " << s;
    } else {
      EXPECT_THAT(s.message(), HasSubstr(c.error)) << c.mcp_listen;
    }
  }
}

}  // namespace
}  // namespace toolexec
