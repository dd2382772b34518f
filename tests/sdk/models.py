"""The official `openai` and `anthropic` SDKs against a `kvrun serve` of a models folder:
`/v1/models` lists every model and alias, a request's model (or an alias pattern) picks
the model that answers, and an unknown name is the SDK's own NotFoundError.

The server has two models, `big` and `small`, and aliases `claude-haiku-*` to `small`,
`claude-*` to `big` and `local` to `small`; no default model."""

import anthropic
import openai

from common import KEY, URL, check, expect_error

oa = openai.OpenAI(base_url=URL + "/v1", api_key=KEY, max_retries=0)
listed = [m.id for m in oa.models.list()]
check(listed == ["big", "small", "local"], f"models.list() gave {listed}")
check(oa.models.retrieve("local").id == "local", "models.retrieve(local)")
expect_error(openai.NotFoundError, lambda: oa.models.retrieve("gpt-4o"), "big, small")

hello = [{"role": "user", "content": "Say hello."}]
for name, served in [("small", "small"), ("local", "small"), ("big", "big")]:
    reply = oa.chat.completions.create(model=name, messages=hello, max_tokens=2, temperature=0)
    check(reply.model == served, f"model {name} was answered by {reply.model}, not {served}")
expect_error(
    openai.NotFoundError,
    lambda: oa.chat.completions.create(model="gpt-4o", messages=hello, max_tokens=2),
    "no model 'gpt-4o'",
)
expect_error(
    openai.NotFoundError,
    lambda: oa.completions.create(model="gpt-4o", prompt="hi", max_tokens=2),
    "no model 'gpt-4o'",
)
expect_error(
    openai.NotFoundError,
    lambda: oa.responses.create(model="gpt-4o", input="hi", max_output_tokens=2),
    "no model 'gpt-4o'",
)

an = anthropic.Anthropic(base_url=URL, api_key=KEY, max_retries=0)
for name, served in [("claude-haiku-4-5-20251001", "small"), ("claude-sonnet-4-5", "big")]:
    reply = an.messages.create(model=name, messages=hello, max_tokens=2, extra_body={"temperature": 0})
    check(reply.model == served, f"model {name} was answered by {reply.model}, not {served}")
expect_error(
    anthropic.NotFoundError,
    lambda: an.messages.create(model="gpt-4o", messages=hello, max_tokens=2),
    "no model 'gpt-4o'",
)
print("sdk models: ok")
