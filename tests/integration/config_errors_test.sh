#!/usr/bin/env bash
# toolexecd refuses to start on a bad config: non-zero exit, the reason on
# stderr (S1 duplicate names, S7 subagents, S9 declarations, bad values).
set -u
toolexecd="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

expect_refused() {  # name, config text, expected stderr substring
  local name="$1" config="$2" want="$3"
  printf '%s\n' "$config" > "$dir/$name.textproto"
  local out rc
  out=$(timeout 20 "$toolexecd" --config="$dir/$name.textproto" --workspace="$dir" \
        --listen=127.0.0.1:0 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    echo "FAIL $name: exit $rc, expected a refusal"; failures=$((failures + 1)); return
  fi
  if ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $name: stderr lacks '$want': $out"; failures=$((failures + 1)); return
  fi
  echo "ok   $name: exit $rc: $out"
}

expect_refused subagent_both_lists \
  'subagents { name: "helper" enabled_tools: "view_file" disabled_tools: "run_command" }' \
  "subagent 'helper': give enabled_tools or disabled_tools, not both"
expect_refused subagent_unknown_tool \
  'subagents { name: "helper" enabled_tools: "teleport" }' "teleport"
expect_refused unknown_declared_tool \
  'control_tools { declared_tools: "teleport" }' "cannot declare unknown tool 'teleport'"
expect_refused unknown_field 'no_such_field: 1' "no_such_field"
expect_refused bad_builtin_selection \
  'builtin_tools { enabled: "read_only" disabled: "run_command" }' "not both"
expect_refused bad_finish_schema \
  'control_tools { finish_output_schema_json: "{not json" }' "finish output schema"
expect_refused missing_bwrap_or_bad_sandbox \
  'run_command { sandbox: "chroot" }' "sandbox"

# --check_config agrees: 1 on a bad config, 0 on a good one.
"$toolexecd" --check_config --config="$dir/subagent_both_lists.textproto" --workspace="$dir" \
  >/dev/null 2>&1
[ $? -eq 1 ] || { echo "FAIL check_config on a bad config did not exit 1"; failures=$((failures + 1)); }
printf 'subagents { name: "reader" }\n' > "$dir/good.textproto"
"$toolexecd" --check_config --config="$dir/good.textproto" --workspace="$dir" >/dev/null 2>&1 ||
  { echo "FAIL check_config on a good config"; failures=$((failures + 1)); }

echo "$((9 - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
