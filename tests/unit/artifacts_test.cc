// [Artifacts]: artifact names, versions, scopes, and both backends.
#include "tools/runtime/artifacts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace toolexec {
namespace {

using ::testing::ElementsAre;

Artifact Text(const std::string& t) { return Artifact{true, t, "", "text/plain"}; }
Artifact Bytes(const std::string& b) { return Artifact{false, "", b, "image/png"}; }

std::string TempDir() {
  std::string dir = std::filesystem::temp_directory_path().string() + "/toolexec-art-" +
                    std::to_string(getpid()) + "-" + std::to_string(rand());
  return dir;
}

TEST(ArtifactNameTest, RejectsBadNames) {
  for (const char* bad : {"", "/", "\\", "..", ".", "a/b", "a\\b", "x..y", "user:", "user:.."}) {
    EXPECT_EQ(ValidateArtifactName(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ValidateArtifactName("report.md").ok());
  EXPECT_TRUE(ValidateArtifactName("user:profile.json").ok());
}

class ArtifactStoreTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      dir_ = TempDir();
      auto s = NewDirectoryArtifactStore(dir_);
      ASSERT_TRUE(s.ok()) << s.status();
      store_ = std::move(*s);
    } else {
      store_ = NewInMemoryArtifactStore();
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  std::unique_ptr<ArtifactStore> store_;
  ArtifactScope a_{"alice", "conv-1"};
};

TEST_P(ArtifactStoreTest, VersionsFromOneNewestFirst) {
  EXPECT_EQ(*store_->Save(a_, "notes.txt", Text("one")), 1);
  EXPECT_EQ(*store_->Save(a_, "notes.txt", Text("two")), 2);
  EXPECT_EQ(*store_->Save(a_, "img.png", Bytes(std::string("\x89PNG\0\1", 6))), 1);
  auto latest = store_->Load(a_, "notes.txt", 0);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->first.text, "two");
  EXPECT_EQ(latest->second, 2);
  EXPECT_EQ(store_->Load(a_, "notes.txt", 1)->first.text, "one");
  auto img = store_->Load(a_, "img.png", 0);
  EXPECT_FALSE(img->first.is_text);
  EXPECT_EQ(img->first.data, std::string("\x89PNG\0\1", 6));
  EXPECT_EQ(img->first.mime_type, "image/png");
  EXPECT_THAT(*store_->Versions(a_, "notes.txt"), ElementsAre(2, 1));
  EXPECT_THAT(*store_->List(a_), ElementsAre("img.png", "notes.txt"));
  EXPECT_EQ(store_->Load(a_, "notes.txt", 7).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Load(a_, "missing", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Save(a_, "../x", Text("x")).status().code(), absl::StatusCode::kInvalidArgument);
}

// A MIME type is one line of printable text: a control character (which
// would also split the disk backend's header line) is refused by every backend.
TEST_P(ArtifactStoreTest, RefusesAMimeTypeWithControlCharacters) {
  for (const char* bad : {"text/plain\nevil", "text/plain\r", "a\tb", "x\x7f"}) {
    Artifact a = Text("body\n");
    a.mime_type = bad;
    auto saved = store_->Save(a_, "m.txt", a);
    EXPECT_EQ(saved.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(saved.status().message()), ::testing::HasSubstr("mime_type"));
  }
  EXPECT_EQ(store_->Versions(a_, "m.txt").status().code(), absl::StatusCode::kNotFound);
  Artifact ok = Text("body\n");
  ok.mime_type = "text/plain; charset=utf-8";
  ASSERT_TRUE(store_->Save(a_, "m.txt", ok).ok());
  EXPECT_EQ(store_->Load(a_, "m.txt", 0)->first.mime_type, "text/plain; charset=utf-8");
  EXPECT_EQ(store_->Load(a_, "m.txt", 0)->first.text, "body\n");
}

TEST_P(ArtifactStoreTest, DeleteOneOrAll) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store_->Save(a_, "f", Text("v")).ok());
  ASSERT_TRUE(store_->Delete(a_, "f", 2).ok());
  EXPECT_THAT(*store_->Versions(a_, "f"), ElementsAre(3, 1));
  EXPECT_EQ(store_->Delete(a_, "f", 2).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->Delete(a_, "f", 0).ok());
  EXPECT_EQ(store_->Versions(a_, "f").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->List(a_)->empty());
}

