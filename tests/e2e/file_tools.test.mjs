// End-to-end test of the built-in file tools: the real toolexecd
// driven from Node.js by @grpc/grpc-js, the service discovered by server
// reflection only (grpc-reflection-js), through the helpers e2e.test.mjs uses
// too (helpers.mjs).
//
// Run: TOOLEXECD=build/toolexecd node --test tests/e2e/file_tools.test.mjs
// (ctest's e2e_file_tools sets TOOLEXECD; scripts/test.sh installs node_modules.)
//
// One daemon serves a fresh temporary workspace `ws/`; beside it (not under it)
// is `outside/`, holding a file with a secret. Cases, each through ExecuteBatch:
// view_file (numbered content, total_lines, a line range, the truncation hint),
// create_file (then viewed), edit_file (dry run: the diff and the file
// unchanged; real: the diff, the new sha256, the file changed on disk),
// grep_search (content and files_with_matches), and escape attempts ('..',
// an absolute path outside, symlinks pointing out) which must be DENIED with
// a clear message while nothing outside is read or written [Failures are results] [Deciding what runs] [Display].

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { connect, missing, startDaemon, stopDaemon } from './helpers.mjs';

// ---------------------------------------------------------------------------
// RPC helpers.

// Runs one ExecuteBatch of `calls` ([{id, name, args}]) and resolves with the
// results decoded to plain JSON; a failed RPC fails the test.
function executeBatch(env, calls, extra = {}) {
  const { client, codec } = env;
  const request = {
    calls: calls.map(({ id, name, args }) => ({ id, name, args: codec.toStruct(args) })),
    ...extra,
  };
  return new Promise((resolve, reject) => {
    const results = [];
    let error = null;
    const stream = client.ExecuteBatch(request, { deadline: Date.now() + 15_000 });
    stream.on('data', (msg) => {
      if (msg.event === 'result') {
        results.push({ ...msg.result, payload: codec.fromValue(msg.result.payload) });
      }
    });
    stream.on('error', (err) => {
      error = err;
    });
    // grpc-js always emits 'status' last, after any 'error'.
    stream.on('status', () => {
      if (error) {
        reject(new Error(`ExecuteBatch failed: code ${error.code}: ${error.details}`));
      } else {
        resolve(results);
      }
    });
  });
}

// Runs a single call and returns its result.
async function run1(env, name, args, id = `${name}-1`, extra = {}) {
  const results = await executeBatch(env, [{ id, name, args }], extra);
  assert.equal(results.length, 1, `one result for ${id}`);
  const r = results[0];
  assert.equal(r.index, 0);
  assert.equal(r.id, id);
  assert.equal(r.name, name);
  return r;
}

// The fields every successful result carries [Failures are results] [Display]; returns the payload.
function assertSuccess(r) {
  assert.equal(r.status, 'RESULT_STATUS_SUCCESS', `${r.id}: ${r.error_message}`);
  assert.equal(r.error_message, '', `error_message of ${r.id}`);
  assert.equal(r.exception, null, `exception of ${r.id}`);
  assert.ok(r.display, `display of ${r.id}`);
  assert.notEqual(r.compact_summary, '', `compact_summary of ${r.id}`);
  return r.payload;
}

// The fields every failed result carries [Failures are results].
function assertFailure(r, { status, code }) {
  assert.equal(r.status, status, `status of ${r.id}: ${JSON.stringify(r.payload)}`);
  assert.notEqual(r.error_message, '', `error_message of ${r.id}`);
  assert.deepEqual(r.payload, { error: r.error_message }, `payload of ${r.id}`);
  assert.ok(r.exception, `exception of ${r.id} is set`);
  assert.deepEqual(
    { ...r.exception },
    { message: r.error_message, tool_name: r.name, server_name: '', code, call_id: r.id, step_id: '' },
    `exception of ${r.id}`,
  );
}

// The numbered form view_file shows: `cat -n` ("%6d\t<line>\n").
function numbered(lines, first = 1) {
  return lines.map((l, i) => `${String(first + i).padStart(6)}\t${l}\n`).join('');
}

const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex');

// Everything under `dir` (relative path -> file content, or '<dir>' /
// '-> target' for directories and links), to prove nothing changed.
function snapshot(dir) {
  const out = {};
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const p = path.join(rel, e.name);
      const abs = path.join(dir, p);
      if (e.isSymbolicLink()) out[p] = `-> ${fs.readlinkSync(abs)}`;
      else if (e.isDirectory()) {
        out[p] = '<dir>';
        walk(p);
      } else {
        const st = fs.statSync(abs);
        out[p] = `${fs.readFileSync(abs, 'utf8')} mode=${st.mode.toString(8)} mtime=${st.mtimeMs}`;
      }
    }
  };
  walk('.');
  return out;
}

