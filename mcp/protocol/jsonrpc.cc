#include "mcp/protocol/jsonrpc.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rapidjson/encodedstream.h"
#include "rapidjson/memorystream.h"
#include "rapidjson/reader.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tools/runtime/json_fields.h"

namespace toolexec::mcp {
namespace {

using builtin::Member;

// A message wraps a tool's arguments or result two levels deep
// ({"params":{"arguments":...}}), so it may nest that much more than they may.
constexpr int kMaxMessageDepth = kMaxJsonDepth + 4;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("invalid JSON-RPC message: ", what));
}

// Writes the envelope {"jsonrpc":"2.0", ...} with `fill` adding the members.
template <typename Fill>
std::string Envelope(Fill fill) {
  Json doc(rapidjson::kObjectType);
  auto& alloc = doc.GetAllocator();
  doc.AddMember("jsonrpc", "2.0", alloc);
  fill(doc, alloc);
  return ToJsonString(doc);
}

JsonValue Copy(const JsonValue& v, Json::AllocatorType& alloc) { return JsonValue(v, alloc); }

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// The answer to `id`, {"jsonrpc":"2.0","id":...} with the members `write`
// adds, written as it goes: a result is written from where it is, never
// copied into the envelope first (it may be a tool's whole output).
template <typename Write>
std::string Answer(const RequestId& id, Write write) {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  writer.StartObject();
  writer.Key("jsonrpc");
  writer.String("2.0");
  writer.Key("id");
  switch (id.kind()) {
    case RequestId::Kind::kNumber:
      writer.Int64(id.number());
      break;
    case RequestId::Kind::kString:
      writer.String(id.text().data(), static_cast<rapidjson::SizeType>(id.text().size()));
      break;
    case RequestId::Kind::kNone:
      writer.Null();
      break;
  }
  write(writer);
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// Reads the top-level members of a message's first bytes (without recursion,
// and without minding that they stop short): its "id", and whether it has a
// "method".
class TopLevel : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TopLevel> {
 public:
  RequestId id;         // of the first "id" member, as ParseMessage takes it
  bool has_id = false;  // an "id" member was seen
  bool has_method = false;

  bool Default() { return Value(RequestId()); }
  // Numbers as ParseJson reads them.
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    auto number = ParseJson(absl::string_view(s, n), 1);
    return Value(number.ok() ? RequestId::FromJson(*number) : RequestId());
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    return Value(RequestId(std::string(s, n)));
  }
  bool StartObject() {
    if (depth_ == 1 && at_id_) has_id = true;  // an id that is no id
    return Open();
  }
  bool StartArray() {
    if (depth_ == 1 && at_id_) has_id = true;
    return Open();
  }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool EndArray(rapidjson::SizeType) { return Close(); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (depth_ == 1) {
      absl::string_view key(s, n);
      at_id_ = key == "id";
      has_method = has_method || key == "method";
    }
    return true;
  }

 private:
  bool Value(RequestId value) {
    if (depth_ == 1 && at_id_ && !has_id) {
      id = std::move(value);
      has_id = true;
    }
    at_id_ = false;
    return true;
  }
  bool Open() {
    at_id_ = false;
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }
  int depth_ = 0;
  bool at_id_ = false;
};

// The id a message's last bytes end with: `"id": 7 }` or `"id": "x" }`, the
// last member of the top-level object.
RequestId LastMemberId(absl::string_view tail) {
  absl::string_view t = absl::StripTrailingAsciiWhitespace(tail);
  if (t.empty() || t.back() != '}') return RequestId();
  t = absl::StripTrailingAsciiWhitespace(t.substr(0, t.size() - 1));
  size_t start;
  if (!t.empty() && t.back() == '"') {
    start = t.size() - 1;
    while (true) {  // the opening quote: one not escaped by an odd run of ''
      start = start == 0 ? absl::string_view::npos : t.rfind('"', start - 1);
      if (start == absl::string_view::npos) return RequestId();
      size_t slashes = 0;
      while (start > slashes && t[start - 1 - slashes] == '\\') ++slashes;
      if (slashes % 2 == 0) break;
    }
  } else {
    start = t.size();
    while (start > 0 && (absl::ascii_isdigit(t[start - 1]) || t[start - 1] == '-')) --start;
    if (start == t.size()) return RequestId();
  }
  auto value = ParseJson(t.substr(start), 1);
  absl::string_view before = absl::StripTrailingAsciiWhitespace(t.substr(0, start));
  if (!value.ok() || before.empty() || before.back() != ':') return RequestId();
  before = absl::StripTrailingAsciiWhitespace(before.substr(0, before.size() - 1));
  if (!absl::EndsWith(before, "\"id\"")) return RequestId();
  before = absl::StripTrailingAsciiWhitespace(before.substr(0, before.size() - 4));
  if (before.empty() || (before.back() != ',' && before.back() != '{')) return RequestId();
  return RequestId::FromJson(*value);
}

}  // namespace

