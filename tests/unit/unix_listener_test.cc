// The unix-socket listener's file (server/unix_listener.h): a second listener
// refuses a socket a live one answers on, replaces a stale one, and each
// removes only the socket file it created.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "server/unix_listener.h"
#include "tests/unit/builtin/file_test_util.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;

sockaddr_un Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// Whether a process answers on `path`.
bool Answers(const std::string& path) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr = Address(path);
  return connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
}

ino_t Inode(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

TEST(UnixListenerTest, ASocketThatAnswersIsInUseAndKept) {
  testing::TempTree dir;
  const std::string path = dir.path() + "/toolexec.sock";
  auto first = UnixListener::Listen(path, 0600);
  ASSERT_TRUE(first.ok()) << first.status();
  const ino_t inode = Inode(path);

  auto second = UnixListener::Listen(path, 0600);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("unix:" + path + ": in use"));
  EXPECT_EQ(Inode(path), inode);  // not unlinked
  EXPECT_TRUE(Answers(path));     // and still the first's

  (*first)->Stop();
  EXPECT_EQ(Inode(path), 0u);  // its own socket goes with it
}

TEST(UnixListenerTest, AStaleSocketIsReplaced) {
  testing::TempTree dir;
  const std::string path = dir.path() + "/toolexec.sock";
  {
    // Bound and closed without unlinking: what a killed daemon leaves.
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr = Address(path);
    ASSERT_EQ(bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ASSERT_NE(Inode(path), 0u);
  ASSERT_FALSE(Answers(path));
  auto listener = UnixListener::Listen(path, 0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_TRUE(Answers(path));
}

TEST(UnixListenerTest, StopRemovesOnlyTheSocketItCreated) {
  testing::TempTree dir;
  const std::string path = dir.path() + "/toolexec.sock";
  auto first = UnixListener::Listen(path, 0);
  ASSERT_TRUE(first.ok()) << first.status();
  // Its file is removed by hand and another listener takes the path.
  ASSERT_EQ(unlink(path.c_str()), 0);
  auto second = UnixListener::Listen(path, 0);
  ASSERT_TRUE(second.ok()) << second.status();
  const ino_t inode = Inode(path);

  (*first)->Stop();
  EXPECT_EQ(Inode(path), inode);
  EXPECT_TRUE(Answers(path));
  (*second)->Stop();
  EXPECT_EQ(Inode(path), 0u);
}

}  // namespace
}  // namespace toolexec
