"""Results as each provider's tool-result message, from real daemon results."""

import json

import pytest

from toolexec import (anthropic_tool_result, gemini_function_response, openai_tool_message,
                      result_text, tool_calls_in, tool_result_messages)


@pytest.fixture
def results(client):
    ok, failed = client.run_batch([{"id": "call_ok", "name": "get_weather",
                                    "args": {"city": "Paris"}},
                                   {"id": "call_bad", "name": "nosuch"}])
    return ok, failed


def without_model_content(result):
    return {**result, "model_content": ""}


def test_text_is_model_content_else_the_payload_as_json(results):
    ok, failed = map(without_model_content, results)
    assert json.loads(result_text(ok)) == {"city": "Paris", "condition": "sunny",
                                           "temperature": 22}
    assert json.loads(result_text(failed)) == {"error": failed["error_message"]}
    assert result_text({**ok, "model_content": "22°C and sunny"}) == "22°C and sunny"
    for r in results:  # whatever the daemon filled in
        assert result_text(r) == (r["model_content"] or json.dumps(r["payload"],
                                                                   ensure_ascii=False))


def test_openai_tool_messages(results):
    ok, failed = map(without_model_content, results)
    assert openai_tool_message(ok) == {"role": "tool", "tool_call_id": "call_ok",
                                       "content": result_text(ok)}
    message = openai_tool_message(failed)
    assert message["tool_call_id"] == "call_bad"
    assert json.loads(message["content"])["error"].startswith("unknown tool 'nosuch'")
    assert tool_result_messages(results, "openai") == [openai_tool_message(r) for r in results]
    assert tool_result_messages(results, "openai_strict") == tool_result_messages(results,
                                                                                  "openai")


def test_anthropic_tool_result_blocks(results):
    ok, failed = map(without_model_content, results)
    assert anthropic_tool_result(ok) == {"type": "tool_result", "tool_use_id": "call_ok",
                                         "content": result_text(ok), "is_error": False}
    block = anthropic_tool_result({**failed, "model_content": "Error: no such tool"})
    assert block["is_error"] is True and block["content"] == "Error: no such tool"
    [message] = tool_result_messages(results, "anthropic")
    assert message["role"] == "user"
    assert [b["tool_use_id"] for b in message["content"]] == ["call_ok", "call_bad"]


def test_gemini_function_responses(results):
    ok, failed = map(without_model_content, results)
    assert gemini_function_response(ok) == {"functionResponse": {
        "name": "get_weather", "id": "call_ok",
        "response": {"city": "Paris", "condition": "sunny", "temperature": 22}}}
    assert gemini_function_response(failed)["functionResponse"]["response"] == {
        "error": failed["error_message"]}
    assert gemini_function_response({**ok, "model_content": "sunny"})["functionResponse"][
        "response"] == {"output": "sunny"}
    assert gemini_function_response({**failed, "model_content": "bad"})["functionResponse"][
        "response"] == {"error": "bad"}
    assert "id" not in gemini_function_response({**ok, "id": ""})["functionResponse"]
    # A tool declared under a provider-safe name is answered by that name.
    renamed = {**ok, "name": "docs.search", "called_as": "docs_search"}
    assert gemini_function_response(renamed)["functionResponse"]["name"] == "docs_search"
    [content] = tool_result_messages(results, "gemini")
    assert content["role"] == "user" and len(content["parts"]) == 2


def test_unknown_provider(results):
    with pytest.raises(ValueError, match="anthropic"):
        tool_result_messages(results, "claude")


def test_tool_calls_in_each_providers_reply(client):
    replies = {
        "openai": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        "anthropic": {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}]},
        "gemini": {"role": "model", "parts": [
            {"text": "Checking."}, {"functionCall": {"name": "get_weather",
                                                    "args": {"city": "Paris"}, "id": "c1"}}]},
    }
    for provider, reply in replies.items():
        calls = tool_calls_in(reply, provider)
        assert len(calls) == 1, provider
        [result] = client.run_batch(calls)
        assert (result["id"], result["payload"]["city"]) == ("c1", "Paris"), provider
    assert tool_calls_in({"role": "assistant", "content": "done"}, "openai") == []
    assert tool_calls_in({"role": "assistant", "content": "done"}, "anthropic") == []
    assert tool_calls_in({"role": "model", "parts": [{"text": "done"}]}, "gemini") == []
