#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "server/build_info.h"
#include "server/listen_probe.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using prometheus::ClientMetric;
using prometheus::Counter;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Seconds: from a trivial call (tens of microseconds) to a long command.
const std::vector<double>& DurationBounds() {
  static const auto* bounds = new std::vector<double>{
      0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
      0.25,     0.5,     1,      2.5,     5,      10,    30,     60,    120,  300,   600};
  return *bounds;
}

// Calls per batch, up to the largest --max_calls_per_batch allows.
const std::vector<double>& BatchSizeBounds() {
  static const auto* bounds = new std::vector<double>{
      1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536, 1048576};
  return *bounds;
}

// A histogram observed without a lock: one atomic count per bucket and the
// sum in integer units (microseconds for durations).
class AtomicHistogram final {
 public:
  AtomicHistogram(const std::vector<double>& bounds, double unit)
      : bounds_(bounds), unit_(unit), counts_(bounds.size() + 1) {
    for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
  }

  void Observe(double value) {
    // The first bound >= value: Prometheus buckets are "less or equal".
    size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_units_.fetch_add(std::llround(value / unit_), std::memory_order_relaxed);
  }

  ClientMetric::Histogram Snapshot() const {
    ClientMetric::Histogram h;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      cumulative += counts_[i].load(std::memory_order_relaxed);
      h.bucket.push_back(
          {cumulative, i < bounds_.size() ? bounds_[i] : std::numeric_limits<double>::infinity()});
    }
    h.sample_count = cumulative;
    h.sample_sum = static_cast<double>(sum_units_.load(std::memory_order_relaxed)) * unit_;
    return h;
  }

 private:
  const std::vector<double>& bounds_;
  const double unit_;
  std::vector<std::atomic<uint64_t>> counts_;
  std::atomic<int64_t> sum_units_{0};
};

// A histogram metric with labels; each label set's histogram is made once.
class HistogramFamily final {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  const std::vector<double>& bounds, double unit)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        bounds_(bounds),
        unit_(unit) {}

  // Stable for the family's life.
  AtomicHistogram* Get(const std::vector<std::string>& label_values) {
    absl::MutexLock lock(&mu_);
    auto& h = series_[label_values];
    if (h == nullptr) h = std::make_unique<AtomicHistogram>(bounds_, unit_);
    return h.get();
  }

  MetricFamily Collect() const {
    MetricFamily family{name_, help_, MetricType::Histogram, {}};
    absl::MutexLock lock(&mu_);
    for (const auto& [values, h] : series_) {
      ClientMetric m;
      for (size_t i = 0; i < label_names_.size(); ++i)
        m.label.push_back({label_names_[i], values[i]});
      m.histogram = h->Snapshot();
      family.metric.push_back(std::move(m));
    }
    return family;
  }

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double>& bounds_;
  const double unit_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<AtomicHistogram>> series_ ABSL_GUARDED_BY(mu_);
};

constexpr double kMicros = 1e-6;
constexpr size_t kStatuses = 5;  // ResultStatus
constexpr size_t kErrorCodes = 10;  // ErrorCode
constexpr int kGrpcCodes = 17;
constexpr size_t kDecisions = 3;  // PolicyDecision
constexpr size_t kDecidedBy = 6;  // PermissionDecidedBy
// The RPCs toolexecd serves; others are counted too, through the family's lock.
constexpr const char* kMethods[] = {
    "ListTools",     "ExecuteBatch", "OpenSession",       "UpdateSession", "CloseSession",
    "GetState",      "WatchSession", "RespondPermission", "SaveArtifact",  "LoadArtifact",
    "ListArtifacts", "ListVersions", "DeleteArtifact", "ListCheckpoints", "DiffCheckpoint",
    "RestoreCheckpoint"};
constexpr size_t kKnownMethods = sizeof(kMethods) / sizeof(kMethods[0]);

MetricFamily Gauge(std::string name, std::string help, double value,
                   std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.gauge.value = value;
  m.label = std::move(labels);
  return MetricFamily{std::move(name), std::move(help), MetricType::Gauge, {std::move(m)}};
}

