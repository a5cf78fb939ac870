// Benchmark for docs/DESIGN.md "What fast means":
//
//   view_file on a small file: p50 at least 3x, p99 at least 5x better than the
//   MCP reference filesystem server's read_text_file from its own SDK client,
//   same machine, same run.
//
// One run: a temporary directory with one ~2 KB, 60-line text file; toolexecd
// serving it as its workspace (127.0.0.1:0), and
// @modelcontextprotocol/server-filesystem serving it (spawned by
// @modelcontextprotocol/sdk's StdioClientTransport, called through the SDK's
// Client). Each side is measured from its own client; three targets, warmed
// up, then measured in alternating rounds of sequential calls (one call in
// flight at a time):
//
//   toolexec (C++ client): ExecuteBatch{calls: [view_file{file_path}]} through
//       toolexec::Client, in bench_view_file_client (bench/mcp/
//       view_file_client.cc), spawned once per round against the same daemon;
//       it times only its calls (one channel, after its own untimed warm-up)
//       and reports them as JSON, so process start is never timed.
//   toolexec via grpc-js: the same request from @grpc/grpc-js in this process
//       (proto loaded from proto/), until the stream ends; the Node client's
//       own per-call cost is included, so it is reported but not judged.
//   MCP (its SDK client): client.callTool({name: 'read_text_file', arguments: {path}})
//
// The DESIGN ratios are MCP / toolexec (C++ client). Every response is
// checked: toolexec must return the whole file, numbered, with status SUCCESS;
// MCP must return exactly the file's text. Any failure exits 1. Latency is
// client-observed wall time per call (steady clock in C++, performance.now()
// in Node).
//
// Usage (see README.md):
//   cd bench/mcp && npm install && node view_file_vs_mcp.mjs [--quick] [--rounds=N]
//       [--calls=N] [--warmup=N] [--client-warmup=N] [--check-targets]
//       [--toolexecd=PATH] [--client=PATH]
// TOOLEXECD (env) or --toolexecd or a bare argument names the daemon binary;
// default ../../build/toolexecd (relative to this file). BENCH_VIEW_FILE_CLIENT
// (env) or --client names the C++ client; default
// ../../build/bench/mcp/bench_view_file_client. --client-warmup is the untimed
// warm-up each per-round client process makes on its fresh channel (default
// 50). --check-targets makes a missed DESIGN target exit 2 (otherwise it is
// reported, exit 0).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------
// Options.

const opts = {
  quick: false,
  rounds: 5,
  calls: 400,
  warmup: 300,
  clientWarmup: 50,
  checkTargets: false,
  toolexecd: process.env.TOOLEXECD || path.resolve(HERE, '../../build/toolexecd'),
  client: process.env.BENCH_VIEW_FILE_CLIENT ||
    path.resolve(HERE, '../../build/bench/mcp/bench_view_file_client'),
  proto: process.env.TOOLEXEC_PROTO_DIR || path.resolve(HERE, '../../proto'),
};
const explicit = {};
for (const arg of process.argv.slice(2)) {
  const m = arg.match(/^--([a-z-]+)(?:=(.*))?$/);
  if (!m) {
    opts.toolexecd = path.resolve(arg);
    continue;
  }
  const [, key, value] = m;
  switch (key) {
    case 'quick': opts.quick = true; break;
    case 'check-targets': opts.checkTargets = true; break;
    case 'rounds': explicit.rounds = positiveInt(key, value); break;
    case 'calls': explicit.calls = positiveInt(key, value); break;
    case 'warmup': explicit.warmup = nonNegativeInt(key, value); break;
    case 'client-warmup': explicit.clientWarmup = nonNegativeInt(key, value); break;
    case 'toolexecd': opts.toolexecd = path.resolve(value ?? ''); break;
    case 'client': opts.client = path.resolve(value ?? ''); break;
    case 'proto-dir': opts.proto = path.resolve(value ?? ''); break;
    case 'help':
      console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8')
        .split('\n').filter((l) => l.startsWith('//')).join('\n'));
      process.exit(0);
      break;
    default:
      die(`unknown option --${key} (see --help)`);
  }
}
if (opts.quick) Object.assign(opts, { rounds: 2, calls: 50, warmup: 20, clientWarmup: 10 });
Object.assign(opts, explicit);

