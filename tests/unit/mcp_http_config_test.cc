// The MCP HTTP endpoint's settings: sessions per caller, the sessions' idle TTL
// and the hosts its Host check accepts, from the config and as validated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "google/protobuf/text_format.h"
#include "server/config/config.h"
#include "server/options.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<DaemonOptions> FromConfig(const std::string& config_text) {
  v1::DaemonConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(config_text, &config));
  DaemonOptions options;
  std::string log_level;
  if (absl::Status s = ApplyConfig(config, &options, &log_level); !s.ok()) return s;
  return options;
}

TEST(McpHttpConfigTest, DefaultsAndConfiguredValues) {
  auto defaults = FromConfig("mcp_listen: \"127.0.0.1:0\"");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->server.mcp_max_sessions_per_caller, 64u);
  EXPECT_EQ(defaults->server.mcp_session_idle_ttl, absl::Minutes(30));
  EXPECT_TRUE(defaults->server.mcp_allowed_hosts.empty());

  auto set = FromConfig(
      "mcp_listen: \"127.0.0.1:0\" mcp_max_sessions_per_caller: 8 "
      "mcp_session_idle_ttl_ms: 60000 mcp_allowed_hosts: \"MCP.Example.com\" "
      "mcp_allowed_hosts: \"[FD00::5]\" mcp_allowed_hosts: \"192.168.1.5\"");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->server.mcp_max_sessions_per_caller, 8u);
  EXPECT_EQ(set->server.mcp_session_idle_ttl, absl::Minutes(1));
  EXPECT_THAT(set->server.mcp_allowed_hosts,
              ElementsAre("mcp.example.com", "fd00::5", "192.168.1.5"));
  EXPECT_TRUE(ValidateOptions(*set).ok());
}

TEST(McpHttpConfigTest, AllowedHostsAreHostsWithoutPort) {
  for (const char* bad : {"mcp.example.com:8765", "*", "*.example.com", "http://x", "a b", "",
                          "[not-v6]"}) {
    auto host = NormalizeMcpAllowedHost(bad);
    ASSERT_FALSE(host.ok()) << bad;
    EXPECT_THAT(host.status().message(), HasSubstr("mcp_allowed_hosts (--mcp_allowed_hosts)"));
  }
  auto config = FromConfig("mcp_allowed_hosts: \"example.com:80\"");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("'example.com:80' is not a host"));
  EXPECT_EQ(*NormalizeMcpAllowedHost("::1"), "::1");
}

// The MCP flags over the config file: a list replaced whole (or emptied), a
// 0 out of range refused naming the field and the flag.
TEST(McpHttpConfigTest, FlagsReplaceTheFilesValues) {
  auto with_flags =
      [](const std::map<std::string, std::string>& flags) -> absl::StatusOr<DaemonOptions> {
    v1::DaemonConfig config;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
        "mcp_listen: \"127.0.0.1:0\" mcp_max_sessions_per_caller: 8 "
        "mcp_allowed_hosts: \"a.example\" mcp_allowed_hosts: \"b.example\"",
        &config));
    auto overlay = FlagsOverlay(flags);
    if (!overlay.ok()) return overlay.status();
    MergeOverlay(*overlay, &config);
    DaemonOptions options;
    std::string log_level;
    if (absl::Status s = ApplyConfig(config, &options, &log_level); !s.ok()) return s;
    if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
    return options;
  };
  auto file = with_flags({});
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->server.mcp_allowed_hosts, ElementsAre("a.example", "b.example"));
  EXPECT_EQ(file->server.mcp_max_sessions_per_caller, 8u);
  auto hosts = with_flags({{"mcp_allowed_hosts", "C.example, [FD00::5]"},
                           {"mcp_max_sessions_per_caller", "2"}});
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_THAT(hosts->server.mcp_allowed_hosts, ElementsAre("c.example", "fd00::5"));
  EXPECT_EQ(hosts->server.mcp_max_sessions_per_caller, 2u);
  auto none = with_flags({{"mcp_allowed_hosts", ""}, {"mcp_listen", ""}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->server.mcp_allowed_hosts.empty());
  EXPECT_EQ(none->server.mcp_listen, "");
  EXPECT_EQ(with_flags({{"mcp_max_sessions_per_caller", "0"}}).status().message(),
            "mcp_max_sessions_per_caller (--mcp_max_sessions_per_caller) is 0; allowed 1 to 1024");
  EXPECT_THAT(with_flags({{"mcp_allowed_hosts", "x.example:80"}}).status().message(),
              HasSubstr("mcp_allowed_hosts (--mcp_allowed_hosts) 'x.example:80' is not a host"));
}

TEST(McpHttpConfigTest, RangesAreChecked) {
  DaemonOptions options;
  options.server.mcp_max_sessions_per_caller = kMcpMaxSessions + 1;
  absl::Status s = ValidateOptions(options);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("mcp_max_sessions_per_caller"));
  options.server.mcp_max_sessions_per_caller = kMcpMaxSessions;
  EXPECT_TRUE(ValidateOptions(options).ok());
  options.server.mcp_session_idle_ttl = absl::ZeroDuration();
  s = ValidateOptions(options);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("mcp_session_idle_ttl_ms"));
}

}  // namespace
}  // namespace toolexec
