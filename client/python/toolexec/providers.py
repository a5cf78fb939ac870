"""Tool results as each model provider's tool-result message.

The text sent to the model is the result's ``model_content`` when the daemon
filled it, else the payload rendered as JSON (on a failure the payload is
{"error": message}). Failures are marked where the provider has a place for it
(Anthropic's ``is_error``, Gemini's ``error`` key).
"""

import json

from ._batch import _as_mapping

SUCCESS = "RESULT_STATUS_SUCCESS"
PROVIDERS = ("openai", "openai_strict", "openai_responses", "anthropic", "gemini")


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
    # The name the model called it by: a tool declared under a provider-safe name
    # ("docs_search" for "docs.search") is answered by that name.
    body = {"name": result.get("called_as") or result.get("name", ""), "response": response}
    if result.get("id"):
        body["id"] = result["id"]
    return {"functionResponse": body}


def responses_output_item(result):
    """The Responses API input item answering ``result``'s call: ``apply_patch_call_output``
    {call_id, status ("completed" or "failed"), output} for an apply_patch_call,
    ``shell_call_output`` {call_id, output: [{stdout, stderr, outcome}], max_output_length}
    for a shell_call (the shell tool's payload; a failed call is one command's stderr
    with exit code 1), else ``function_call_output`` {call_id, output}."""
    call_id = result.get("id", "")
    item_type = result.get("item_type")
    if item_type == "apply_patch_call":
        return {"type": "apply_patch_call_output", "call_id": call_id,
                "status": "failed" if is_error(result) else "completed",
                "output": result_text(result)}
    if item_type == "shell_call":
        payload = result.get("payload") or {}
        item = {"type": "shell_call_output", "call_id": call_id}
        if is_error(result) or not isinstance(payload.get("output"), list):
            item["output"] = [{"stdout": "", "stderr": result_text(result),
                               "outcome": {"type": "exit", "exit_code": 1}}]
        else:
            item["output"] = [{"stdout": o.get("stdout", ""), "stderr": o.get("stderr", ""),
                               "outcome": o.get("outcome", {})} for o in payload["output"]]
        if payload.get("max_output_length") is not None:
            item["max_output_length"] = payload["max_output_length"]
        return item
    return {"type": "function_call_output", "call_id": call_id, "output": result_text(result)}


def tool_result_messages(results, provider):
    """The messages to append to a conversation after a batch, for ``provider``:
    one "tool" message per result (OpenAI), one input item per result (OpenAI
    Responses: see responses_output_item), one user message of tool_result blocks
    (Anthropic), one user content of functionResponse parts (Gemini)."""
    results = list(results)
    if provider in ("openai", "openai_strict"):
        return [openai_tool_message(r) for r in results]
    if provider == "openai_responses":
        return [responses_output_item(r) for r in results]
    if provider == "anthropic":
        return [{"role": "user", "content": [anthropic_tool_result(r) for r in results]}]
    if provider == "gemini":
        return [{"role": "user", "parts": [gemini_function_response(r) for r in results]}]
    raise ValueError(f"unknown provider {provider!r}; one of {', '.join(PROVIDERS)}")


def tool_calls_in(message, provider):
    """The tool calls in a model's reply, ready for Client.execute: an OpenAI assistant
    message's ``tool_calls``, a Responses API response's (or output list's)
    function_call, apply_patch_call and shell_call items, an Anthropic message's ``tool_use`` blocks, a Gemini
    content's ``functionCall`` parts. Empty when the model answered in text only."""
    if provider in ("openai", "openai_strict"):
        return list(message.get("tool_calls") or [])
    if provider == "openai_responses":  # a response's output items
        items = message.get("output", []) if isinstance(message, dict) else message
        items = [_as_mapping(i) for i in items or []]
        return [i for i in items
                if i.get("type") in ("function_call", "apply_patch_call", "shell_call")]
    if provider == "anthropic":
        content = message.get("content")
        return [b for b in content if b.get("type") == "tool_use"] if isinstance(content,
                                                                                 list) else []
    if provider == "gemini":
        return [p for p in message.get("parts", []) if "functionCall" in p]
    raise ValueError(f"unknown provider {provider!r}; one of {', '.join(PROVIDERS)}")
