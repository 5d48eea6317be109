"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies, for tests (not a mock of the client).

Script entries (consumed in order for /v1/chat/completions; the last one repeats):
  {"content": "..."}                 a normal reply
  {"status": 500}                    an HTTP error
  {"delay": 3.0, "content": "..."}   a slow reply
  {"raw": b"not json"}               a malformed body
  {"empty": True}                    a reply with no choices
Requests are recorded in `server.requests`. /v1/embeddings answers deterministic vectors, or what
`server.embeddings_step` says ({"delay": s} first, then {"status": 500} or {"raw": b"junk"}). `port` lets a test bring
a stopped server back at the same address. With `server.reject_keys = True` every POST gets OpenAI's 401, whose
message echoes the API key it was sent.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def _send(self, body: bytes, status: int = 200, ctype: str = "application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        self._send(json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0,
                                                             "owned_by": "tests"}]}).encode())

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        req = json.loads(self.rfile.read(length) or b"{}")
        server: ScriptedLLMServer = self.server.owner  # type: ignore[attr-defined]
        server.requests.append({"path": self.path, "body": req})
        if server.reject_keys:  # as OpenAI does: a 401 whose message echoes the key it was sent
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            return self._send(json.dumps({"error": {"message": f"Incorrect API key provided: {key}. You can find "
                                                    "your API key at https://example.invalid/keys.",
                                                    "type": "invalid_request_error", "code": "invalid_api_key"}}
                                         ).encode(), 401)
        if self.path.endswith("/embeddings") and server.embeddings_step:
            step = server.embeddings_step
            if step.get("delay"):
                time.sleep(step["delay"])
            if "status" in step:
                return self._send(json.dumps({"error": {"message": "scripted failure"}}).encode(), step["status"])
            if "raw" in step:
                return self._send(step["raw"])
        if self.path.endswith("/embeddings"):
            inputs = req["input"] if isinstance(req["input"], list) else [req["input"]]
            data = [{"object": "embedding", "index": i, "embedding": server.embed(t)} for i, t in enumerate(inputs)]
            return self._send(json.dumps({"object": "list", "data": data, "model": req.get("model"),
                                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode())
        step = server.next_step()
        if step.get("delay"):
            time.sleep(step["delay"])
        if "status" in step:
            return self._send(json.dumps({"error": {"message": "scripted failure"}}).encode(), step["status"])
        if "raw" in step:
            return self._send(step["raw"])
        base = {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": req.get("model")}
        if step.get("empty"):
            return self._send(json.dumps(dict(base, choices=[])).encode())
        content = step["content"](req) if callable(step.get("content")) else step.get("content", "")
        body = dict(base, choices=[{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                    usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
        self._send(json.dumps(body, ensure_ascii=False).encode())


class ScriptedLLMServer:
    def __init__(self, script: list[dict] | None = None, dim: int = 16, port: int = 0):
        self.script = list(script or [{"content": "## Goal\n- ok"}])
        self.requests: list[dict] = []
        self.reject_keys = False
        self.embeddings_step: dict | None = None
        self.dim = dim
        self._lock = threading.Lock()
        ThreadingHTTPServer.request_queue_size = 64
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def set_script(self, script: list[dict]) -> None:
        with self._lock:
            self.script = list(script)

    def next_step(self) -> dict:
        with self._lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def embed(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return [(digest[i % len(digest)] - 128) / 128.0 for i in range(self.dim)]

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()
