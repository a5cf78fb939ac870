// Captures what the daemon logs, line by line, for tests of its log format.
#ifndef TOOLEXEC_TESTS_COMMON_LOG_LINES_H_
#define TOOLEXEC_TESTS_COMMON_LOG_LINES_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "spdlog/sinks/base_sink.h"
#include "spdlog/spdlog.h"

namespace toolexec {
namespace testing {

class LineSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines_.emplace_back(msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
};

// While it lives, the default logger writes info and above into `sink()`
// only; then the previous logger and level return.
class CaptureLog {
 public:
  CaptureLog()
      : sink_(std::make_shared<LineSink>()),
        previous_(spdlog::default_logger()),
        previous_level_(spdlog::get_level()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
    spdlog::set_level(spdlog::level::info);
  }
  ~CaptureLog() {
    spdlog::set_default_logger(previous_);
    spdlog::set_level(previous_level_);
  }
  CaptureLog(const CaptureLog&) = delete;
  CaptureLog& operator=(const CaptureLog&) = delete;

  LineSink& sink() { return *sink_; }

 private:
  std::shared_ptr<LineSink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
  spdlog::level::level_enum previous_level_;
};

}  // namespace testing
}  // namespace toolexec

#endif  // TOOLEXEC_TESTS_COMMON_LOG_LINES_H_
