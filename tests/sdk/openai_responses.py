"""The `openai` SDK's Responses API against `kvrun serve`, across a restart:
`first` stores a response and prints its id; `second` (after the server restarted)
continues from it with previous_response_id."""

import sys

import openai

from common import KEY, URL, check, expect_error

client = openai.OpenAI(base_url=f"{URL}/v1", api_key=KEY, max_retries=0)
INSTRUCTIONS = "You are a careful assistant. " * 40

if sys.argv[1] == "first":
    first = client.responses.create(
        model="any", instructions=INSTRUCTIONS, input="Say hello.", max_output_tokens=8,
        temperature=0,
    )
    # Cut by max_output_tokens, a response is "incomplete", as at OpenAI.
    check(first.status in ("completed", "incomplete"), f"status {first.status}")
    check(first.id and first.usage.output_tokens > 0, "id and usage")
    # Streaming: the full event sequence, ending with response.completed.
    events = list(
        client.responses.create(
            model="any", input="Count to three.", max_output_tokens=8, stream=True,
            temperature=0,
        )
    )
    kinds = [e.type for e in events]
    check(kinds[0] == "response.created", f"first event {kinds[0]}")
    check(kinds[-1] == "response.completed", f"last event {kinds[-1]}")
    check("response.output_item.added" in kinds, f"events {kinds}")
    print(first.id)
else:
    previous = sys.argv[2]
    # Stored on disk: still there after the restart.
    fetched = client.responses.retrieve(previous)
    check(fetched.id == previous, "GET /v1/responses/{id}")
    # Instructions are not carried over from the previous response (OpenAI's rule), so
    # they are given again; the shared prefix then comes from the store on disk.
    nxt = client.responses.create(
        model="any", previous_response_id=previous, instructions=INSTRUCTIONS,
        input="And again.", max_output_tokens=4, temperature=0,
    )
    check(nxt.status in ("completed", "incomplete"), f"status {nxt.status}")
    cached = nxt.usage.input_tokens_details.cached_tokens
    check(cached >= 256, f"cached_tokens {cached} after the restart")
    expect_error(
        (openai.NotFoundError, openai.BadRequestError),
        lambda: client.responses.create(
            model="any", previous_response_id="resp_doesnotexist", input="x",
            max_output_tokens=4,
        ),
    )
    print("openai responses: ok")