MetricFamily CounterMetric(std::string name, std::string help, double value) {
  ClientMetric m;
  m.counter.value = value;
  return MetricFamily{std::move(name), std::move(help), MetricType::Counter, {std::move(m)}};
}

// The process_* metrics other Prometheus clients export, read from /proc when
// scraped: what an operator's usual dashboards and alerts look for.
void AppendProcessMetrics(std::vector<MetricFamily>* out) {
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  // The fields after the command name (which may hold spaces) start at state, field 3.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return;
  std::vector<std::string> f = absl::StrSplit(stat.substr(paren + 2), ' ');
  auto field = [&](size_t n) {  // n: the field's number in proc(5), from 1
    double v = 0;
    return n >= 3 && n - 3 < f.size() && absl::SimpleAtod(f[n - 3], &v) ? v : 0.0;
  };
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  double boot = 0;
  std::ifstream proc_stat("/proc/stat");
  for (std::string line; std::getline(proc_stat, line);) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "btime ")) absl::SimpleAtod(rest, &boot);
  }
  double fds = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  out->push_back(CounterMetric("process_cpu_seconds_total", "User and system CPU time, in seconds",
                               (field(14) + field(15)) / ticks));
  out->push_back(Gauge("process_resident_memory_bytes", "Resident memory, in bytes",
                       field(24) * page));
  out->push_back(Gauge("process_virtual_memory_bytes", "Virtual memory, in bytes", field(23)));
  out->push_back(Gauge("process_threads", "Threads of the daemon", field(20)));
  out->push_back(Gauge("process_start_time_seconds", "Start time, in seconds since the epoch",
                       boot + field(22) / ticks));
  out->push_back(Gauge("process_open_fds", "Open file descriptors", fds));
  out->push_back(Gauge("process_max_fds", "The most file descriptors the daemon may open",
                       static_cast<double>(files.rlim_cur)));
}

}  // namespace

// The metrics, and the collectable for those prometheus-cpp's registry does
// not hold (lock-free histograms, gauges read when scraped).
struct PrometheusMetrics::State final : public prometheus::Collectable {
  // One tool's handles, made on first use.
  struct ToolSlots {
    std::string name;
    std::string server_name;
    // [status][code]: the code is kToolFailed's slot on success.
    std::array<std::array<std::atomic<Counter*>, kErrorCodes>, kStatuses> calls{};
    std::atomic<AtomicHistogram*> duration{nullptr};
  };

