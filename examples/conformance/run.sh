#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json with the Node 22 it needs) against
# `wasmtask serve --http` on the fixture tools of this directory:
#
#   1. every tasks-* scenario of the 2026-07-28 tasks extension: all must pass;
#   2. --requirements 2025-11-25 and --requirements 2026-07-28: every failure
#      must be listed, with its reason, in baseline-<revision>.yml, and every
#      listed failure must still fail (a fixed one is a stale entry);
#   3. client2026.mjs: the official 2026 client packages drive a task
#      through input_required to completed.
#
# Exits non-zero on any regression. Run it from anywhere:
#
#   examples/conformance/run.sh
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$dir/../.." && pwd)"
work="$(mktemp -d)"
pid=""
cleanup() {
	if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
export PATH="$dir/node_modules/node/bin:$PATH" # Node 22, as the suite needs
node -e 'if (+process.versions.node.split(".")[0] < 22) { console.error("Node 22 is needed, got " + process.version); process.exit(1) }'
conformance="$dir/node_modules/.bin/conformance"

(cd "$root" && go build -o "$work/wasmtask" ./cmd/wasmtask)
# The served directory is a copy, beside spare modules that the diagnostic
# tools test_trigger_tool_change and test_trigger_prompt_change move in and
# out of it: the policy mounts both, writable, into conformance.wasm only.
mkdir -p "$work/fixture/tools" "$work/fixture/spare"
cp "$dir"/tools/*.wasm "$work/fixture/tools/"
wat2wasm "$root/examples/wat/add.wat" -o "$work/fixture/spare/add.wasm"
wat2wasm "$dir/spare/spare_prompt.wat" -o "$work/fixture/spare/spare_prompt.wasm"
cat >"$work/policy.json" <<EOF_POLICY
{"modules": {"conformance": {"mounts": [{"hostDir": "$work/fixture", "guestPath": "/fixture", "write": true}]}}}
EOF_POLICY
"$work/wasmtask" serve --http 127.0.0.1:0 --tools "$work/fixture/tools" --policy "$work/policy.json" \
	--cache-dir "$work/cache" 2>"$work/serve.log" &
pid=$!
url=""
for _ in $(seq 600); do # the listening line, or the server's end (60 s at most)
	url="$(sed -n 's/^wasmtask: listening on \(http:[^ ]*\)$/\1/p' "$work/serve.log")"
	[[ -n "$url" ]] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [[ -z "$url" ]]; then
	echo "conformance: wasmtask serve did not start:" >&2
	cat "$work/serve.log" >&2
	exit 1
fi
# The fixtures are served once their module has loaded: poll /readyz.
if ! READYZ="${url%/mcp}/readyz" node --input-type=module <<'EOF_NODE'; then
const deadline = Date.now() + 60_000;
for (;;) {
	const ok = await fetch(process.env.READYZ).then((r) => r.ok, () => false);
	if (ok) process.exit(0);
	if (Date.now() > deadline) process.exit(1);
	await new Promise((r) => setTimeout(r, 100));
}
EOF_NODE
	echo "conformance: wasmtask serve did not become ready within 60 s:" >&2
	cat "$work/serve.log" >&2
	exit 1
fi

failed=0
run() { # run NAME ARGS...: one suite run, its output shown only when it fails
	local name="$1"
	shift
	if "$conformance" server --url "$url" "$@" >"$work/$name.log" 2>&1; then
		# The suite's totals (and the baselined checks), for CI's output.
		echo "ok    $name $(sed -n 's/^Total: //p' "$work/$name.log")"
		sed -n 's/^  ~ /      baselined: /p' "$work/$name.log"
	else
		echo "FAIL  $name"
		cat "$work/$name.log"
		failed=1
	fi
}

# Every tasks-* scenario the pinned suite has (ten in 0.2.0-alpha.12); an
# empty list means the listing changed shape, not that there is nothing to do.
scenarios="$("$conformance" list --server | sed -n 's/^  - \(tasks-[a-z-]*\).*/\1/p')"
if [[ -z "$scenarios" ]]; then
	echo "conformance: no tasks-* scenario in \`conformance list --server\`" >&2
	exit 1
fi
for scenario in $scenarios; do
	run "$scenario" --scenario "$scenario"
done
for revision in 2025-11-25 2026-07-28; do
	run "requirements-$revision" --requirements "$revision" --expected-failures "$dir/baseline-$revision.yml"
done
if node "$dir/client2026.mjs" "$url" >"$work/client2026.log" 2>&1; then
	echo "ok    client2026"
else
	echo "FAIL  client2026"
	cat "$work/client2026.log"
	failed=1
fi
exit "$failed"
