// The sessions' idle TTL: on by default, and how the config and options set it.
#include <gtest/gtest.h>

#include "google/protobuf/text_format.h"
#include "server/config.h"
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

}  // namespace
}  // namespace toolexec
