"""Reference renderer for the template fidelity test: renders every corpus template over
every conversation exactly as HF transformers' apply_chat_template does (its
chat_template_utils: an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
loopcontrols; its tojson, raise_exception and strftime_now; tools and documents passed as
None when absent). Prints one JSON object: "template|conversation|agp" -> {"ok": text} or
{"error": message}.

usage: python render.py CORPUS.json CONVERSATIONS.json REPO_ROOT
"""

import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    corpus_path, conversations_path, root = sys.argv[1:4]
    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    with open(conversations_path, encoding="utf-8") as f:
        conversations = json.load(f)
    env = environment()
    results = {}
    for entry in corpus:
        with open(f"{root}/{entry['file']}", encoding="utf-8") as f:
            template = env.from_string(f.read())
        for conversation in conversations:
            for agp in (True, False):
                key = f"{entry['file']}|{conversation['name']}|{str(agp).lower()}"
                try:
                    text = template.render(
                        messages=conversation["messages"],
                        tools=conversation.get("tools"),
                        documents=None,
                        add_generation_prompt=agp,
                        bos_token=entry["bos_token"],
                        eos_token=entry["eos_token"],
                        **conversation.get("extra", {}),
                    )
                    results[key] = {"ok": text}
                except Exception as e:  # noqa: BLE001 - any failure is compared as an error
                    results[key] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
