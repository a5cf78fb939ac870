// The bound on progress a client has not read yet (server/progress_bound.h).
#include "server/progress_bound.h"

#include <gtest/gtest.h>

namespace toolexec {
namespace {

TEST(ProgressBoundTest, PastTheEventsOrTheBytesProgressIsDroppedUntilSomeLeaves) {
  ProgressBound bound;
  for (size_t i = 0; i < ProgressBound::kMaxEvents; ++i) ASSERT_TRUE(bound.Admit(1)) << i;
  EXPECT_FALSE(bound.Admit(0));
  EXPECT_EQ(bound.dropped(), 1u);
  bound.Release(1);  // one written: room for one more
  EXPECT_TRUE(bound.Admit(1));
  EXPECT_FALSE(bound.Admit(1));
  EXPECT_EQ(bound.dropped(), 2u);

  bound.Clear();  // all handed out at once
  EXPECT_TRUE(bound.Admit(ProgressBound::kMaxBytes - 10));
  EXPECT_FALSE(bound.Admit(11));
  EXPECT_TRUE(bound.Admit(10));
  EXPECT_FALSE(bound.Admit(1));
  EXPECT_EQ(bound.dropped(), 4u);
  bound.Release(ProgressBound::kMaxBytes - 10);
  EXPECT_TRUE(bound.Admit(100));
}

}  // namespace
}  // namespace toolexec
