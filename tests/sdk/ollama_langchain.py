"""LangChain's `langchain-ollama` against `kvrun serve`: `ChatOllama` whole and streamed,
a tool round trip through `bind_tools`, structured output with a JSON schema, `OllamaLLM` with
`raw`, `keep_alive=0` unloading (seen through the client's own `ps`), a second turn and,
after a restart (`second`), a third one, each restored from the cache. LangChain lists
and shows models through the `ollama` client it wraps."""

import sys
import time

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_ollama import ChatOllama, OllamaLLM

from ollama_common import (
    CHAT_PROMPT, COLOUR_SCHEMA, HOST, LISTED, MODEL, RAW_PROMPT, TOOL_PROMPT, WEATHER_TOOL,
    check, check_colour, check_restored, load_state, report_greedy, save_state, turns,
)

chat = ChatOllama(model=MODEL, base_url=HOST, temperature=0, num_predict=8)


def as_messages(turns_):
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m["role"]](content=m["content"]) for m in turns_]


def evaluated(message):
    """Prompt tokens the server evaluated (LangChain's input tokens are Ollama's
    `prompt_eval_count`)."""
    return message.usage_metadata["input_tokens"]


if sys.argv[1] == "first":
    listed = [m.model for m in chat._client.list().models]
    check(LISTED in listed, f"list() gave {listed}")
    check("completion" in chat._client.show(MODEL).capabilities, "show capabilities")

    whole = chat.invoke(CHAT_PROMPT)
    check(whole.response_metadata["done_reason"] == "length", f"{whole.response_metadata}")
    check(whole.usage_metadata["output_tokens"] == 8, f"usage {whole.usage_metadata}")
    streamed = "".join(chunk.content for chunk in chat.stream(CHAT_PROMPT))
    check(streamed == whole.content, f"streamed {streamed!r} != {whole.content!r}")

    tools = ChatOllama(model=MODEL, base_url=HOST, temperature=0, num_predict=24)
    # A tool round trip as LangChain writes it: the call and its ToolMessage.
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}
    history = [HumanMessage(content=TOOL_PROMPT), AIMessage(content="", tool_calls=[call]),
               ToolMessage(content="sunny", tool_call_id="call_1", name="get_weather")]
    answered = chat.bind_tools([WEATHER_TOOL]).invoke(history)
    check(answered.usage_metadata["output_tokens"] > 0, f"tool round trip {answered}")
    structured = tools.with_structured_output(COLOUR_SCHEMA, method="json_schema", include_raw=True)
    check_colour(structured.invoke("A colour as JSON.")["raw"].content)

    llm = OllamaLLM(model=MODEL, base_url=HOST, temperature=0, num_predict=8)
    raw = llm.invoke(RAW_PROMPT, raw=True)
    report_greedy(whole.content, raw)

    first = chat.invoke(as_messages(turns([])))
    whole_prompt = evaluated(first)
    check(whole_prompt > 256, f"first turn evaluated {whole_prompt} prompt tokens")
    second = chat.invoke(as_messages(turns([first.content])))
    check_restored(evaluated(second), whole_prompt, "second turn")
    save_state({"replies": [first.content, second.content], "whole": whole_prompt})

    # keep_alive=0: the model is unloaded once the reply is done.
    ChatOllama(model=MODEL, base_url=HOST, num_predict=1, keep_alive=0).invoke("Hi.")
    for _ in range(100):
        if not chat._client.ps().models:
            break
        time.sleep(0.1)
    check(not chat._client.ps().models, "keep_alive=0 left the model loaded")
    print("ollama langchain: first ok")
else:
    state = load_state()
    third = chat.invoke(as_messages(turns(state["replies"])))
    check_restored(evaluated(third), state["whole"], "after a restart")
    print("ollama langchain: second ok")
