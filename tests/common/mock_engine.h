// A gmock Engine for testing transports without a runtime or a server: each
// call is a mock method; registry() is a real registry the test fills.
#ifndef TOOLEXEC_TESTS_COMMON_MOCK_ENGINE_H_
#define TOOLEXEC_TESTS_COMMON_MOCK_ENGINE_H_

#include <gmock/gmock.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.h"

namespace toolexec {
namespace testing {

class MockEngine : public Engine {
 public:
  const ToolRegistry& registry() const override { return registry_; }
  ToolRegistry& mutable_registry() { return registry_; }

  MOCK_METHOD(absl::StatusOr<ToolList>, ListTools,
              (const CallerIdentity&, const std::string&, const std::string&), (override));
  MOCK_METHOD(absl::StatusOr<std::unique_ptr<StartedBatch>>, StartBatch,
              (const CallerIdentity&, BatchSpec, BatchObserver*), (override));
  MOCK_METHOD(absl::StatusOr<SessionInfo>, OpenSession, (const CallerIdentity&, OpenSessionSpec),
              (override));
  MOCK_METHOD(absl::StatusOr<SessionInfo>, UpdateSession,
              (const CallerIdentity&, const std::string&, bool), (override));
  MOCK_METHOD(void, CloseSession,
              (const CallerIdentity&, const std::string&, MergeOptions,
               std::function<void(absl::StatusOr<MergeResult>)>),
              (override));
  MOCK_METHOD(absl::StatusOr<Json>, GetState,
              (const CallerIdentity&, const std::string&, const std::vector<std::string>&),
              (override));
  MOCK_METHOD(absl::StatusOr<std::unique_ptr<Subscription>>, Watch,
              (const CallerIdentity&, const std::string&, std::shared_ptr<SessionListener>),
              (override));
  MOCK_METHOD(void, SaveArtifact,
              (const CallerIdentity&, const std::string&, const std::string&, Artifact,
               std::function<void(absl::StatusOr<int64_t>)>),
              (override));
  MOCK_METHOD((absl::StatusOr<std::pair<Artifact, int64_t>>), LoadArtifact,
              (const CallerIdentity&, const std::string&, const std::string&, int64_t),
              (override));
  MOCK_METHOD(absl::StatusOr<std::vector<std::string>>, ListArtifacts,
              (const CallerIdentity&, const std::string&), (override));
  MOCK_METHOD(absl::StatusOr<std::vector<int64_t>>, ListVersions,
              (const CallerIdentity&, const std::string&, const std::string&), (override));
  MOCK_METHOD(absl::Status, DeleteArtifact,
              (const CallerIdentity&, const std::string&, const std::string&, int64_t),
              (override));
  MOCK_METHOD(bool, Drain, (absl::Time), (override));
  MOCK_METHOD(bool, Stop, (), (override));
  MOCK_METHOD(bool, draining, (), (const, override));
  MOCK_METHOD(int, in_flight_batches, (), (const, override));

 private:
  ToolRegistry registry_;
};

}  // namespace testing
}  // namespace toolexec

#endif  // TOOLEXEC_TESTS_COMMON_MOCK_ENGINE_H_