function positiveInt(key, v) {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) die(`--${key} wants a positive integer, got '${v}'`);
  return n;
}
function nonNegativeInt(key, v) {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) die(`--${key} wants a non-negative integer, got '${v}'`);
  return n;
}
function die(msg) {
  console.error(`view_file_vs_mcp: ${msg}`);
  process.exit(1);
}

// ---------------------------------------------------------------------------
// Prerequisites.

let grpc, protoLoader, Client, StdioClientTransport;
try {
  grpc = (await import('@grpc/grpc-js')).default;
  protoLoader = (await import('@grpc/proto-loader')).default;
  ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
} catch (err) {
  die(`npm packages missing (${err.message}); run \`npm install\` in ${HERE}`);
}
const MCP_SERVER = path.join(HERE, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
if (!fs.existsSync(MCP_SERVER)) die(`${MCP_SERVER} not found; run \`npm install\` in ${HERE}`);
if (!fs.existsSync(opts.toolexecd)) {
  die(`toolexecd not found at ${opts.toolexecd}; build it (scripts/build.sh toolexecd) ` +
      `or pass its path (TOOLEXECD=... or --toolexecd=...)`);
}
if (!fs.existsSync(opts.client)) {
  die(`bench_view_file_client not found at ${opts.client}; build it ` +
      `(scripts/build.sh bench_view_file_client) or pass its path ` +
      `(BENCH_VIEW_FILE_CLIENT=... or --client=...)`);
}
const PROTO_FILE = path.join(opts.proto, 'toolexec/v1/toolexec.proto');
if (!fs.existsSync(PROTO_FILE)) die(`${PROTO_FILE} not found; pass --proto-dir=DIR`);

const pkgVersion = (name) =>
  JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', name, 'package.json'), 'utf8')).version;

// ---------------------------------------------------------------------------
// The file both servers read: 60 lines, ~2 KB.

const LINES = Array.from({ length: 60 }, (_, i) =>
  `${String(i + 1).padStart(2, '0')}: the quick brown fox jumps over the lazy dog.`);
const TEXT = LINES.join('\n') + '\n';
const NUMBERED = LINES.map((l, i) => `${String(i + 1).padStart(6)}\t${l}\n`).join('');

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-bench-mcp-')));
const ws = path.join(tmp, 'ws');
fs.mkdirSync(ws);
const FILE_NAME = 'small.txt';
const FILE_ABS = path.join(ws, FILE_NAME);
fs.writeFileSync(FILE_ABS, TEXT);

let daemon = null;
let mcp = null;
let cppClient = null;  // the running bench_view_file_client, if any
let grpcClient = null;
async function cleanup() {
  try { cppClient?.kill('SIGKILL'); } catch {}
  try { grpcClient?.close(); } catch {}
  try { await mcp?.close(); } catch {}
  if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
    daemon.kill('SIGTERM');
    await new Promise((resolve) => {
      const t = setTimeout(() => { daemon.kill('SIGKILL'); resolve(); }, 3000);
      daemon.once('exit', () => { clearTimeout(t); resolve(); });
    });
  }
  fs.rmSync(tmp, { recursive: true, force: true });
}
async function fail(msg) {
  console.error(`FAIL: ${msg}`);
  await cleanup();
  process.exit(1);
}
process.on('SIGINT', async () => { await cleanup(); process.exit(130); });

// ---------------------------------------------------------------------------
// toolexecd.

