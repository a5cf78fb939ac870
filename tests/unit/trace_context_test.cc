// W3C traceparent: what is accepted, what starts a new trace, and what the
// daemon hands on.
#include "tools/runtime/trace_context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace toolexec {
namespace {

constexpr char kCaller[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContextTest, ParsesAValidTraceparent) {
  auto t = ParseTraceparent(kCaller);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(t->parent_id, "00f067aa0ba902b7");
  EXPECT_EQ(t->flags, "01");
}

TEST(TraceContextTest, RefusesWhatTheSpecRefuses) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero parent id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // 00 has no more
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",   // later version, no '-'
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
}

TEST(TraceContextTest, ALaterVersionIsReadByItsFirstFields) {
  auto t = TraceContext::FromTraceparent(
      "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes-next");
  EXPECT_EQ(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(t.flags, "01");  // only "sampled" is known
}

TEST(TraceContextTest, TheDaemonsSpanBecomesTheParentItHandsOn) {
  TraceContext t = TraceContext::FromTraceparent(kCaller);
  EXPECT_EQ(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(t.parent_id, "00f067aa0ba902b7");
  ASSERT_EQ(t.span_id.size(), 16u);
  EXPECT_NE(t.span_id, t.parent_id);
  std::string handed_on = t.Traceparent();
  EXPECT_EQ(handed_on, "00-4bf92f3577b34da6a3ce929d0e0e4736-" + t.span_id + "-01");
  EXPECT_TRUE(ParseTraceparent(handed_on).has_value());
  EXPECT_EQ(TraceIdOf(handed_on), t.trace_id);
  EXPECT_EQ(SpanIdOf(handed_on), t.span_id);
}

TEST(TraceContextTest, WithoutAValidOneANewTraceStarts) {
  std::set<std::string> traces;
  for (const char* given :
       {"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}) {
    TraceContext t = TraceContext::FromTraceparent(given);
    EXPECT_TRUE(t.parent_id.empty());
    EXPECT_TRUE(ParseTraceparent(t.Traceparent()).has_value()) << t.Traceparent();
    traces.insert(t.trace_id);
  }
  EXPECT_EQ(traces.size(), 3u);
  EXPECT_TRUE(ParseTraceparent(NewTraceparent()).has_value());
}

TEST(TraceContextTest, ScopesNestOnTheirThread) {
  EXPECT_EQ(CurrentTraceLog(), nullptr);
  const std::string outer = NewTraceparent();
  const std::string inner = NewTraceparent();
  {
    ScopedTraceLog a(outer);
    EXPECT_EQ(CurrentTraceLog(), &outer);
    {
      ScopedTraceLog b(inner);
      EXPECT_EQ(CurrentTraceLog(), &inner);
    }
    EXPECT_EQ(CurrentTraceLog(), &outer);
  }
  EXPECT_EQ(CurrentTraceLog(), nullptr);
}

}  // namespace
}  // namespace toolexec
