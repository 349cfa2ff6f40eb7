#!/bin/bash
# Build and test collx against Open MPI 5.0 on a Debian 12 machine: a
# Debian 13 (trixie, Open MPI 5.0.7) root filesystem made from the Debian
# archive with mmdebstrap, kept under $COLLX_CACHE (default
# /var/cache/collx) and remade only when its package list changes; a copy
# of this source tree is built and run inside it (chroot, in a mount
# namespace of its own: /proc, /sys, /dev are bound there and vanish with
# it).  Root.
#
#   contrib/debian13.sh                  build, then the Open MPI 5 checks
#                                        (test/debian13/checks.sh): unit tests,
#                                        1-node checker, 2 emulated nodes,
#                                        randomised tester
#   contrib/debian13.sh -- COMMAND...    build, then run COMMAND in the source
#                                        copy inside the root (e.g.
#                                        ./contrib/test.sh, ./contrib/quickstart.sh)
#
# The last line of the checks is "collx-ompi5: N passed, M failed".  Exit
# status: the checks' (or COMMAND's).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
cache=${COLLX_CACHE:-/var/cache/collx}
root=$cache/debian13-root
suite=trixie
mirror=${COLLX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgs="libopenmpi-dev,openmpi-bin,libpmix-dev,build-essential,autoconf,automake,libtool,pkg-config,check,libhwloc-dev,nlohmann-json3-dev,gnuplot-nox,iproute2,util-linux,procps,xz-utils,ca-certificates,python3"
[ "$(id -u)" = 0 ] || { echo "debian13.sh: needs root (mmdebstrap, chroot)" >&2; exit 77; }
[ "${1:-}" = -- ] && shift

# --- the root filesystem, made once per package list
stamp="$suite $pkgs"
if [ "$(cat "$root/.collx-stamp" 2>/dev/null)" != "$stamp" ]; then
    command -v mmdebstrap >/dev/null || {
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
              --no-install-recommends mmdebstrap >/dev/null; } ||
            { echo "debian13.sh: cannot install mmdebstrap" >&2; exit 1; }
    }
    echo "debian13.sh: making the Debian 13 root in $root (about a minute)"
    # an interrupted mmdebstrap may leave /proc, /sys or /dev mounted in
    # root.new: unmount, and never let rm cross into another filesystem
    for d in "$root" "$root.new"; do
        [ -d "$d" ] && findmnt -rn -o TARGET | grep "^$d/" | sort -r | xargs -r umount -l
    done
    rm -rf --one-file-system "$root" "$root.new"
    mkdir -p "$cache"
    mmdebstrap --quiet --variant=apt --include="$pkgs" "$suite" "$root.new" "$mirror" ||
        { echo "debian13.sh: mmdebstrap failed" >&2; rm -rf "$root.new"; exit 1; }
    echo "$stamp" > "$root.new/.collx-stamp"
    mv "$root.new" "$root"
fi

# --- a fresh copy of this tree (tracked and new files, no build outputs);
# COLLX_KEEP_TREE=1 reuses the last copy and its build (development)
[ "${COLLX_KEEP_TREE:-0}" = 1 ] && [ -d "$root/build/collx" ] && copy=no || copy=yes
if [ $copy = yes ]; then
    rm -rf --one-file-system "$root/build/collx"
    mkdir -p "$root/build/collx"
    (cd "$src" && { git ls-files; git ls-files -o --exclude-standard; } 2>/dev/null | sort -u |
         while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done |
         tar -cf - -T -) | tar -xf - -C "$root/build/collx" || exit 1
fi

[ $# = 0 ] && set -- test/debian13/checks.sh

# --- run inside: a private mount namespace, so the binds end with it
exec unshare --mount --propagation private -- sh -c '
    root=$1; shift
    # the root a mount point of its own: ip netns exec remounts it
    mount --bind "$root" "$root" && mount --rbind /proc "$root/proc" && mount --rbind /sys "$root/sys" &&
        mount --rbind /dev "$root/dev" && mount -t tmpfs tmpfs "$root/run" &&
        mount -t tmpfs tmpfs "$root/tmp" || exit 1
    mkdir -p "$root/var/cache/collx"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 ${CI:+CI=$CI} sh -c "cd /build/collx && exec \"\$@\"" sh "$@"
' sh "$root" "$@"
