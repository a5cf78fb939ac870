// Shared by the config's pieces: flags.cc (the flags with a config field),
// apply.cc (the config onto DaemonOptions) and validate.cc (the options'
// ranges). Not an API.
#ifndef TOOLEXEC_SERVER_CONFIG_INTERNAL_H_
#define TOOLEXEC_SERVER_CONFIG_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace toolexec {

// A flag of toolexecd that sets a config field: its name, the field's path in
// toolexec.v1.DaemonConfig, and how the flag's text becomes the field's value.
struct FlagField {
  enum class Form {
    kValue,  // the flag's type is the field's: "256", "true", "unix:/run/t.sock"
    kOctal,  // a number written in octal, at most 4 digits: "0660"
    kList,   // a repeated field's values, comma-separated (blanks around each dropped)
  };
  const char* flag;   // "max_concurrent_calls"
  const char* field;  // "limits.max_concurrent_calls"
  Form form = Form::kValue;
  // What the text must be, for the error when it is not ("a uid (give
  // numbers: 0,1000)"); nullptr = the field's type.
  const char* what = nullptr;
};

// Every flag with a config field (flags.cc).
absl::Span<const FlagField> FlagFields();

// How an error names `option`: a config field's path with its flag, if it has
// one ("limits.max_concurrent_calls (--max_concurrent_calls)"), else as given
// ("limits.max_sessions", or "--max_receive_message_bytes" for an option
// that is a flag only).
std::string OptionName(absl::string_view option);

// The option the flag `flag` (no dashes) sets as OptionName takes it: its
// config field, or "--flag" for a flag without one.
std::string FlagOption(absl::string_view flag);

// The longest millisecond option, and how a range error spells its unit.
inline constexpr uint64_t kMaxMilliseconds = uint64_t{30} * 24 * 3600 * 1000;  // 30 days
inline constexpr const char* kMsUnit = " ms (30 days)";

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_CONFIG_INTERNAL_H_
