// bench_checkpoint_batch: what checkpoints cost a batch that writes, as a
// ratio measured in one run by one client.
//
// Two in-process daemons, identical but for checkpoints: "off" takes none,
// "on" takes one before every batch that can write (checkpoints.enabled, a
// scratch store_dir). Each has its own copy of a 1,000-file workspace
// (source-like files in 20 directories) and one session. In alternating
// rounds, sequential batches of one create_file call (overwriting one file
// with new contents each time, so every checkpoint has a change to record):
// p50 per batch. Goal (docs/DESIGN.md "What fast means"): on/off <= 1.2.
//
//   bench_checkpoint_batch [--quick] [--files N]
//
// Exit status: 0 whatever the timings; 1 if an RPC failed, a result was not a
// SUCCESS, or "on" did not take one checkpoint per batch (or "off" took any);
// 2 on bad usage or a daemon that cannot start.
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/daemon_pair.h"
#include "bench/stats.h"
#include "spdlog/spdlog.h"

namespace toolexec::bench {
namespace {

void MakeWorkspace(const std::string& root, int files) {
  for (int i = 0; i < files; ++i) {
    const std::string dir = absl::StrCat(root, "/src/mod", i % 20);
    std::filesystem::create_directories(dir);
    std::ofstream out(absl::StrCat(dir, "/file", i, ".cc"), std::ios::binary);
    for (int line = 0; line < 40; ++line) out << "int value_" << i << "_" << line << " = " << line << ";\n";
  }
}

v1::ExecuteBatchRequest WriteBatch(const BenchDaemon& t, int round) {
  v1::ExecuteBatchRequest request;
  request.set_session_id(t.session);
  v1::ToolCall* call = request.add_calls();
  call->set_id("write");
  call->set_name("create_file");
  auto& fields = *call->mutable_args()->mutable_fields();
  fields["file_path"].set_string_value("notes/progress.md");
  fields["contents"].set_string_value(absl::StrCat("# Progress\n\nround ", round, "\n"));
  fields["overwrite"].set_bool_value(true);
  return request;
}

int Main(int argc, char** argv) {
  bool quick = false;
  int files = 1000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--files") == 0 && i + 1 < argc &&
               absl::SimpleAtoi(argv[i + 1], &files)) {
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--files N]\n", argv[0]);
      return 2;
    }
  }
  const int rounds = quick ? 2 : 5;
  const int sequential = quick ? 50 : 1000;
  const int warmup = quick ? 10 : 100;
  spdlog::set_level(spdlog::level::warn);

  char templ[] = "/tmp/bench_checkpoint_batch.XXXXXX";
  const char* scratch = mkdtemp(templ);
  if (scratch == nullptr) return 2;
  BenchDaemon off, on;
  for (BenchDaemon* t : {&off, &on}) {
    const std::string workspace = absl::StrCat(scratch, t == &on ? "/on" : "/off");
    MakeWorkspace(workspace, files);
    DaemonOptions options;
    options.engine.workspace = workspace;
    if (t == &on) {
      options.engine.checkpoints_enabled = true;
      options.engine.checkpoints.store_dir = absl::StrCat(scratch, "/store");
    }
    t->daemon = StartBenchDaemon(std::move(options));
    if (t->daemon == nullptr || !ConnectWithSession(*t)) return 2;
  }

  std::printf("bench_checkpoint_batch: one create_file per batch, sequential, to a daemon taking "
              "a checkpoint before each (on) and one taking none (off); %d-file workspace\n%s\n",
              files, quick ? "--quick: small counts for a smoke run; timings not meaningful" : "");
  int round_no = 0;
  int checkpoints_off = 0, checkpoints_on = 0;
  for (int i = 0; i < warmup; ++i, ++round_no) {
    RunBatch(off, WriteBatch(off, round_no), &checkpoints_off);
    RunBatch(on, WriteBatch(on, round_no), &checkpoints_on);
  }
  std::vector<double> p50_off, p50_on;
  for (int r = 0; r < rounds; ++r) {
    for (BenchDaemon* t : {&off, &on}) {
      std::vector<double> lat;
      lat.reserve(sequential);
      for (int i = 0; i < sequential; ++i) {
        lat.push_back(RunBatch(*t, WriteBatch(*t, round_no + i),
                               t == &on ? &checkpoints_on : &checkpoints_off));
      }
      (t == &off ? p50_off : p50_on).push_back(Percentile(lat, 0.5));
    }
    round_no += sequential;
  }
  const double ms_off = Percentile(p50_off, 0.5), ms_on = Percentile(p50_on, 0.5);
  std::printf("\none create_file per batch, %d rounds x %d batches (median of the rounds' p50)\n",
              rounds, sequential);
  std::printf("  off %8.1f µs   on %8.1f µs   ratio on/off %.3fx (goal <= 1.2: %s)\n", ms_off,
              ms_on, ms_on / ms_off, ms_on / ms_off <= 1.2 ? "met" : "NOT met");
  const int batches = warmup + rounds * sequential;
  if (checkpoints_on != batches || checkpoints_off != 0) {
    Fail(absl::StrCat("checkpoints: ", checkpoints_on, " on (expected ", batches, "), ",
                      checkpoints_off, " off (expected 0)"));
  }
  on.daemon->Shutdown();
  off.daemon->Shutdown();
  on.daemon.reset();
  off.daemon.reset();
  std::filesystem::remove_all(scratch);
  if (FailureCount() > 0) {
    std::printf("FAILED: %d problem(s), see stderr\n", FailureCount());
    return 1;
  }
  std::printf("all RPCs OK, every result SUCCESS, one checkpoint per batch with them on\n");
  return 0;
}

}  // namespace
}  // namespace toolexec::bench

int main(int argc, char** argv) { return toolexec::bench::Main(argc, argv); }
