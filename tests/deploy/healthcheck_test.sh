#!/usr/bin/env bash
# The image's HEALTHCHECK still passes when the daemon requires a token, and
# the token is what keeps everything else out: toolexecd starts with the
# Dockerfile's ENTRYPOINT and CMD flags (listen and the token file moved to
# 127.0.0.1:0 and a scratch file holding the Kubernetes Secret's placeholder
# token file), then
#   - the Dockerfile's HEALTHCHECK command (its target moved to the daemon's
#     port) exits 0 with no token;
#   - `toolexec list` with no token, or a wrong one, fails UNAUTHENTICATED;
#   - `toolexec list` with the Secret's gateway token ($TOOLEXEC_TOKEN) works.
#
#   tests/deploy/healthcheck_test.sh PATH/TO/toolexecd PATH/TO/toolexec
set -u
toolexecd="$1"
toolexec="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$dir"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

# The Dockerfile's final ENTRYPOINT, CMD and HEALTHCHECK, and the Secret's two
# values, as shell words (one per line) from Debian's python3 with yaml.
umask 077  # the token files, as toolexecd wants them
/usr/bin/python3 - "$root" "$dir" <<'PY' || exit 1
import base64, json, os, re, sys, yaml
root, out = sys.argv[1:]
text = open(os.path.join(root, "Dockerfile"), encoding="utf-8").read()
text = re.sub(r"\\\n", " ", text)
last = {}
for line in text.splitlines():
    m = re.match(r"\s*(ENTRYPOINT|CMD|HEALTHCHECK)\s+(.*)", line)
    if m:
        last[m.group(1)] = m.group(2)
health = re.search(r"\bCMD\s+(\[.*\])", last["HEALTHCHECK"]).group(1)
for name, words in (("entrypoint", json.loads(last["ENTRYPOINT"])),
                    ("cmd", json.loads(last["CMD"])), ("healthcheck", json.loads(health))):
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(words) + "\n")
secret = next(d for d in yaml.safe_load_all(open(os.path.join(root, "deploy", "kubernetes", "secret.yaml")))
              if d and d.get("kind") == "Secret")
values = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
values.update(secret.get("stringData") or {})
open(os.path.join(out, "tokens"), "w").write(values["tokens"])
open(os.path.join(out, "token"), "w").write(values["token"].strip())
PY

mapfile -t entrypoint <"$dir/entrypoint"
mapfile -t cmd <"$dir/cmd"
mapfile -t healthcheck <"$dir/healthcheck"
mkdir "$dir/workspace"
args=()
for a in "${entrypoint[@]:1}" "${cmd[@]}"; do
  case "$a" in
    --listen=*) a=--listen=127.0.0.1:0 ;;
    --workspace=*) a="--workspace=$dir/workspace" ;;
    --token_file=*) a="--token_file=$dir/tokens" ;;
    --config=/etc/toolexec/*) a="--config=$root/deploy/config/${a#--config=/etc/toolexec/}" ;;
  esac
  args+=("$a")
done
"$toolexecd" "${args[@]}" --address_file="$dir/address" >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 1 500); do
  [ -s "$dir/address" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.02
done
if [ ! -s "$dir/address" ]; then
  echo "FAIL toolexecd ${args[*]} did not start:"; cat "$dir/log"; exit 1
fi
address=$(cat "$dir/address")
ok "toolexecd ${args[*]} serves $address"

# The HEALTHCHECK, as the image runs it (toolexec from PATH, the target moved).
check=()
for a in "${healthcheck[@]:1}"; do
  case "$a" in --target=*) a="--target=$address" ;; esac
  check+=("$a")
done
if out=$(env -u TOOLEXEC_TOKEN "$toolexec" "${check[@]}" 2>&1); then
  ok "HEALTHCHECK ${healthcheck[*]} passes without a token: $out"
else
  fail "HEALTHCHECK ${healthcheck[*]} failed against a token-protected daemon: $out"
fi

expect_unauthenticated() {  # name, env assignments...
  local name="$1" out
  shift
  if out=$(env -u TOOLEXEC_TOKEN "$@" "$toolexec" list --target="$address" 2>&1); then
    fail "$name: toolexec list succeeded without the right token"
  elif grep -q UNAUTHENTICATED <<<"$out"; then
    ok "$name: refused: $(head -c 200 <<<"$out")"
  else
    fail "$name: refused, but not as UNAUTHENTICATED: $out"
  fi
}
expect_unauthenticated "no token"
expect_unauthenticated "a wrong token" TOOLEXEC_TOKEN=not-the-token

if out=$(TOOLEXEC_TOKEN="$(cat "$dir/token")" "$toolexec" list --target="$address" 2>&1); then
  ok "the gateway's token lists the tools"
else
  fail "the Secret's gateway token was refused: $out"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s); daemon log:"; cat "$dir/log"; exit 1; }
echo "all passed"