async function startToolexecd() {
  const addressFile = path.join(tmp, 'address');
  const args = ['--listen=127.0.0.1:0', `--workspace=${ws}`, `--address_file=${addressFile}`];
  daemon = spawn(opts.toolexecd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  let spawnError = null;
  daemon.on('error', (err) => { spawnError = err; });
  daemon.stderr.setEncoding('utf8');
  daemon.stderr.on('data', (s) => { if (log.length < 1 << 16) log += s; });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (spawnError) await fail(`cannot start ${opts.toolexecd}: ${spawnError.message}`);
    if (daemon.exitCode !== null || daemon.signalCode !== null) {
      await fail(`toolexecd exited early (${daemon.exitCode ?? daemon.signalCode}):\n${log}`);
    }
    try {
      const addr = fs.readFileSync(addressFile, 'utf8').trim();
      if (addr) return addr;
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await fail(`toolexecd wrote no address file within 10 s:\n${log}`);
}

function connectToolexec(address) {
  const def = protoLoader.loadSync(PROTO_FILE, {
    includeDirs: [opts.proto],
    keepCase: true,
    longs: Number,
    enums: String,
    oneofs: true,
  });
  detectValueFieldNames(def);
  makeViewRequest();
  const loaded = grpc.loadPackageDefinition(def);
  grpcClient = new loaded.toolexec.v1.ToolExecutor(address, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    grpcClient.waitForReady(Date.now() + 5000, (err) => (err ? reject(err) : resolve(grpcClient)));
  });
}

// google.protobuf.Value (proto-loader form, oneofs) -> plain JSON. Loaded from
// the .proto file, the well-known types come from protobufjs's bundled
// definitions, whose field names are camelCase (stringValue, structValue, ...)
// even with keepCase; reflection would give snake_case. Accept both.
function fromValue(v) {
  switch (v?.kind) {
    case 'null_value': case 'nullValue': return null;
    case 'number_value': case 'numberValue': return v[v.kind];
    case 'string_value': case 'stringValue': return v[v.kind];
    case 'bool_value': case 'boolValue': return v[v.kind];
    case 'struct_value': case 'structValue': return fromStruct(v[v.kind]);
    case 'list_value': case 'listValue': return (v[v.kind]?.values ?? []).map(fromValue);
    default: return undefined;
  }
}
function fromStruct(s) {
  const out = {};
  for (const [k, v] of Object.entries(s?.fields ?? {})) out[k] = fromValue(v);
  return out;
}

// The Value field name for a string, as this loader's Value type spells it.
let STRING_VALUE = 'stringValue';
function detectValueFieldNames(def) {
  const value = def['google.protobuf.Value']?.type?.field ?? [];
  if (value.some((f) => f.name === 'string_value')) STRING_VALUE = 'string_value';
}

let VIEW_REQUEST = null;
function makeViewRequest() {
  VIEW_REQUEST = {
    calls: [{
      id: 'v',
      name: 'view_file',
      args: { fields: { file_path: { [STRING_VALUE]: FILE_NAME } } },
    }],
  };
}

// One ExecuteBatch{view_file}; resolves with the single ToolResult once the
// stream has ended (status received).
function toolexecViewFile() {
  return new Promise((resolve, reject) => {
    const results = [];
    let error = null;
    const stream = grpcClient.ExecuteBatch(VIEW_REQUEST);
    stream.on('data', (m) => { if (m.result) results.push(m.result); });
    stream.on('error', (e) => { error = e; });
    stream.on('status', () => (error ? reject(error) : resolve(results)));
  });
}

function checkToolexec(results) {
  if (results.length !== 1) return `expected 1 result, got ${results.length}`;
  const r = results[0];
  if (r.status !== 'RESULT_STATUS_SUCCESS') {
    return `status ${r.status}: ${r.error_message}`;
  }
  const p = fromValue(r.payload);
  if (p?.content !== NUMBERED) return `content differs: ${JSON.stringify(p).slice(0, 300)}`;
  if (p.total_lines !== LINES.length || p.truncated !== false) {
    return `total_lines ${p.total_lines}, truncated ${p.truncated}`;
  }
  return null;
}

// ---------------------------------------------------------------------------
// The MCP reference filesystem server, through its SDK's stdio client.

let mcpTool = 'read_text_file';
let mcpStderr = '';

async function startMcp() {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCP_SERVER, ws],
    stderr: 'pipe',
  });
  transport.stderr?.setEncoding?.('utf8');
  transport.stderr?.on('data', (s) => { if (mcpStderr.length < 1 << 16) mcpStderr += s; });
  mcp = new Client({ name: 'toolexec-bench', version: '0.0.0' });
  await mcp.connect(transport);
  // As a real client does: list the tools (the SDK then validates each
  // result's structuredContent against the tool's outputSchema).
  const { tools } = await mcp.listTools();
  const names = tools.map((t) => t.name);
  if (!names.includes('read_text_file')) {
    if (!names.includes('read_file')) {
      await fail(`the MCP server has neither read_text_file nor read_file: ${names.join(', ')}`);
    }
    mcpTool = 'read_file';
  }
}

