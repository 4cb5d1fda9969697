// client2026.mjs drives wasmtask with the official MCP 2026-07-28 client
// packages (@modelcontextprotocol/client 2.4.0 and
// @modelcontextprotocol/ext-tasks 0.2.2, pinned in package.json): a plain
// call, then a task through input_required to completed. It exits non-zero,
// saying why, on any deviation.
//
//   node client2026.mjs http://127.0.0.1:8080/mcp
//
// ext-tasks 0.2.2 asks its host for a "raw dispatch" for the task requests
// whose 2026-07-28 shapes the SDK Client's codecs reject (its README:
// "a 2026-07-28 Tasks server additionally requires rawDispatch and
// v2RequestFraming"); rawDispatch below is that host part: one POST per
// request with the transport's routing headers. Everything else — version
// negotiation (server/discover), the extension's framing of each request,
// task creation, polling, input routing (tasks/update), settlement — is the
// packages' own.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const url = new URL(process.argv[2] ?? "");
const version = "2026-07-28";
const clientInfo = { name: "wasmtask-client2026", version: "1" };
const capabilities = { elicitation: {}, extensions: { "io.modelcontextprotocol/tasks": {} } };

function fail(msg) {
	console.error(`client2026: ${msg}`);
	process.exit(1);
}

let nextID = 0;

// rawDispatch posts one framed request and returns its response: a JSON
// body, or the response event of an SSE stream.
async function rawDispatch(request, options = {}) {
	const id = ++nextID;
	const params = request.params ?? {};
	const headers = {
		"content-type": "application/json",
		accept: "application/json, text/event-stream",
		"mcp-protocol-version": version,
		"mcp-method": request.method,
	};
	const name = params.taskId ?? params.name;
	if (typeof name === "string") headers["mcp-name"] = name;
	const res = await fetch(url, {
		method: "POST",
		headers,
		body: JSON.stringify({ jsonrpc: "2.0", id, method: request.method, params }),
		signal: options.signal,
	});
	const text = await res.text();
	let message;
	if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
		for (const event of text.split("\n\n")) {
			const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
			if (!data) continue;
			const m = JSON.parse(data);
			if (m.id === id) message = m;
		}
	} else if (text) {
		message = JSON.parse(text);
	}
	if (!message) throw new Error(`${request.method}: HTTP ${res.status} without a response: ${text.slice(0, 200)}`);
	return message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result };
}

const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: { pin: version } } });
await client.connect(new StreamableHTTPClientTransport(url));
if (client.getProtocolEra() !== "modern") fail(`negotiated era ${client.getProtocolEra()}, want modern (2026-07-28)`);
if (!client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/tasks"]) {
	fail(`server/discover does not advertise the tasks extension: ${JSON.stringify(client.getServerCapabilities())}`);
}

// A plain call, with the SDK Client alone.
const greeting = await client.callTool({ name: "greet", arguments: { name: "node" } });
if (greeting.content?.[0]?.text !== "Hello, node!") fail(`greet: ${JSON.stringify(greeting)}`);

// A task through input_required, with ext-tasks.
const asked = [];
const session = createTaskSessionFromClient(client, {
	endpointId: "wasmtask-client2026",
	rawDispatch,
	v2RequestFraming: { protocolVersion: version, clientInfo, clientCapabilities: capabilities },
	onInputRequest: async (request, context) => {
		if (request.kind !== "elicitation") throw new Error(`unexpected input request ${request.kind}`);
		asked.push({ message: request.params.message, delivery: context.delivery, scope: context.scope });
		return { action: "accept", content: { confirm: true } };
	},
});
try {
	const execution = await session.callTool("confirm_delete", { filename: "client2026.txt" });
	if (execution.kind !== "task") fail(`confirm_delete: a ${execution.kind} execution, want a task`);
	const { outcome } = await execution.settle();
	const result = resultFromTaskOutcome(outcome);
	const text = result?.content?.[0]?.text;
	if (text !== "deleted 'client2026.txt'") fail(`confirm_delete: result ${JSON.stringify(result)}, want the text "deleted 'client2026.txt'"`);
	if (asked.length !== 1 || asked[0].message !== "Delete 'client2026.txt'?" || asked[0].scope !== "task") {
		fail(`confirm_delete: the input requests seen were ${JSON.stringify(asked)}, want one task-scoped "Delete 'client2026.txt'?"`);
	}
} finally {
	await session.close();
	await client.close();
}
console.log("client2026: greet answered; confirm_delete ran as a task, asked once, and completed");
