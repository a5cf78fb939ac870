// Fuzzes what an MCP server sends toolexec (mcp/): a byte stream framed
// as the stdio transport frames it (newline-delimited lines, LineFramer) or as
// the streamable HTTP transport reads a text/event-stream (SseParser), each
// message parsed (ParseMessage) and, as the client does with it, a result
// mapped to a toolexec result (FromCallToolResult), a tools/list answer's
// declarations to tags (AnnotationTags), an error to a status (RpcErrorStatus).
// Input: one byte choosing the framing (even: stdio lines, odd: SSE) and the
// size of the chunks the stream arrives in, then the stream.
// Checks beyond "no crash, no sanitizer report":
//   - the framers hold no more than their limit and never hand on more;
//   - a parsed message built again with the Build* functions parses to the
//     same kind, id and method, and builds the same text again;
//   - a toolexec result mapped to a CallToolResult (ToCallToolResult) maps
//     back with the same is_error;
//   - what AnswerInPlaceOf sees of a response, read whole, is its id, and the
//     ends of a message too long to keep are at most MessageEnds::kKeep each.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "mcp/protocol/content.h"
#include "mcp/client/http_transport.h"
#include "mcp/protocol/jsonrpc.h"
#include "tools/runtime/json.h"

namespace {

using toolexec::mcp::Message;

constexpr size_t kMaxMessageBytes = 2048;

[[noreturn]] void Fail(const char* what, absl::string_view detail) {
  std::fprintf(stderr, "%s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// The message again, from the Build* functions.
std::string Rebuild(const Message& m) {
  const toolexec::JsonValue* params = m.params.IsNull() ? nullptr : &m.params;
  switch (m.kind) {
    case Message::Kind::kRequest:
      return toolexec::mcp::BuildRequest(m.id, m.method, params);
    case Message::Kind::kNotification:
      return toolexec::mcp::BuildNotification(m.method, params);
    case Message::Kind::kResult:
      return toolexec::mcp::BuildResult(m.id, m.result);
    case Message::Kind::kError:
      break;
  }
  const toolexec::JsonValue* data = m.error.data.IsNull() ? nullptr : &m.error.data;
  return toolexec::mcp::BuildError(m.id, m.error.code, m.error.message, data);
}

void CheckRoundTrip(const Message& m) {
  const std::string text = Rebuild(m);
  auto again = toolexec::mcp::ParseMessage(text);
  if (!again.ok()) Fail("a rebuilt message does not parse", again.status().ToString() + ": " + text);
  // Text, not operator== on the values: with a duplicate key, RapidJSON's ==
  // finds a value unequal to itself.
  if (again->kind != m.kind || again->id != m.id || again->method != m.method ||
      Rebuild(*again) != text) {
    Fail("a rebuilt message parses differently", text);
  }
}

// What the client does with a result: a CallToolResult, or a tools/list page.
void UseResult(const toolexec::JsonValue& result) {
  auto outcome = toolexec::mcp::FromCallToolResult(result);
  if (outcome.ok()) {
    (void)toolexec::ToJsonString(outcome->value);
    toolexec::Json back = toolexec::mcp::ToCallToolResult(
        outcome->value, outcome->is_error ? outcome->error_message : "", outcome->is_error);
    auto again = toolexec::mcp::FromCallToolResult(back);
    if (!again.ok()) Fail("ToCallToolResult's answer is refused", again.status().ToString());
    if (again->is_error != outcome->is_error) {
      Fail("isError changed in a round trip", toolexec::ToJsonString(back));
    }
  }
  if (!result.IsObject()) return;
  (void)toolexec::mcp::AnnotationTags(result);
  auto tools = result.FindMember("tools");
  if (tools != result.MemberEnd() && tools->value.IsArray()) {
    for (const toolexec::JsonValue& tool : tools->value.GetArray()) {
      (void)toolexec::mcp::AnnotationTags(tool);
    }
  }
}

// A message too long to keep: only its ends are seen.
void HandleTooLong(const toolexec::mcp::MessageEnds& ends) {
  if (ends.head().size() > toolexec::mcp::MessageEnds::kKeep ||
      ends.tail().size() > toolexec::mcp::MessageEnds::kKeep) {
    Fail("a message's ends are longer than kKeep", ends.head());
  }
  (void)toolexec::mcp::AnswerInPlaceOf(ends.head(), ends.tail(), "too long");
}

void HandleMessage(absl::string_view text) {
  if (text.size() > kMaxMessageBytes) Fail("a framer handed on more than its limit", text);
  auto message = toolexec::mcp::ParseMessage(text);
  auto in_place = toolexec::mcp::AnswerInPlaceOf(text, text, "unreadable");
  if (!message.ok()) return;
  if (message->is_response() && !message->id.is_none() &&
      (!in_place.has_value() || in_place->id != message->id)) {
    Fail("AnswerInPlaceOf does not see a response's id", text);
  }
  CheckRoundTrip(*message);
  (void)message->id.Key();
  (void)message->id.DebugString();
  switch (message->kind) {
    case Message::Kind::kResult:
      UseResult(message->result);
      break;
    case Message::Kind::kError:
      (void)toolexec::mcp::RpcErrorStatus(message->error, "tools/call");
      break;
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool sse = data[0] % 2 == 1;
  const size_t chunk = 1 + data[0] / 2;  // 1..128 bytes at a time
  absl::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  if (sse) {
    toolexec::mcp::SseParser parser(kMaxMessageBytes, HandleMessage, HandleTooLong);
    for (size_t at = 0; at < stream.size(); at += chunk) parser.Feed(stream.substr(at, chunk));
    parser.Feed("\n\n");  // the end of the stream ends the last event
  } else {
    toolexec::mcp::LineFramer framer(kMaxMessageBytes);
    for (size_t at = 0; at < stream.size(); at += chunk) {
      (void)framer.Feed(stream.substr(at, chunk), HandleMessage, HandleTooLong);
      if (framer.buffered() > kMaxMessageBytes) {
        Fail("the line framer holds more than its limit", stream);
      }
    }
  }
  return 0;
}
