// Who may call: the real toolexecd with each authentication method, driven
// through the C++ client library. Bearer tokens (missing, wrong, right,
// revoked by a SIGHUP reload, a bad reload that keeps the old set), TLS and
// mTLS (certificates made with `openssl` for the test), unix-socket peer
// uids (allowed and refused; root is not exempt), session ownership between
// two callers, the per-caller session quota, and a token's profile changed by
// a reload applying to the sessions it opened before. Health answers without
// credentials throughout (except under mTLS, whose handshake comes first).
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/common/daemon_process.h"
#include "tests/unit/builtin/file_test_util.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::toolexec::test_support::DaemonProcess;
using TempDir = ::toolexec::testing::TempTree;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
  chmod(path.c_str(), 0600);
}

// A daemon on 127.0.0.1:0 (or `listen`) with the example tools and `flags`.
std::unique_ptr<DaemonProcess> StartDaemon(const TempDir& dir, std::vector<std::string> flags,
                                           const std::string& listen = "127.0.0.1:0") {
  flags.push_back("--listen=" + listen);
  flags.push_back("--workspace=" + dir.path());
  flags.push_back("--example_tools");
  flags.push_back("--drain_grace_ms=1000");
  return std::make_unique<DaemonProcess>(
      DaemonProcess::Options{TOOLEXECD_PATH, dir.path(), std::move(flags)});
}

std::unique_ptr<Client> Connect(const std::string& address, ClientCredentials credentials = {}) {
  auto client = Client::Create(address, credentials);
  if (!client.ok()) throw std::runtime_error(client.status().ToString());
  return *std::move(client);
}

ClientCredentials Token(const std::string& token) {
  ClientCredentials c;
  c.token = token;
  return c;
}

bool Serving(Client& client) {
  absl::StatusOr<bool> serving = client.Health();
  return serving.ok() && *serving;
}

absl::StatusCode ListCode(Client& client) {
  return client.ListTools({}, absl::Seconds(10)).status().code();
}

absl::StatusCode BatchCode(Client& client, const std::string& session_id = "") {
  v1::ExecuteBatchRequest request;
  request.set_session_id(session_id);
  *request.add_calls() = *MakeCall("1", "get_weather", R"({"city":"Oslo"})");
  return client.ExecuteBatchCollect(request, absl::Seconds(10)).status().code();
}

// ---------------------------------------------------------------------------
// Bearer tokens.

class TokenAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_ = dir_.path() + "/tokens";
    WriteFile(tokens_,
              "# who may call\n"
              "\n"
              "tok-alice-0123456789 alice\n"
              "tok-bob-0123456789 bob read_only\n");
  }
  TempDir dir_;
  std::string tokens_;
};

