// view_file through toolexecd against a cross-process gRPC echo, from the same
// client: the docs/DESIGN.md goal "view_file on a small file ... within 1.3x of a
// cross-process gRPC echo".
//
//   node view_file_vs_echo.mjs [--quick] [--rounds=N] [--calls=N]
//        [--toolexecd=PATH] [--client=PATH] [--echo_server=PATH]
//
// toolexecd (default flags, its info log line per RPC included) serves a
// scratch workspace holding a 60-line file; bench_echo_server (bench/
// echo_reactor.h as a process: same gRPC, same messages, no runtime) answers
// the same ExecuteBatch{view_file{file_path}} with the call's arguments. Both
// are called by toolexec's C++ client (bench_view_file_client, one process
// per round, one channel, warm-up untimed), in rounds that alternate which
// goes first. Prints per-round and overall p50/p99 and the ratios
// daemon/echo. Exit 1 if anything failed. Loopback only, bounded.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { makeSmallFile, parseOptions, pct, readAddress, runClient } from './cpp_client.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BUILD = path.resolve(HERE, '../../build');
const opts = parseOptions({ calls: 1000, warmup: 200,
                            toolexecd: path.join(BUILD, 'toolexecd'),
                            client: path.join(BUILD, 'bench/mcp/bench_view_file_client'),
                            echo_server: path.join(BUILD, 'bench/bench_echo_server') });
const { dir, ws, expect } = makeSmallFile('toolexec-bench-echo-');

const children = [];
function start(binary, args, addressFile) {
  // Its log (toolexecd's one info line per RPC) goes to /dev/null, still written.
  const child = spawn(binary, args, { stdio: 'ignore' });
  children.push(child);
  return readAddress(addressFile);
}
function cleanup() {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
}
const watchdog = setTimeout(() => {
  console.error('view_file_vs_echo: did not finish within 10 minutes');
  cleanup();
  process.exit(1);
}, 600000);

let failed = false;
try {
  const daemonFile = path.join(dir, 'daemon.addr'), echoFile = path.join(dir, 'echo.addr');
  const daemon = await start(opts.toolexecd, ['--listen=127.0.0.1:0', `--workspace=${ws}`,
                                              `--address_file=${daemonFile}`], daemonFile);
  const echo = await start(opts.echo_server, [`--address_file=${echoFile}`], echoFile);
  const targets = {
    daemon: [`--target=${daemon}`, '--file=small.txt', `--expect=${expect}`],
    echo: [`--target=${echo}`, '--file=small.txt', '--echo'],
  };
  console.log('view_file{small.txt} (60 lines) through toolexecd vs the same ExecuteBatch to a ' +
              'cross-process gRPC echo, both from toolexec\'s C++ client');
  console.log(`${opts.rounds} rounds x ${opts.calls} sequential calls per target, warm-up ` +
              `${opts.warmup}${opts.quick ? ' (--quick)' : ''}`);
  const all = { daemon: [], echo: [] };
  console.log('round  first      daemon p50/p99 us        echo p50/p99 us');
  for (let r = 0; r < opts.rounds; ++r) {
    const round = {};
    const order = r % 2 === 0 ? ['daemon', 'echo'] : ['echo', 'daemon'];
    for (const t of order) {
      round[t] = await runClient(opts.client, targets[t], opts.calls, opts.warmup);
      all[t].push(...round[t]);
    }
    const f = (v) => `${pct(v, 0.5).toFixed(0)} / ${pct(v, 0.99).toFixed(0)}`.padStart(16);
    console.log(`${String(r + 1).padStart(5)}  ${order[0].padEnd(8)} ${f(round.daemon)}` +
                `        ${f(round.echo)}`);
  }
  const d50 = pct(all.daemon, 0.5), d99 = pct(all.daemon, 0.99);
  const e50 = pct(all.echo, 0.5), e99 = pct(all.echo, 0.99);
  console.log(`daemon view_file  calls ${all.daemon.length}  p50 ${d50.toFixed(0)} us  ` +
              `p99 ${d99.toFixed(0)} us`);
  console.log(`echo              calls ${all.echo.length}  p50 ${e50.toFixed(0)} us  ` +
              `p99 ${e99.toFixed(0)} us`);
  console.log(`ratio daemon/echo p50: ${(d50 / e50).toFixed(2)}x (DESIGN target <= 1.3: ` +
              `${d50 / e50 <= 1.3 ? 'met' : 'MISSED'}), p99: ${(d99 / e99).toFixed(2)}x`);
  console.log('every response checked (daemon: the file\'s content; echo: the call\'s arguments)');
} catch (e) {
  console.error(`view_file_vs_echo: ${e.message}`);
  failed = true;
} finally {
  clearTimeout(watchdog);
  cleanup();
}
process.exit(failed ? 1 : 0);
