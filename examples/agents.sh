#!/usr/bin/env bash
# An agent and its sub-agents, each a kvrun session, driven in turn through `kvrun run
# --session` as an agent harness would. Every call restores its session's KV from pages (no
# prefill of what the session already holds), appends one turn, generates and saves.
#
#   examples/agents.sh [MODEL]            (default: the pulled default model)
#
# Each call here is a fresh process, so it pays the model load every time; the switching
# cost itself shows in the `restore_ms` and `save_ms` fields. `kvrun chat` keeps the model
# loaded and switches sessions live (/session NAME) through the hot, warm and cold tiers.
set -euo pipefail
kvrun=${KVRUN:-kvrun}
model=${1:-}
brief="You are one of three agents reviewing a storage design. Keep answers short."

for agent in planner coder reviewer; do
    echo "$brief Your role: $agent." | "$kvrun" session save "$agent" $model --file - --json
done

for round in 1 2; do
    for agent in planner coder reviewer; do
        "$kvrun" run --session "$agent" -p "Round $round: one concrete next step?" -n 24 --temp 0 --json |
            python3 -c '
import json, sys
r = json.load(sys.stdin)
print("%9s: restored %5d tokens in %6.1f ms, prefilled %3d, saved in %5.1f ms | %r" % (
    r["session"], r["restored_tokens"], r["restore_ms"], r["prefilled_tokens"], r["save_ms"],
    r["text"].strip()[:60]))'
    done
done
"$kvrun" session ls
