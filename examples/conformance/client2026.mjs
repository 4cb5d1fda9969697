// client2026.mjs drives wasmtask with the official MCP 2026-07-28 client
// packages (@modelcontextprotocol/client 2.4.0 and
// @modelcontextprotocol/ext-tasks 0.2.2, pinned in package.json): a plain
// call, then a task through input_required to completed. It exits non-zero,
// saying why, on any deviation.
//
//   node client2026.mjs http://127.0.0.1:8080/mcp
//
// What the packages cannot do alone: the SDK Client's request() rejects a
// tools/call answered with a task (SdkError UNSUPPORTED_RESULT_TYPE,
// "Unsupported result type 'task' for tools/call"), so ext-tasks 0.2.2 asks
// its host for a "raw dispatch" of tools/call and tasks/* (its README: "a
// 2026-07-28 Tasks server additionally requires rawDispatch and
// v2RequestFraming"). rawDispatch below is that host part, built on the
// client package's own lower-level API: a second StreamableHTTPClientTransport,
// which derives the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers from
// the request ext-tasks framed, posts it and parses its JSON or SSE answer.
// Everything else (version negotiation by server/discover, the framing of
// each request, task creation, polling, routing the task's input request to
// onInputRequest and answering it with tasks/update, settlement) is the
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
// An error the steps below do not expect ends the run with its message.
process.on("uncaughtException", (err) => fail(`${err?.message ?? err}${err?.cause ? ` (${err.cause.message ?? err.cause})` : ""}`));
// A server that stops answering fails the run instead of hanging CI.
setTimeout(() => fail("no end within 60 s"), 60_000).unref();

// rawDispatch sends one framed request on its own transport and resolves
// with the response of the same id.
const raw = new StreamableHTTPClientTransport(url);
const pending = new Map(); // id → { resolve, reject }
raw.onmessage = (message) => {
	const waiter = pending.get(message.id);
	if (waiter && ("result" in message || "error" in message)) {
		pending.delete(message.id);
		waiter.resolve(message);
	}
};
raw.onerror = () => {}; // send() rejects with the same error
await raw.start();
let nextID = 0;

async function rawDispatch(request, options = {}) {
	const id = `raw-${++nextID}`;
	const answered = new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
	const abandon = (err) => {
		const waiter = pending.get(id);
		if (waiter) {
			pending.delete(id);
			waiter.reject(err);
		}
	};
	options.signal?.addEventListener("abort", () => abandon(options.signal.reason), { once: true });
	try {
		await raw.send(
			{ ...request, jsonrpc: "2.0", id },
			{
				requestSignal: options.signal,
				headers: options.context?.headers,
				onRequestStreamEnd: () => abandon(new Error(`${request.method}: the response stream ended without a response`)),
			},
		);
	} catch (err) {
		abandon(err);
	}
	const message = await answered;
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
		const schema = request.params.requestedSchema ?? {};
		const fields = Object.entries(schema.properties ?? {}).map(([k, v]) => `${k}:${v.type}`).join(",");
		asked.push({ message: request.params.message, scope: context.scope, fields });
		return { action: "accept", content: { confirm: true } };
	},
});
try {
	const execution = await session.callTool("confirm_delete", { filename: "client2026.txt" });
	if (execution.kind !== "task") fail(`confirm_delete: a ${execution.kind} execution, want a task`);
	const statuses = []; // each status the task was observed in, in order
	const { outcome } = await execution.settle({
		onEvent: (event) => {
			const status = event.type === "task" ? event.task.status : event.outcome.status;
			if (statuses.at(-1) !== status) statuses.push(status);
		},
	});
	if (outcome.status !== "completed") fail(`confirm_delete: the task ended ${outcome.status}: ${outcome.error?.message ?? ""}`);
	if (!statuses.includes("input_required") || statuses.at(-1) !== "completed") {
		fail(`confirm_delete: the task went through ${statuses.join(" → ")}, want input_required, then completed`);
	}
	if (asked.length !== 1 || asked[0].message !== "Delete 'client2026.txt'?" || asked[0].scope !== "task" || asked[0].fields !== "confirm:boolean") {
		fail(`confirm_delete: the input requests seen were ${JSON.stringify(asked)}, want one task-scoped "Delete 'client2026.txt'?" asking for confirm:boolean`);
	}
	const result = resultFromTaskOutcome(outcome);
	const text = result?.content?.[0]?.text;
	if (text !== "deleted 'client2026.txt'") fail(`confirm_delete: result ${JSON.stringify(result)}, want the text "deleted 'client2026.txt'"`);
} finally {
	await session.close();
	await client.close();
	await raw.close();
}
console.log("client2026: greet answered; confirm_delete ran as a task, asked once in input_required, and completed");