TEST_F(TokenAuthTest, NoneWrongRightAndRevokedOnReload) {
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();

  auto anonymous = Connect(address);
  EXPECT_TRUE(Serving(*anonymous));  // health needs nothing
  EXPECT_EQ(ListCode(*anonymous), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(BatchCode(*anonymous), absl::StatusCode::kUnauthenticated);
  auto wrong = Connect(address, Token("tok-alice-012345678"));  // a prefix of a real one
  absl::Status refused = wrong->ListTools({}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.message(), Not(HasSubstr("tok-")));
  EXPECT_THAT(refused.message(), Not(HasSubstr("alice")));

  auto alice = Connect(address, Token("tok-alice-0123456789"));
  auto bob = Connect(address, Token("tok-bob-0123456789"));
  EXPECT_EQ(ListCode(*alice), absl::StatusCode::kOk);
  EXPECT_EQ(BatchCode(*alice), absl::StatusCode::kOk);
  EXPECT_EQ(BatchCode(*bob), absl::StatusCode::kOk);
  EXPECT_TRUE(daemon->WaitForLog("caller=alice")) << daemon->Log();
  EXPECT_TRUE(daemon->WaitForLog("caller=bob")) << daemon->Log();

  // Alice's token is revoked; the reload takes effect for the next call.
  WriteFile(tokens_, "tok-bob-0123456789 bob\n");
  kill(daemon->pid(), SIGHUP);
  ASSERT_TRUE(daemon->WaitForLog("reloaded token file")) << daemon->Log();
  EXPECT_EQ(ListCode(*alice), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(ListCode(*bob), absl::StatusCode::kOk);

  // A malformed file is refused and the tokens in use stay.
  WriteFile(tokens_, "tok-new one two three four\n");
  kill(daemon->pid(), SIGHUP);
  ASSERT_TRUE(daemon->WaitForLog("keeping the tokens in use")) << daemon->Log();
  EXPECT_THAT(daemon->Log(), HasSubstr("line 1 has 5 fields"));
  EXPECT_EQ(ListCode(*bob), absl::StatusCode::kOk);
  EXPECT_EQ(ListCode(*alice), absl::StatusCode::kUnauthenticated);

  EXPECT_THAT(daemon->Log(), Not(HasSubstr("tok-")));  // tokens are never logged
  EXPECT_EQ(daemon->SignalAndWait(SIGTERM, absl::Seconds(20)), 0) << daemon->Log();
}

TEST_F(TokenAuthTest, SessionsBelongToTheCallerThatOpenedThem) {
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();
  auto alice = Connect(address, Token("tok-alice-0123456789"));
  auto bob = Connect(address, Token("tok-bob-0123456789"));

  v1::OpenSessionRequest open;
  open.set_conversation_id("c1");
  auto session = alice->OpenSession(open);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::string id = session->session_id();

  // Bob: the session does not exist, whatever he tries.
  v1::GetStateRequest get;
  get.set_session_id(id);
  EXPECT_EQ(bob->GetState(get).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(BatchCode(*bob, id), absl::StatusCode::kNotFound);
  v1::UpdateSessionRequest update;
  update.set_session_id(id);
  EXPECT_EQ(bob->UpdateSession(update).status().code(), absl::StatusCode::kNotFound);
  v1::ListToolsRequest list;
  list.set_session_id(id);
  EXPECT_EQ(bob->ListTools(list).status().code(), absl::StatusCode::kNotFound);
  v1::OpenSessionRequest child;
  child.set_parent_session_id(id);
  EXPECT_EQ(bob->OpenSession(child).status().code(), absl::StatusCode::kNotFound);
  v1::WatchSessionRequest watch_request;
  watch_request.set_session_id(id);
  auto watch = bob->WatchSession(watch_request);
  v1::SessionEvent event;
  EXPECT_FALSE(watch->Next(&event));
  EXPECT_EQ(watch->Finish().code(), absl::StatusCode::kNotFound);
  // ... nor its artifacts (the ArtifactStore service, through its stub).
  auto artifacts =
      v1::ArtifactStore::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  auto with_token = [](grpc::ClientContext* context, const std::string& token) {
    context->AddMetadata("authorization", "Bearer " + token);
  };
  {
    grpc::ClientContext context;
    with_token(&context, "tok-alice-0123456789");
    v1::SaveArtifactRequest save;
    save.set_session_id(id);
    save.set_name("notes.txt");
    save.mutable_artifact()->set_text("alice's");
    v1::SaveArtifactResponse saved;
    ASSERT_TRUE(artifacts->SaveArtifact(&context, save, &saved).ok());
  }
  for (const auto& [token, code] : std::vector<std::pair<std::string, grpc::StatusCode>>{
           {"tok-bob-0123456789", grpc::StatusCode::NOT_FOUND},
           {"tok-alice-0123456789", grpc::StatusCode::OK}}) {
    grpc::ClientContext context;
    with_token(&context, token);
    v1::LoadArtifactRequest load;
    load.set_session_id(id);
    load.set_name("notes.txt");
    v1::LoadArtifactResponse loaded;
    EXPECT_EQ(artifacts->LoadArtifact(&context, load, &loaded).error_code(), code)
        << token;
  }
  v1::CloseSessionRequest close;
  close.set_session_id(id);
  EXPECT_EQ(bob->CloseSession(close).status().code(), absl::StatusCode::kNotFound);

  // Alice still has it, and may close it.
  EXPECT_TRUE(alice->GetState(get).ok());
  EXPECT_EQ(BatchCode(*alice, id), absl::StatusCode::kOk);
  EXPECT_TRUE(alice->CloseSession(close).ok());
}

TEST_F(TokenAuthTest, ATokenDemotedOnReloadGetsItsNewProfileInSessionsOpenedBefore) {
  WriteFile(tokens_, "tok-alice-0123456789 alice allow_all\n");
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();
  auto alice = Connect(address, Token("tok-alice-0123456789"));
  auto session = alice->OpenSession({});
  ASSERT_TRUE(session.ok()) << session.status();
  auto write = [&](const std::string& file) {
    v1::ExecuteBatchRequest request;
    request.set_session_id(session->session_id());
    *request.add_calls() =
        *MakeCall("1", "create_file", absl::StrCat(R"({"file_path":")", file, R"(","contents":"x"})"));
    auto results = alice->ExecuteBatchCollect(request, absl::Seconds(10));
    EXPECT_TRUE(results.ok()) << results.status();
    return results.ok() && results->size() == 1 ? results->front() : v1::ToolResult();
  };
  EXPECT_EQ(write("a.txt").status(), v1::RESULT_STATUS_SUCCESS);

  // The token file now binds her token to read_only: from the next call on,
  // in the session she opened before too.
  WriteFile(tokens_, "tok-alice-0123456789 alice read_only\n");
  kill(daemon->pid(), SIGHUP);
  ASSERT_TRUE(daemon->WaitForLog("reloaded token file")) << daemon->Log();
  v1::ToolResult denied = write("b.txt");
  EXPECT_EQ(denied.status(), v1::RESULT_STATUS_DENIED);
  EXPECT_THAT(denied.error_message(), HasSubstr("policy 'read_only'"));
  EXPECT_TRUE(dir_.Exists("a.txt"));
  EXPECT_FALSE(dir_.Exists("b.txt"));
  EXPECT_EQ(daemon->SignalAndWait(SIGTERM, absl::Seconds(20)), 0) << daemon->Log();
}

TEST_F(TokenAuthTest, EachCallerHasASessionQuota) {
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_, "--max_sessions_per_caller=2"});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();
  auto alice = Connect(address, Token("tok-alice-0123456789"));
  auto bob = Connect(address, Token("tok-bob-0123456789"));
  auto first = alice->OpenSession({});
  ASSERT_TRUE(first.ok()) << first.status();
  v1::OpenSessionRequest child;  // children count too
  child.set_parent_session_id(first->session_id());
  ASSERT_TRUE(alice->OpenSession(child).ok());
  absl::Status over = alice->OpenSession({}).status();
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.message(), HasSubstr("max_sessions_per_caller"));
  EXPECT_TRUE(bob->OpenSession({}).ok());  // another caller's count
  // Closing the parent (and with it the child) gives both places back.
  v1::CloseSessionRequest close;
  close.set_session_id(first->session_id());
  close.set_discard(true);
  ASSERT_TRUE(alice->CloseSession(close).ok());
  EXPECT_TRUE(alice->OpenSession({}).ok());
  EXPECT_TRUE(alice->OpenSession({}).ok());
}