  State()
      : registry(std::make_shared<prometheus::Registry>()),
        calls(
            prometheus::BuildCounter()
                .Name("toolexec_calls_total")
                .Help("Tool calls completed, by tool, MCP server (\"\" = in the daemon), status "
                      "and, for a call that did not succeed, its error code")
                .Register(*registry)),
        rpcs(prometheus::BuildCounter()
                 .Name("toolexec_rpcs_total")
                 .Help("gRPC calls finished, by method and status code")
                 .Register(*registry)),
        mcp_http_requests(prometheus::BuildCounter()
                              .Name("toolexec_mcp_http_requests_total")
                              .Help("Requests the MCP HTTP endpoint answered, by MCP method and "
                                    "HTTP status")
                              .Register(*registry)),
        decisions(prometheus::BuildCounter()
                      .Name("toolexec_permission_decisions_total")
                      .Help("Permission decisions on calls: the policy's (allow, deny, ask, "
                            "by rule, default, grant or error) and the outcome of each ask "
                            "(allow or deny, by user or timeout)")
                      .Register(*registry)),
        call_duration("toolexec_call_duration_seconds",
                      "Tool call latency, from start (or acceptance, if never started) to result",
                      {"tool"}, DurationBounds(), kMicros),
        batch_duration("toolexec_batch_duration_seconds",
                       "ExecuteBatch latency, from acceptance until its outcome reached the caller",
                       {}, DurationBounds(), kMicros),
        batch_calls("toolexec_batch_size_calls", "Calls per accepted ExecuteBatch", {},
                    BatchSizeBounds(), 1),
        checkpoint_duration("toolexec_checkpoint_duration_seconds",
                            "Time to take a checkpoint of a session's workspace (before a batch "
                            "that can write, or before a restore)",
                            {}, DurationBounds(), kMicros),
        checkpoint_bytes(prometheus::BuildCounter()
                             .Name("toolexec_checkpoint_bytes_total")
                             .Help("Bytes checkpoints added to the checkpoint store (new "
                                   "contents, compressed, and manifests)")
                             .Register(*registry)
                             .Add({})),
        batch_duration_h(batch_duration.Get({})),
        batch_calls_h(batch_calls.Get({})),
        checkpoint_duration_h(checkpoint_duration.Get({})) {
    unknown.name = "(unknown)";
    // The pairs that can happen, so each shows as 0 before it does.
    const char* by[] = {"rule", "default", "grant", "user", "timeout", "error"};
    using D = PolicyDecision;
    using B = PermissionDecidedBy;
    const std::pair<D, B> pairs[] = {
        {D::kAllow, B::kRule}, {D::kAllow, B::kDefault}, {D::kAllow, B::kGrant},
        {D::kAllow, B::kUser}, {D::kDeny, B::kRule},     {D::kDeny, B::kDefault},
        {D::kDeny, B::kUser},  {D::kDeny, B::kTimeout},  {D::kDeny, B::kError},
        {D::kAsk, B::kRule},   {D::kAsk, B::kDefault}};
    for (const auto& [d, b] : pairs) {
      const auto di = static_cast<size_t>(d);
      const auto bi = static_cast<size_t>(b);
      decision_counters[di][bi] =
          &decisions.Add({{"decision", std::string(PolicyDecisionName(d))},
                          {"decided_by", by[bi]}});
    }
    for (auto& row : rpc_slots) {
      for (auto& slot : row) slot.store(nullptr, std::memory_order_relaxed);
    }
  }

  ToolSlots& SlotsOf(const RegisteredTool* tool) {
    if (tool == nullptr) return unknown;
    if (tool->position < tools.size()) {
      ToolSlots& slots = *tools[tool->position];
      if (slots.name == tool->name && slots.server_name == tool->server_name) return slots;
    }
    // A tool an MCP server listed after start-up (positions past the fixed
    // tools change as servers' lists do): slots by name, made once.
    absl::MutexLock lock(&later_tools_mu);
    std::unique_ptr<ToolSlots>& slots = later_tools[{tool->name, tool->server_name}];
    if (slots == nullptr) {
      slots = std::make_unique<ToolSlots>();
      slots->name = tool->name;
      slots->server_name = tool->server_name;
    }
    return *slots;
  }

  std::vector<MetricFamily> Collect() const override {
    const BuildInfo& build = GetBuildInfo();
    std::vector<MetricFamily> out = {
        call_duration.Collect(), batch_duration.Collect(), batch_calls.Collect(),
        checkpoint_duration.Collect(),
        Gauge("toolexec_build_info", "Always 1: the version, git commit and build type serving",
              1,
              {{"build_type", build.build_type},
               {"commit", build.commit},
               {"version", build.version}})};
    {
      absl::MutexLock lock(&stats_mu);
      if (stats) {
        Engine::Stats s = stats();
        out.push_back(Gauge("toolexec_calls_in_flight", "Tool calls whose tool code is running",
                            static_cast<double>(s.calls_running)));
        out.push_back(Gauge("toolexec_calls_queued",
                            "Tool calls accepted and not running: waiting for a thread, an "
                            "earlier call on the same resource, or a slow client",
                            static_cast<double>(s.calls_queued)));
        out.push_back(Gauge("toolexec_batches_in_flight",
                            "ExecuteBatch streams accepted and not yet delivered",
                            s.batches_in_flight));
        out.push_back(
            Gauge("toolexec_sessions_open", "Sessions open", static_cast<double>(s.sessions_open)));
      }
    }
    const ProcessCountersData& p = ProcessCounters();
    out.push_back(Gauge("toolexec_child_processes_running",
                        "Command process trees running (run_command, background included)",
                        static_cast<double>(p.commands_running.load(std::memory_order_relaxed))));
    ClientMetric bytes;
    bytes.counter.value =
        static_cast<double>(p.command_output_bytes.load(std::memory_order_relaxed));
    out.push_back(MetricFamily{"toolexec_command_output_bytes_total",
                               "Bytes commands wrote to stdout and stderr, as captured",
                               MetricType::Counter,
                               {std::move(bytes)}});
    AppendProcessMetrics(&out);
    return out;
  }

