"""Simon Willison's `llm` CLI with its `llm-ollama` plugin against `kvrun serve`, as a
person runs it: the plugin lists the server's models (and reads their capabilities with
`show`), prompts whole and streamed, a tool (`--functions`), `--schema`,
and a logged conversation continued with `-c`: its second turn, and (`second`, after the
server restarted) its third, restored from the cache. llm has no raw generate, `ps` or
`keep_alive`; the other clients' checks cover those."""

import json
import os
import subprocess
import sys
from pathlib import Path

from ollama_common import (
    CHAT_PROMPT, COLOUR_SCHEMA, LISTED, STATE, SYSTEM, TOOL_PROMPT, check, check_colour,
    check_restored, load_state, report_greedy, save_state,
)

LLM = Path(sys.executable).parent / "llm"
MODEL = f"ollama/{LISTED}"
GREEDY = ["-o", "temperature", "0", "-o", "num_predict", "8"]
# llm's own folder (its log of conversations, the plugin's cache) beside the state file.
ENV = {**os.environ, "LLM_USER_PATH": str(Path(STATE).parent / "llm")}
CALLED = Path(STATE).parent / "tool-called"


def llm(*args):
    out = subprocess.run([str(LLM), *args], capture_output=True, text=True, env=ENV, check=False)
    check(out.returncode == 0, f"llm {' '.join(args)} failed: {out.stdout}{out.stderr}")
    return out.stdout


def evaluated(*args):
    """Runs a prompt and returns its reply and the prompt tokens the server evaluated
    (llm's input tokens are Ollama's `prompt_eval_count`)."""
    # `--json` prints rows as `llm logs --json` does: a list, one row per response.
    response = json.loads(llm(*args, *GREEDY, "--no-stream", "--json"))[-1]
    return response["response"], response["input_tokens"]


if sys.argv[1] == "first":
    models = llm("models")
    check(MODEL in models, f"llm models lacks {MODEL}: {models}")
    whole = llm("-m", MODEL, CHAT_PROMPT, *GREEDY, "--no-stream").rstrip("\n")
    streamed = llm("-m", MODEL, CHAT_PROMPT, *GREEDY).rstrip("\n")
    check(whole and streamed == whole, f"streamed {streamed!r} != {whole!r}")
    report_greedy(whole, None)

    function = (
        "def get_weather(city: str) -> str:\n"
        "    '''Get the current weather for a city'''\n"
        f"    open({str(CALLED)!r}, 'w').write(city)\n"
        "    return 'sunny'\n"
    )
    # The tool reaches the server as the plugin writes it (SmolLM2 answers rather than
    # calls it; the other clients send a whole tool round trip).
    llm("-m", MODEL, TOOL_PROMPT, "--functions", function, *GREEDY)

    shaped = llm("-m", MODEL, "A colour as JSON.", "--schema", json.dumps(COLOUR_SCHEMA),
                 "-o", "temperature", "0", "-o", "num_predict", "24", "--no-stream")
    check_colour(shaped)

    first, whole_prompt = evaluated("-m", MODEL, "-s", SYSTEM, "Name a colour.")
    check(whole_prompt > 256, f"first turn evaluated {whole_prompt} prompt tokens")
    _, second = evaluated("-c", "Name another.")
    check_restored(second, whole_prompt, "second turn")
    save_state({"whole": whole_prompt})
    print("ollama llm: first ok")
else:
    state = load_state()
    _, third = evaluated("-c", "And a third?")
    check_restored(third, state["whole"], "after a restart")
    print("ollama llm: second ok")
