#!/bin/bash
# Debian packages collx needs to build, test and demonstrate (root):
# Debian 12 (Open MPI 4.1) or Debian 13 (Open MPI 5.0, whose internal
# headers also need PMIx's, and a source tree: contrib/ompi-src.sh).
set -e
pkgs="build-essential autoconf automake libtool pkg-config
      libopenmpi-dev openmpi-bin libhwloc-dev check nlohmann-json3-dev gnuplot-nox
      iproute2 util-linux coreutils python3"
release=$(. /etc/os-release 2>/dev/null && echo "${VERSION_ID:-}")
case "$release" in
12|"") ;;
*) pkgs="$pkgs libpmix-dev xz-utils" ;;
esac
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    [ "$(id -u)" = 0 ] || { echo "install-deps.sh: run as root to install:$missing" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing
fi
echo "install-deps.sh: all packages present"
