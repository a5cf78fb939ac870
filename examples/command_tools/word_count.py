#!/usr/bin/env python3
"""A toolexec command tool in Python: counts the words, lines and characters of a text.

toolexecd writes the call's arguments (already validated against the schema in
toolexecd.textproto) as one JSON object on stdin; what this prints on stdout is
the result. A non-zero exit fails the call with the end of stderr as its message.
"""
import json
import sys

args = json.load(sys.stdin)
text = args["text"]
if args.get("ignore_blank_lines"):
    lines = [line for line in text.splitlines() if line.strip()]
else:
    lines = text.splitlines()
json.dump({"words": len(text.split()), "lines": len(lines), "characters": len(text)}, sys.stdout)