const MCP_ARGS = { path: FILE_ABS };
function mcpReadFile() {
  return mcp.callTool({ name: mcpTool, arguments: MCP_ARGS });
}

function checkMcp(r) {
  if (r.isError) return `isError: ${JSON.stringify(r.content).slice(0, 300)}`;
  const text = r.content?.[0]?.type === 'text' ? r.content[0].text : undefined;
  if (text !== TEXT) return `content differs: ${JSON.stringify(r).slice(0, 300)}`;
  return null;
}

// ---------------------------------------------------------------------------
// toolexec from its own C++ client: bench_view_file_client.

// Spawns bench_view_file_client against the daemon for `warmup` untimed and
// `calls` timed view_file calls on one channel. Resolves with the timed
// calls' latencies and ToolResult.durations, in ms. Process start, channel
// set-up and warm-up happen before the client's clock starts.
function runCppClient(address, calls, warmup) {
  const args = [`--target=${address}`, `--file=${FILE_NAME}`, `--calls=${calls}`,
    `--warmup=${warmup}`, `--expect=${NUMBERED}`];
  return new Promise((resolve, reject) => {
    const child = spawn(opts.client, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    cppClient = child;
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s) => { out += s; });
    child.stderr.on('data', (s) => { if (err.length < 1 << 16) err += s; });
    child.on('error', (e) => { cppClient = null; reject(new Error(`cannot run ${opts.client}: ${e.message}`)); });
    child.on('close', (code, signal) => {
      cppClient = null;
      if (code !== 0) {
        reject(new Error(`${path.basename(opts.client)} exited ${code ?? signal}: ${err.trim()}`));
        return;
      }
      const line = out.trim().split('\n').pop();
      let r;
      try {
        r = JSON.parse(line);
      } catch (e) {
        reject(new Error(`unparsable output from ${opts.client}: ${line.slice(0, 300)}`));
        return;
      }
      if (!Array.isArray(r.latencies_us) || r.latencies_us.length !== calls) {
        reject(new Error(`expected ${calls} latencies from ${opts.client}, got ` +
          `${r.latencies_us?.length}`));
        return;
      }
      resolve({
        samples: r.latencies_us.map((u) => u / 1e3),
        tool: (r.tool_us ?? []).map((u) => u / 1e3),
      });
    });
  });
}

// ---------------------------------------------------------------------------
// Measurement.

async function measure(label, n, callFn, checkFn, samples, toolTimes) {
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    let r;
    try {
      r = await callFn();
    } catch (err) {
      await fail(`${label} call ${i} failed: ${err.message}` +
        (label === 'mcp' && mcpStderr ? `\nserver stderr:\n${mcpStderr}` : ''));
    }
    const dt = performance.now() - t0;
    const problem = checkFn(r);
    if (problem) await fail(`${label} call ${i}: ${problem}`);
    samples?.push(dt);
    // toolexec reports how long the tool itself ran (ToolResult.duration).
    if (samples && toolTimes) {
      const d = r[0].duration;
      if (d) toolTimes.push(Number(d.seconds || 0) * 1e3 + Number(d.nanos || 0) / 1e6);
    }
  }
}

async function measureCpp(address, calls, warmup) {
  try {
    return await runCppClient(address, calls, warmup);
  } catch (err) {
    await fail(`toolexec (C++ client): ${err.message}`);
  }
}

