#!/usr/bin/env bash
# Install the system packages basevolve's scripts need, when missing and when we can.
#   bash scripts/system_deps.sh COMMAND:PACKAGE ...   e.g. bwrap:bubblewrap chromium:chromium
# For each pair whose COMMAND is not on PATH, PACKAGE is installed with apt-get (one
# `apt-get update` for all of them) when run as root with apt-get; otherwise one line on
# stderr says what is missing.  Nothing is printed when everything is there.  Shared by
# scripts/main.sh and scripts/test.sh (.ci/run installs the same two before calling
# test.sh); issue 24, items 10 and 11.
set -euo pipefail
missing=()
for pair in "$@"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "basevolve: installing ${missing[*]} with apt-get …" >&2
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  echo "basevolve: ${missing[*]} missing (not root with apt-get); the parts that need them are skipped or run with less isolation" >&2
fi
