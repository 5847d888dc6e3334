#!/usr/bin/env bash
# Installs the Debian packages Sonora needs, only those missing.
# Usage: scripts/install-deps.sh PACKAGE...
# Runs `apt-get update` at most once, and only when something is missing.
set -euo pipefail

missing=()
for pkg in "$@"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "sonora: installing missing Debian packages: ${missing[*]}" >&2

if [[ $(id -u) -eq 0 ]]; then
  apt=(apt-get)
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  apt=(sudo -n apt-get)
else
  cat >&2 <<MSG
sonora: cannot install packages: not root and no password-less sudo.
Install them yourself, then run make again:
    sudo apt-get update && sudo apt-get install -y ${missing[*]}
MSG
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if ! "${apt[@]}" update -qq; then
  echo "sonora: 'apt-get update' failed; check the network or /etc/apt/sources.list, then run make again." >&2
  exit 1
fi
if ! "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "sonora: 'apt-get install ${missing[*]}' failed; run it by hand to see why, then run make again." >&2
  exit 1
fi
echo "sonora: installed ${missing[*]}" >&2
