// What bench/*.mjs share: tests/e2e's npm packages (cd tests/e2e && npm
// install, or E2E_MODULES=<dir with node_modules' parent package.json>),
// toolexecd started on 127.0.0.1 (port 0) over a workspace, the ToolExecutor
// service loaded from proto/, and a number from /proc/<pid>/status.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(
    path.join(process.env.E2E_MODULES || path.resolve(HERE, '../tests/e2e'), 'package.json'));
export const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

export const DEFAULT_TOOLEXECD = path.resolve(HERE, '../build/toolexecd');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts `binary` on 127.0.0.1:0 over `workspace` and waits (up to 5 s) for the
// address it writes; returns {daemon (the child process), address}.
export async function startToolexecd(binary, workspace) {
  const addrFile = path.join(workspace, '.addr');
  const daemon = spawn(binary, ['--listen=127.0.0.1:0', `--workspace=${workspace}`,
                                `--address_file=${addrFile}`, '--log_level=warn'],
                       { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100 && !fs.existsSync(addrFile); ++i) await sleep(50);
  return { daemon, address: fs.readFileSync(addrFile, 'utf8').trim() };
}

// The toolexec.v1 package (ToolExecutor and its messages), field names as in
// the proto.
export function toolexecV1() {
  const def = protoLoader.loadSync(path.resolve(HERE, '../proto/toolexec/v1/toolexec.proto'), {
    includeDirs: [path.resolve(HERE, '../proto')], keepCase: true,
  });
  return grpc.loadPackageDefinition(def).toolexec.v1;
}

// The number after `key:` in /proc/<pid>/status (VmRSS, VmHWM in KiB;
// Threads), or 0 when it is absent.
export function procStatus(pid, key) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${key}:\\s+(\\d+)`));
  return m ? Number(m[1]) : 0;
}
