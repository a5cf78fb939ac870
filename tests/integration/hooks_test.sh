#!/usr/bin/env bash
# Hooks and the audit log in the real daemon, from its config file: a command
# hook written in shell denies a call (and lets others through), and the audit
# file gets one complete JSON line per call.
set -u
toolexecd="$1" toolexec="$2"
dir=$(mktemp -d)
mkdir "$dir/ws"
cat > "$dir/guard.sh" <<'HOOK'
#!/bin/sh
if grep -q '"city":"Atlantis"'; then
  echo '{"decision":"deny","reason":"no such place"}'
else
  echo '{"decision":"allow"}'
fi
HOOK
chmod +x "$dir/guard.sh"
cat > "$dir/config.textproto" <<CONF
hooks {
  name: "guard"
  event: HOOK_EVENT_PRE_CALL
  argv: "$dir/guard.sh"
  timeout_ms: 5000
  tools: "get_weather"
}
audit_log: "$dir/audit.jsonl"
CONF
"$toolexecd" --config="$dir/config.textproto" --workspace="$dir/ws" --listen=127.0.0.1:0 \
  --address_file="$dir/address" --example_tools 2>"$dir/log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -s "$dir/address" ] && break; sleep 0.05; done
target=$(cat "$dir/address" 2>/dev/null) || { echo "FAIL daemon did not start: $(cat "$dir/log")"; exit 1; }
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

out=$("$toolexec" --target="$target" call get_weather '{"city":"Paris"}') \
  || fail "allowed call exited $?: $out"
out=$("$toolexec" --target="$target" call get_weather '{"city":"Atlantis"}')
rc=$?
[ "$rc" -eq 1 ] || fail "denied call exited $rc, not 1"
echo "$out" | grep -q "RESULT_STATUS_DENIED" || fail "not DENIED: $out"
echo "$out" | grep -q "denied by hook 'guard': no such place" || fail "hook not named: $out"
out=$("$toolexec" --target="$target" call calculate_sum '{"numbers":[1,2]}') \
  || fail "unfiltered tool exited $?: $out"

python3 - "$dir/audit.jsonl" <<'PY' || fail "audit log: $(cat "$dir/audit.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 3, len(lines)
by_decision = sorted((l["tool"], l["decision"], l["status"]) for l in lines)
assert by_decision == [("calculate_sum", "allowed", "success"),
                       ("get_weather", "allowed", "success"),
                       ("get_weather", "denied", "denied")], by_decision
denied = [l for l in lines if l["decision"] == "denied"][0]
assert denied["decided_by"] == "hook guard", denied
assert denied["args"] == {"city": "Atlantis"}, denied
PY

[ "$failures" -eq 0 ] && echo "ok" || exit 1
