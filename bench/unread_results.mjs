// Memory of a daemon whose clients never read: starts toolexecd on 127.0.0.1
// (port 0) over a scratch workspace holding one file of about 300 KB, opens
// CLIENTS ExecuteBatch streams of CALLS view_file calls of that file, reads
// nothing (the streams are paused), and samples the daemon's RSS every 100 ms
// for HOLD_MS. Then it cancels the streams, waits AFTER_MS and prints the
// peak RSS (VmHWM), the RSS while held and the RSS after the clients left.
// Bounded: loopback only, one daemon, at most HOLD_MS + AFTER_MS + start-up.
//
//   node bench/unread_results.mjs [toolexecd] [clients]
// Needs tests/e2e's npm packages (cd tests/e2e && npm install), or
// E2E_MODULES=<dir with node_modules' parent package.json>.
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
const CLIENTS = Number(process.argv[3] || 1);
const CALLS = Number(process.env.CALLS || 1000);
const HOLD_MS = Number(process.env.HOLD_MS || 8000);
const AFTER_MS = Number(process.env.AFTER_MS || 2000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const statusKb = (pid, key) => {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${key}:\\s+(\\d+)`));
  return m ? Number(m[1]) : 0;
};
const mib = (kb) => (kb / 1024).toFixed(0);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'unread-'));
let text = '';
for (let i = 0; text.length < 300 * 1024; ++i) text += `line ${i} ${'x'.repeat(60)}\n`;
fs.writeFileSync(path.join(ws, 'big.txt'), text);
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
  const calls = [];
  for (let i = 0; i < CALLS; ++i) {
    calls.push({ id: String(i), name: 'view_file', args_json: '{"file_path":"big.txt"}' });
  }
  const streams = [];
  for (let c = 0; c < CLIENTS; ++c) {
    // One channel per client, as separate harnesses would have.
    const client = new proto.ToolExecutor(address, grpc.credentials.createInsecure(),
                                          { 'grpc.max_receive_message_length': -1 });
    const stream = client.ExecuteBatch({ calls });
    stream.on('error', () => {});
    stream.pause();  // never read
    streams.push({ client, stream });
  }
  let peakRss = 0;
  for (let t = 0; t < HOLD_MS; t += 100) {
    await sleep(100);
    peakRss = Math.max(peakRss, statusKb(daemon.pid, 'VmRSS'));
  }
  const heldRss = statusKb(daemon.pid, 'VmRSS');
  for (const { client, stream } of streams) {
    stream.cancel();
    client.close();
  }
  await sleep(AFTER_MS);
  console.log(`clients=${CLIENTS} calls=${CALLS} file=${text.length}B ` +
              `peak_rss=${mib(Math.max(peakRss, statusKb(daemon.pid, 'VmHWM')))}MiB ` +
              `held_rss=${mib(heldRss)}MiB after_rss=${mib(statusKb(daemon.pid, 'VmRSS'))}MiB`);
} finally {
  daemon.kill('SIGKILL');
  fs.rmSync(ws, { recursive: true, force: true });
}
