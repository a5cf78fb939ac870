// How the config file and the flags over it set options: the sessions' idle
// TTL (on by default), the shell's and the memory tool's settings, what a 0
// in the file means, and the flags as a layer merged over the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "google/protobuf/text_format.h"
#include "google/protobuf/util/field_mask_util.h"
#include "server/config/config.h"
#include "server/config/internal.h"
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

// The options of a config file (text proto) with `flags` given over it, as
// toolexecd builds them: a flag's bad value, then the merged config's.
absl::StatusOr<DaemonOptions> FileAndFlags(const std::string& file,
                                           const std::map<std::string, std::string>& flags,
                                           std::string* log_level = nullptr) {
  v1::DaemonConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(file, &config)) << file;
  auto overlay = FlagsOverlay(flags);
  if (!overlay.ok()) return overlay.status();
  MergeOverlay(*overlay, &config);
  DaemonOptions options;
  std::string level = "info";
  if (absl::Status s = ApplyConfig(config, &options, &level); !s.ok()) return s;
  if (log_level != nullptr) *log_level = level;
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  return options;
}

constexpr char kFile[] =
    "example_tools: true log_level: \"warn\" "
    "limits { max_concurrent_calls: 8 drain_grace_ms: 5000 } sessions { idle_ttl_ms: 120000 }";

TEST(FlagsOverlayTest, AFlagReplacesTheFilesValue) {
  std::string log_level;
  auto options = FileAndFlags(
      kFile, {{"max_concurrent_calls", "16"}, {"session_idle_ttl_ms", "60000"},
              {"log_level", "debug"}},
      &log_level);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->engine.max_concurrent_calls, 16u);
  EXPECT_EQ(options->engine.session_idle_ttl, absl::Minutes(1));
  EXPECT_EQ(log_level, "debug");
  EXPECT_EQ(options->server.drain_grace, absl::Seconds(5));  // not given: the file's
}

TEST(FlagsOverlayTest, AFlagGivenAsZeroOrFalseReplacesTheFilesValue) {
  auto options = FileAndFlags(
      kFile, {{"example_tools", "false"}, {"drain_grace_ms", "0"}, {"session_idle_ttl_ms", "0"}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->tools.example_tools);
  EXPECT_EQ(options->server.drain_grace, absl::ZeroDuration());
  EXPECT_EQ(options->engine.session_idle_ttl, absl::ZeroDuration());
  // A 0 out of range is refused, not taken for the default.
  auto zero = FileAndFlags(kFile, {{"max_concurrent_calls", "0"}});
  EXPECT_THAT(zero.status().message(),
              ::testing::HasSubstr("limits.max_concurrent_calls (--max_concurrent_calls) is 0"));
}

TEST(FlagsOverlayTest, AFlagNotGivenLeavesTheFilesValue) {
  std::string log_level;
  // Flags without a config field are no part of the overlay.
  auto options = FileAndFlags(
      kFile, {{"listen", "127.0.0.1:0"}, {"config", "/etc/toolexec.textproto"},
              {"max_receive_message_bytes", "4096"}},
      &log_level);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->server.listen, "127.0.0.1:0");
  EXPECT_TRUE(options->tools.example_tools);
  EXPECT_EQ(log_level, "warn");
  EXPECT_EQ(options->engine.max_concurrent_calls, 8u);
  EXPECT_EQ(options->server.drain_grace, absl::Seconds(5));
  EXPECT_EQ(options->engine.session_idle_ttl, absl::Minutes(2));
}

TEST(FlagsOverlayTest, AFlagOutOfRangeIsNamedWithItsField) {
  auto options = FileAndFlags(kFile, {{"max_concurrent_calls", "5000"}});
  EXPECT_EQ(options.status().message(),
            "limits.max_concurrent_calls (--max_concurrent_calls) is 5000; allowed 1 to 4096");
  options = FileAndFlags(kFile, {{"call_timeout_ms", "10000000000000"}});
  EXPECT_THAT(options.status().message(),
              ::testing::HasSubstr("limits.default_call_timeout_ms (--call_timeout_ms) is "
                                   "10000000000000; allowed 1 to 2592000000 ms (30 days)"));
  // A value ApplyConfig refuses is the flag's, named so.
  options = FileAndFlags(kFile, {{"log_level", "loud"}});
  EXPECT_EQ(options.status().message(),
            "log_level (--log_level) 'loud' is not one of trace, debug, info, warn, error");
}

// Every flag with a config field names a field of DaemonConfig, and errors
// name that field with the flag.
TEST(FlagsOverlayTest, EveryFlagHasItsField) {
  for (const FlagField& f : FlagFields()) {
    EXPECT_TRUE(google::protobuf::util::FieldMaskUtil::IsValidPath<v1::DaemonConfig>(f.field))
        << f.flag;
    EXPECT_EQ(FlagOption(f.flag), f.field);
    EXPECT_EQ(OptionName(f.field), absl::StrCat(f.field, " (--", f.flag, ")"));
    auto overlay = FlagsOverlay({{f.flag, ""}});  // "" is a value of no number or bool
    if (!overlay.ok()) {
      EXPECT_EQ(overlay.status().code(), absl::StatusCode::kInvalidArgument) << overlay.status();
      EXPECT_THAT(overlay.status().message(), ::testing::HasSubstr(absl::StrCat("--", f.flag)));
    }
  }
  EXPECT_EQ(FlagOption("max_receive_message_bytes"), "--max_receive_message_bytes");
  EXPECT_EQ(OptionName("limits.max_sessions"), "limits.max_sessions");
}

}  // namespace
}  // namespace toolexec