// ---------------------------------------------------------------------------

// 60 lines of ~30 bytes: the file most cases read and edit.
const SMALL_LINES = Array.from({ length: 60 }, (_, i) =>
  `line ${String(i + 1).padStart(2, '0')}: the quick brown fox`);
const SMALL_TEXT = SMALL_LINES.join('\n') + '\n';

// Something only the file outside the workspace holds.
const SECRET_PREFIX = 'outside-secret-';
const SECRET = `${SECRET_PREFIX}${crypto.randomBytes(8).toString('hex')}`;
// (Edits aim at SECRET_PREFIX, which matches it, so an echo of the model's own
// old_string in a message is not mistaken for a leak of the file.)

describe('toolexecd file tools', { skip: Boolean(missing) }, () => {
  let tmp; // holds ws/ (the workspace) and outside/ (beside it)
  let ws;
  let outside;
  let d;
  let env;

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-e2e-files-'));
    ws = path.join(tmp, 'ws');
    outside = path.join(tmp, 'outside');
    fs.mkdirSync(ws);
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'outside.txt'), `${SECRET}\n`);
    fs.writeFileSync(path.join(ws, 'small.txt'), SMALL_TEXT);
    // 2,500 lines: past the default view_max_lines (2,000).
    fs.writeFileSync(path.join(ws, 'big.txt'),
      Array.from({ length: 2500 }, (_, i) => `big ${i + 1}`).join('\n') + '\n');
    fs.mkdirSync(path.join(ws, 'src'));
    fs.writeFileSync(path.join(ws, 'src', 'main.cc'),
      '#include <cstdio>\n\nint main() {\n  std::puts("hello");\n  return 0;\n}\n');
    fs.writeFileSync(path.join(ws, 'src', 'util.h'), '// helpers\nint add(int a, int b);\n');
    // Symlinks inside the workspace that point out: relative, absolute, and a directory.
    fs.symlinkSync('../outside/outside.txt', path.join(ws, 'rel_link.txt'));
    fs.symlinkSync(path.join(outside, 'outside.txt'), path.join(ws, 'abs_link.txt'));
    fs.symlinkSync('../outside', path.join(ws, 'out_dir'));

    d = await startDaemon({ workspace: ws, addressFile: path.join(tmp, 'address') });
    env = await connect(d);
  });

  after(async () => {
    await stopDaemon(d);
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  // ----- view_file -----------------------------------------------------------

  test('view_file: the whole file, numbered, with total_lines', async () => {
    const r = await run1(env, 'view_file', { file_path: 'small.txt' });
    const p = assertSuccess(r);
    assert.deepEqual(p, {
      path: 'small.txt',
      content: numbered(SMALL_LINES),
      start_line: 1,
      end_line: 60,
      total_lines: 60,
      truncated: false,
      size_bytes: Buffer.byteLength(SMALL_TEXT),
      sha256: sha256(SMALL_TEXT),
      line_endings: 'lf',
    });
    assert.equal(r.display.title, 'small.txt');
    assert.equal(r.display.content, p.content);
    assert.equal(r.display.content_type, 'CONTENT_TYPE_PLAIN_TEXT');
    assert.equal(r.display.is_truncated, false);
    assert.equal(r.compact_summary, '[view_file: small.txt lines 1-60]');
  });

  test('view_file: a start_line/end_line range', async () => {
    const r = await run1(env, 'view_file', { file_path: 'small.txt', start_line: 10, end_line: 12 });
    assert.deepEqual(assertSuccess(r), {
      path: 'small.txt',
      content: numbered(SMALL_LINES.slice(9, 12), 10),
      start_line: 10,
      end_line: 12,
      total_lines: 60,
      truncated: false,
      size_bytes: Buffer.byteLength(SMALL_TEXT),
      sha256: sha256(SMALL_TEXT),
      line_endings: 'lf',
    });
    assert.equal(r.compact_summary, '[view_file: small.txt lines 10-12]');

    // An end_line past the end stops at the last line; it is not "truncated".
    const tail = assertSuccess(
      await run1(env, 'view_file', { file_path: 'small.txt', start_line: 59, end_line: 500 }));
    assert.equal(tail.content, numbered(SMALL_LINES.slice(58), 59));
    assert.equal(tail.end_line, 60);
    assert.equal(tail.truncated, false);
  });

  test('view_file: output cut at the line limit, with a hint naming the next range', async () => {
    // A budget above the 2000 lines' size, so the line limit is what cuts.
    const p = assertSuccess(await run1(env, 'view_file', { file_path: 'big.txt' }, 'view_file-1',
      { model_content_max_chars: 100000 }));
    assert.equal(p.total_lines, 2500);
    assert.equal(p.start_line, 1);
    assert.equal(p.end_line, 2000);
    assert.equal(p.truncated, true);
    assert.equal(p.next_start_line, 2001);
    assert.equal(p.hint,
      'Showing lines 1-2000 of 2500 (cut at the 2000-line limit). ' +
      'Call view_file with start_line=2001 to continue.');
    assert.equal(p.content,
      numbered(Array.from({ length: 2000 }, (_, i) => `big ${i + 1}`)));

    // Following the hint reads the rest.
    const rest = assertSuccess(
      await run1(env, 'view_file', { file_path: 'big.txt', start_line: p.next_start_line }));
    assert.equal(rest.start_line, 2001);
    assert.equal(rest.end_line, 2500);
    assert.equal(rest.truncated, false);
    assert.equal(rest.next_start_line, undefined);
    assert.equal(rest.hint, undefined);
    assert.equal(rest.content,
      numbered(Array.from({ length: 500 }, (_, i) => `big ${i + 2001}`), 2001));

    // With the default budget (30000 characters) the payload is cut to the
    // budget first, on a whole line, and says where to continue.
    const cut = await run1(env, 'view_file', { file_path: 'big.txt' });
    const q = assertSuccess(cut);
    assert.equal(q.truncated, true);
    assert.ok(q.end_line < 2000, `end_line ${q.end_line}`);
    assert.equal(q.next_start_line, q.end_line + 1);
    assert.ok(q.content.length <= 30000, `content ${q.content.length} chars`);
    assert.match(cut.model_content, new RegExp(`continue with start_line=${q.end_line + 1}`));
  });

  // ----- create_file ---------------------------------------------------------

  test('create_file: makes parents, writes the file, which view_file then shows', async () => {
    const contents = 'first line\nsecond line\n';
    const r = await run1(env, 'create_file',
      { file_path: 'new/deep/notes.txt', contents });
    assert.deepEqual(assertSuccess(r), {
      path: 'new/deep/notes.txt',
      bytes_written: Buffer.byteLength(contents),
      created: true,
      sha256: sha256(contents),
    });
    assert.equal(r.display.title, 'new/deep/notes.txt');
    assert.equal(fs.readFileSync(path.join(ws, 'new/deep/notes.txt'), 'utf8'), contents);

    const v = assertSuccess(await run1(env, 'view_file', { file_path: 'new/deep/notes.txt' }));
    assert.equal(v.content, numbered(['first line', 'second line']));
    assert.equal(v.total_lines, 2);
    assert.equal(v.sha256, sha256(contents));

    // A second create of the same path is refused without overwrite; the file is kept.
    const again = await run1(env, 'create_file', { file_path: 'new/deep/notes.txt', contents: 'x' });
    assertFailure(again, { status: 'RESULT_STATUS_ERROR', code: 'ERROR_CODE_TOOL_FAILED' });
    assert.match(again.error_message, /already exists.*overwrite/);
    assert.equal(fs.readFileSync(path.join(ws, 'new/deep/notes.txt'), 'utf8'), contents);
  });

  // ----- edit_file -----------------------------------------------------------

  const EDIT = {
    file_path: 'small.txt',
    edits: [{ old_string: 'line 30: the quick brown fox', new_string: 'line 30: the lazy dog' }],
  };
  const EDITED_TEXT = SMALL_TEXT.replace('line 30: the quick brown fox', 'line 30: the lazy dog');
  const EDIT_DIFF =
    '--- a/small.txt\n' +
    '+++ b/small.txt\n' +
    '@@ -27,7 +27,7 @@\n' +
    ' line 27: the quick brown fox\n' +
    ' line 28: the quick brown fox\n' +
    ' line 29: the quick brown fox\n' +
    '-line 30: the quick brown fox\n' +
    '+line 30: the lazy dog\n' +
    ' line 31: the quick brown fox\n' +
    ' line 32: the quick brown fox\n' +
    ' line 33: the quick brown fox\n';

  test('edit_file dry_run: returns the unified diff; the file is unchanged', async () => {
    const before = snapshot(ws);
    const r = await run1(env, 'edit_file', { ...EDIT, dry_run: true });
    assert.deepEqual(assertSuccess(r), {
      path: 'small.txt',
      replacements: 1,
      diff: EDIT_DIFF,
      sha256: sha256(EDITED_TEXT),
      previous_sha256: sha256(SMALL_TEXT),
      dry_run: true,
      written: false,
      lines_added: 1,
      lines_removed: 1,
      line_endings: 'lf',
    });
    assert.equal(r.display.title, 'small.txt');
    assert.equal(r.display.content, EDIT_DIFF);
    assert.deepEqual(snapshot(ws), before, 'a dry run writes nothing');
    assert.equal(fs.readFileSync(path.join(ws, 'small.txt'), 'utf8'), SMALL_TEXT);
  });

  test('edit_file: writes the edit, returns the diff and the new sha256', async () => {
    const r = await run1(env, 'edit_file', { ...EDIT, expected_sha256: sha256(SMALL_TEXT) });
    assert.deepEqual(assertSuccess(r), {
      path: 'small.txt',
      replacements: 1,
      diff: EDIT_DIFF,
      sha256: sha256(EDITED_TEXT),
      previous_sha256: sha256(SMALL_TEXT),
      dry_run: false,
      written: true,
      lines_added: 1,
      lines_removed: 1,
      line_endings: 'lf',
    });
    const onDisk = fs.readFileSync(path.join(ws, 'small.txt'), 'utf8');
    assert.equal(onDisk, EDITED_TEXT);
    assert.equal(sha256(onDisk), r.payload.sha256);

    // view_file agrees; the same edit again no longer applies (old_string is gone).
    const v = assertSuccess(await run1(env, 'view_file',
      { file_path: 'small.txt', start_line: 30, end_line: 30 }));
    assert.equal(v.content, numbered(['line 30: the lazy dog'], 30));
    assert.equal(v.sha256, r.payload.sha256);
    const stale = await run1(env, 'edit_file', { ...EDIT, expected_sha256: sha256(SMALL_TEXT) });
    assertFailure(stale, { status: 'RESULT_STATUS_ERROR', code: 'ERROR_CODE_TOOL_FAILED' });
    assert.equal(fs.readFileSync(path.join(ws, 'small.txt'), 'utf8'), EDITED_TEXT);
  });

  // ----- grep_search ---------------------------------------------------------

  test('grep_search content mode finds the line', async () => {
    const r = await run1(env, 'grep_search',
      { pattern: 'std::(puts|printf)\\(', output_mode: 'content' });
    assert.deepEqual(assertSuccess(r), {
      pattern: 'std::(puts|printf)\\(',
      path: '.',
      output_mode: 'content',
      matches: [{ file: 'src/main.cc', line: 4, text: '  std::puts("hello");' }],
      num_matches: 1,
      num_files: 1,
      truncated: false,
    });
    assert.equal(r.display.content, 'src/main.cc:4:  std::puts("hello");\n');
  });

  test('grep_search files_with_matches mode lists the files', async () => {
    const r = await run1(env, 'grep_search', { pattern: '\\bint\\b', path: 'src' });
    assert.deepEqual(assertSuccess(r), {
      pattern: '\\bint\\b',
      path: 'src',
      output_mode: 'files_with_matches',
      files: ['src/main.cc', 'src/util.h'],
      num_files: 2,
      truncated: false,
    });

    // Over the whole workspace: symlinks are not followed, so the secret is not found.
    const all = await run1(env, 'grep_search', { pattern: SECRET });
    assert.deepEqual(assertSuccess(all).files, []);
    assert.equal(all.payload.num_files, 0);
  });

  // ----- escapes -------------------------------------------------------------

  // Each attempt must be a DENIED result whose message says the path is
  // outside the workspace and names the path the model gave (or the part of it
  // that escapes); the secret never appears in the result and nothing outside
  // (or inside) changes.
  const absOutside = () => path.join(outside, 'outside.txt');
  const ESCAPES = [
    ['view_file', () => ({ file_path: '../outside/outside.txt' })],
    ['view_file', () => ({ file_path: absOutside() })],
    ['view_file', () => ({ file_path: 'rel_link.txt' })],
    ['view_file', () => ({ file_path: 'abs_link.txt' })],
    ['view_file', () => ({ file_path: 'out_dir/outside.txt' })],
    ['create_file', () => ({ file_path: '../outside/planted.txt', contents: 'planted' })],
    ['create_file', () => ({ file_path: path.join(outside, 'planted.txt'), contents: 'planted' })],
    ['create_file', () => ({ file_path: 'out_dir/planted.txt', contents: 'planted' })],
    ['edit_file', () => ({ file_path: '../outside/outside.txt',
      edits: [{ old_string: SECRET_PREFIX, new_string: 'pwned' }] })],
    ['edit_file', () => ({ file_path: absOutside(),
      edits: [{ old_string: SECRET_PREFIX, new_string: 'pwned' }] })],
    ['edit_file', () => ({ file_path: 'out_dir/outside.txt',
      edits: [{ old_string: SECRET_PREFIX, new_string: 'pwned' }] })],
    ['grep_search', () => ({ pattern: 'secret', path: '../outside' })],
    ['grep_search', () => ({ pattern: 'secret', path: outside })],
    ['grep_search', () => ({ pattern: 'secret', path: 'out_dir' })],
    ['grep_search', () => ({ pattern: 'secret', path: 'rel_link.txt' })],
  ];
  // Writers aimed at a workspace symlink whose target is outside: the write
  // must be refused as an escape too (DENIED), like view_file of the same path
  // (DESIGN "Built-in tools": symlinks that point out are refused; [Deciding what runs]). The
  // daemon currently refuses these writes (nothing is written) but as
  // TOOL_FAILED "is a symbolic link ... edit the file it points to", which
  // hides the escape from DENIED accounting and sends the model outside.
  const LINK_WRITES = [
    ['edit_file', () => ({ file_path: 'rel_link.txt',
      edits: [{ old_string: SECRET_PREFIX, new_string: 'pwned' }] })],
    ['edit_file', () => ({ file_path: 'abs_link.txt',
      edits: [{ old_string: SECRET_PREFIX, new_string: 'pwned' }] })],
    ['create_file', () => ({ file_path: 'rel_link.txt', contents: 'pwned', overwrite: true })],
    ['create_file', () => ({ file_path: 'abs_link.txt', contents: 'pwned', overwrite: true })],
  ];

  async function assertDeniedEscapes(t, cases) {
    const outsideBefore = snapshot(outside);
    const wsBefore = snapshot(ws);
    const calls = cases.map(([name, args], i) => ({ id: `escape-${i}`, name, args: args() }));
    const results = await executeBatch(env, calls);
    assert.equal(results.length, calls.length);
    const problems = [];
    for (const [i, r] of results.entries()) {
      const given = calls[i].args.file_path ?? calls[i].args.path;
      t.diagnostic(`${r.name} ${JSON.stringify(given)} -> ${r.status} ${r.exception?.code}: ` +
        `${r.error_message}`);
      assert.equal(r.index, i);
      assert.equal(r.id, calls[i].id);
      assert.ok(!JSON.stringify(r).includes(SECRET), `${r.name} ${given}: the secret leaked`);
      try {
        assertFailure(r, { status: 'RESULT_STATUS_DENIED', code: 'ERROR_CODE_DENIED' });
        assert.match(r.error_message, /is outside the workspace/, 'says why');
        // It names the path given, or the leading part of it that escapes
        // (a writer resolves the parent directory first: '../outside').
        const named = given.split('/').map((_, k, parts) => parts.slice(0, k + 1).join('/'))
          .filter((prefix) => prefix !== '' && prefix !== '..');
        assert.ok(named.some((prefix) => r.error_message.includes(`path '${prefix}'`)),
          `the message names the path given ('${given}') or its escaping part: ${r.error_message}`);
      } catch (err) {
        problems.push(`${r.name} ${JSON.stringify(calls[i].args)}: ${err.message}`);
      }
    }
    assert.deepEqual(snapshot(outside), outsideBefore, 'nothing outside the workspace changed');
    assert.deepEqual(snapshot(ws), wsBefore, 'nothing in the workspace changed');
    assert.equal(fs.readFileSync(absOutside(), 'utf8'), `${SECRET}\n`);
    assert.deepEqual(problems, [], 'every escape is DENIED with a clear message');
  }

  test("escapes: '..', absolute paths outside, symlinks out — DENIED, nothing read or written",
    async (t) => {
      await assertDeniedEscapes(t, ESCAPES);
    });

  test('escapes: writes at a workspace symlink that points outside — DENIED', async (t) => {
    await assertDeniedEscapes(t, LINK_WRITES);
  });

  test('symlinks that stay inside the workspace still work', async () => {
    fs.symlinkSync('src/main.cc', path.join(ws, 'inside_link.cc'));
    try {
      const p = assertSuccess(await run1(env, 'view_file',
        { file_path: 'inside_link.cc', start_line: 4, end_line: 4 }));
      assert.equal(p.content, numbered(['  std::puts("hello");'], 4));
    } finally {
      fs.unlinkSync(path.join(ws, 'inside_link.cc'));
    }
  });
});