  std::shared_ptr<prometheus::Registry> registry;
  prometheus::Family<Counter>& calls;
  prometheus::Family<Counter>& rpcs;
  prometheus::Family<Counter>& mcp_http_requests;
  prometheus::Family<Counter>& decisions;
  HistogramFamily call_duration;
  HistogramFamily batch_duration;
  HistogramFamily batch_calls;
  HistogramFamily checkpoint_duration;
  Counter& checkpoint_bytes;
  AtomicHistogram* const batch_duration_h;
  AtomicHistogram* const batch_calls_h;
  AtomicHistogram* const checkpoint_duration_h;
  // [PolicyDecision][PermissionDecidedBy]; null for a pair that cannot happen.
  std::array<std::array<Counter*, kDecidedBy>, kDecisions> decision_counters{};
  std::vector<std::unique_ptr<ToolSlots>> tools;  // by RegisteredTool::position; set before calls
  absl::Mutex later_tools_mu;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<ToolSlots>> later_tools
      ABSL_GUARDED_BY(later_tools_mu);
  ToolSlots unknown;
  std::array<std::array<std::atomic<Counter*>, kGrpcCodes>, kKnownMethods> rpc_slots;

  mutable absl::Mutex stats_mu;
  std::function<Engine::Stats()> stats ABSL_GUARDED_BY(stats_mu);
  std::unique_ptr<prometheus::Exposer> exposer;
};

PrometheusMetrics::PrometheusMetrics() : state_(std::make_shared<State>()) {}

PrometheusMetrics::~PrometheusMetrics() { Stop(); }

void PrometheusMetrics::SetStatsSource(std::function<Engine::Stats()> stats) {
  absl::MutexLock lock(&state_->stats_mu);
  state_->stats = std::move(stats);
}

absl::Status PrometheusMetrics::Serve(const std::string& listen) {
  if (state_->exposer != nullptr) return absl::FailedPreconditionError("already serving");
  size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  try {
    // One HTTP thread: a scrape every few seconds needs no more.
    state_->exposer = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/1);
  } catch (const std::exception&) {
    // civetweb's exception says only that it failed: ask the kernel why.
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", listen, " (metrics.listen, --metrics_listen): ",
                     WhyCannotListen(listen)));
  }
  std::vector<int> ports = state_->exposer->GetListeningPorts();
  if (ports.empty()) {
    state_->exposer.reset();
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen));
  }
  state_->exposer->RegisterCollectable(state_->registry);
  state_->exposer->RegisterCollectable(std::static_pointer_cast<prometheus::Collectable>(state_));
  address_ = absl::StrCat(host, ":", ports.front());
  return absl::OkStatus();
}

void PrometheusMetrics::Stop() {
  state_->exposer.reset();
  address_.clear();
  SetStatsSource(nullptr);
}

std::string PrometheusMetrics::Scrape() const {
  std::vector<MetricFamily> families = state_->registry->Collect();
  for (auto& f : state_->Collect()) families.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(families);
}

void PrometheusMetrics::AddTools(const ToolRegistry& registry) {
  state_->tools.clear();
  for (const auto& t : registry.tools()) {
    auto slots = std::make_unique<State::ToolSlots>();
    slots->name = t->name;
    slots->server_name = t->server_name;
    if (state_->tools.size() <= t->position) state_->tools.resize(t->position + 1);
    state_->tools[t->position] = std::move(slots);
  }
  for (auto& slots : state_->tools) {
    if (slots == nullptr) slots = std::make_unique<State::ToolSlots>();
  }
}

