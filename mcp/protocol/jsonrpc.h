// JSON-RPC 2.0 messages as MCP uses them (one message per frame; MCP has no
// batches since 2025-06-18), and the newline-delimited framing of the stdio
// transport. Pure functions and a small buffer class: no I/O, no threads.
//
// Thread safety: the free functions are reentrant; a LineFramer belongs to the
// one thread that reads its byte stream.
#ifndef TOOLEXEC_MCP_PROTOCOL_JSONRPC_H_
#define TOOLEXEC_MCP_PROTOCOL_JSONRPC_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/json.h"

namespace toolexec::mcp {

// Standard JSON-RPC error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

// A request id: a number or a string (JSON-RPC allows both; MCP forbids null
// in requests). An id that is neither (only in an error answering a request
// that could not be read) is kNone.
class RequestId {
 public:
  enum class Kind { kNone, kNumber, kString };

  RequestId() = default;
  explicit RequestId(int64_t number) : kind_(Kind::kNumber), number_(number) {}
  explicit RequestId(std::string text) : kind_(Kind::kString), text_(std::move(text)) {}

  // The id of a JSON value: a string, an integer, or kNone for anything else.
  static RequestId FromJson(const JsonValue& value);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  int64_t number() const { return number_; }
  const std::string& text() const { return text_; }

  // The id as a JSON value allocated in `alloc` (null for kNone).
  JsonValue ToJson(Json::AllocatorType& alloc) const;
  // A map key that keeps 7 and "7" apart: "n:7", "s:7"; "" for kNone.
  std::string Key() const;
  // For messages: 7 or "7".
  std::string DebugString() const;

  friend bool operator==(const RequestId& a, const RequestId& b) {
    return a.kind_ == b.kind_ && a.number_ == b.number_ && a.text_ == b.text_;
  }
  friend bool operator!=(const RequestId& a, const RequestId& b) { return !(a == b); }

 private:
  Kind kind_ = Kind::kNone;
  int64_t number_ = 0;
  std::string text_;
};

struct RpcError {
  int code = kInternalError;
  std::string message;
  Json data;  // null when absent
};

// One parsed message.
struct Message {
  enum class Kind { kRequest, kNotification, kResult, kError };
  Kind kind = Kind::kNotification;
  RequestId id;        // kRequest, kResult, kError (may be kNone in an error)
  std::string method;  // kRequest, kNotification
  Json params;         // kRequest, kNotification: an object, array or null
  Json result;         // kResult
  RpcError error;      // kError

  bool is_response() const { return kind == Kind::kResult || kind == Kind::kError; }
};

// Parses one JSON-RPC 2.0 message. InvalidArgument, saying what is wrong, for
// text that is not JSON, a batch (array), a missing or wrong "jsonrpc", a
// request whose id is not a string or integer, a response with both or
// neither of result and error, or a malformed error object.
absl::StatusOr<Message> ParseMessage(absl::string_view text);

// Message builders: compact JSON text, no newline. `params` may be null
// (omitted); otherwise it must be an object or array.
std::string BuildRequest(const RequestId& id, absl::string_view method, const JsonValue* params);
std::string BuildNotification(absl::string_view method, const JsonValue* params);
std::string BuildResult(const RequestId& id, const JsonValue& result);
// A result that is one object holding one array, {"<key>": [items...]}
// (tools/list), its items written from where they are: they may be shared
// and long-lived (a cache's), and are never copied.
std::string BuildListResult(const RequestId& id, absl::string_view key,
                            const std::vector<const JsonValue*>& items);
// `data` may be null (omitted). A kNone id is written as null.
std::string BuildError(const RequestId& id, int code, absl::string_view message,
                       const JsonValue* data = nullptr);

// The error object of a response as a status: "<context>: <message> (JSON-RPC
// error <code>)", InvalidArgument for invalid params, NotFound for an unknown
// method, Internal otherwise.
absl::Status RpcErrorStatus(const RpcError& error, absl::string_view context);

// The first and last bytes of a message too long to keep (kKeep of each),
// enough to tell which request it answers.
class MessageEnds {
 public:
  static constexpr size_t kKeep = 64 << 10;
  void Append(absl::string_view bytes);
  void Clear();
  absl::string_view head() const { return head_; }
  absl::string_view tail() const;
  size_t bytes() const { return bytes_; }

 private:
  std::string head_;
  std::string tail_;  // the last kKeep to 2 * kKeep bytes
  size_t bytes_ = 0;
};

// For a message from a server that cannot be read whole (too long, nested too
// deep), of which `head` and `tail` are the first and last bytes: when it is
// a response whose id shows (a top-level "id" among its first members, or as
// its last), the error answer to deliver in its place, saying `why`, so that
// the request fails at once rather than at its deadline. Nullopt for a
// request or notification, or when no id shows.
std::optional<Message> AnswerInPlaceOf(absl::string_view head, absl::string_view tail,
                                       absl::string_view why);

// Splits a byte stream into newline-terminated lines ("\n", an optional "\r"
// before it is dropped), each at most `max_line_bytes` long. Bytes are kept
// until their line is complete. A longer line is dropped whole (its bytes are
// discarded as they arrive, so memory stays bounded, but for its ends) and
// reported.
class LineFramer {
 public:
  explicit LineFramer(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Appends `bytes` and calls `on_line` for every complete, non-empty line, in
  // order, and `on_dropped` (if set) with the ends of each line over the
  // limit once it is complete. Returns ResourceExhausted if a line over the
  // limit was dropped (lines after it are still delivered), else OK.
  absl::Status Feed(absl::string_view bytes, const std::function<void(absl::string_view)>& on_line,
                    const std::function<void(const MessageEnds&)>& on_dropped = nullptr);

  // Bytes of the incomplete last line held.
  size_t buffered() const { return buffer_.size(); }

 private:
  const size_t max_line_bytes_;
  std::string buffer_;
  bool discarding_ = false;  // inside a line over the limit
  MessageEnds dropped_;      // its ends
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_PROTOCOL_JSONRPC_H_
