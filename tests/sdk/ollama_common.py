"""What the Ollama client checks share: the server (OLLAMA_HOST, as Ollama's clients read
it), the model names, the conversation whose cache they check, a tool and a schema, and
the state a `first` run leaves for the `second` run after the server restarted."""

import json
import os
import sys

HOST = os.environ["OLLAMA_HOST"]  # http://127.0.0.1:PORT
URL = HOST
STATE = os.environ["KVRUN_STATE"]  # a file the two runs share
# As Ollama's clients write it: the default model's short name and a tag.
MODEL = "smollm2:latest"
LISTED = "smollm2-135m-instruct-q4_1:latest"

SYSTEM = "You are a careful assistant who answers in few words. " * 40
GREEDY = {"temperature": 0, "num_predict": 8}
# The prompts whose greedy replies the test compares with `kvrun run`.
CHAT_PROMPT = "Say hello."
RAW_PROMPT = "The capital of France is"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city"}},
            "required": ["city"],
        },
    },
}
TOOL_PROMPT = "What is the weather in Paris? Use the get_weather tool."

COLOUR_SCHEMA = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["red", "green", "blue"]},
        "count": {"type": "integer", "enum": [1, 2, 3]},
    },
    "required": ["colour", "count"],
}


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def check_colour(text):
    """The reply is JSON valid against COLOUR_SCHEMA."""
    try:
        value = json.loads(text)
    except ValueError:
        check(False, f"format reply is not JSON: {text!r}")
    check(isinstance(value, dict), f"format reply {value!r} is not an object")
    check(value.get("colour") in ("red", "green", "blue"), f"colour in {value!r}")
    count = value.get("count")
    check(count in (1, 2, 3), f"count in {value!r}")


def turns(replies):
    """The conversation after `replies` (the assistant's texts so far), ending with a
    user turn: the system prompt, then a question per reply and one more."""
    questions = ["Name a colour.", "Name another.", "And a third?", "One more?"]
    messages = [{"role": "system", "content": SYSTEM}]
    for question, reply in zip(questions, replies):
        messages += [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]
    messages.append({"role": "user", "content": questions[len(replies)]})
    return messages


def check_restored(prefilled, whole, what):
    """A turn whose prompt (`whole` tokens at least) came mostly from the cache: Ollama's
    `prompt_eval_count` counts what was evaluated, not what was restored."""
    check(0 < prefilled < whole // 2, f"{what}: {prefilled} prompt tokens evaluated of {whole}+")


def save_state(state):
    with open(STATE, "w") as f:
        json.dump(state, f)


def load_state():
    with open(STATE) as f:
        return json.load(f)


def report_greedy(chat, raw):
    """Prints the greedy replies for the test to compare with `kvrun run`."""
    print("GREEDY " + json.dumps({"chat": chat, "raw": raw}))
