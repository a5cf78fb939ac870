// The environment run_command passes on: which variables are secrets, the
// scrub, the merge, and the in-place wipe of the daemon's own secrets.
#include "tools/process/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace toolexec::command {
namespace {

using ::testing::ElementsAre;

TEST(LooksSecret, RealWorldSecretNames) {
  for (const char* name :
       {"MY_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GITHUB_PAT", "AZURE_DEVOPS_PAT",
        "NPM_TOKEN", "HF_TOKEN", "SLACK_BOT_TOKEN", "STRIPE_SECRET_KEY", "DB_PASS",
        "DB_PASSWORD", "PGPASSWORD", "MYSQL_PWD", "DOCKER_PASSWD", "TWINE_PASSWORD",
        "GPG_PASSPHRASE", "GOOGLE_APPLICATION_CREDENTIALS", "AWS_CREDS", "NPM_CONFIG__AUTH",
        "SSH_AUTH_SOCK", "JWT_SECRET", "SESSION_COOKIE", "SENTRY_DSN", "TLS_PRIVATE_KEY",
        "AZURE_STORAGE_CONNECTION_STRING", "CLIENTSECRET", "GITHUBTOKEN", "OPENAIAPIKEY",
        "githubToken", "apiKey", "APIKey", "npm_config__authToken", "DBPass", "my-api-key",
        "db.password", "VAULT_TOKEN", "HTTP_AUTHORIZATION", "API_BEARER", "SIGNING_KEYS"}) {
    EXPECT_TRUE(LooksSecret(name)) << name;
  }
}

TEST(LooksSecret, OrdinaryNames) {
  for (const char* name :
       {"PATH", "PWD", "OLDPWD", "HOME", "LANG", "LC_ALL", "TERM", "USER", "SHELL", "HOSTNAME",
        "KEYBOARD", "MONKEY", "TURKEY_COUNT", "MANPATH", "PYTHONPATH", "GOPATH",
        "TOKENIZERS_PARALLELISM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "XDG_SESSION_ID",
        "DBUS_SESSION_BUS_ADDRESS", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "COMPASS_HOME",
        "BYPASS_CACHE", "PATCH_LEVEL", "DATABASE_URL", "CONNECTION_TIMEOUT", "PASSAGE",
        "GitHubUser", "KEYMAP", "PRIVATEER", "OAUTHLIB_INSECURE_TRANSPORT", ""}) {
    EXPECT_FALSE(LooksSecret(name)) << name;
  }
}

TEST(ValueHasUrlPassword, OnlyUrlsWithAPassword) {
  EXPECT_TRUE(ValueHasUrlPassword("postgres://app:hunter2@db:5432/app"));
  EXPECT_TRUE(ValueHasUrlPassword("redis://:hunter2@cache:6379/0"));
  EXPECT_TRUE(ValueHasUrlPassword("mirror=https://a.example/x next=http://u:p@proxy:3128"));
  EXPECT_FALSE(ValueHasUrlPassword("postgres:///app"));
  EXPECT_FALSE(ValueHasUrlPassword("http://proxy:3128"));
  EXPECT_FALSE(ValueHasUrlPassword("ssh://git@github.com/org/repo.git"));
  EXPECT_FALSE(ValueHasUrlPassword("https://example.com/a:b@c"));  // '@' in the path
  EXPECT_FALSE(ValueHasUrlPassword("user:pw@host"));                 // not a URL
  EXPECT_TRUE(IsSecretEntry("DATABASE_URL=postgres://app:hunter2@db/app"));
  EXPECT_FALSE(IsSecretEntry("DATABASE_URL=postgres:///app"));
}

TEST(ScrubEnvironment, DropsSecretsUnlessAllowed) {
  const char* env[] = {"PATH=/bin",     "AWS_SECRET_ACCESS_KEY=x",
                       "github_token=y", "DB_PASS=z",
                       "MONKEY=banana", "HOME=/root",
                       "DATABASE_URL=postgres://a:b@h/d", "NOEQUALS",
                       "=novalue",      nullptr};
  EXPECT_THAT(ScrubEnvironment(env, {}), ElementsAre("PATH=/bin", "MONKEY=banana", "HOME=/root"));
  EXPECT_THAT(ScrubEnvironment(env, {"github_token", "DATABASE_URL"}),
              ElementsAre("PATH=/bin", "github_token=y", "MONKEY=banana", "HOME=/root",
                          "DATABASE_URL=postgres://a:b@h/d"));
}

TEST(MergeEnvironment, ReplacesThenAppends) {
  EXPECT_THAT(MergeEnvironment({"A=1", "B=2"}, {{"B", "3"}, {"C", "4"}}),
              ElementsAre("A=1", "B=3", "C=4"));
}

TEST(WipeSecretEntries, ZeroesTheBlockAndDropsTheEntries) {
  // Laid out like the block the kernel gives a process: entries back to back.
  std::string block("PATH=/bin", 10);
  const size_t key_at = block.size();
  block.append("MY_API_KEY=sk-live-1234", 24);
  const size_t home_at = block.size();
  block.append("HOME=/root", 11);
  const size_t pat_at = block.size();
  block.append("GITHUB_PAT=ghp_abcd", 20);
  std::vector<char*> env = {&block[0], &block[key_at], &block[home_at], &block[pat_at], nullptr};

  EXPECT_EQ(WipeSecretEntries(env.data()), 2);
  EXPECT_STREQ(env[0], "PATH=/bin");
  EXPECT_STREQ(env[1], "HOME=/root");
  EXPECT_EQ(env[2], nullptr);
  EXPECT_EQ(block.find("sk-live"), std::string::npos);
  EXPECT_EQ(block.find("ghp_"), std::string::npos);
  EXPECT_EQ(block.find("MY_API_KEY"), std::string::npos);
  EXPECT_EQ(block.substr(key_at, 24), std::string(24, '\0'));
  EXPECT_EQ(WipeSecretEntries(env.data()), 0);
}

}  // namespace
}  // namespace toolexec::command
