// Fuzzes the config parser (server/config/load.cc): a DaemonConfig file as text
// proto or JSON, read from a file as toolexecd reads it, then applied onto
// the default options and validated, as at start-up.
// Input: one byte choosing the format (even: text proto, odd: JSON), then the
// file's contents.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/config/config.h"
#include "server/options.h"

namespace {

// Writes `text` to a scratch file ending in `suffix`; its path.
std::string WriteScratch(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string dir = [] {
    const char* base = getenv("TMPDIR");
    std::string templ = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                        "/toolexec-config-fuzz-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) std::abort();
    return templ;
  }();
  std::string path = dir + "/config" + suffix;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = WriteScratch(data + 1, size - 1, (data[0] & 1) ? ".json" : ".textproto");
  auto config = toolexec::LoadConfigFile(path);
  if (!config.ok()) return 0;
  toolexec::DaemonOptions options;
  std::string log_level;
  if (!toolexec::ApplyConfig(*config, &options, &log_level).ok()) return 0;
  (void)toolexec::ValidateOptions(options);
  return 0;
}
