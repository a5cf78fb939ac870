// toolexecd's MCP streamable HTTP endpoint (--mcp_listen): sequential
// tools/call latency, p50 and p99, from two clients, and how many TCP
// connections the calls took.
//
//   node mcp_http_endpoint.mjs [--quick] [--rounds=N] [--calls=N] [--warmup=N]
//        [--toolexecd=PATH] [--client=PATH]
//
// One scratch directory with a 60-line text file and one toolexecd ("the
// endpoint") serving it on --mcp_listen=127.0.0.1:0, no token file. Two
// clients call view_file{file_path: small.txt} on it, one call at a time:
//   sdk       the MCP SDK's Client over StreamableHTTPClientTransport (Node's
//             fetch) in this process, one session for the whole run; one
//             call = client.callTool(...), timed with performance.now().
//   curl      the HTTP leg alone: one curl process per round POSTing the same
//             tools/call N + 100 times in one session (libcurl keeps the
//             connection when the server does); a call's time is curl's
//             time_total for its transfer; the first 100 are not counted.
//   toolexec  a second toolexecd with the endpoint as a configured MCP server
//             (url, prefix_tool_names: up__view_file), so its libcurl client
//             (mcp/client/http_transport.cc) makes the HTTP calls; one call =
//             ExecuteBatch{up__view_file} from toolexec's C++ client
//             (bench_view_file_client), one client process per round, its
//             warm-up untimed.
// Rounds rotate which client goes first. Every answer must hold the
// file's last line. Connections: the endpoint logs each request with its
// peer's address and port; the distinct peers of the timed calls are the TCP
// connections they used (curl's: its untimed calls' too). Prints per-round and overall p50/p99 and p99/p50
// per client, and the connections. Exit 1 if anything failed.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { makeSmallFile, parseOptions, pct, readAddress, runClient } from './cpp_client.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const opts = parseOptions({ calls: 500,
                            toolexecd: path.resolve(HERE, '../../build/toolexecd'),
                            client: path.resolve(HERE, '../../build/bench/mcp/bench_view_file_client') });
const { dir, ws, expect } = makeSmallFile('toolexec-bench-mcphttp-');

const daemons = [];
let mcp = null;
let failed = false;
async function cleanup() {
  if (mcp) await mcp.close().catch(() => {});
  for (const d of daemons) d.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
}
const watchdog = setTimeout(async () => {
  console.error('mcp_http_endpoint: did not finish within 10 minutes');
  await cleanup();
  process.exit(1);
}, 600000);

// The endpoint: its MCP URL; `log` collects its log lines (one per request).
const endpointLog = { text: '' };
async function startEndpoint() {
  const daemon = spawn(opts.toolexecd, [`--workspace=${ws}`, '--listen=127.0.0.1:0',
                                        '--mcp_listen=127.0.0.1:0'],
                       { stdio: ['ignore', 'pipe', 'pipe'] });
  daemons.push(daemon);
  for (const s of [daemon.stdout, daemon.stderr]) s.on('data', (d) => { endpointLog.text += d; });
  for (let i = 0; i < 300; ++i) {
    const m = /MCP over streamable HTTP on (http:\/\/\S+\/mcp)/.exec(endpointLog.text);
    if (m) return m[1];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the endpoint did not start:\n${endpointLog.text}`);
}

// The toolexecd that calls the endpoint as its MCP server "up": its gRPC address.
async function startCaller(url) {
  const config = path.join(dir, 'caller.textproto');
  fs.writeFileSync(config, `mcp_servers {\n  name: "up"\n  prefix_tool_names: true\n` +
                   `  url: "${url}"\n}\n`);
  const addr = path.join(dir, 'address');
  const daemon = spawn(opts.toolexecd, [`--config=${config}`, `--workspace=${ws}`,
                                        '--listen=127.0.0.1:0', `--address_file=${addr}`,
                                        '--log_level=warn'],
                       { stdio: ['ignore', 'ignore', 'inherit'] });
  daemons.push(daemon);
  return readAddress(addr);
}

// The peers of the endpoint's tools/call log lines written since `from`.
function callPeers(from) {
  const peers = new Set();
  for (const m of endpointLog.text.slice(from).matchAll(/MCP POST peer=(\S+) .*method=tools\/call/g)) {
    peers.add(m[1]);
  }
  return peers;
}

async function sdk(n) {
  const us = [];
  for (let i = 0; i < n; ++i) {
    const t0 = performance.now();
    const r = await mcp.callTool({ name: 'view_file', arguments: { file_path: 'small.txt' } });
    us.push((performance.now() - t0) * 1000);
    if (r.isError || !JSON.stringify(r.content).includes(expect)) {
      throw new Error(`the SDK's call returned ${JSON.stringify(r).slice(0, 300)}`);
    }
  }
  return us;
}