// Nearest-rank percentile of sorted values.
function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { n: s.length, min: s[0], p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99),
    max: s[s.length - 1], mean };
}
const us = (ms) => `${(ms * 1000).toFixed(0).padStart(7)} us`;

// ---------------------------------------------------------------------------

const cpus = os.cpus();
console.log('view_file (toolexecd) vs read_text_file (MCP reference filesystem server)');
console.log(`  host:        ${os.hostname()}, ${cpus.length} x ${cpus[0]?.model ?? '?'}, ` +
  `${os.platform()} ${os.release()}`);
console.log(`  node:        ${process.version}`);
console.log(`  toolexecd:   ${opts.toolexecd}`);
console.log(`  C++ client:  ${opts.client}`);
console.log(`  packages:    @grpc/grpc-js ${pkgVersion('@grpc/grpc-js')}, ` +
  `@grpc/proto-loader ${pkgVersion('@grpc/proto-loader')}, ` +
  `@modelcontextprotocol/sdk ${pkgVersion('@modelcontextprotocol/sdk')}, ` +
  `@modelcontextprotocol/server-filesystem ${pkgVersion('@modelcontextprotocol/server-filesystem')}`);
console.log(`  file:        ${FILE_ABS} (${Buffer.byteLength(TEXT)} bytes, ${LINES.length} lines)`);

const address = await startToolexecd();
try {
  await connectToolexec(address);
} catch (err) {
  await fail(`cannot connect to toolexecd at ${address}: ${err.message}`);
}
try {
  await startMcp();
} catch (err) {
  await fail(`cannot start the MCP server: ${err.message}\n${mcpStderr}`);
}
console.log(`  toolexec:    ExecuteBatch{view_file{file_path: "${FILE_NAME}"}} at ${address}, ` +
  `from toolexec::Client (C++) and from @grpc/grpc-js`);
console.log(`  mcp:         callTool ${mcpTool}{path: "${FILE_ABS}"} over stdio ` +
  `(node ${path.relative(HERE, MCP_SERVER)} ${ws})`);
console.log(`  plan:        warm-up ${opts.warmup} calls each, then ${opts.rounds} alternating ` +
  `rounds x ${opts.calls} sequential calls each${opts.quick ? ' (--quick)' : ''}; ` +
  `the C++ client is one process per round (one channel), making ` +
  `${opts.clientWarmup} untimed calls first`);
console.log('');

// The three targets, in the order the summary lists them.
const TARGETS = {
  cpp: { name: 'toolexec (C++ client)', short: 'C++', samples: [], tool: [] },
  grpcjs: { name: 'toolexec via grpc-js (Node client cost included)', short: 'grpc-js',
    samples: [], tool: [] },
  mcp: { name: 'MCP (its SDK client)', short: 'MCP', samples: [] },
};
let cppChecked = 0;
let grpcjsChecked = 0;
let mcpChecked = 0;

async function runTarget(key, n, samples, toolTimes) {
  switch (key) {
    case 'cpp': {
      const r = await measureCpp(address, n, opts.clientWarmup);
      cppChecked += n + opts.clientWarmup;
      samples.push(...r.samples);
      toolTimes.push(...r.tool);
      break;
    }
    case 'grpcjs':
      await measure('toolexec (grpc-js)', n, toolexecViewFile, checkToolexec, samples, toolTimes);
      grpcjsChecked += n;
      break;
    case 'mcp':
      await measure('mcp', n, mcpReadFile, checkMcp, samples, null);
      mcpChecked += n;
      break;
  }
}

// Warm-up: the daemon from both toolexec clients, and the MCP server.
await measureCpp(address, 0, opts.warmup);
cppChecked += opts.warmup;
await measure('toolexec (grpc-js)', opts.warmup, toolexecViewFile, checkToolexec, null, null);
grpcjsChecked += opts.warmup;
await measure('mcp', opts.warmup, mcpReadFile, checkMcp, null, null);
mcpChecked += opts.warmup;

