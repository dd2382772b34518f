"""Time from a streamed reply's last token chunk to its final event (the finish chunk),
for `kvrun serve --durability before|after`. Usage: final_event_gap.py URL N"""
import http.client, json, sys, time, statistics, urllib.parse

url = urllib.parse.urlparse(sys.argv[1])
n = int(sys.argv[2])
rules = "a long system of rules. " * 40
gaps, totals = [], []
for i in range(n):
    body = {"model": "x", "max_tokens": 16, "temperature": 0, "stream": True,
            "messages": [{"role": "system", "content": f"{i} " + rules},
                         {"role": "user", "content": "name three colours of the sea"}]}
    conn = http.client.HTTPConnection(url.hostname, url.port)
    start = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"content-type": "application/json", "x-session-id": f"bench-{i}"})
    resp = conn.getresponse()
    last_token = None
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: {"):
            continue
        event = json.loads(line[6:])
        now = time.perf_counter()
        if event["choices"] and event["choices"][0]["finish_reason"]:
            gaps.append((now - last_token) * 1e3)
            totals.append((now - start) * 1e3)
            break
        last_token = now
    conn.close()
    time.sleep(0.3)  # let an after-mode save land before the next request
print(f"n={n} last-token->final-event ms: median {statistics.median(gaps):.1f} "
      f"p90 {sorted(gaps)[int(0.9 * (n - 1))]:.1f} max {max(gaps):.1f}; "
      f"request ms median {statistics.median(totals):.0f}")