// The curl side: `n` timed calls (after 100 untimed) in one curl process.
async function curl(url, n) {
  const init = await fetch(url, { method: 'POST', headers: {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
      protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '0' } } }) });
  await init.text();
  const session = init.headers.get('mcp-session-id');
  const call = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call',
                                params: { name: 'view_file', arguments: { file_path: 'small.txt' } } });
  const args = ['-s', '-w', '%{time_total} %{response_code}\n', '-H', 'Content-Type: application/json',
                '-H', 'Accept: application/json, text/event-stream', '-H', `Mcp-Session-Id: ${session}`,
                '-H', 'MCP-Protocol-Version: 2025-06-18', '-d', call];
  for (let i = 0; i < n + 100; ++i) args.push('-o', '/dev/null', url);
  const out = await new Promise((resolve, reject) => execFile('curl', args, { maxBuffer: 1 << 24 },
    (err, stdout) => (err ? reject(err) : resolve(stdout))));
  const rows = out.trim().split('\n').map((line) => line.split(' '));
  if (rows.length !== n + 100 || rows.some(([, code]) => code !== '200')) {
    throw new Error(`curl: ${rows.length} transfers, not all 200`);
  }
  return rows.slice(100).map(([seconds]) => Number(seconds) * 1e6);
}

function runToolexec(address, calls, warmup) {
  return runClient(opts.client, [`--target=${address}`, '--file=small.txt', `--expect=${expect}`,
                                 '--tool=up__view_file', '--path_arg=file_path'], calls, warmup);
}

try {
  const url = await startEndpoint();
  const caller = await startCaller(url);
  mcp = new Client({ name: 'toolexec-bench', version: '0.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(url)));
  await mcp.listTools();
  console.log('view_file of a 60-line file through toolexecd\'s MCP HTTP endpoint, sequential ' +
              'tools/call: the MCP SDK client; toolexecd as an MCP client (C++ client, ' +
              'ExecuteBatch{up__view_file}); curl (the HTTP leg alone)');
  console.log(`toolexecd ${opts.toolexecd}, endpoint ${url}; ${opts.rounds} rounds x ` +
              `${opts.calls} sequential calls per client, warm-up ${opts.warmup}` +
              `${opts.quick ? ' (--quick)' : ''}`);
  await sdk(opts.warmup);
  await runToolexec(caller, 1, opts.warmup);
  const sides = ['sdk', 'toolexec', 'curl'];
  const all = { sdk: [], toolexec: [], curl: [] };
  const connections = { sdk: 0, toolexec: 0, curl: 0 };
  const f = (v) => `${pct(v, 0.5).toFixed(0)} / ${pct(v, 0.99).toFixed(0)}`.padStart(16);
  console.log('round  first         sdk p50/p99 us conns   toolexec p50/p99 us conns' +
              '       curl p50/p99 us conns');
  for (let r = 0; r < opts.rounds; ++r) {
    const round = {};
    const conns = {};
    const order = sides.map((_, i) => sides[(r + i) % sides.length]);
    for (const side of order) {
      let from = endpointLog.text.length;
      if (side === 'sdk') {
        round.sdk = await sdk(opts.calls);
      } else if (side === 'curl') {
        round.curl = await curl(url, opts.calls);
      } else {
        // The client's warm-up calls come first: count the timed ones' peers only
        // by skipping the log up to the first timed call, which cannot be told
        // apart; so the warm-up is its own run here.
        await runToolexec(caller, 1, 50);
        from = endpointLog.text.length;
        round.toolexec = await runToolexec(caller, opts.calls, 0);
      }
      await new Promise((r) => setTimeout(r, 100));  // the last log lines
      conns[side] = callPeers(from).size;
      connections[side] += conns[side];
      all[side].push(...round[side]);
    }
    console.log(`${String(r + 1).padStart(5)}  ${order[0].padEnd(8)}` +
                sides.map((side) => `  ${f(round[side])} ${String(conns[side]).padStart(5)}`).join(''));
  }
  for (const side of sides) {
    const p50 = pct(all[side], 0.5), p99 = pct(all[side], 0.99);
    console.log(`${side.padEnd(9)} calls ${all[side].length}  p50 ${p50.toFixed(0)} us  ` +
                `p99 ${p99.toFixed(0)} us  p99/p50 ${(p99 / p50).toFixed(2)} (goal <= 3: ` +
                `${p99 / p50 <= 3 ? 'met' : 'MISSED'})  max ${Math.max(...all[side]).toFixed(0)} us  ` +
                `TCP connections ${connections[side]}`);
  }
  console.log('all responses held the file\'s content');
} catch (e) {
  console.error(`mcp_http_endpoint: ${e.message}`);
  failed = true;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
process.exit(failed ? 1 : 0);