// Every order of the three, cycled, so each target runs first, second and
// third alike and after each of the others.
const ORDERS = [
  ['cpp', 'grpcjs', 'mcp'], ['mcp', 'cpp', 'grpcjs'], ['grpcjs', 'mcp', 'cpp'],
  ['cpp', 'mcp', 'grpcjs'], ['grpcjs', 'cpp', 'mcp'], ['mcp', 'grpcjs', 'cpp'],
];
const KEYS = ['cpp', 'grpcjs', 'mcp'];
// Column headings over the per-round rows (each block: p50, p99; 10 + 1 + 10 wide).
console.log(' '.repeat(14) +
  ['toolexec (C++ client)', 'toolexec via grpc-js', 'MCP (its SDK client)']
    .map((n) => n.padEnd(23)).join('').trimEnd());
console.log('round  order  ' +
  KEYS.map(() => `${'p50'.padStart(10)} ${'p99'.padStart(10)}`).join('  '));
for (let round = 0; round < opts.rounds; round++) {
  const order = ORDERS[round % ORDERS.length];
  const perRound = {};
  for (const key of order) {
    const t = TARGETS[key];
    const samples = [];
    await runTarget(key, opts.calls, samples, t.tool);
    t.samples.push(...samples);
    perRound[key] = stats(samples);
  }
  const orderText = order.map((k) => ({ cpp: 'C', grpcjs: 'G', mcp: 'M' })[k]).join('');
  console.log(`${String(round + 1).padStart(5)}  ${orderText.padEnd(6)} ` +
    KEYS.map((k) => `${us(perRound[k].p50)} ${us(perRound[k].p99)}`).join('  '));
}
console.log('(order: C = toolexec C++ client, G = toolexec via grpc-js, M = MCP)');

const st = Object.fromEntries(KEYS.map((k) => [k, stats(TARGETS[k].samples)]));
console.log('');
console.log('target                                              calls        min        p50' +
  '        p90        p99        max       mean');
for (const k of KEYS) {
  const s = st[k];
  console.log(`${TARGETS[k].name.padEnd(49)} ${String(s.n).padStart(7)} ${us(s.min)} ${us(s.p50)} ` +
    `${us(s.p90)} ${us(s.p99)} ${us(s.max)} ${us(s.mean)}`);
}
console.log('');
console.log('ToolResult.duration (the view_file call inside the daemon; the rest is gRPC and the client):');
for (const k of ['cpp', 'grpcjs']) {
  if (TARGETS[k].tool.length === 0) continue;
  const tt = stats(TARGETS[k].tool);
  console.log(`  during ${TARGETS[k].short.padEnd(8)} calls: p50 ${us(tt.p50).trim()}, ` +
    `p99 ${us(tt.p99).trim()}`);
}

const r50 = st.mcp.p50 / st.cpp.p50;
const r99 = st.mcp.p99 / st.cpp.p99;
const ok50 = r50 >= 3;
const ok99 = r99 >= 5;
console.log('');
console.log(`ratio MCP / toolexec (C++ client)  p50: ${r50.toFixed(2)}x  ` +
  `(DESIGN target >= 3x: ${ok50 ? 'met' : 'MISSED'})`);
console.log(`ratio MCP / toolexec (C++ client)  p99: ${r99.toFixed(2)}x  ` +
  `(DESIGN target >= 5x: ${ok99 ? 'met' : 'MISSED'})`);
console.log(`(for reference, MCP / toolexec via grpc-js: p50 ${(st.mcp.p50 / st.grpcjs.p50).toFixed(2)}x, ` +
  `p99 ${(st.mcp.p99 / st.grpcjs.p99).toFixed(2)}x; not a DESIGN figure: it includes ` +
  `the grpc-js client's own cost)`);
console.log(`all ${cppChecked} toolexec (C++ client), ${grpcjsChecked} toolexec (grpc-js) and ` +
  `${mcpChecked} MCP responses returned the file's content`);
if (opts.quick) console.log('(--quick: a smoke run; too few calls for a meaningful p99)');

await cleanup();
process.exit(opts.checkTargets && !(ok50 && ok99) ? 2 : 0);
