"""An OAuth-protected MCP server and its authorization server in one
process, for the mcpmux authorization tests. Standard library only.

    .deps/venv/bin/python tests/servers/net/oauth_server.py [--expires-in SECONDS] [--port N]

Binds 127.0.0.1:N (N = 0 picks a free port) and prints `READY <port>`.

Protected resource: POST /mcp, a minimal Streamable HTTP server (JSON
answers, no session; GET is 405) with one tool `echo`. Without a valid
access token it answers 401 with `WWW-Authenticate: Bearer
resource_metadata=...`. Metadata: /.well-known/oauth-protected-resource/mcp
(RFC 9728) and /.well-known/oauth-authorization-server (RFC 8414).
Authorization server: /authorize (approves at once: 302 to redirect_uri
with code, state, iss), /token (authorization_code with PKCE S256 checked,
refresh_token; access tokens live --expires-in seconds), /register (RFC 7591).

--cleartext FIELD: the metadata names `http://auth.evil.example/...` for
FIELD (`authorization_servers`, `authorization_endpoint`, `token_endpoint`
or `registration_endpoint`), which a client must refuse (OAuth over
cleartext); nothing listens there.

Test controls: GET /admin/stats (JSON counters: authorize, token_code,
token_refresh, refresh_refused, register, mcp_401, mcp_ok), POST
/admin/revoke (every access and refresh token becomes invalid).
"""

import argparse
import base64
import hashlib
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATS = {
    "authorize": 0,
    "token_code": 0,
    "token_refresh": 0,
    "refresh_refused": 0,
    "register": 0,
    "mcp_401": 0,
    "mcp_ok": 0,
}
CODES = {}  # code -> (challenge, redirect_uri)
ACCESS = {}  # token -> expiry (unix seconds)
REFRESH = set()
EXPIRES_IN = 3600
CLEARTEXT = None
EVIL = "http://auth.evil.example"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def issue(with_refresh=True):
    token = "at-" + secrets.token_urlsafe(16)
    ACCESS[token] = time.time() + EXPIRES_IN
    body = {"access_token": token, "token_type": "Bearer", "expires_in": EXPIRES_IN}
    if with_refresh:
        refresh = "rt-" + secrets.token_urlsafe(16)
        REFRESH.add(refresh)
        body["refresh_token"] = refresh
    return body


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s\n" % (fmt % args))

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def send_json(self, status, doc, headers=()):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        base = self.base()
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            servers = [EVIL] if CLEARTEXT == "authorization_servers" else [base]
            return self.send_json(200, {"resource": base + "/mcp", "authorization_servers": servers})
        if url.path == "/.well-known/oauth-authorization-server":
            doc = {
                "issuer": base,
                "authorization_endpoint": base + "/authorize",
                "token_endpoint": base + "/token",
                "registration_endpoint": base + "/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": True,
            }
            if CLEARTEXT in doc:
                doc[CLEARTEXT] = EVIL + doc[CLEARTEXT][len(base):]
            return self.send_json(200, doc)
        if url.path == "/authorize":
            q = dict(urllib.parse.parse_qsl(url.query))
            with LOCK:
                STATS["authorize"] += 1
                code = "code-" + secrets.token_urlsafe(8)
                CODES[code] = (q.get("code_challenge"), q.get("redirect_uri"))
            target = q["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": q.get("state", ""), "iss": base}
            )
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if url.path == "/admin/stats":
            with LOCK:
                return self.send_json(200, dict(STATS))
        if url.path == "/mcp":
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_json(404, {"error": "not_found"})

    def do_DELETE(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        raw = self.body()
        if url.path == "/register":
            with LOCK:
                STATS["register"] += 1
            doc = json.loads(raw or b"{}")
            return self.send_json(
                201,
                {
                    "client_id": "client-" + secrets.token_urlsafe(6),
                    "redirect_uris": doc.get("redirect_uris", []),
                    "token_endpoint_auth_method": "none",
                },
            )
        if url.path == "/token":
            form = dict(urllib.parse.parse_qsl(raw.decode()))
            grant = form.get("grant_type")
            with LOCK:
                if grant == "authorization_code":
                    entry = CODES.pop(form.get("code"), None)
                    verifier = form.get("code_verifier", "")
                    if not entry or b64url(hashlib.sha256(verifier.encode()).digest()) != entry[0]:
                        return self.send_json(400, {"error": "invalid_grant"})
                    STATS["token_code"] += 1
                    return self.send_json(200, issue())
                if grant == "refresh_token":
                    refresh = form.get("refresh_token")
                    if refresh not in REFRESH:
                        STATS["refresh_refused"] += 1
                        return self.send_json(400, {"error": "invalid_grant", "error_description": "refresh token revoked"})
                    REFRESH.discard(refresh)
                    STATS["token_refresh"] += 1
                    return self.send_json(200, issue())
            return self.send_json(400, {"error": "unsupported_grant_type"})
        if url.path == "/admin/revoke":
            with LOCK:
                ACCESS.clear()
                REFRESH.clear()
            return self.send_json(200, {"revoked": True})
        if url.path == "/mcp":
            return self.mcp(raw)
        self.send_json(404, {"error": "not_found"})

    def mcp(self, raw):
        auth = self.headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else None
        with LOCK:
            valid = token is not None and ACCESS.get(token, 0) > time.time()
            STATS["mcp_ok" if valid else "mcp_401"] += 1
        if not valid:
            challenge = 'Bearer error="invalid_token", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"' % self.base()
            return self.send_json(401, {"error": "invalid_token"}, [("WWW-Authenticate", challenge)])
        msg = json.loads(raw)
        method = msg.get("method")
        if "id" not in msg:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-fixture", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            text = json.dumps(msg["params"].get("arguments") or {}, separators=(",", ":"))
            result = {"content": [{"type": "text", "text": text}]}
        else:
            return self.send_json(
                200, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
            )
        self.send_json(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result})


def main():
    global EXPIRES_IN, CLEARTEXT
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--expires-in", type=int, default=3600)
    parser.add_argument("--cleartext", default=None)
    args = parser.parse_args()
    EXPIRES_IN = args.expires_in
    CLEARTEXT = args.cleartext
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
