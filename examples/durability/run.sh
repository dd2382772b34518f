#!/usr/bin/env bash
# What `--durability before` costs at the end of a turn: for each mode, a fresh home and
# `kvrun serve` on the default model, N streamed chat requests (a ~250-token prompt each,
# its own session, 16 tokens), and the time from the last token chunk to the finish chunk,
# the event `before` holds back until the save is on disk.
#
#   examples/durability/run.sh        # 10 requests per mode
#   N=30 examples/durability/run.sh
#
# Environment: KVRUN (the binary; default target/release/kvrun), MODEL (default: the
# models folder's gemma-3-270m), N (requests per mode), THREADS (default 2).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kvrun=${KVRUN:-$root/target/release/kvrun}
n=${N:-10}
threads=${THREADS:-2}
model=${MODEL:-$("$kvrun" models --json | python3 -c \
    'import json,sys; print(next(m["path"] for m in json.load(sys.stdin) if "gemma-3-270m" in m["path"]))')}

for mode in after before; do
    home=$(mktemp -d)
    KVRUN_HOME=$home "$kvrun" serve "$model" --port 0 -t "$threads" --durability "$mode" \
        2>"$home/log" &
    server=$!
    url=
    for _ in $(seq 1 600); do
        url=$(grep -o 'http://[0-9.:]*' "$home/log" | head -1 || true)
        [ -n "$url" ] && break
        sleep 0.2
    done
    [ -n "$url" ] || { cat "$home/log"; exit 1; }
    printf '%-6s ' "$mode"
    python3 "$here/final_event_gap.py" "$url" "$n"
    kill "$server"
    wait "$server" || true
    rm -rf "$home"
done