RequestId RequestId::FromJson(const JsonValue& value) {
  if (value.IsString()) return RequestId(std::string(value.GetString(), value.GetStringLength()));
  if (value.IsInt64()) return RequestId(value.GetInt64());
  return RequestId();
}

JsonValue RequestId::ToJson(Json::AllocatorType& alloc) const {
  switch (kind_) {
    case Kind::kNumber:
      return JsonValue(number_);
    case Kind::kString:
      return JsonValue(text_.data(), static_cast<rapidjson::SizeType>(text_.size()), alloc);
    case Kind::kNone:
      break;
  }
  return JsonValue(rapidjson::kNullType);
}

std::string RequestId::Key() const {
  switch (kind_) {
    case Kind::kNumber:
      return absl::StrCat("n:", number_);
    case Kind::kString:
      return absl::StrCat("s:", text_);
    case Kind::kNone:
      break;
  }
  return "";
}

std::string RequestId::DebugString() const {
  switch (kind_) {
    case Kind::kNumber:
      return absl::StrCat(number_);
    case Kind::kString:
      return absl::StrCat("\"", text_, "\"");
    case Kind::kNone:
      break;
  }
  return "null";
}

absl::StatusOr<Message> ParseMessage(absl::string_view text) {
  auto doc = ParseJson(text, kMaxMessageDepth);
  if (!doc.ok()) return Invalid(doc.status().message());
  if (doc->IsArray()) return Invalid("batches are not supported");
  if (!doc->IsObject()) return Invalid(absl::StrCat("expected an object, got ", JsonTypeName(*doc)));
  const JsonValue* version = Member(*doc, "jsonrpc");
  if (version == nullptr || !version->IsString() || absl::string_view(version->GetString()) != "2.0") {
    return Invalid("\"jsonrpc\" must be \"2.0\"");
  }
  Message msg;
  const JsonValue* id = Member(*doc, "id");
  const JsonValue* method = Member(*doc, "method");
  if (method != nullptr) {
    if (!method->IsString()) return Invalid("\"method\" must be a string");
    msg.method.assign(method->GetString(), method->GetStringLength());
    if (const JsonValue* params = Member(*doc, "params"); params != nullptr) {
      if (!params->IsObject() && !params->IsArray()) {
        return Invalid("\"params\" must be an object or an array");
      }
      msg.params.CopyFrom(*params, msg.params.GetAllocator());
    }
    if (id == nullptr) {
      msg.kind = Message::Kind::kNotification;
      return msg;
    }
    msg.id = RequestId::FromJson(*id);
    if (msg.id.is_none()) return Invalid("a request id must be a string or an integer");
    msg.kind = Message::Kind::kRequest;
    return msg;
  }
  const JsonValue* result = Member(*doc, "result");
  const JsonValue* error = Member(*doc, "error");
  if ((result == nullptr) == (error == nullptr)) {
    return Invalid("a response has exactly one of \"result\" and \"error\"");
  }
  if (id == nullptr) return Invalid("a response needs an \"id\"");
  msg.id = RequestId::FromJson(*id);
  if (result != nullptr) {
    if (msg.id.is_none()) return Invalid("a result's id must be a string or an integer");
    msg.kind = Message::Kind::kResult;
    msg.result.CopyFrom(*result, msg.result.GetAllocator());
    return msg;
  }
  if (!error->IsObject()) return Invalid("\"error\" must be an object");
  const JsonValue* code = Member(*error, "code");
  const JsonValue* message = Member(*error, "message");
  if (code == nullptr || !code->IsInt()) return Invalid("an error's \"code\" must be an integer");
  if (message == nullptr || !message->IsString()) {
    return Invalid("an error's \"message\" must be a string");
  }
  msg.kind = Message::Kind::kError;
  msg.error.code = code->GetInt();
  msg.error.message.assign(message->GetString(), message->GetStringLength());
  if (const JsonValue* data = Member(*error, "data"); data != nullptr) {
    msg.error.data.CopyFrom(*data, msg.error.data.GetAllocator());
  }
  return msg;
}

std::string BuildRequest(const RequestId& id, absl::string_view method, const JsonValue* params) {
  return Envelope([&](Json& doc, Json::AllocatorType& alloc) {
    doc.AddMember("id", id.ToJson(alloc), alloc);
    doc.AddMember("method", JsonValue(method.data(), method.size(), alloc), alloc);
    if (params != nullptr) doc.AddMember("params", Copy(*params, alloc), alloc);
  });
}

std::string BuildNotification(absl::string_view method, const JsonValue* params) {
  return Envelope([&](Json& doc, Json::AllocatorType& alloc) {
    doc.AddMember("method", JsonValue(method.data(), method.size(), alloc), alloc);
    if (params != nullptr) doc.AddMember("params", Copy(*params, alloc), alloc);
  });
}

