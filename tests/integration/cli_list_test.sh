#!/usr/bin/env bash
# `toolexec list`: the same lines on every run (the schema in its declared
# order), and `--format` prints the provider's tools array as one JSON value.
set -u
toolexecd="$1" toolexec="$2"
dir=$(mktemp -d)
"$toolexecd" --workspace="$dir" --listen=127.0.0.1:0 --address_file="$dir/address" \
  --example_tools 2>"$dir/log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -s "$dir/address" ] && break; sleep 0.05; done
target=$(cat "$dir/address")
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$toolexec" --target="$target" list > "$dir/first" || fail "list exited $?"
for i in $(seq 19); do
  "$toolexec" --target="$target" list | cmp -s - "$dir/first" || fail "list run $i differs"
done
grep -q '^{"name":"view_file",.*"parameters":{"type":"object","additionalProperties":false,"properties":{"file_path":' \
  "$dir/first" || fail "view_file's parameters not in declared order: $(head -c 600 "$dir/first")"
for format in openai openai_strict anthropic gemini; do
  out=$("$toolexec" --target="$target" list --format "$format") || fail "$format exited $?"
  python3 -c 'import json,sys; t=json.loads(sys.argv[1]); assert isinstance(t, list) and len(t) == 18, len(t)' \
    "$out" || fail "$format: not a JSON array of the 18 tools"
done
"$toolexec" --target="$target" list --format claude 2>"$dir/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "openai_strict" "$dir/err" || fail "--format claude: exit $rc, $(cat "$dir/err")"

[ "$failures" -eq 0 ] && echo "ok" || exit 1
