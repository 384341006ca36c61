// One MCP session through the official TypeScript SDK's client, as the MCP Inspector and other
// TypeScript hosts open it: initialize, tools/list, tools/call memory_save (key and value only),
// tools/call memory_recall, close. Run by tests/test_serve_embedded.py against the live service:
//   MCP_URL=http://127.0.0.1:8000/mcp MCP_API_KEY=mem_… MCP_USER_ID=alice node session.mjs
// Prints one JSON object: what each step answered, every HTTP request the transport made (method
// and status) and every error the client reported. Exits 1 when a step throws.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.MCP_URL);
const headers = { Authorization: `Bearer ${process.env.MCP_API_KEY}`, "X-User-Id": process.env.MCP_USER_ID };

const requests = [];
const pending = [];
// The transport's own fetch, recorded: it opens the GET stream on its own, unawaited, after
// the initialized notification, so the run waits for every request's answer before closing.
const recordingFetch = (input, init) => {
  const entry = { method: init?.method ?? "GET", status: null };
  requests.push(entry);
  const answer = fetch(input, init).then((response) => {
    entry.status = response.status;
    return response;
  });
  pending.push(answer.catch(() => undefined));
  return answer;
};

const errors = [];
const client = new Client({ name: "memory-service-test", version: "1.0.0" });
client.onerror = (error) => errors.push(String(error));
const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: recordingFetch });

const text = (result) => JSON.parse(result.content[0].text);
const report = { requests, errors };
try {
  await client.connect(transport);
  report.server = client.getServerVersion();
  report.tools = (await client.listTools()).tools.map((tool) => ({ name: tool.name, required: tool.inputSchema.required }));
  const saved = await client.callTool({ name: "memory_save", arguments: { key: "pet", value: "Has a cat named Miso" } });
  report.saved = { isError: saved.isError ?? false, body: text(saved) };
  const recalled = await client.callTool({ name: "memory_recall", arguments: { query: "cat named Miso" } });
  report.recalled = { isError: recalled.isError ?? false, body: text(recalled) };
  await Promise.all(pending);
  await client.close();
  report.closed = true;
} catch (error) {
  report.failed = String(error?.stack ?? error);
  process.exitCode = 1;
}
console.log(JSON.stringify(report));
// A stream left open by the server would keep node alive: the report is out, end here.
process.exit();
