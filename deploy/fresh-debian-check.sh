#!/usr/bin/env bash
# Rehearses the README's test command on a fresh Debian 12 root: debootstrap a minimal bookworm
# into a folder, clone this repository into it, and run .ci/run (= make test) inside a chroot.
# Usage: deploy/fresh-debian-check.sh [ROOT_DIR]   (needs root; takes 10-20 minutes)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${1:-/tmp/longqa-fresh-debian}"
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
if [ ! -x "$root/bin/bash" ]; then
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
fi
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# A host behind a TLS-intercepting proxy trusts an extra CA; hand the host's bundle to pip inside.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/host-ca-bundle.crt" 2>/dev/null || true
for fs in proc sys dev; do
  mountpoint -q "$root/$fs" || mount --bind "/$fs" "$root/$fs"
done
trap 'for fs in dev sys proc; do umount -l "$root/$fs" 2>/dev/null || true; done' EXIT
rm -rf "$root/root/longqa"
git clone -q "$repo" "$root/root/longqa"
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  PIP_CERT=/etc/host-ca-bundle.crt \
  bash -c 'cd /root/longqa && bash .ci/run'
