"""An MCP client made with the official Python SDK (PyPI `mcp`), driving `paddock mcp serve`.

Usage: serve_client.py PADDOCK PRESET SCENARIO [ELICIT]
  PADDOCK   the paddock binary; it is started with this process's environment and cwd
  PRESET    the preset path given to `paddock mcp serve --preset`
  SCENARIO  list | call | image | cancel | plant | hostile | ask
  ELICIT    for `ask`: "none" (declare no elicitation), "no" or "once" (answer so)

With PADDOCK_MCP_URL and PADDOCK_MCP_TOKEN set, it connects to an already running
`paddock mcp serve --listen` over streamable HTTP instead of starting one.

PADDOCK_MCP_MODE: "legacy" (the default: the `initialize` handshake, as clients before
2026-07-28) or "auto" (the SDK's `Client`: `server/discover` first, the 2026-07-28 revision
when the server speaks it; questions then come as `input_required` rounds).

Prints one JSON object on stdout; the Rust test (tests/tests/suite/mcp_serve.rs) asserts on it.
"""

import base64
import json
import os
import sys
import time

import anyio
import mcp
from mcp import types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def called(result):
    return {"is_error": bool(result.is_error), "text": text_of(result)}


async def scenario(session, name, out):
    if name == "list":
        listed = await session.list_tools()
        out["tools"] = {
            t.name: {
                "description": t.description,
                "schema": t.input_schema,
                "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                if t.annotations
                else None,
            }
            for t in listed.tools
        }
    elif name == "call":
        out["read"] = called(await session.call_tool("read_file", {"path": "README.md"}))
        out["unknown"] = called(await session.call_tool("no_such_tool", {}))
        out["invalid"] = called(await session.call_tool("read_file", {"path": 7}))
    elif name == "image":
        # Each content item as the client received it; an image's bytes by their base64.
        for key, path in (("png", "pic.png"), ("text", "README.md")):
            result = await session.call_tool("read_file", {"path": path})
            out[key] = {
                "is_error": bool(result.is_error),
                "content": [
                    {"type": c.type, "text": c.text}
                    if c.type == "text"
                    else {"type": c.type, "mime_type": c.mime_type, "hex": base64.b64decode(c.data).hex()}
                    for c in result.content
                ],
            }
    elif name == "cancel":
        progress = []

        async def on_progress(value, total, message):
            progress.append({"progress": value, "message": message})

        started = time.monotonic()
        with anyio.move_on_after(1.6):
            await session.call_tool("sleep", {}, progress_callback=on_progress)
        out["cancelled_after_s"] = time.monotonic() - started
        out["progress"] = progress
        # The session goes on: the next call is answered at once.
        started = time.monotonic()
        out["after"] = called(await session.call_tool("read_file", {"path": "README.md"}))
        out["after_s"] = time.monotonic() - started
    elif name == "plant":
        # A program that plants protected paths, then sleeps: cancelled while it runs.
        plant = (
            "mkdir -p sub/.cargo && echo '[alias]' > sub/.cargo/config.toml && "
            "mkdir -p sub/x/.git && echo started > started && sleep 30"
        )
        started = time.monotonic()
        with anyio.move_on_after(3.0):
            await session.call_tool("run_command", {"program": "sh", "args": ["-c", plant]})
        out["cancelled_after_s"] = time.monotonic() - started
        # The next call runs after the cancelled one is settled, clean-up included.
        out["config"] = called(
            await session.call_tool("read_file", {"path": "sub/.cargo/config.toml"})
        )
        out["started"] = called(await session.call_tool("read_file", {"path": "started"}))
    elif name == "hostile":
        out["outside"] = called(await session.call_tool("read_path", {"path": "/decoy/secret.txt"}))
        out["escape"] = called(await session.call_tool("read_path", {"path": "../../../../etc/shadow"}))
        out["spin"] = called(await session.call_tool("spin", {}))
        out["memory"] = called(await session.call_tool("memory_bomb", {}))
        out["after"] = called(await session.call_tool("read_file", {"path": "README.md"}))
    elif name == "ask":
        out["write"] = called(
            await session.call_tool("write_path", {"path": "/workspace/asked.txt", "content": "yes"})
        )
    else:
        raise SystemExit(f"unknown scenario {name}")


async def main():
    paddock, preset, name = sys.argv[1:4]
    elicit = sys.argv[4] if len(sys.argv) > 4 else "none"
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        if elicit == "no":
            return types.ElicitResult(action="accept", content={"answer": "no", "reason": "not today"})
        return types.ElicitResult(action="accept", content={"answer": elicit})

    out = {}
    kwargs = {"elicitation_callback": on_elicit} if elicit != "none" else {}

    mode = os.environ.get("PADDOCK_MCP_MODE", "legacy")

    async def run(read, write):
        async with mcp.ClientSession(read, write, **kwargs) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["protocol"] = init.protocol_version
            await scenario(session, name, out)

    async def run_client(target):
        async with mcp.Client(target, mode="auto", **kwargs) as client:
            out["server"] = client.server_info.name if client.server_info else None
            out["protocol"] = client.protocol_version
            await scenario(client, name, out)

    url = os.environ.get("PADDOCK_MCP_URL")
    if mode == "auto":
        if url:
            headers = {"Authorization": "Bearer " + os.environ["PADDOCK_MCP_TOKEN"]}
            async with create_mcp_http_client(headers=headers) as http:
                await run_client(streamable_http_client(url, http_client=http))
        else:
            await run_client(
                mcp.StdioServerParameters(
                    command=paddock, args=["mcp", "serve", "--preset", preset], env=dict(os.environ)
                )
            )
    elif url:
        # `paddock mcp serve --listen` is already running (the test started it): streamable HTTP.
        headers = {"Authorization": "Bearer " + os.environ["PADDOCK_MCP_TOKEN"]}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                await run(read, write)
    else:
        server = mcp.StdioServerParameters(
            command=paddock, args=["mcp", "serve", "--preset", preset], env=dict(os.environ)
        )
        async with mcp.stdio_client(server) as (read, write):
            await run(read, write)
    out["asked"] = asked
    print(json.dumps(out))


anyio.run(main)
