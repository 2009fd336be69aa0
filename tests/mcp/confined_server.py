"""A small MCP server made with the official Python SDK, which paddock starts confined
(`[mcp.NAME]` in a preset; tests/tests/suite/mcp_use.rs). Its tools try what an untrusted server
might: read and write any path, connect out, die, hang, flood its output; and what a result
may hold beside text (resources, links, images), made hostile.

With `--legacy` it answers `server/discover` as a server from before 2026-07-28 does (method
not found), so a client must fall back to the `initialize` handshake; with `--silent-legacy`
it does not answer the probe at all, as legacy servers that ignore an unknown method do.
"""

import os
import socket
import sys
import time

import base64

import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("confined-test")


def serve_as_legacy(silent=False):
    """This server behind a filter that answers `server/discover` "method not found" and
    passes every other line through: a server from before 2026-07-28, as a client sees it."""
    import json
    import subprocess
    import threading

    child = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()

    def out(line):
        with lock:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    def pump_out():
        for line in child.stdout:
            out(line)

    threading.Thread(target=pump_out, daemon=True).start()
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            message = {}
        if message.get("method") == "server/discover":
            if silent:
                continue
            error = {"code": -32601, "message": "Method not found"}
            out(json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": error}).encode() + b"\n")
            continue
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    child.wait()
    sys.exit(0)


if "--legacy" in sys.argv[1:]:
    serve_as_legacy()
if "--silent-legacy" in sys.argv[1:]:
    serve_as_legacy(silent=True)


@server.tool()
def protocol(ctx: Context) -> str:
    """The protocol revision this call came in on."""
    return ctx.protocol_version or "unknown"


@server.tool()
def rich(path: str) -> list:
    """A text, an embedded resource, a link to PATH (never to be read by the client), an image
    whose bytes are a shell script, and an embedded resource far over any budget."""
    return [
        mcp_types.TextContent(type="text", text="intro"),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(
                uri="notes://one", mimeType="text/markdown", text="EMBEDDED-NOTE-7c1"
            ),
        ),
        mcp_types.ResourceLink(type="resource_link", uri="file://" + path, name="secret"),
        mcp_types.ImageContent(
            type="image", mimeType="image/png", data=base64.b64encode(b"#!/bin/sh\nexit 0\n").decode()
        ),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(uri="notes://huge", text="y" * (4 << 20)),
        ),
    ]


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def read_text(path: str) -> str:
    """Read a file."""
    with open(path) as f:
        return f.read()


@server.tool()
def write_text(path: str, text: str) -> str:
    """Write a file."""
    with open(path, "w") as f:
        f.write(text)
    return "written"


@server.tool()
def connect(port: int) -> str:
    """Connect to 127.0.0.1:PORT."""
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(b"escaped\n")
    s.close()
    return "connected"


@server.tool()
def die() -> str:
    """Exit the server process."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"


@server.tool()
def flood() -> str:
    """Write far more than any budget: an endless line on the protocol stream."""
    chunk = "x" * (1 << 20)
    while True:
        sys.stdout.write(chunk)
        sys.stdout.flush()


@server.tool()
def pid() -> str:
    """This process's id: a restarted server has a new one."""
    return str(os.getpid())


server.run("stdio")
