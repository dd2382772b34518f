#!/usr/bin/env bash
# Real coding agents against `kvrun serve`: installs Claude Code and Codex from npm into a
# local prefix, serves the default model, runs each agent twice, and prints what each call
# cost the server: prompt tokens, how many were prefilled, and how many came from the store
# (the hot, warm and cold tiers), read from /metrics before and after the call.
#
# The model is tiny, so the agents' answers are not the point; the point is that the
# protocol works end to end and that the second call's ~21,000-token prefix (system blocks
# and tool schemas) is read from the store instead of prefilled again.
#
#   examples/agents/run.sh            # both agents
#   AGENTS=claude examples/agents/run.sh
#
# Environment: KVRUN (the binary; default target/release/kvrun), PORT (default 8181),
# AGENTS_PREFIX (npm prefix; default examples/agents/.npm), THREADS (default: all cores),
# CTX (context tokens; default 32768: Claude Code's prompt alone is ~21,000).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kvrun=${KVRUN:-$root/target/release/kvrun}
port=${PORT:-8181}
prefix=${AGENTS_PREFIX:-$here/.npm}
agents=${AGENTS:-claude codex}
key=local-agents-key
url=http://127.0.0.1:$port
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

if [ ! -x "$prefix/node_modules/.bin/claude" ] || [ ! -x "$prefix/node_modules/.bin/codex" ]; then
    echo "installing @anthropic-ai/claude-code and @openai/codex into $prefix" >&2
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        @anthropic-ai/claude-code @openai/codex >&2
fi

threads_flag=()
[ -n "${THREADS:-}" ] && threads_flag=(-t "$THREADS")
# One sequence with the whole context: an agent's prompt needs all of it. Replies are
# capped (-n): Codex sets no output limit, and the tiny model may never end its turn.
"$kvrun" serve -v --port "$port" --api-key "$key" --parallel 1 -c "${CTX:-32768}" -n 256 \
    --alias kvrun-local "${threads_flag[@]}" 2>"$work/server.log" &
server=$!
for _ in $(seq 600); do
    grep -q '^listening on ' "$work/server.log" && break
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.5
done
grep '^listening on ' "$work/server.log" >&2

# One counter from /metrics (a label selector may follow the name).
metric() {
    curl -s -H "x-api-key: $key" "$url/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}
snapshot() {
    echo "$(metric kvrun_prompt_tokens_total) $(metric kvrun_prefilled_tokens_total)" \
        "$(metric 'kvrun_restored_tokens_total{tier="hot"}')" \
        "$(metric 'kvrun_restored_tokens_total{tier="warm"}')" \
        "$(metric 'kvrun_restored_tokens_total{tier="cold"}')"
}
report() { # report LABEL BEFORE AFTER SECONDS
    read -r p0 f0 h0 w0 c0 <<<"$2"
    read -r p1 f1 h1 w1 c1 <<<"$3"
    printf '%-16s %8d %10d %10d %8d %8d %8ss\n' "$1" $((p1 - p0)) $((f1 - f0)) \
        $((h1 - h0)) $((w1 - w0)) $((c1 - c0)) "$4"
}

# The agents run in a scratch folder that stays the same between their calls: Claude Code
# puts the working directory's git status and recent commits into its system prompt, so a
# commit between two calls in a repository would change the prompt early (the server logs
# such a volatile span, and counts it in /metrics).
mkdir -p "$work/project"
echo "A scratch project for the agents." >"$work/project/README.md"
cd "$work/project"

printf '%-16s %8s %10s %10s %8s %8s %9s\n' call prompt prefilled "hot" warm cold time
run_twice() { # run_twice NAME COMMAND...
    local name=$1
    shift
    for turn in 1 2; do
        local before after started
        before=$(snapshot)
        started=$(date +%s.%N)
        "$@" >"$work/$name-$turn.out" 2>"$work/$name-$turn.err" \
            || { echo "$name call $turn failed:" >&2; tail -5 "$work/$name-$turn.err" >&2; }
        after=$(snapshot)
        report "$name #$turn" "$before" "$after" \
            "$(echo "$(date +%s.%N) - $started" | bc | xargs printf '%.1f')"
    done
}

for agent in $agents; do
    case $agent in
    claude)
        run_twice claude env ANTHROPIC_BASE_URL="$url" ANTHROPIC_API_KEY="$key" \
            DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
            CLAUDE_CODE_MAX_OUTPUT_TOKENS=64 HOME="$work/claude-home" \
            "$prefix/node_modules/.bin/claude" -p "Say hello in five words." --model kvrun-local
        ;;
    codex)
        mkdir -p "$work/codex-home"
        cat >"$work/codex-home/config.toml" <<TOML
model = "kvrun-local"
model_provider = "kvrun"
[model_providers.kvrun]
name = "kvrun"
base_url = "$url/v1"
wire_api = "responses"
env_key = "KVRUN_AGENT_KEY"
TOML
        run_twice codex env CODEX_HOME="$work/codex-home" KVRUN_AGENT_KEY="$key" \
            "$prefix/node_modules/.bin/codex" exec --skip-git-repo-check \
            "Say hello in five words."
        ;;
    *) echo "unknown agent $agent (claude, codex)" >&2; exit 2 ;;
    esac
done
echo "(server log: $(grep -c . "$work/server.log") lines; the agents' replies were:)" >&2
for f in "$work"/*.out; do printf '  %s: %s\n' "$(basename "$f" .out)" "$(head -c 200 "$f" | tr '\n' ' ')" >&2; done
misses=$(grep -cE 'prompt diverged|volatile span' "$work/server.log" || true)
echo "(prefix misses the server logged: $misses)" >&2
grep -E 'prompt diverged|volatile span' "$work/server.log" | cut -c1-400 >&2 || true
