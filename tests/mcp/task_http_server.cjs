// An MCP server reached by URL (streamable HTTP, stateless), made with the official TypeScript
// SDK (the one `server-everything` installs; the test finds it through NODE_PATH), for
// `[mcp.NAME] url = ...` in tests/tests/suite/mcp_http/url_servers.rs. It speaks the revisions
// before 2026-07-28: `server/discover` is "method not found", or never answered at all.
//
// Its tools: `plain` answers at once; `research` is listed with `execution.taskSupport:
// "required"` (2025-11-25), so a client must run it as a task.
//
// Usage: node task_http_server.cjs PORT [--json] [--silent-discover] [--flood-relist]
//   --json             answers in one JSON body, not an event stream
//   --silent-discover  reads a `server/discover` request and never answers it
//   --flood-relist     answers the tool list honestly once, then with 24 MiB of JSON

const http = require("node:http");
const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const {
  StreamableHTTPServerTransport,
} = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} = require("@modelcontextprotocol/sdk/types.js");

const [port, ...flags] = process.argv.slice(2);
const json = flags.includes("--json");
const silentDiscover = flags.includes("--silent-discover");
const floodRelist = flags.includes("--flood-relist");
let listed = 0;

function server() {
  const s = new Server(
    { name: "task-test", version: "1.0.0" },
    { capabilities: { tools: {} } },
  );
  s.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "plain", description: "Answers at once.", inputSchema: { type: "object" } },
      {
        name: "research",
        description: "Runs only as a task.",
        inputSchema: { type: "object" },
        execution: { taskSupport: "required" },
      },
    ],
  }));
  s.setRequestHandler(CallToolRequestSchema, async (request) => ({
    content: [{ type: "text", text: `called ${request.params.name}` }],
  }));
  return s;
}

http
  .createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const message = body ? JSON.parse(body) : undefined;
    if (silentDiscover && message && message.method === "server/discover") {
      return; // read, never answered: the request stays open
    }
    if (floodRelist && message && message.method === "tools/list" && listed++ > 0) {
      const description = "x".repeat(24 << 20);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { tools: [
        { name: "plain", description, inputSchema: { type: "object" } },
      ] } }));
      return;
    }
    // Stateless: a server and a transport for each request.
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: json,
    });
    const s = server();
    res.on("close", () => {
      transport.close();
      s.close();
    });
    await s.connect(transport);
    await transport.handleRequest(req, res, message);
  })
  .listen(Number(port), "127.0.0.1");
