"""A small MCP server made with the official Python SDK, which paddock starts confined
(`[mcp.NAME]` in a preset; tests/tests/suite/mcp_use.rs). Its tools try what an untrusted server
might: read and write any path, connect out, die, hang, flood its output.
"""

import os
import socket
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("confined-test")


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
