// How the config file sets options: the sessions' idle TTL (on by default),
// the shell's and the memory tool's settings, and what a 0 in the file means.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "google/protobuf/text_format.h"
#include "server/config/config.h"
#include "server/options.h"
#include "tests/unit/builtin/file_test_util.h"

namespace toolexec {
namespace {

absl::Duration TtlFrom(const std::string& config_text) {
  v1::DaemonConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(config_text, &config));
  DaemonOptions options;
  std::string log_level;
  EXPECT_TRUE(ApplyConfig(config, &options, &log_level).ok());
  return options.engine.session_idle_ttl;
}

TEST(SessionIdleTtlConfigTest, OneHourUnlessConfigured) {
  EXPECT_EQ(EngineOptions().session_idle_ttl, absl::Hours(1));
  EXPECT_EQ(SessionManager::Options().idle_ttl, absl::Hours(1));
  EXPECT_EQ(TtlFrom(""), absl::Hours(1));
  EXPECT_EQ(TtlFrom("sessions { max_depth: 3 }"), absl::Hours(1));
  EXPECT_EQ(TtlFrom("sessions { idle_ttl_ms: 60000 }"), absl::Minutes(1));
  // An explicit 0 turns the TTL off.
  EXPECT_EQ(TtlFrom("sessions { idle_ttl_ms: 0 }"), absl::ZeroDuration());
}

// The persistent shell's idle timeout and the memory tool's directory.
TEST(ShellAndMemoryConfigTest, DefaultsAndValidation) {
  auto apply = [](const std::string& text, DaemonOptions* options) {
    v1::DaemonConfig config;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
    std::string log_level;
    return ApplyConfig(config, options, &log_level);
  };
  DaemonOptions defaults;
  ASSERT_TRUE(apply("", &defaults).ok());
  EXPECT_EQ(defaults.tools.builtin.shell_idle_timeout, absl::Minutes(30));
  EXPECT_EQ(defaults.tools.builtin.memory_dir, "");
  DaemonOptions set;
  ASSERT_TRUE(apply("shell_idle_timeout_ms: 0 memory_dir: \"/var/lib/toolexec/memories\"", &set)
                  .ok());
  EXPECT_EQ(set.tools.builtin.shell_idle_timeout, absl::ZeroDuration());
  EXPECT_EQ(set.tools.builtin.memory_dir, "/var/lib/toolexec/memories");
  DaemonOptions relative;
  absl::Status s = apply("memory_dir: \"memories\"", &relative);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("absolute"), absl::string_view::npos) << s;
}

// A field the file gives as 0 or "" takes its default, but where 0 is a value
// of its own (the idle timeouts': never); in text proto and JSON alike.
TEST(ConfigFileZeroTest, AZeroIsTheDefaultUnlessItMeansNever) {
  testing::TempTree tree;
  const std::string text = tree.path() + "/zeros.textproto";
  std::ofstream(text) << "listen: \"\" log_level: \"\" log_format: \"\" "
                         "model_content_max_chars: 0 mcp_max_sessions_per_caller: 0 "
                         "limits { max_concurrent_calls: 0 drain_grace_ms: 0 } "
                         "sessions { idle_ttl_ms: 0 } shell_idle_timeout_ms: 0\n";
  const std::string json = tree.path() + "/zeros.json";
  std::ofstream(json) << R"({"listen": "", "logFormat": "", "mcpSessionIdleTtlMs": "0",
                             "limits": {"maxPendingCalls": 0, "drainGraceMs": "0"},
                             "sessions": {"idleTtlMs": "0"}, "shellIdleTimeoutMs": 0})";
  const DaemonOptions defaults;
  for (const std::string& path : {text, json}) {
    auto config = LoadConfigFile(path);
    ASSERT_TRUE(config.ok()) << config.status();
    DaemonOptions options;
    std::string log_level = "info";
    ASSERT_TRUE(ApplyConfig(*config, &options, &log_level).ok()) << path;
    EXPECT_EQ(options.server.listen, defaults.server.listen) << path;
    EXPECT_EQ(log_level, "info") << path;
    EXPECT_EQ(options.log_format, defaults.log_format) << path;
    EXPECT_EQ(options.engine.model_content_max_chars, defaults.engine.model_content_max_chars);
    EXPECT_EQ(options.server.mcp_max_sessions_per_caller,
              defaults.server.mcp_max_sessions_per_caller);
    EXPECT_EQ(options.server.mcp_session_idle_ttl, defaults.server.mcp_session_idle_ttl) << path;
    EXPECT_EQ(options.engine.max_concurrent_calls, defaults.engine.max_concurrent_calls);
    EXPECT_EQ(options.engine.max_pending_calls, defaults.engine.max_pending_calls) << path;
    EXPECT_EQ(options.server.drain_grace, defaults.server.drain_grace) << path;
    EXPECT_EQ(options.engine.session_idle_ttl, absl::ZeroDuration()) << path;
    EXPECT_EQ(options.tools.builtin.shell_idle_timeout, absl::ZeroDuration()) << path;
    EXPECT_TRUE(ValidateOptions(options).ok()) << path;
  }
}

}  // namespace
}  // namespace toolexec
