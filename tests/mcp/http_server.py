"""An MCP server reached by URL (streamable HTTP), made with the official Python SDK, for
`[mcp.NAME] url = ...` (tests/tests/suite/mcp_url.rs). The test starts it unconfined on a loopback
port; its tools misbehave the way a remote server might: hang, flood, die.

Usage: http_server.py PORT
"""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("url-test")


@server.tool()
def pid() -> str:
    """This process's id."""
    return str(os.getpid())


@server.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "late"


@server.tool()
def flood() -> str:
    """A result far past any message cap (24 MiB)."""
    return "x" * (24 << 20)


@server.tool()
def die() -> str:
    """Exit the server process."""
    os._exit(3)


server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