void PrometheusMetrics::CallCompleted(const RegisteredTool* tool, ResultStatus status,
                                      ErrorCode code, absl::Duration duration) {
  State::ToolSlots& slots = state_->SlotsOf(tool);
  const size_t s = std::min(static_cast<size_t>(status), kStatuses - 1);
  if (status == ResultStatus::kSuccess) code = ErrorCode::kToolFailed;  // one slot, no code
  const size_t e = std::min(static_cast<size_t>(code), kErrorCodes - 1);
  std::atomic<Counter*>& slot = slots.calls[s][e];
  Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {  // first time: the family's lock, once per label set
    counter = &state_->calls.Add(
        {{"tool", slots.name},
         {"server_name", slots.server_name},
         {"status", std::string(ResultStatusName(status))},
         {"code", status == ResultStatus::kSuccess ? "" : absl::AsciiStrToLower(ErrorCodeName(code))}});
    slot.store(counter, std::memory_order_release);
  }
  counter->Increment();
  AtomicHistogram* h = slots.duration.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = state_->call_duration.Get({slots.name});
    slots.duration.store(h, std::memory_order_release);
  }
  h->Observe(absl::ToDoubleSeconds(duration));
}

void PrometheusMetrics::BatchStarted(size_t calls) {
  state_->batch_calls_h->Observe(static_cast<double>(calls));
}

void PrometheusMetrics::BatchFinished(absl::Duration duration) {
  state_->batch_duration_h->Observe(absl::ToDoubleSeconds(duration));
}

void PrometheusMetrics::CheckpointTaken(absl::Duration duration, uint64_t bytes_stored) {
  state_->checkpoint_duration_h->Observe(absl::ToDoubleSeconds(duration));
  state_->checkpoint_bytes.Increment(static_cast<double>(bytes_stored));
}

void PrometheusMetrics::PermissionDecided(PolicyDecision decision, PermissionDecidedBy by) {
  const auto d = static_cast<size_t>(decision);
  const auto b = static_cast<size_t>(by);
  if (d >= kDecisions || b >= kDecidedBy) return;
  Counter* counter = state_->decision_counters[d][b];
  if (counter != nullptr) counter->Increment();
}

void PrometheusMetrics::RpcFinished(absl::string_view method, absl::StatusCode code) {
  const int c = static_cast<int>(code);
  auto labels = [&] {
    std::string code_name = absl::StatusCodeToString(code);
    return prometheus::Labels{{"method", std::string(method)},
                              {"code", code_name.empty() ? absl::StrCat(c) : code_name}};
  };
  size_t m = 0;
  while (m < kKnownMethods && method != kMethods[m]) ++m;
  if (m == kKnownMethods || c < 0 || c >= kGrpcCodes) {
    state_->rpcs.Add(labels()).Increment();
    return;
  }
  std::atomic<Counter*>& slot = state_->rpc_slots[m][c];
  Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {  // first time: the family's lock, once per label set
    counter = &state_->rpcs.Add(labels());
    slot.store(counter, std::memory_order_release);
  }
  counter->Increment();
}

void PrometheusMetrics::McpHttpRequestFinished(absl::string_view method, int status) {
  // Rare next to tool calls: the family's lock each time is fine.
  state_->mcp_http_requests
      .Add({{"method", std::string(method)}, {"status", absl::StrCat(status)}})
      .Increment();
}

namespace {
std::atomic<MetricsSink*> rpc_metrics{nullptr};
}  // namespace

void SetRpcMetrics(MetricsSink* metrics) { rpc_metrics.store(metrics, std::memory_order_release); }

void ClearRpcMetrics(MetricsSink* metrics) {
  rpc_metrics.compare_exchange_strong(metrics, nullptr, std::memory_order_acq_rel);
}

void CountRpc(absl::string_view method, int grpc_code) {
  if (MetricsSink* m = rpc_metrics.load(std::memory_order_acquire)) {
    m->RpcFinished(method, static_cast<absl::StatusCode>(grpc_code));
  }
}

void CountMcpHttpRequest(absl::string_view method, int http_status) {
  if (MetricsSink* m = rpc_metrics.load(std::memory_order_acquire)) {
    m->McpHttpRequestFinished(method, http_status);
  }
}

}  // namespace toolexec