TEST_F(TokenAuthTest, AMalformedTokenFileStopsTheStart) {
  WriteFile(tokens_, "ok-token-1 a\nsecret-token b c d\n");
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_});
  EXPECT_EQ(daemon->WaitForAddress(), "");
  int status = daemon->SignalAndWait(SIGTERM, absl::Seconds(5));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_THAT(daemon->Log(), HasSubstr("line 2 has 4 fields"));
  EXPECT_THAT(daemon->Log(), Not(HasSubstr("secret-token")));
}

// Unnamed tokens are named after the token: revoking an earlier line leaves
// each caller its own sessions (a name by line number handed bob's to carol).
TEST_F(TokenAuthTest, RevokingAnEarlierUnnamedTokenKeepsTheOthersSessions) {
  WriteFile(tokens_, "tok-alice-0123456789\ntok-bob-0123456789\ntok-carol-0123456789\n");
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();
  EXPECT_THAT(daemon->Log(), HasSubstr("line 2: the token has no NAME"));
  auto bob = Connect(address, Token("tok-bob-0123456789"));
  auto carol = Connect(address, Token("tok-carol-0123456789"));
  auto session = bob->OpenSession({});
  ASSERT_TRUE(session.ok()) << session.status();
  v1::GetStateRequest get;
  get.set_session_id(session->session_id());

  WriteFile(tokens_, "tok-bob-0123456789\ntok-carol-0123456789\n");
  kill(daemon->pid(), SIGHUP);
  ASSERT_TRUE(daemon->WaitForLog("reloaded token file")) << daemon->Log();
  EXPECT_TRUE(bob->GetState(get).ok());
  EXPECT_EQ(carol->GetState(get).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(daemon->Log(), Not(HasSubstr("tok-")));
}

TEST_F(TokenAuthTest, AnUnknownProfileStopsTheStartAndIsRefusedOnReload) {
  WriteFile(tokens_, "tok-a-0123456789 a read_only\ntok-b-0123456789 b readonly\n");
  auto refused = StartDaemon(dir_, {"--token_file=" + tokens_});
  EXPECT_EQ(refused->WaitForAddress(), "");
  int status = refused->SignalAndWait(SIGTERM, absl::Seconds(5));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_THAT(refused->Log(), HasSubstr("line 2: unknown policy profile 'readonly'"));

  WriteFile(tokens_, "tok-a-0123456789 a read_only\n");
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();
  WriteFile(tokens_, "tok-b-0123456789 b allow_al\n");
  kill(daemon->pid(), SIGHUP);
  ASSERT_TRUE(daemon->WaitForLog("keeping the tokens in use")) << daemon->Log();
  EXPECT_THAT(daemon->Log(), HasSubstr("line 1: unknown policy profile 'allow_al'"));
  EXPECT_EQ(ListCode(*Connect(address, Token("tok-a-0123456789"))), absl::StatusCode::kOk);
  EXPECT_EQ(ListCode(*Connect(address, Token("tok-b-0123456789"))),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(TokenAuthTest, ATokenLetsTheDaemonListenBeyondLoopback) {
  auto refused = StartDaemon(dir_, {}, "0.0.0.0:0");
  EXPECT_EQ(refused->WaitForAddress(), "");
  EXPECT_THAT(refused->Log(), HasSubstr("without authentication"));
  auto daemon = StartDaemon(dir_, {"--token_file=" + tokens_}, "0.0.0.0:0");
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();
  auto alice = Connect(absl::StrCat("127.0.0.1", address.substr(address.rfind(':'))),
                       Token("tok-alice-0123456789"));
  EXPECT_EQ(ListCode(*alice), absl::StatusCode::kOk);
}

// ---------------------------------------------------------------------------
// TLS and mTLS, with certificates made for the test.

class TlsAuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new TempDir();
    const std::string d = certs_->path();
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 ";
    const std::string cmds[] = {
        "openssl req -x509" + ec + "-keyout " + d + "/ca.key -out " + d + "/ca.crt -subj /CN=ca",
        "openssl req -x509" + ec + "-keyout " + d + "/other-ca.key -out " + d +
            "/other-ca.crt -subj /CN=other-ca",
        "openssl req -x509 -CA " + d + "/ca.crt -CAkey " + d + "/ca.key" + ec + "-keyout " + d +
            "/server.key -out " + d +
            "/server.crt -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost",
        "openssl req -x509 -CA " + d + "/ca.crt -CAkey " + d + "/ca.key" + ec + "-keyout " + d +
            "/client.key -out " + d + "/client.crt -subj /CN=harness-a",
        "openssl req -x509 -CA " + d + "/other-ca.crt -CAkey " + d + "/other-ca.key" + ec +
            "-keyout " + d + "/stranger.key -out " + d + "/stranger.crt -subj /CN=stranger",
    };
    for (const auto& cmd : cmds) {
      ASSERT_EQ(std::system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
    }
  }
  static void TearDownTestSuite() { delete certs_; }
  static std::string Cert(const std::string& name) { return certs_->path() + "/" + name; }

  static TempDir* certs_;
  TempDir dir_;
};
TempDir* TlsAuthTest::certs_ = nullptr;

TEST_F(TlsAuthTest, MtlsNeedsAClientCertificateFromTheConfiguredCa) {
  auto daemon = StartDaemon(dir_, {"--tls_cert_file=" + Cert("server.crt"),
                                   "--tls_key_file=" + Cert("server.key"),
                                   "--tls_client_ca_file=" + Cert("ca.crt")});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();

  ClientCredentials server_only;
  server_only.tls_ca_file = Cert("ca.crt");
  EXPECT_EQ(ListCode(*Connect(address, server_only)), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ListCode(*Connect(address)), absl::StatusCode::kUnavailable);  // plaintext
  ClientCredentials stranger = server_only;
  stranger.tls_cert_file = Cert("stranger.crt");
  stranger.tls_key_file = Cert("stranger.key");
  EXPECT_EQ(ListCode(*Connect(address, stranger)), absl::StatusCode::kUnavailable);

  ClientCredentials known = server_only;
  known.tls_cert_file = Cert("client.crt");
  known.tls_key_file = Cert("client.key");
  auto client = Connect(address, known);
  EXPECT_TRUE(Serving(*client));
  EXPECT_EQ(ListCode(*client), absl::StatusCode::kOk);
  // The certificate's subject CN names the caller.
  EXPECT_TRUE(daemon->WaitForLog("caller=harness-a")) << daemon->Log();
}

TEST_F(TlsAuthTest, TlsWithATokenAndHealthWithout) {
  const std::string tokens = dir_.path() + "/tokens";
  WriteFile(tokens, "tok-tls-0123456789 gateway\n");
  auto daemon = StartDaemon(dir_, {"--tls_cert_file=" + Cert("server.crt"),
                                   "--tls_key_file=" + Cert("server.key"),
                                   "--token_file=" + tokens});
  const std::string address = daemon->WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon->Log();
  ClientCredentials tls;
  tls.tls_ca_file = Cert("ca.crt");
  auto anonymous = Connect(address, tls);
  EXPECT_TRUE(Serving(*anonymous));
  EXPECT_EQ(ListCode(*anonymous), absl::StatusCode::kUnauthenticated);
  tls.token = "tok-tls-0123456789";
  EXPECT_EQ(ListCode(*Connect(address, tls)), absl::StatusCode::kOk);
  EXPECT_TRUE(daemon->WaitForLog("caller=gateway")) << daemon->Log();
  // Plaintext to a TLS port fails.
  EXPECT_EQ(ListCode(*Connect(address, Token("tok-tls-0123456789"))),
            absl::StatusCode::kUnavailable);
}

TEST_F(TlsAuthTest, AKeyThatIsNotTheCertificatesStopsTheStart) {
  auto daemon = StartDaemon(dir_, {"--tls_cert_file=" + Cert("server.crt"),
                                   "--tls_key_file=" + Cert("client.key")});
  EXPECT_EQ(daemon->WaitForAddress(), "");
  daemon->SignalAndWait(SIGTERM, absl::Seconds(5));
  EXPECT_THAT(daemon->Log(), HasSubstr("TLS key file " + Cert("client.key") +
                                       " does not match the certificate in TLS certificate "
                                       "file " + Cert("server.crt")));
  EXPECT_THAT(daemon->Log(), Not(HasSubstr("address in use")));
}

// ---------------------------------------------------------------------------
// Unix socket: the peer's uid. As root (CI), uid 0 is refused unless listed.

class UnixSocketAuthTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(UnixSocketAuthTest, AnAllowedUidCallsAsUidN) {
  const std::string path = dir_.path() + "/toolexec.sock";
  const std::string me = absl::StrCat(geteuid());
  auto daemon = StartDaemon(
      dir_, {"--unix_socket_mode=0600", "--unix_socket_allowed_uids=12345," + me}, "unix:" + path);
  ASSERT_FALSE(daemon->WaitForAddress().empty()) << daemon->Log();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto client = Connect("unix:" + path);
  EXPECT_TRUE(Serving(*client));
  EXPECT_EQ(ListCode(*client), absl::StatusCode::kOk);
  EXPECT_EQ(BatchCode(*client), absl::StatusCode::kOk);
  EXPECT_TRUE(daemon->WaitForLog("caller=uid:" + me)) << daemon->Log();
  EXPECT_EQ(daemon->SignalAndWait(SIGTERM, absl::Seconds(20)), 0) << daemon->Log();
  EXPECT_FALSE(std::filesystem::exists(path));  // the socket file goes with the daemon
}

TEST_F(UnixSocketAuthTest, AUidNotListedIsRefusedRootIncluded) {
  const std::string path = dir_.path() + "/toolexec.sock";
  // Neither list holds the test's uid (0 in CI).
  const uint32_t other = geteuid() == 54321 ? 54322 : 54321;
  auto daemon = StartDaemon(dir_, {"--unix_socket_allowed_uids=" + absl::StrCat(other)},
                            "unix:" + path);
  ASSERT_FALSE(daemon->WaitForAddress().empty()) << daemon->Log();
  auto client = Connect("unix:" + path);
  EXPECT_TRUE(Serving(*client));
  absl::Status refused = client->ListTools({}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.message(), HasSubstr(absl::StrCat("uid ", geteuid())));
  EXPECT_EQ(BatchCode(*client), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(client->OpenSession({}).status().code(), absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace toolexec
