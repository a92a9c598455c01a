#!/usr/bin/env bash
# Prints, one per line, the Debian packages that own the shared libraries the given binaries load:
# the runtime image installs exactly these (deploy/Dockerfile), so it needs no hand-kept list.
# Usage: runtime-packages.sh [--system-only] BINARY...
#   --system-only: libraries no package owns (the torch wheel's, deploy/Dockerfile.cuda) are left
#   to the caller instead of being an error.
set -euo pipefail
system_only=0
if [ "${1:-}" = --system-only ]; then system_only=1; shift; fi
for lib in $(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
  real="$(readlink -f "$lib")"
  # usrmerge: dpkg may know a library under /lib or under /usr/lib.
  owner="$(dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null || true)"
  if [ -z "$owner" ]; then
    [ "$system_only" = 1 ] && continue
    echo "runtime-packages: no package owns $real" >&2
    exit 1
  fi
  echo "${owner%%:*}"
done | sort -u