std::string BuildResult(const RequestId& id, const JsonValue& result) {
  return Answer(id, [&](Writer& writer) {
    writer.Key("result");
    result.Accept(writer);
  });
}

std::string BuildListResult(const RequestId& id, absl::string_view key,
                            const std::vector<const JsonValue*>& items) {
  return Answer(id, [&](Writer& writer) {
    writer.Key("result");
    writer.StartObject();
    writer.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
    writer.StartArray();
    for (const JsonValue* item : items) item->Accept(writer);
    writer.EndArray();
    writer.EndObject();
  });
}

std::string BuildError(const RequestId& id, int code, absl::string_view message,
                       const JsonValue* data) {
  return Envelope([&](Json& doc, Json::AllocatorType& alloc) {
    doc.AddMember("id", id.ToJson(alloc), alloc);
    JsonValue error(rapidjson::kObjectType);
    error.AddMember("code", code, alloc);
    error.AddMember("message", JsonValue(message.data(), message.size(), alloc), alloc);
    if (data != nullptr) error.AddMember("data", Copy(*data, alloc), alloc);
    doc.AddMember("error", error, alloc);
  });
}

absl::Status RpcErrorStatus(const RpcError& error, absl::string_view context) {
  std::string text = absl::StrCat(context, ": ", error.message, " (JSON-RPC error ", error.code, ")");
  switch (error.code) {
    case kInvalidParams:
      return absl::InvalidArgumentError(text);
    case kMethodNotFound:
      return absl::NotFoundError(text);
    default:
      return absl::InternalError(text);
  }
}

void MessageEnds::Append(absl::string_view bytes) {
  bytes_ += bytes.size();
  if (head_.size() < kKeep) {
    const size_t n = std::min(bytes.size(), kKeep - head_.size());
    head_.append(bytes.data(), n);
  }
  if (bytes.size() > kKeep) bytes = bytes.substr(bytes.size() - kKeep);
  tail_.append(bytes.data(), bytes.size());
  if (tail_.size() > 2 * kKeep) tail_.erase(0, tail_.size() - kKeep);
}

void MessageEnds::Clear() {
  head_.clear();
  tail_.clear();
  bytes_ = 0;
}

absl::string_view MessageEnds::tail() const {
  absl::string_view t = tail_;
  return t.size() > kKeep ? t.substr(t.size() - kKeep) : t;
}

std::optional<Message> AnswerInPlaceOf(absl::string_view head, absl::string_view tail,
                                       absl::string_view why) {
  TopLevel top;
  rapidjson::Reader reader;
  // A bounded stream, as ParseJson reads: encoding validation reads a
  // multi-byte sequence whole, so a NUL-terminated stream would be read past
  // its end when `head` stops inside one.
  rapidjson::MemoryStream bytes(head.data(), head.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> stream(bytes);
  // The flags ParseJson reads with; stops where `head` does.
  reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag |
               rapidjson::kParseNumbersAsStringsFlag>(stream, top);
  if (top.has_method) return std::nullopt;
  RequestId id = top.has_id ? top.id : LastMemberId(tail);
  if (id.is_none()) return std::nullopt;
  Message msg;
  msg.kind = Message::Kind::kError;
  msg.id = std::move(id);
  msg.error.code = kInternalError;
  msg.error.message = std::string(why);
  return msg;
}

absl::Status LineFramer::Feed(absl::string_view bytes,
                              const std::function<void(absl::string_view)>& on_line,
                              const std::function<void(const MessageEnds&)>& on_dropped) {
  bool dropped = false;
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    absl::string_view piece = bytes.substr(0, newline);
    bytes.remove_prefix(newline == absl::string_view::npos ? bytes.size() : newline + 1);
    const bool complete = newline != absl::string_view::npos;
    if (!discarding_) {
      // "+1": a line of exactly the limit may still have its "\r" to come.
      if (buffer_.size() + piece.size() > max_line_bytes_ + 1) {
        discarding_ = true;
        dropped_.Clear();
        dropped_.Append(buffer_);
        buffer_.clear();
        buffer_.shrink_to_fit();
      } else {
        buffer_.append(piece.data(), piece.size());
      }
    }
    if (discarding_) dropped_.Append(piece);
    if (!complete) break;
    if (discarding_) {
      discarding_ = false;
      dropped = true;
      if (on_dropped) on_dropped(dropped_);
      dropped_.Clear();
      continue;
    }
    absl::string_view line = buffer_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_line_bytes_) {
      dropped = true;
      if (on_dropped) {
        dropped_.Clear();
        dropped_.Append(line);
        on_dropped(dropped_);
        dropped_.Clear();
      }
    } else if (!line.empty()) {
      on_line(line);
    }
    buffer_.clear();
  }
  if (dropped) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a message longer than ", max_line_bytes_, " bytes was dropped"));
  }
  return absl::OkStatus();
}

}  // namespace toolexec::mcp
