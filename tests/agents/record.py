#!/usr/bin/env python3
"""Record the HTTP requests that agent clients send, and answer with minimal valid replies.

Usage: python3 record.py PORT OUTDIR

Binds to 127.0.0.1 only. Every request is written to OUTDIR/NNN.json as
{"method", "path", "headers", "body"} (body parsed as JSON when it is JSON, else kept as text).
Replies:
  POST /v1/messages          -> Anthropic SSE stream with the text "ok", stop_reason end_turn
  POST /v1/messages/count_tokens -> {"input_tokens": 1}
  POST /v1/responses         -> OpenAI Responses SSE stream ending with response.completed
  POST /v1/chat/completions  -> OpenAI chat completion SSE stream ending with data: [DONE]
                                (or a plain JSON completion when "stream" is not true)
  GET  /v1/models            -> a list with one model
  anything else              -> 404 JSON error
"""
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OUT = None
LOCK = threading.Lock()
COUNTER = [0]


def record(method, path, headers, raw):
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw.decode("utf-8", "replace")
    with LOCK:
        COUNTER[0] += 1
        n = COUNTER[0]
    entry = {
        "seq": n,
        "time": time.time(),
        "method": method,
        "path": path,
        "headers": [[k, v] for k, v in headers.items()],
        "body": body,
    }
    with open(os.path.join(OUT, "%03d.json" % n), "w") as f:
        json.dump(entry, f, indent=2, ensure_ascii=False)
    # Also keep the raw body bytes, so the fixture can be checked against them.
    with open(os.path.join(OUT, "%03d.body" % n), "wb") as f:
        f.write(raw or b"")
    return body


def sse(events):
    out = []
    for name, data in events:
        if name is not None:
            out.append("event: %s\n" % name)
        out.append("data: %s\n\n" % (data if isinstance(data, str) else json.dumps(data)))
    return "".join(out).encode()


def anthropic_stream(model):
    mid = "msg_" + uuid.uuid4().hex[:24]
    usage0 = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
              "cache_read_input_tokens": 0}
    return sse([
        ("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage0}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "ok"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def anthropic_json(model):
    return json.dumps({
        "id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
        "model": model, "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}).encode()


def responses_stream(model):
    rid = "resp_" + uuid.uuid4().hex
    iid = "msg_" + uuid.uuid4().hex
    now = int(time.time())
    base = {"id": rid, "object": "response", "created_at": now, "model": model,
            "status": "in_progress", "output": []}
    item = {"type": "message", "id": iid, "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}]}
    done = dict(base, status="completed", output=[item],
                usage={"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 11})
    return sse([
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": base}),
        ("response.in_progress", {"type": "response.in_progress", "sequence_number": 1,
                                  "response": base}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 2,
                                        "output_index": 0, "item": dict(item, status="in_progress",
                                                                        content=[])}),
        ("response.content_part.added", {"type": "response.content_part.added",
                                         "sequence_number": 3, "item_id": iid, "output_index": 0,
                                         "content_index": 0,
                                         "part": {"type": "output_text", "text": "",
                                                  "annotations": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 4,
                                        "item_id": iid, "output_index": 0, "content_index": 0,
                                        "delta": "ok"}),
        ("response.output_text.done", {"type": "response.output_text.done", "sequence_number": 5,
                                       "item_id": iid, "output_index": 0, "content_index": 0,
                                       "text": "ok"}),
        ("response.content_part.done", {"type": "response.content_part.done", "sequence_number": 6,
                                        "item_id": iid, "output_index": 0, "content_index": 0,
                                        "part": item["content"][0]}),
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 7,
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "sequence_number": 8,
                                "response": done}),
    ])


def chat_stream(model):
    cid = "chatcmpl-" + uuid.uuid4().hex
    now = int(time.time())

    def chunk(delta, finish=None, usage=None):
        c = {"id": cid, "object": "chat.completion.chunk", "created": now, "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage is not None:
            c["usage"] = usage
        return (None, c)

    return sse([
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "ok"}),
        chunk({}, "stop", {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}),
        (None, "[DONE]"),
    ])


def chat_json(model):
    return json.dumps({
        "id": "chatcmpl-" + uuid.uuid4().hex, "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.command, self.path))

    def _reply(self, code, ctype, payload):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _handle(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        else:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
        body = record(self.command, self.path, self.headers, raw)
        route = self.path.split("?", 1)[0].rstrip("/")
        model = body.get("model", "local") if isinstance(body, dict) else "local"
        stream = isinstance(body, dict) and body.get("stream") is True
        if self.command == "POST" and route.endswith("/messages/count_tokens"):
            return self._reply(200, "application/json", b'{"input_tokens": 1}')
        if self.command == "POST" and route.endswith("/messages"):
            if stream:
                return self._reply(200, "text/event-stream", anthropic_stream(model))
            return self._reply(200, "application/json", anthropic_json(model))
        if self.command == "POST" and route.endswith("/responses"):
            return self._reply(200, "text/event-stream", responses_stream(model))
        if self.command == "POST" and route.endswith("/chat/completions"):
            if stream:
                return self._reply(200, "text/event-stream", chat_stream(model))
            return self._reply(200, "application/json", chat_json(model))
        if self.command == "GET" and route.endswith("/models"):
            return self._reply(200, "application/json", json.dumps({
                "object": "list",
                "data": [{"id": "local", "object": "model", "created": 0, "owned_by": "kvrun"}],
            }).encode())
        return self._reply(404, "application/json", json.dumps({
            "error": {"type": "not_found_error", "message": "no route for %s %s"
                      % (self.command, self.path)}}).encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle


def main():
    global OUT
    port = int(sys.argv[1])
    OUT = sys.argv[2]
    os.makedirs(OUT, exist_ok=True)
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    sys.stderr.write("recording on 127.0.0.1:%d into %s\n" % (port, OUT))
    srv.serve_forever()


if __name__ == "__main__":
    main()
