// The sessions' idle TTL: on by default, and how the config and options set it.
#include <gtest/gtest.h>

#include "google/protobuf/text_format.h"
#include "server/config/config.h"
#include "server/options.h"

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

}  // namespace
}  // namespace toolexec
