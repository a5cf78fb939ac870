#!/usr/bin/env bash
# toolexecd refuses to start on a bad config: non-zero exit, the reason on
# stderr ([Names and order] duplicate names, [Subagents] subagents, [Tools run elsewhere] declarations, bad values, a
# config path that is not a small regular file, a number out of its range).
set -u
toolexecd="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
passes=0

# Runs toolexecd with the given arguments; it must exit non-zero within the
# time limit (a hung or serving daemon is killed and fails the check) with
# `want` on stderr. Memory is capped so that an unbounded read fails fast.
expect_exit_refused() {  # name, expected stderr substring, toolexecd arguments...
  local name="$1" want="$2"
  shift 2
  local out rc
  out=$(ulimit -v 1048576; timeout 10 "$toolexecd" --workspace="$dir" --listen=127.0.0.1:0 \
        "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    echo "FAIL $name: exit $rc, expected a refusal"; failures=$((failures + 1)); return
  fi
  if ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $name: stderr lacks '$want': $out"; failures=$((failures + 1)); return
  fi
  echo "ok   $name: exit $rc: $out"; passes=$((passes + 1))
}

expect_refused() {  # name, config text, expected stderr substring
  local name="$1" config="$2" want="$3"
  printf '%s\n' "$config" > "$dir/$name.textproto"
  expect_exit_refused "$name" "$want" --config="$dir/$name.textproto"
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
expect_refused policy_rule_without_decision \
  'policy { rules { name: "shell" tool: "run_command" } }' "rule 'shell' has no decision"
expect_refused policy_bad_glob \
  'policy { rules { name: "g" tool: "*" path_glob: "[oops" decision: DECISION_DENY } }' \
  "rule 'g': path_glob"
expect_refused policy_builtin_profile_name \
  'policy { profiles { name: "read_only" } }' "policy profile 'read_only' is built in"

# Checkpoints need a store outside the workspace, and ranges of their own.
expect_refused checkpoints_without_store_dir 'checkpoints { enabled: true }' \
  "checkpoints.store_dir must be an absolute directory outside the workspace"
expect_refused checkpoints_store_in_workspace \
  "checkpoints { enabled: true store_dir: \"$dir/store\" }" "overlaps the workspace"
expect_refused checkpoints_keep_too_many \
  'checkpoints { keep_per_session: 100001 }' \
  "checkpoints.keep_per_session is 100001; allowed 1 to 100000"

# The config path must name a regular file of at most 4 MiB; it is neither
# read without limit nor waited on.
expect_exit_refused config_dev_zero "is a character device" --config=/dev/zero
mkfifo "$dir/fifo.textproto"
expect_exit_refused config_fifo "is a fifo" --config="$dir/fifo.textproto"
mkdir "$dir/conf.d"
expect_exit_refused config_directory "is a directory" --config="$dir/conf.d"
head -c $((4 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' > "$dir/huge.textproto"
expect_exit_refused config_too_large "larger than 4194304 bytes" --config="$dir/huge.textproto"

# Every numeric option past its range, from the config file: the message
# names the field; nothing is clamped.
u64_max=18446744073709551615
u32_max=4294967295
while read -r section field value; do
  expect_refused "range_${section}_${field}" "$section { $field: $value }" "$section.$field"
done <<RANGES
limits max_calls_per_batch $u32_max
limits max_concurrent_calls 4097
limits max_pending_calls $u32_max
limits default_call_timeout_ms $u64_max
limits max_call_timeout_ms 10000000000000
limits drain_grace_ms $u64_max
limits max_sessions $u32_max
sessions max_depth $u32_max
sessions idle_ttl_ms 10000000000000
file_tools view_max_lines $u32_max
file_tools view_max_bytes $u64_max
file_tools list_max_entries $u32_max
file_tools search_max_results $u32_max
file_tools max_file_bytes $u64_max
run_command default_timeout_ms 10000000000000
run_command max_timeout_ms $u64_max
run_command capture_bytes $u64_max
run_command kill_grace_ms 10000000000000
run_command rlimit_cpu_seconds $u64_max
run_command rlimit_address_space_bytes $u64_max
run_command rlimit_open_files $u64_max
run_command rlimit_processes $u64_max
RANGES
expect_refused range_web_search_max_uses 'control_tools { web_search { max_uses: 4294967295 } }' \
  "control_tools.web_search.max_uses"
expect_refused range_model_content_max_chars 'model_content_max_chars: 4000001' \
  "(--model_content_max_chars) is 4000001; allowed 200 to 4000000"
expect_refused range_model_content_default_chars 'model_content_default_chars: 199' \
  "model_content_default_chars"
expect_refused model_content_default_over_max \
  'model_content_default_chars: 5000 model_content_max_chars: 1000' \
  "(--model_content_default_chars) is 5000; allowed 200 to 1000"
# The message gives the value and the range.
expect_refused range_message 'file_tools { max_file_bytes: 1073741825 }' \
  "file_tools.max_file_bytes is 1073741825; allowed 1 to 1073741824"

# The same ranges for the flags, named as flags.
while read -r flag value; do
  expect_exit_refused "range_flag_${flag}_$value" "--$flag" "--$flag=$value"
done <<RANGES
max_calls_per_batch 0
max_calls_per_batch $u32_max
max_concurrent_calls 4097
max_pending_calls $u32_max
call_timeout_ms $u64_max
max_call_timeout_ms 10000000000000
drain_grace_ms $u64_max
session_idle_ttl_ms 10000000000000
model_content_default_chars 199
model_content_max_chars 4000001
max_receive_message_bytes 100
max_send_message_bytes $u32_max
keepalive_min_ping_interval_ms 0
RANGES

check() {  # name, command...: the command must succeed
  local name="$1"
  shift
  if "$@" >/dev/null 2>&1; then passes=$((passes + 1)); else
    echo "FAIL $name"; failures=$((failures + 1)); fi
}

# The flags over the config file: a flag given replaces the file's value (as
# 0 or false too), one not given leaves it, one out of range is named.
printf 'example_tools: true\nlimits { max_concurrent_calls: 5000 }\n' > "$dir/over.textproto"
expect_exit_refused "the file's value without its flag" \
  "limits.max_concurrent_calls (--max_concurrent_calls) is 5000; allowed 1 to 4096" \
  --config="$dir/over.textproto"
out=$(timeout 10 "$toolexecd" --check_config --workspace="$dir" --config="$dir/over.textproto" \
      --max_concurrent_calls=8 2>&1)
check "a flag replaces the file's value" test $? -eq 0
check "  ... and leaves the others (example_tools)" grep -qF get_weather <<<"$out"
expect_exit_refused "a flag given as 0 replaces the file's value" \
  "limits.max_concurrent_calls (--max_concurrent_calls) is 0; allowed 1 to 4096" \
  --config="$dir/over.textproto" --max_concurrent_calls=0
expect_exit_refused "a flag out of range over the file" \
  "limits.max_concurrent_calls (--max_concurrent_calls) is 4097; allowed 1 to 4096" \
  --config="$dir/over.textproto" --max_concurrent_calls=4097
out=$(timeout 10 "$toolexecd" --check_config --workspace="$dir" --config="$dir/over.textproto" \
      --max_concurrent_calls=8 --noexample_tools 2>&1)
check "--noexample_tools over example_tools: true" \
  bash -c 'grep -qF "config OK" <<<"$1" && ! grep -qF get_weather <<<"$1"' _ "$out"
# --log_level over the file's log_level: the info line "serving on" is logged.
printf 'log_level: "warn"\n' > "$dir/warn.textproto"
"$toolexecd" --workspace="$dir" --listen=127.0.0.1:0 --config="$dir/warn.textproto" \
  --log_level=info --address_file="$dir/level.addr" 2>"$dir/level.log" &
level_daemon=$!
for _ in $(seq 100); do [ -s "$dir/level.addr" ] && break; sleep 0.1; done
kill "$level_daemon"; wait "$level_daemon" 2>/dev/null
check "--log_level over the file's log_level" grep -qF "serving on" "$dir/level.log"

# Command tools: each field checked at start-up, naming the tool.
expect_refused command_tool_bad_name 'command_tools { name: "has space" argv: "/bin/true" }' \
  "command_tools 'has space': the name must be 1 to 64 letters, digits, '_' or '-'"
expect_refused command_tool_no_argv 'command_tools { name: "t" }' \
  "command_tools 't': argv is empty"
expect_refused command_tool_twice \
  'command_tools { name: "t" argv: "/bin/true" } command_tools { name: "t" argv: "/bin/true" }' \
  "command_tools 't' is declared twice"
expect_refused command_tool_clashes_with_builtin 'command_tools { name: "view_file" argv: "/bin/true" }' \
  "view_file"
expect_refused command_tool_schema_not_json 'command_tools { name: "t" argv: "/bin/true" parameters_json: "{nope" }' \
  "command_tools 't': parameters_json is not a JSON object"
expect_refused command_tool_schema_invalid \
  'command_tools { name: "t" argv: "/bin/true" parameters_json: "{\"type\": 7}" }' "'t'"
expect_refused command_tool_working_dir_outside \
  'command_tools { name: "t" argv: "/bin/true" working_dir: "a/../../etc" }' \
  "command_tools 't': working_dir 'a/../../etc' must be a relative path inside the workspace"
expect_refused command_tool_working_dir_absolute 'command_tools { name: "t" argv: "/bin/true" working_dir: "/etc" }' \
  "must be a relative path inside the workspace"
expect_refused command_tool_program_missing 'command_tools { name: "t" argv: "no-such-program-xyz" }' \
  "command_tools 't': no-such-program-xyz was not found on PATH"
expect_refused command_tool_program_relative 'command_tools { name: "t" argv: "./run.sh" }' \
  "give an absolute path or a program name found on PATH"

# A schema whose "$ref"s loop is refused naming the loop (valijson's parser
# overflowed its stack on it), and so is the finish tool's output schema.
expect_refused command_tool_schema_ref_cycle \
  'command_tools { name: "t" argv: "/bin/true"
                   parameters_json: "{\"properties\":{\"a\":{\"$ref\":\"#/properties/a\"}}}" }' \
  "tool 't' (config (command_tools)): schema: a \"\$ref\" cycle: #/properties/a -> #/properties/a"
expect_refused finish_schema_ref_cycle \
  'control_tools { finish_output_schema_json: "{\"$ref\":\"#\"}" }' 'a "$ref" cycle: # -> #'

# --check_config agrees: 2 on a bad config (as every refusal to start), 0 on a good one.
"$toolexecd" --check_config --config="$dir/subagent_both_lists.textproto" --workspace="$dir" \
  >/dev/null 2>&1
check "check_config exits 2 on a bad config" test $? -eq 2
out=$(timeout 10 "$toolexecd" --check_config --workspace="$dir" \
      --config="$dir/command_tool_schema_ref_cycle.textproto" 2>&1)
rc=$?
check "check_config exits 2 on a schema with a \$ref cycle" test $rc -eq 2
check "check_config names the \$ref cycle" grep -qF '#/properties/a -> #/properties/a' <<<"$out"
printf 'subagents { name: "reader" }\n' > "$dir/good.textproto"
check "check_config on a good config" \
  timeout 10 "$toolexecd" --check_config --config="$dir/good.textproto" --workspace="$dir"
# A 0 (or "") in the file is the default, not a value out of range.
printf 'listen: "" log_format: ""\nlimits { max_concurrent_calls: 0 max_calls_per_batch: 0 }\n' \
  > "$dir/zeros.textproto"
check "check_config on a config giving 0 for the defaults" \
  timeout 10 "$toolexecd" --check_config --config="$dir/zeros.textproto" --workspace="$dir"
# Each range's maximum is allowed.
cat > "$dir/at_limits.textproto" <<CONFIG
limits { max_calls_per_batch: 1048576 max_pending_calls: 1048576 max_concurrent_calls: 4096
         default_call_timeout_ms: 2592000000 max_call_timeout_ms: 2592000000
         drain_grace_ms: 2592000000 max_sessions: 1000000 }
sessions { max_depth: 100 idle_ttl_ms: 2592000000 }
file_tools { view_max_lines: 10000000 view_max_bytes: 67108864 list_max_entries: 1000000
             search_max_results: 1000000 max_file_bytes: 1073741824 }
run_command { default_timeout_ms: 2592000000 max_timeout_ms: 2592000000 capture_bytes: 67108864
              kill_grace_ms: 2592000000 rlimit_cpu_seconds: 2592000
              rlimit_address_space_bytes: 140737488355328 rlimit_open_files: 1048576
              rlimit_processes: 4194304 }
control_tools { web_search { max_uses: 10000 } }
model_content_default_chars: 4000000 model_content_max_chars: 4000000
CONFIG
check "check_config with every option at its maximum" \
  timeout 10 "$toolexecd" --check_config --config="$dir/at_limits.textproto" --workspace="$dir"
store="$dir.checkpoints"
printf 'checkpoints { enabled: true store_dir: "%s" max_store_bytes: 1125899906842624\n' "$store" \
  > "$dir/checkpoints.textproto"
printf '  keep_per_session: 100000 max_file_bytes: 4294967296 include_ignored: true }\n' \
  >> "$dir/checkpoints.textproto"
check "check_config with checkpoints on, every range at its maximum" \
  timeout 10 "$toolexecd" --check_config --config="$dir/checkpoints.textproto" --workspace="$dir"
rm -rf "$store"
check "check_config with the flags at their maximum" \
  timeout 10 "$toolexecd" --check_config --workspace="$dir" --max_calls_per_batch=1048576 \
  --max_pending_calls=1048576 --max_concurrent_calls=4096 --call_timeout_ms=2592000000 \
  --max_call_timeout_ms=2592000000 --drain_grace_ms=2592000000 --session_idle_ttl_ms=0

check "the transport flags at their maximum" \
  timeout 10 "$toolexecd" --check_config --workspace="$dir" \
  --max_receive_message_bytes=1073741824 --max_send_message_bytes=1073741824 \
  --keepalive_min_ping_interval_ms=2592000000 --keepalive_permit_without_calls=false

# No non-loopback TCP address without authentication, unless asked for by name.
for address in 0.0.0.0:0 "[::]:0" 192.0.2.1:0 example.com:0 :0; do
  expect_exit_refused "listen $address without auth" "--insecure_allow_unauthenticated" \
    --listen="$address"
done
for address in 127.0.0.1:0 127.1.2.3:0 "[::1]:0" localhost:0 "unix:$dir/sock"; do
  check "listen $address without auth" \
    timeout 10 "$toolexecd" --check_config --workspace="$dir" --listen="$address"
done
check "listen 0.0.0.0 with --insecure_allow_unauthenticated" \
  timeout 10 "$toolexecd" --check_config --workspace="$dir" --listen=0.0.0.0:0 \
  --insecure_allow_unauthenticated
printf 'listen: "0.0.0.0:50051"\n' > "$dir/open.textproto"
out=$(timeout 10 "$toolexecd" --config="$dir/open.textproto" --workspace="$dir" 2>&1)
check "a config listening on 0.0.0.0 without auth is refused" test $? -eq 2
check "  ... saying so" grep -qF "refusing to listen on 0.0.0.0:50051 without authentication" <<<"$out"
# --check_config judges the config, not the machine it runs on: what only the
# serving machine decides (auth given on its command line, its workspace) is
# a warning.
out=$(timeout 10 "$toolexecd" --check_config --config="$dir/open.textproto" --workspace="$dir" 2>&1)
check "check_config on a config listening on 0.0.0.0 without auth passes" test $? -eq 0
check "  ... with a warning" grep -qF \
  "warning: refusing to listen on 0.0.0.0:50051 without authentication" <<<"$out"
out=$(timeout 10 "$toolexecd" --check_config --workspace="$dir/not-here" 2>&1)
check "check_config with a missing workspace passes" test $? -eq 0
check "  ... with a warning" grep -qF "warning: workspace '$dir/not-here' is not an existing" <<<"$out"
expect_exit_refused "serving a missing workspace is refused" "is not an existing directory" \
  --workspace="$dir/not-here"
if [ -n "${TOOLEXEC_SOURCE_DIR:-}" ]; then
  out=$(cd "$dir" && timeout 10 "$toolexecd" --check_config \
        --config="$TOOLEXEC_SOURCE_DIR/deploy/config/toolexecd.textproto" 2>&1)
  check "the README's check of the example config passes" test $? -eq 0
fi

# One exit status, 2, and a line naming the flag for every command-line error.
expect_exit_2() {  # name, expected stderr substring, toolexecd arguments...
  local name="$1" want="$2" out rc
  shift 2
  out=$(timeout 10 "$toolexecd" --workspace="$dir" --listen=127.0.0.1:0 "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $name: exit $rc, stderr: $out"; failures=$((failures + 1)); return
  fi
  passes=$((passes + 1))
}
expect_exit_2 "unknown flag" "unknown flag --no_such_flag (toolexecd --help lists the flags)" \
  --no_such_flag=1
expect_exit_2 "bad flag value" "--max_pending_calls='many'" --max_pending_calls=many
expect_exit_2 "flag without its value" "--token_file needs a value" --token_file
expect_exit_2 "positional argument" "unexpected argument 'serve'" serve
expect_exit_2 "listen without a port" "listen (--listen) 'localhost' has no port" \
  --listen=localhost
expect_exit_2 "a range error" "limits.max_concurrent_calls (--max_concurrent_calls) is 0" \
  --max_concurrent_calls=0
printf '{"exampleTools": "yes"}\n' > "$dir/bool.json"
expect_exit_2 "a JSON bool given as a string" "exampleTools must be true or false, not \"yes\"" \
  --config="$dir/bool.json"
printf '{"mcpServers": [{"name": "m", "command": ["/bin/true"], "prefixToolNames": "no"}]}\n' \
  > "$dir/nested_bool.json"
expect_exit_2 "a nested JSON bool given as a string" \
  "mcpServers[0].prefixToolNames must be true or false" --config="$dir/nested_bool.json"
printf '{"exampleTools": true}\n' > "$dir/bool_ok.json"
check "a JSON bool" timeout 10 "$toolexecd" --check_config --config="$dir/bool_ok.json" \
  --workspace="$dir"
# An HTTP listener's port in use is said in words, not in civetweb's.
"$toolexecd" --workspace="$dir" --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 \
  --address_file="$dir/holder.addr" 2>"$dir/holder.log" &
holder=$!
for _ in $(seq 100); do grep -q "metrics on" "$dir/holder.log" 2>/dev/null && break; sleep 0.1; done
busy=$(sed -n 's|.*metrics on http://\([^/]*\)/metrics.*|\1|p' "$dir/holder.log")
check "a daemon holds a metrics port" test -n "$busy"
expect_exit_2 "metrics port in use" \
  "cannot serve metrics on $busy (metrics.listen, --metrics_listen): address already in use" \
  --metrics_listen="$busy"
expect_exit_2 "MCP port in use" \
  "cannot serve MCP on $busy (mcp_listen, --mcp_listen): address already in use" \
  --mcp_listen="$busy"
# So is the gRPC port's, in one line and not in gRPC's dump; and a second
# daemon does not share a served port (SO_REUSEPORT would let it).
grpc_busy=$(cat "$dir/holder.addr" 2>/dev/null)
check "a daemon holds a gRPC port" test -n "$grpc_busy"
expect_exit_2 "gRPC port in use" \
  "cannot listen on $grpc_busy (listen, --listen): address already in use" --listen="$grpc_busy"
out=$(timeout 10 "$toolexecd" --workspace="$dir" --listen="$grpc_busy" 2>&1 >/dev/null)
check "a gRPC port in use is said in one line" test "$(wc -l <<<"$out")" -eq 1
kill "$holder"; wait "$holder" 2>/dev/null

# --version and --help answer and exit 0.
out=$("$toolexecd" --version 2>&1)
check "--version exits 0" test $? -eq 0
check "--version names the version, commit and build type" \
  grep -qE '^toolexecd [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown), [A-Za-z]+ build\)$' <<<"$out"
help=$("$toolexecd" --help 2>&1)
check "--help exits 0" test $? -eq 0
for group in "Config and tools:" "Listening:" "Who may call:" "Limits:" "Observability:"; do
  check "--help has the group $group" grep -qxF "$group" <<<"$help"
done
check "--help shows defaults" grep -qF -- "--max_concurrent_calls=N  (default 256)" <<<"$help"
check "--help shows ranges" grep -qF "Allowed: 1 to 4096." <<<"$help"
check "--help points at the config schema" grep -qF "proto/toolexec/v1/config.proto" <<<"$help"
check "--help has no abseil file names" bash -c '! grep -qF "Flags from" <<<"$1"' _ "$help"

# Metrics address and log format: refused at start-up, naming the option.
for address in "9464" "localhost" "127.0.0.1:99999" "127.0.0.1:x" ":9464" "unix:/tmp/m.sock"; do
  expect_exit_refused "metrics_listen $address" "metrics.listen (--metrics_listen) '$address'" \
    --metrics_listen="$address"
done
expect_exit_refused "log_format yaml" "log_format (--log_format) 'yaml' is not one of text, json" \
  --log_format=yaml
printf 'log_format: "xml"\n' > "$dir/log_format.textproto"
expect_exit_refused "config log_format xml" "'xml' is not one of text, json" \
  --config="$dir/log_format.textproto"
printf 'metrics { listen: "nowhere" }\n' > "$dir/metrics.textproto"
expect_exit_refused "config metrics.listen nowhere" "metrics.listen (--metrics_listen) 'nowhere'" \
  --config="$dir/metrics.textproto"
# An address that cannot be bound (not this host's) stops the daemon too.
expect_exit_refused "metrics_listen not bindable" "cannot serve metrics on 192.0.2.1:9464" \
  --metrics_listen=192.0.2.1:9464

# --help lists every flag of toolexecd.
for flag in listen workspace config example_tools check_config max_calls_per_batch \
    max_concurrent_calls max_pending_calls call_timeout_ms max_call_timeout_ms drain_grace_ms \
    session_idle_ttl_ms max_receive_message_bytes max_send_message_bytes \
    keepalive_min_ping_interval_ms keepalive_permit_without_calls insecure_allow_unauthenticated \
    log_level address_file metrics_listen log_format; do
  check "--help lists --$flag" grep -qE -- "^  --$flag([= ]|$)" <<<"$help"
done

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
