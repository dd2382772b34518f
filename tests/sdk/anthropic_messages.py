"""The official `anthropic` SDK against `kvrun serve`: messages, streamed and not, a forced
tool use, cache_read_input_tokens on a second call, error shapes and auth."""

import anthropic

from common import KEY, URL, check, expect_error

# (Greedy through extra_body: this SDK's create() takes no temperature argument.)

client = anthropic.Anthropic(base_url=URL, api_key=KEY, max_retries=0)
SYSTEM = [{"type": "text", "text": "You are a careful assistant. " * 40}]
messages = [{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}]

reply = client.messages.create(
    model="claude-any", system=SYSTEM, messages=messages, max_tokens=8, extra_body={"temperature": 0}
)
check(reply.type == "message" and reply.role == "assistant", f"{reply.type} {reply.role}")
check(reply.stop_reason in ("end_turn", "max_tokens"), reply.stop_reason)
check(reply.usage.output_tokens > 0, "output_tokens")
first_text = "".join(b.text for b in reply.content if b.type == "text")

# The second call reads the shared prefix from the store; input_tokens counts only the rest.
again = client.messages.create(
    model="claude-any",
    system=SYSTEM,
    messages=messages
    + [
        {"role": "assistant", "content": first_text or "Hello."},
        {"role": "user", "content": "Again."},
    ],
    max_tokens=4,
    extra_body={"temperature": 0},
)
read = again.usage.cache_read_input_tokens
check(read and read >= 256, f"cache_read_input_tokens {read}")
check(again.usage.input_tokens < reply.usage.input_tokens + 64, "input_tokens excludes the cache")

# Streaming: the SDK's stream helper checks the event order itself.
with client.messages.stream(
    model="claude-any", system=SYSTEM, messages=messages, max_tokens=8, extra_body={"temperature": 0}
) as stream:
    streamed = "".join(stream.text_stream)
    final = stream.get_final_message()
check(isinstance(streamed, str), "streamed text")
check(final.usage.output_tokens > 0, "final usage")
check(final.usage.cache_read_input_tokens >= 256, "streamed cache_read_input_tokens")

# A tool use forced by tool_choice (an enum argument: the tiny model never ends a string).
forced = client.messages.create(
    model="claude-any",
    messages=[{"role": "user", "content": "Weather in Paris?"}],
    tools=[
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"enum": ["Paris", "Rome"]}},
                "required": ["city"],
            },
        }
    ],
    tool_choice={"type": "tool", "name": "get_weather"},
    max_tokens=256,  # the tiny model writes about a character a token
    extra_body={"temperature": 0},
)
uses = [b for b in forced.content if b.type == "tool_use"]
check(uses and uses[0].name == "get_weather", f"content {forced.content}")
check(uses[0].input.get("city") in ("Paris", "Rome"), f"input {uses[0].input}")
check(forced.stop_reason == "tool_use", forced.stop_reason)

# Bad requests: BadRequestError with the message.
expect_error(
    anthropic.BadRequestError,
    lambda: client.messages.create(model="m", messages=[], max_tokens=4),
)
expect_error(
    anthropic.BadRequestError,
    lambda: client.messages.create(
        model="m", messages=[{"role": "wizard", "content": "hi"}], max_tokens=4
    ),
    needle="wizard",
)

wrong = anthropic.Anthropic(base_url=URL, api_key="not-the-key", max_retries=0)
expect_error(
    anthropic.AuthenticationError,
    lambda: wrong.messages.create(model="m", messages=messages, max_tokens=4),
)
print("anthropic messages: ok")
