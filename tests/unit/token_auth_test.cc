// The token file parser and the constant-time token matcher (server/auth.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/auth.h"
#include "server/config.h"

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
  EXPECT_EQ((*tokens)[0].name, "");
  EXPECT_EQ((*tokens)[0].line, 4);
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
