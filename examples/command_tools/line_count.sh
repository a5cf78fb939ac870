#!/usr/bin/env bash
# A toolexec command tool in shell: the number of lines of a file in the workspace.
#
# The arguments arrive on stdin as one line of compact JSON, e.g. {"path":"README.md"}
# (toolexecd has validated them against the schema, so "path" is a string). Plain
# text on stdout is the result: toolexec sends 42 as {"result": 42}. A non-zero
# exit fails the call, with what was written on stderr as the message.
set -euo pipefail
IFS= read -r input
if [[ ! $input =~ \"path\":\"(([^\"\\]|\\.)*)\" ]]; then
  echo "expected {\"path\": \"...\"}, got $input" >&2
  exit 2
fi
path=${BASH_REMATCH[1]}
if [[ ! -f $path ]]; then
  echo "no such file: $path" >&2
  exit 1
fi
wc -l < "$path"
