"""``graphmem mcp --transport http``: the SDK's streamable HTTP app behind one check of
graphmem's, served by uvicorn on a socket graphmem binds itself.

Listening first (:func:`graphmem.server.listening`, as ``bootstrap`` checks its port). A
port that is taken is graphmem's one-line error (exit 1), not uvicorn's log line and
exit 3 (which the CLI uses for "no server").

Request ids. JSON-RPC wants a request's ``id`` to be a string or a number, and MCP a
string or an integer; the SDK reads a message with any other id (an object, a list, a
boolean, null, a fraction) as a notification, answers ``202 Accepted`` with no body and
drops it. :class:`RequestIds` answers it with the protocol's invalid-request error
instead (``-32600``, HTTP 400, ``id: null``). It runs after every check of the SDK — the
bearer token (401), Host and Origin (421/403), headers, body size (413), session (404) —
by watching what the SDK answers: the body of a POST is read whole first (up to the
SDK's bound; a longer one goes on as it is, to be refused with 413), and a message that
has a ``method`` and an id of another type is handed on as a notification no one
handles (``graphmem/refused``), whose 202 is replaced. The message itself never reaches
the SDK: a ``notifications/cancelled`` with an object id cancels nothing.
"""

from __future__ import annotations

import json
from typing import Any

import uvicorn
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from ...server import listening

INVALID_REQUEST = -32600
#: What the SDK is handed instead of a request with a bad id: a notification it drops.
REFUSED = b'{"jsonrpc": "2.0", "method": "graphmem/refused"}'
Scope = dict[str, Any]
Message = dict[str, Any]


def _bad_id(body: bytes) -> str | None:
    """What is wrong with the id of the request in ``body`` (None: nothing, or not a
    request)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    ident = message["id"]
    if type(ident) in (str, int):  # not bool: a JSON true is no id
        return None
    kind = {dict: "an object", list: "a list", bool: "a boolean", float: "a fraction"}.get(type(ident), "null")
    return f"Invalid Request: a request's id is a string or an integer, not {kind}"


class RequestIds:
    """ASGI: the SDK's app, with a request whose id is of the wrong type answered with
    JSON-RPC's invalid-request error (see the module docstring)."""

    def __init__(self, app: Any, most: int = DEFAULT_MAX_REQUEST_BODY_SIZE):
        self.app, self.most = app, most

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        held, body = await _held(receive, self.most)
        wrong = _bad_id(body) if body is not None else None
        if wrong is not None:
            held = [{"type": "http.request", "body": REFUSED, "more_body": False}]
        replaced = False

        async def reading() -> Message:
            return held.pop(0) if held else await receive()

        async def answering(message: Message) -> None:
            nonlocal replaced
            if wrong is not None and message["type"] == "http.response.start" and message["status"] == 202:
                replaced = True
                await _invalid_request(send, message, wrong)
            elif not replaced:  # else the SDK's empty 202 body, already answered
                await send(message)

        await self.app(scope, reading, answering)


async def _held(receive: Any, most: int) -> tuple[list[Message], bytes | None]:
    """The messages of a request as received, up to its whole body or past ``most``
    bytes of it; and the body when whole (None when longer, or the client went away)."""
    held: list[Message] = []
    body = bytearray()
    while True:
        message = await receive()
        held.append(message)
        if message["type"] != "http.request":
            return held, None
        body.extend(message.get("body", b""))
        if len(body) > most:
            return held, None
        if not message.get("more_body", False):
            return held, bytes(body)


async def _invalid_request(send: Any, accepted: Message, reason: str) -> None:
    """A 400 with JSON-RPC's invalid-request error, keeping the SDK's other headers
    (the session id)."""
    payload = json.dumps({"jsonrpc": "2.0", "id": None,
                          "error": {"code": INVALID_REQUEST, "message": reason}}).encode()
    headers = [(k, v) for k, v in accepted.get("headers", []) if k.lower() not in (b"content-type", b"content-length")]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def serve_http(app: Any, host: str, port: int) -> None:
    """Serve ``app`` behind :class:`RequestIds` on ``host:port`` until the process ends."""
    sock = listening(host, port)
    uvicorn.Server(uvicorn.Config(RequestIds(app), log_level="warning")).run(sockets=[sock])
