// An MCP server of the official TypeScript SDK, for httptools to call as a
// remote tool (transport "mcp"): over stdio (--stdio), or over HTTP on
// 127.0.0.1 with streamable HTTP at /mcp (and /mcp-key, which wants the
// header X-Api-Key: $REMOTE_KEY) and HTTP+SSE at /sse. It prints
// {"port":N} when it listens.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const textInput = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };

function newServer(where) {
  const s = new Server({ name: "ts-remote", version: "1.0.0" }, { capabilities: { tools: {} } });
  s.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "echo", description: "Echoes.", inputSchema: textInput, outputSchema: { type: "object", properties: { echo: { type: "string" }, via: { type: "string" } } } },
      { name: "shout", description: "Text only.", inputSchema: textInput },
      { name: "fail", description: "Always fails.", inputSchema: textInput },
    ],
  }));
  s.setRequestHandler(CallToolRequestSchema, async (req) => {
    const text = req.params.arguments?.text ?? "";
    switch (req.params.name) {
      case "echo":
        return { structuredContent: { echo: text, via: where }, content: [{ type: "text", text: JSON.stringify({ echo: text, via: where }) }] };
      case "shout":
        return { content: [{ type: "text", text: text.toUpperCase() + "!" }] };
      case "fail":
        return { isError: true, content: [{ type: "text", text: `cannot do ${text} (${where})` }] };
    }
    throw new Error(`no tool ${req.params.name}`);
  });
  return s;
}

if (process.argv.includes("--stdio")) {
  await newServer("stdio").connect(new StdioServerTransport());
} else {
  const streams = new Map(); // session id → streamable transport
  const sse = new Map(); // session id → SSE transport
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    if (url.pathname === "/mcp" || url.pathname === "/mcp-key") {
      if (url.pathname === "/mcp-key" && req.headers["x-api-key"] !== process.env.REMOTE_KEY) {
        res.writeHead(401).end("unauthorized");
        return;
      }
      const id = req.headers["mcp-session-id"];
      let t = id && streams.get(id);
      if (!t) {
        if (id) {
          res.writeHead(404).end("session not found");
          return;
        }
        t = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => streams.set(sid, t) });
        await newServer("streamable-http").connect(t);
      }
      await t.handleRequest(req, res);
      return;
    }
    if (url.pathname === "/sse" && req.method === "GET") {
      const t = new SSEServerTransport("/messages", res);
      sse.set(t.sessionId, t);
      res.on("close", () => sse.delete(t.sessionId));
      await newServer("sse").connect(t);
      return;
    }
    if (url.pathname === "/messages" && req.method === "POST") {
      const t = sse.get(url.searchParams.get("sessionId"));
      if (!t) {
        res.writeHead(404).end("session not found");
        return;
      }
      await t.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end();
  });
  server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
}
