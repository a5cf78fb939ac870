// Threads of a daemon running many searches at once: starts toolexecd on
// 127.0.0.1 (port 0) over a scratch tree of FILES files, sends one batch of
// CALLS grep_search calls (a pattern that matches nothing, so every call
// walks the whole tree), samples the daemon's thread count every 5 ms until
// the batch ends, and prints the peak. Bounded: loopback only, one daemon,
// one batch with a 60 s timeout.
//
//   node bench/grep_threads.mjs [toolexecd]
// Needs tests/e2e's npm packages (see bench/unread_results.mjs).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(
    path.join(process.env.E2E_MODULES || path.resolve(HERE, '../tests/e2e'), 'package.json'));
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const TOOLEXECD = process.argv[2] || path.resolve(HERE, '../build/toolexecd');
const CALLS = Number(process.env.CALLS || 256);
const FILES = Number(process.env.FILES || 2000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const threadsOf = (pid) =>
  Number(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/Threads:\s+(\d+)/)[1]);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'grep-threads-'));
for (let d = 0; d < FILES / 50; ++d) {
  fs.mkdirSync(path.join(ws, `d${d}`));
  for (let f = 0; f < 50; ++f) {
    fs.writeFileSync(path.join(ws, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`.repeat(200));
  }
}
const addrFile = path.join(ws, '.addr');
const daemon = spawn(TOOLEXECD, ['--listen=127.0.0.1:0', `--workspace=${ws}`,
                                  `--address_file=${addrFile}`, '--log_level=warn'],
                     { stdio: ['ignore', 'ignore', 'inherit'] });
try {
  for (let i = 0; i < 100 && !fs.existsSync(addrFile); ++i) await sleep(50);
  const address = fs.readFileSync(addrFile, 'utf8').trim();
  const def = protoLoader.loadSync(path.resolve(HERE, '../proto/toolexec/v1/toolexec.proto'), {
    includeDirs: [path.resolve(HERE, '../proto')], keepCase: true,
  });
  const proto = grpc.loadPackageDefinition(def).toolexec.v1;
  const client = new proto.ToolExecutor(address, grpc.credentials.createInsecure());
  const idle = threadsOf(daemon.pid);
  const calls = [];
  for (let i = 0; i < CALLS; ++i) {
    calls.push({ id: String(i), name: 'grep_search', args_json: '{"pattern":"zzq[0-9]+y"}' });
  }
  let peak = 0, results = 0, failed = 0, done = false;
  const stream = client.ExecuteBatch({ calls, timeout: { seconds: 60 } });
  stream.on('data', (r) => { if (r.result) { ++results; if (r.result.error_message) ++failed; } });
  stream.on('end', () => { done = true; });
  stream.on('error', (e) => { console.error(e.message); done = true; });
  const start = Date.now();
  while (!done) {
    peak = Math.max(peak, threadsOf(daemon.pid));
    await sleep(5);
  }
  console.log(`calls=${CALLS} files=${FILES} results=${results} failed=${failed} ` +
              `threads_idle=${idle} threads_peak=${peak} ms=${Date.now() - start}`);
  client.close();
} finally {
  daemon.kill('SIGKILL');
  fs.rmSync(ws, { recursive: true, force: true });
}
