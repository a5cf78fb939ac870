#!/usr/bin/env bash
# `toolexec list`: the same lines on every run (the schema in its declared
# order), and `--format` prints the provider's tools array as one JSON value;
# `--version` names the daemon's build.
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
grep -q '^{"name":"str_replace_based_edit_tool",.*"provider_config":{"name":"str_replace_based_edit_tool","type":"text_editor_20250728"}' "$dir/first" \
  || fail "provider_config not printed with sorted keys"
# Every declared tool is a function in each provider's form, except the tools
# the model provider itself runs (EXECUTOR_PROVIDER).
tools=$(grep '^{"name":' "$dir/first" | grep -vc '"executor":"EXECUTOR_PROVIDER"')
for format in openai openai_strict anthropic gemini; do
  out=$("$toolexec" --target="$target" list --format "$format") || fail "$format exited $?"
  python3 -c 'import json,sys; t=json.loads(sys.argv[1]); assert isinstance(t, list) and len(t) == int(sys.argv[2]), len(t)' \
    "$out" "$tools" || fail "$format: not a JSON array of the $tools tools"
done
"$toolexec" --target="$target" list --format claude 2>"$dir/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "openai_strict" "$dir/err" || fail "--format claude: exit $rc, $(cat "$dir/err")"

# The CLI and the daemon name the same build.
cli_version=$("$toolexec" --version) || fail "toolexec --version exited $?"
daemon_version=$("$toolexecd" --version) || fail "toolexecd --version exited $?"
[ "${cli_version#toolexec }" = "${daemon_version#toolexecd }" ] && [ -n "${cli_version#toolexec }" ] \
  || fail "versions differ: '$cli_version' vs '$daemon_version'"

[ "$failures" -eq 0 ] && echo "ok" || exit 1
