// The daemon's config file (--config): toolexec.v1.DaemonConfig as text proto
// or JSON, and how it maps onto DaemonOptions.
#ifndef TOOLEXEC_SERVER_CONFIG_H_
#define TOOLEXEC_SERVER_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/service_core.h"
#include "toolexec/v1/config.pb.h"

namespace toolexec {

// Reads `path`: JSON when it ends in ".json", text proto otherwise. Unknown
// fields are errors. InvalidArgument names the file, line and column.
absl::StatusOr<v1::DaemonConfig> LoadConfigFile(const std::string& path);

// Copies every field the config sets (non-empty, non-zero) into `options`.
// InvalidArgument for out-of-range values or an unknown log level.
absl::Status ApplyConfig(const v1::DaemonConfig& config, DaemonOptions* options,
                         std::string* log_level);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_CONFIG_H_
