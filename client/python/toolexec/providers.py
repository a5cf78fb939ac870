"""Tool results as each model provider's tool-result message.

The text sent to the model is the result's ``model_content`` when the daemon
filled it, else the payload rendered as JSON (on a failure the payload is
{"error": message}). Failures are marked where the provider has a place for it
(Anthropic's ``is_error``, Gemini's ``error`` key).
"""

import json

SUCCESS = "RESULT_STATUS_SUCCESS"
PROVIDERS = ("openai", "openai_strict", "anthropic", "gemini")


def is_error(result):
    return result.get("status") != SUCCESS


def result_text(result):
    """The text for the model: model_content, else the payload as JSON."""
    if result.get("model_content"):
        return result["model_content"]
    return json.dumps(result.get("payload", {}), ensure_ascii=False)


def openai_tool_message(result):
    """An OpenAI Chat Completions message answering the tool call ``result["id"]``."""
    return {"role": "tool", "tool_call_id": result.get("id", ""), "content": result_text(result)}


def anthropic_tool_result(result):
    """An Anthropic ``tool_result`` content block for the tool_use ``result["id"]``."""
    return {"type": "tool_result", "tool_use_id": result.get("id", ""),
            "content": result_text(result), "is_error": is_error(result)}


def gemini_function_response(result):
    """A Gemini ``functionResponse`` part. Its ``response`` is the payload (an object;
    {"error": message} on a failure), or with model_content {"output": text} or
    {"error": text}."""
    if result.get("model_content"):
        key = "error" if is_error(result) else "output"
        response = {key: result["model_content"]}
    else:
        response = result.get("payload", {})
        if not isinstance(response, dict):
            response = {"output": response}
    body = {"name": result.get("name", ""), "response": response}
    if result.get("id"):
        body["id"] = result["id"]
    return {"functionResponse": body}


def tool_result_messages(results, provider):
    """The messages to append to a conversation after a batch, for ``provider``:
    one "tool" message per result (OpenAI), one user message of tool_result
    blocks (Anthropic), one user content of functionResponse parts (Gemini)."""
    results = list(results)
    if provider in ("openai", "openai_strict"):
        return [openai_tool_message(r) for r in results]
    if provider == "anthropic":
        return [{"role": "user", "content": [anthropic_tool_result(r) for r in results]}]
    if provider == "gemini":
        return [{"role": "user", "parts": [gemini_function_response(r) for r in results]}]
    raise ValueError(f"unknown provider {provider!r}; one of {', '.join(PROVIDERS)}")


def tool_calls_in(message, provider):
    """The tool calls in a model's reply, ready for Client.execute: an OpenAI assistant
    message's ``tool_calls``, an Anthropic message's ``tool_use`` blocks, a Gemini
    content's ``functionCall`` parts. Empty when the model answered in text only."""
    if provider in ("openai", "openai_strict"):
        return list(message.get("tool_calls") or [])
    if provider == "anthropic":
        content = message.get("content")
        return [b for b in content if b.get("type") == "tool_use"] if isinstance(content,
                                                                                 list) else []
    if provider == "gemini":
        return [p for p in message.get("parts", []) if "functionCall" in p]
    raise ValueError(f"unknown provider {provider!r}; one of {', '.join(PROVIDERS)}")
