// The daemon's config file (--config): toolexec.v1.DaemonConfig as text proto
// or JSON (load.cc), the flags as a DaemonConfig merged over it (flags.cc),
// how the result maps onto DaemonOptions (apply.cc), and the options' ranges
// (validate.cc).
#ifndef TOOLEXEC_SERVER_CONFIG_CONFIG_H_
#define TOOLEXEC_SERVER_CONFIG_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/field_mask.pb.h"
#include "server/options.h"
#include "toolexec/v1/config.pb.h"

namespace toolexec {

// The largest config file LoadConfigFile reads.
inline constexpr uint64_t kMaxConfigFileBytes = 4 << 20;

// The whole of `path` if it is a regular file of at most `max_bytes`; else
// an error that starts with `what` and the path ("config file /x is a
// directory; give a regular file"). A FIFO or device is refused unread.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, absl::string_view what,
                                            uint64_t max_bytes);

// Reads `path`: JSON when it ends in ".json", text proto otherwise. Unknown
// fields are errors. InvalidArgument names the file, line and column; a path
// that is not a regular file (a directory, FIFO or device) or is larger than
// kMaxConfigFileBytes is refused without reading it (a FIFO does not block).
// A field given as 0 or "" is left unset (its default), but where its 0 is a
// value of its own ("0 = never").
absl::StatusOr<v1::DaemonConfig> LoadConfigFile(const std::string& path);

// Copies every field the config sets into `options`: a field with presence
// (`optional`) when it is set, whatever its value (LoadConfigFile unsets the
// file's zeros that mean the default), any other when it is not 0 or "".
// InvalidArgument for an unknown log level, a nameless subagent or an
// incomplete hook; the ranges are ValidateOptions' job.
absl::Status ApplyConfig(const v1::DaemonConfig& config, DaemonOptions* options,
                         std::string* log_level);

// What toolexecd's flags set, as a layer over the config file: each flag
// given on the command line that has a config field writes that field of
// `config` (--max_concurrent_calls: limits.max_concurrent_calls), and `fields`
// names them all, so that a flag given as 0, "" or an empty list still
// replaces the file's value.
struct ConfigOverlay {
  v1::DaemonConfig config;
  google::protobuf::FieldMask fields;
};

// The overlay of `flags`: the flags given on the command line, by name (no
// dashes), each with its value as text as abseil spells it ("256", "true",
// "0660"). Flags without a config field are left out. The values are checked
// as ApplyConfig checks the file's, so InvalidArgument names the flag (a
// --unix_socket_mode that is not octal, an --mcp_allowed_hosts entry that is
// not a host, an unknown --log_level).
absl::StatusOr<ConfigOverlay> FlagsOverlay(const std::map<std::string, std::string>& flags);

// `overlay` over `config` (the file's): each field the overlay names replaces
// the config's, a repeated one whole. ApplyConfig then takes the result.
void MergeOverlay(const ConfigOverlay& overlay, v1::DaemonConfig* config);

// DaemonConfig.policy as the engine's PolicyOptions, validated
// (InvalidArgument naming the rule or profile).
absl::Status ApplyPolicyConfig(const v1::PolicyConfig& config, PolicyOptions* options);

// A millisecond count from the config file or a flag as a Duration. Counts
// past what a Duration holds become InfiniteDuration(), so ValidateOptions
// refuses them instead of seeing a wrapped value.
absl::Duration MillisecondsOption(uint64_t ms);

// Checks every numeric option of `options` (engine and server) against its documented range
// (config.proto and the README's flag table give them) and the relations
// between them. InvalidArgument names the config field and the flag (where
// there is one) and the allowed range; nothing is clamped. toolexecd runs it
// once, after the config file and the flags are both applied, so both are
// held to the same ranges.
absl::Status ValidateOptions(const DaemonOptions& options);

// The port of a "host:port" (or "[v6]:port") address, if it ends in one of 0
// to 65535.
std::optional<uint16_t> ListenPort(absl::string_view listen);

// The range ValidateOptions allows for the flag `flag` (no dashes), as
// "1 to 4096" or "1 to 2592000000 ms (30 days)"; "" for a flag without one.
std::string FlagRange(absl::string_view flag);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_CONFIG_CONFIG_H_
