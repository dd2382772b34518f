"""Ollama's official Python client (`ollama`) against `kvrun serve`. `first`: list, show
and ps; chat whole and streamed; a tool round trip; `format` with a schema; generate with
`raw`; `keep_alive: 0` unloads; a second turn restored from the cache; errors in
Ollama's shape. `second` (after the server restarted): the conversation comes back
from the store, restored, not prefilled."""

import sys

import ollama

from ollama_common import (
    CHAT_PROMPT, COLOUR_SCHEMA, GREEDY, HOST, LISTED, MODEL, RAW_PROMPT, TOOL_PROMPT,
    WEATHER_TOOL, check, check_colour, check_restored, load_state, report_greedy,
    save_state, turns,
)

client = ollama.Client(host=HOST)


def expect_status(status, call, needle):
    try:
        call()
    except ollama.ResponseError as e:
        check(e.status_code == status, f"status {e.status_code}, not {status}: {e.error}")
        check(needle in e.error, f"{e.error!r} lacks {needle!r}")
        return
    check(False, f"expected a {status} ResponseError")


if sys.argv[1] == "first":
    listed = [m.model for m in client.list().models]
    check(LISTED in listed, f"list() gave {listed}")
    shown = client.show(MODEL)
    check(shown.details.format == "gguf", f"show details {shown.details}")
    check("completion" in shown.capabilities, f"capabilities {shown.capabilities}")
    check(shown.modelinfo.get("general.architecture") == "llama", "show model_info")

    chat = client.chat(model=MODEL, messages=[{"role": "user", "content": CHAT_PROMPT}],
                       options=GREEDY)
    check(chat.done and chat.eval_count == 8, f"chat {chat}")
    check(chat.total_duration > 0 and chat.prompt_eval_duration > 0, "chat durations")
    parts = list(client.chat(model=MODEL, messages=[{"role": "user", "content": CHAT_PROMPT}],
                             options=GREEDY, stream=True))
    check(parts[-1].done and parts[-1].done_reason == "length", f"last part {parts[-1]}")
    streamed = "".join(p.message.content for p in parts)
    check(streamed == chat.message.content, f"streamed {streamed!r} != {chat.message.content!r}")

    running = [m.model for m in client.ps().models]
    check(LISTED in running, f"ps() gave {running}")

    # A tool round trip as this client writes it: the tools, the model's earlier call
    # (arguments as an object) and its result (`tool_name`) in the history.
    history = [
        {"role": "user", "content": TOOL_PROMPT},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
    ]
    answered = client.chat(model=MODEL, messages=history, tools=[WEATHER_TOOL], options=GREEDY)
    check(answered.done and answered.eval_count > 0, f"tool round trip {answered}")

    shaped = client.chat(model=MODEL, messages=[{"role": "user", "content": "A colour as JSON."}],
                         format=COLOUR_SCHEMA, options={"temperature": 0, "num_predict": 24})
    check_colour(shaped.message.content)

    raw = client.generate(model=MODEL, prompt=RAW_PROMPT, raw=True, options=GREEDY)
    check(raw.done and raw.eval_count == 8 and raw.context is None, f"raw {raw}")
    report_greedy(chat.message.content, raw.response)

    # A conversation, then its second turn, whose prompt comes from the cache.
    first = client.chat(model=MODEL, messages=turns([]), options=GREEDY)
    whole = first.prompt_eval_count
    check(whole > 256, f"first turn evaluated {whole} prompt tokens")
    second = client.chat(model=MODEL, messages=turns([first.message.content]), options=GREEDY)
    check_restored(second.prompt_eval_count, whole, "second turn")
    save_state({"replies": [first.message.content, second.message.content], "whole": whole})

    # keep_alive 0 with nothing to generate unloads the model (its conversations saved).
    unloaded = client.generate(model=MODEL, prompt="", keep_alive=0)
    check(unloaded.done_reason == "unload", f"unload {unloaded}")
    check(client.ps().models == [], f"ps after unload {client.ps()}")

    expect_status(404, lambda: client.chat(model="no-such-model", messages=[]), "no-such-model")
    expect_status(400, lambda: client.chat(model=MODEL, messages=[
        {"role": "user", "content": "what is this", "images": [b"\x89PNG"]}]), "text only")
    expect_status(501, lambda: client.embed(model=MODEL, input="x"), "embeddings")
    print("ollama python: first ok")
else:
    state = load_state()
    third = client.chat(model=MODEL, messages=turns(state["replies"]), options=GREEDY)
    check_restored(third.prompt_eval_count, state["whole"], "after a restart")
    print("ollama python: second ok")