TEST_P(ArtifactStoreTest, UserScopeIsSharedAcrossConversationsOfOneUser) {
  ASSERT_TRUE(store_->Save(a_, "user:prefs", Text("dark")).ok());
  ASSERT_TRUE(store_->Save(a_, "local", Text("x")).ok());
  ArtifactScope same_user_other_conv{"alice", "conv-2"};
  EXPECT_EQ(store_->Load(same_user_other_conv, "user:prefs", 0)->first.text, "dark");
  EXPECT_EQ(store_->Load(same_user_other_conv, "local", 0).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(*store_->List(same_user_other_conv), ElementsAre("user:prefs"));
  ArtifactScope other_user{"bob", "conv-1"};
  EXPECT_EQ(store_->Load(other_user, "user:prefs", 0).status().code(), absl::StatusCode::kNotFound);
  ArtifactScope no_user{"", "conv-1"};
  EXPECT_EQ(store_->Save(no_user, "user:x", Text("x")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A child's scope [Delegation]: its "user:" saves stay in its own space; it reads
// the user's versions of a name until it saves its own.
TEST_P(ArtifactStoreTest, AStagedScopeKeepsItsUserSavesToItself) {
  ASSERT_TRUE(store_->Save(a_, "user:prefs", Text("shared")).ok());
  ArtifactScope child{"alice", "s-child", true, ArtifactScope::UserNames::kStaged};
  EXPECT_EQ(store_->Load(child, "user:prefs", 0)->first.text, "shared");
  EXPECT_EQ(*store_->Save(child, "user:prefs", Text("staged")), 1);
  EXPECT_EQ(store_->Load(child, "user:prefs", 0)->first.text, "staged");
  EXPECT_EQ(store_->Load(a_, "user:prefs", 0)->first.text, "shared");
  EXPECT_THAT(*store_->Versions(a_, "user:prefs"), ElementsAre(1));
  EXPECT_THAT(*store_->List(child), ElementsAre("user:prefs"));
  ArtifactScope own_only = child;
  own_only.user_names = ArtifactScope::UserNames::kOwnOnly;
  EXPECT_EQ(store_->Load(own_only, "user:prefs", 0)->first.text, "staged");
  ASSERT_TRUE(store_->Delete(child, "user:prefs", 0).ok());
  EXPECT_EQ(store_->Load(own_only, "user:prefs", 0).status().code(), absl::StatusCode::kNotFound);
  // The user's versions cannot be deleted through a child's scope.
  EXPECT_EQ(store_->Delete(child, "user:prefs", 0).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Load(a_, "user:prefs", 0)->first.text, "shared");
  ArtifactScope no_user{"", "s-child", true, ArtifactScope::UserNames::kStaged};
  EXPECT_EQ(store_->Save(no_user, "user:x", Text("x")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A session's own space is apart from a conversation of the same name, and
// DeleteScope frees it alone.
TEST_P(ArtifactStoreTest, DeleteScopeFreesOnlyTheSessionsOwnSpace) {
  ArtifactScope session{"alice", "conv-1", true};
  ASSERT_TRUE(store_->Save(session, "x", Text("mine")).ok());
  ASSERT_TRUE(store_->Save(session, "user:u", Text("the user's")).ok());
  ASSERT_TRUE(store_->Save(a_, "x", Text("the conversation's")).ok());
  EXPECT_EQ(store_->Load(session, "x", 0)->first.text, "mine");
  EXPECT_EQ(store_->Load(a_, "x", 0)->first.text, "the conversation's");
  EXPECT_EQ(store_->Usage().versions, 3);
  EXPECT_GT(store_->Usage().bytes, 0);
  ASSERT_TRUE(store_->DeleteScope(session).ok());
  ASSERT_TRUE(store_->DeleteScope(session).ok());  // nothing left: still OK
  EXPECT_EQ(store_->Load(session, "x", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Load(a_, "x", 0)->first.text, "the conversation's");
  EXPECT_EQ(store_->Load(a_, "user:u", 0)->first.text, "the user's");
  EXPECT_EQ(store_->Usage().versions, 2);
}

INSTANTIATE_TEST_SUITE_P(Backends, ArtifactStoreTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Directory" : "InMemory"; });

TEST(DirectoryArtifactStoreTest, SurvivesARestartAndLeavesNoTempFiles) {
  std::string dir = TempDir();
  {
    auto store = *NewDirectoryArtifactStore(dir);
    ASSERT_EQ(*store->Save({"u", "c"}, "a.txt", Text("first")), 1);
    ASSERT_EQ(*store->Save({"u", "c"}, "a.txt", Text("second")), 2);
  }
  auto reopened = *NewDirectoryArtifactStore(dir);
  EXPECT_EQ(reopened->Load({"u", "c"}, "a.txt", 0)->first.text, "second");
  EXPECT_EQ(*reopened->Save({"u", "c"}, "a.txt", Text("third")), 3);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().rfind(".tmp", 0), std::string::npos) << e.path();
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(NewDirectoryArtifactStore("relative/dir").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace toolexec
