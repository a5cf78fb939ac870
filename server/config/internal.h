// Shared by the config's pieces: apply.cc (the config file onto
// DaemonOptions) and validate.cc (the options' ranges). Not an API.
#ifndef TOOLEXEC_SERVER_CONFIG_INTERNAL_H_
#define TOOLEXEC_SERVER_CONFIG_INTERNAL_H_

#include <cstdint>

namespace toolexec {

// The longest millisecond option, and how a range error spells its unit.
inline constexpr uint64_t kMaxMilliseconds = uint64_t{30} * 24 * 3600 * 1000;  // 30 days
inline constexpr const char* kMsUnit = " ms (30 days)";

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_CONFIG_INTERNAL_H_
