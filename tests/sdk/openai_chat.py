"""The official `openai` SDK against `kvrun serve`: chat completions, streamed and not, a
forced tool call, the cache on a second call, error shapes and auth."""

import json

import openai

from common import KEY, URL, check, expect_error

client = openai.OpenAI(base_url=f"{URL}/v1", api_key=KEY, max_retries=0)
SYSTEM = "You are a careful assistant. " * 40  # long enough to fill whole KV pages
messages = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Say hello."},
]

# Non-streaming.
reply = client.chat.completions.create(
    model="any-name", messages=messages, max_tokens=8, temperature=0
)
check(reply.object == "chat.completion", f"object {reply.object}")
check(len(reply.choices) == 1, "one choice")
check(isinstance(reply.choices[0].message.content, str), "text content")
check(reply.choices[0].finish_reason in ("stop", "length"), reply.choices[0].finish_reason)
check(reply.usage.prompt_tokens > 256, f"prompt_tokens {reply.usage.prompt_tokens}")
check(reply.usage.completion_tokens > 0, "completion_tokens")

# The second call with the same prefix reads it from the store.
again = client.chat.completions.create(
    model="any-name",
    messages=messages + [
        {"role": "assistant", "content": reply.choices[0].message.content},
        {"role": "user", "content": "Again."},
    ],
    max_tokens=4,
    temperature=0,
)
cached = again.usage.prompt_tokens_details.cached_tokens
check(cached and cached >= 256, f"cached_tokens {cached} on the second call")

# Streaming, with usage in the last chunk.
chunks = list(
    client.chat.completions.create(
        model="any-name",
        messages=messages,
        max_tokens=8,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
)
text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
check(any(c.choices and c.choices[0].finish_reason for c in chunks), "a finish_reason chunk")
check(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0, "usage chunk")
check(chunks[-1].usage.prompt_tokens_details.cached_tokens >= 256, "streamed cached_tokens")
check(isinstance(text, str), "streamed text")

# A tool call forced by tool_choice: the grammar makes even the tiny random model write a
# valid call (an enum, since its free text never ends a string).
tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"enum": ["Paris", "Rome"]}},
                "required": ["city"],
            },
        },
    }
]
forced = client.chat.completions.create(
    model="any-name",
    messages=[{"role": "user", "content": "Weather in Paris?"}],
    tools=tools,
    tool_choice={"type": "function", "function": {"name": "get_weather"}},
    max_tokens=256,  # the tiny model writes about a character a token
    temperature=0,
)
calls = forced.choices[0].message.tool_calls
check(calls and calls[0].function.name == "get_weather", f"tool_calls {calls}")
args = json.loads(calls[0].function.arguments)
check(args.get("city") in ("Paris", "Rome"), f"arguments {args}")
check(forced.choices[0].finish_reason == "tool_calls", forced.choices[0].finish_reason)

# Bad requests raise BadRequestError with the server's message.
expect_error(
    openai.BadRequestError,
    lambda: client.chat.completions.create(model="m", messages=[], max_tokens=4),
)
expect_error(
    openai.BadRequestError,
    lambda: client.chat.completions.create(model="m", messages=messages, n=2, max_tokens=4),
    needle="n",
)
expect_error(
    openai.BadRequestError,
    lambda: client.chat.completions.create(
        model="m", messages=[{"role": "wizard", "content": "hi"}], max_tokens=4
    ),
    needle="wizard",
)

# A wrong key.
wrong = openai.OpenAI(base_url=f"{URL}/v1", api_key="not-the-key", max_retries=0)
expect_error(openai.AuthenticationError, lambda: wrong.models.list())

# Models: any name is served by the loaded model.
check(len(client.models.list().data) >= 1, "models list")
print("openai chat: ok")
