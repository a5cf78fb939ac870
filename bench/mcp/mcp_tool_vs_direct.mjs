// An MCP tool through toolexec against the same MCP server called directly:
// the docs/DESIGN.md goal "an MCP tool through toolexec: within 1.2x of calling
// that MCP server directly with its SDK".
//
//   node mcp_tool_vs_direct.mjs [--quick] [--rounds=N] [--calls=N]
//        [--toolexecd=PATH] [--client=PATH]
//
// One scratch directory with a 60-line text file. The MCP reference
// filesystem server (node_modules/@modelcontextprotocol/server-filesystem)
// is run twice over it:
//   direct    spawned by the MCP SDK's StdioClientTransport in this process;
//             one call = client.callTool({name: 'read_text_file',
//             arguments: {path}}), timed with performance.now();
//   toolexec  spawned by toolexecd as a configured MCP server (stdio,
//             prefix_tool_names, so its tool is fs__read_text_file); one call
//             = ExecuteBatch{fs__read_text_file{path}} from toolexec's C++
//             client (bench_view_file_client --tool=... --path_arg=path), one
//             client process per round, its warm-up untimed.
// Rounds alternate which side goes first; every response must hold the
// file's last line. Prints per-round and overall p50/p99 per side and the
// ratios toolexec/direct. Exit 1 if anything failed. Loopback only, bounded.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { makeSmallFile, parseOptions, pct, readAddress, runClient } from './cpp_client.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const opts = parseOptions({ calls: 400,
                            toolexecd: path.resolve(HERE, '../../build/toolexecd'),
                            client: path.resolve(HERE, '../../build/bench/mcp/bench_view_file_client') });

const SERVER = path.resolve(HERE, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const { dir, ws, file, expect } = makeSmallFile('toolexec-bench-mcptool-');

let daemon = null;
let mcp = null;
let failed = false;
async function cleanup() {
  if (mcp) await mcp.close().catch(() => {});
  if (daemon) daemon.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
}
const watchdog = setTimeout(async () => {
  console.error('mcp_tool_vs_direct: did not finish within 10 minutes');
  await cleanup();
  process.exit(1);
}, 600000);

async function startToolexecd() {
  const config = path.join(dir, 'toolexecd.textproto');
  fs.writeFileSync(config, `mcp_servers {\n  name: "fs"\n  prefix_tool_names: true\n` +
                   `  command: "${process.execPath}"\n  command: "${SERVER}"\n  command: "${ws}"\n}\n`);
  const addr = path.join(dir, 'address');
  daemon = spawn(opts.toolexecd, [`--config=${config}`, `--workspace=${ws}`, '--listen=127.0.0.1:0',
                                  `--address_file=${addr}`, '--log_level=warn'],
                 { stdio: ['ignore', 'ignore', 'inherit'] });
  return readAddress(addr);
}

function runToolexec(address, calls, warmup) {
  return runClient(opts.client, [`--target=${address}`, `--file=${file}`, `--expect=${expect}`,
                                 '--tool=fs__read_text_file', '--path_arg=path'], calls, warmup);
}

async function direct(n) {
  const us = [];
  for (let i = 0; i < n; ++i) {
    const t0 = performance.now();
    const r = await mcp.callTool({ name: 'read_text_file', arguments: { path: file } });
    us.push((performance.now() - t0) * 1000);
    if (r.isError || !r.content?.[0]?.text?.includes(expect)) {
      throw new Error(`direct call returned ${JSON.stringify(r).slice(0, 300)}`);
    }
  }
  return us;
}

try {
  const address = await startToolexecd();
  mcp = new Client({ name: 'toolexec-bench', version: '0.0.0' });
  await mcp.connect(new StdioClientTransport({ command: process.execPath, args: [SERVER, ws],
                                               stderr: 'ignore' }));
  await mcp.listTools();
  console.log('read_text_file of a 60-line file from the MCP filesystem server: through toolexec ' +
              '(C++ client, ExecuteBatch{fs__read_text_file}) vs directly (MCP SDK client)');
  console.log(`toolexecd ${opts.toolexecd} at ${address}; ${opts.rounds} rounds x ${opts.calls} ` +
              `sequential calls per side, warm-up ${opts.warmup}${opts.quick ? ' (--quick)' : ''}`);
  await direct(opts.warmup);
  await runToolexec(address, 1, opts.warmup);
  const all = { toolexec: [], direct: [] };
  console.log('round  first      toolexec p50/p99 us      direct p50/p99 us');
  for (let r = 0; r < opts.rounds; ++r) {
    const round = {};
    const order = r % 2 === 0 ? ['toolexec', 'direct'] : ['direct', 'toolexec'];
    for (const side of order) {
      round[side] = side === 'direct' ? await direct(opts.calls)
                                      : await runToolexec(address, opts.calls, 50);
      all[side].push(...round[side]);
    }
    const f = (v) => `${pct(v, 0.5).toFixed(0)} / ${pct(v, 0.99).toFixed(0)}`.padStart(16);
    console.log(`${String(r + 1).padStart(5)}  ${order[0].padEnd(8)} ${f(round.toolexec)}` +
                `        ${f(round.direct)}`);
  }
  const t50 = pct(all.toolexec, 0.5), t99 = pct(all.toolexec, 0.99);
  const d50 = pct(all.direct, 0.5), d99 = pct(all.direct, 0.99);
  console.log(`toolexec (C++ client)  calls ${all.toolexec.length}  p50 ${t50.toFixed(0)} us  ` +
              `p99 ${t99.toFixed(0)} us`);
  console.log(`direct (MCP SDK)       calls ${all.direct.length}  p50 ${d50.toFixed(0)} us  ` +
              `p99 ${d99.toFixed(0)} us`);
  console.log(`ratio toolexec/direct p50: ${(t50 / d50).toFixed(2)}x (DESIGN target <= 1.2: ` +
              `${t50 / d50 <= 1.2 ? 'met' : 'MISSED'}), p99: ${(t99 / d99).toFixed(2)}x`);
  console.log('all responses held the file\'s content');
} catch (e) {
  console.error(`mcp_tool_vs_direct: ${e.message}`);
  failed = true;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
process.exit(failed ? 1 : 0);
