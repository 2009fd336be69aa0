"""The MCP servers a task (or `harbor run --mcp-config`) declares, as `[mcp.NAME]` tables of a
preset that extends the one the trial runs with (docs/mcp.md).

- A URL server (`streamable-http`, and `sse`, which paddock reaches as streamable HTTP: it does
  not speak the older SSE transport) becomes `url` with an http grant for exactly its origin.
  paddock refuses a host name that resolves to a private address (a sidecar's name does), so the
  agent resolves each name inside the environment first and passes the address
  (`resolve_hosts`).
- A `stdio` server becomes `command` and `args`, started by paddock confined like its programs,
  with the task's working directory mounted at `/workspace` and the network open (the task's
  container is the outer boundary). It needs paddock's process jail, which a container that
  forbids user namespaces does not allow: there, serve it over HTTP instead.
"""

import ipaddress
import json
from urllib.parse import urlsplit, urlunsplit

from harbor.models.task.config import MCPServerConfig


def toml_string(text: str) -> str:
    """`text` as a TOML basic string (JSON's escapes are TOML's; non-ASCII stays as it is)."""
    return json.dumps(text, ensure_ascii=False)


def host_of(server: MCPServerConfig) -> str | None:
    """The host name of a URL server that is not an address already, to resolve."""
    if server.transport == "stdio" or not server.url:
        return None
    host = urlsplit(server.url).hostname
    if host is None:
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host
    return None


def with_address(url: str, addresses: dict[str, str]) -> str:
    """`url` with its host replaced by the address it resolved to, when it did."""
    parts = urlsplit(url)
    address = addresses.get(parts.hostname or "")
    if address is None:
        return url
    shown = f"[{address}]" if ":" in address else address
    netloc = f"{shown}:{parts.port}" if parts.port else shown
    return urlunsplit(parts._replace(netloc=netloc))


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def preset_text(base: str, servers: list[MCPServerConfig], addresses: dict[str, str]) -> str:
    """A preset extending `base` (a shipped preset's name, or a file beside this one) with
    `servers`; `addresses` maps the host names resolved in the environment to an address."""
    lines = [
        "# Written by paddock_harbor for this trial: the trial's preset and the MCP servers",
        "# the task declares.",
        f"extends = {toml_string(base)}",
    ]
    for server in servers:
        lines += ["", f"[mcp.{toml_string(server.name)}]"]
        if server.transport == "stdio":
            args = ", ".join(toml_string(a) for a in server.args)
            lines += [
                f"command = {toml_string(server.command or '')}",
                f"args = [{args}]",
                'env = ["PATH", "HOME", "LANG"]',
                'mounts = [{ host = ".", guest = "/workspace", mode = "rw" }]',
                "network = true",
            ]
        else:
            url = with_address(server.url or "", addresses)
            lines += [
                f"url = {toml_string(url)}",
                f"http = {{ allow = [{toml_string(origin(url))}] }}",
            ]
    return "\n".join(lines) + "\n"
