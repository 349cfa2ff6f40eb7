#!/bin/bash
# Prints the directory of an Open MPI source tree of the installed Debian
# Open MPI's release, for configure --with-ompi-src: Debian 13's
# libopenmpi-dev omits internal headers that coll components include
# (opal/mca/threads/pthreads/*.h).  The source package comes from the
# Debian archive the machine already uses (its URI, this release's suite),
# through a private apt source list: the machine's own apt configuration is
# not touched.  Only the headers are unpacked, once, under $COLLX_CACHE
# (default /var/cache/collx).  Root.
set -eu
cache=${COLLX_CACHE:-/var/cache/collx}
version=$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null) ||
    { echo "ompi-src.sh: libopenmpi-dev is not installed" >&2; exit 1; }
upstream=${version#*:}; upstream=${upstream%-*}
dir="$cache/openmpi-src-$version"
if [ -f "$dir/.complete" ]; then echo "$dir/openmpi-$upstream"; exit 0; fi

# the archive: the URI of the first Debian source the machine uses
uri=$(grep -hsE '^(deb |URIs:)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
          /etc/apt/sources.list.d/*.sources | grep -oE 'https?://[^ ]+' | head -1)
uri=${uri:-http://deb.debian.org/debian}
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial"
echo "deb-src $uri $suite main" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/none"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
          -o "APT::Sandbox::User=root" -qq)
apt-get "${apt_opts[@]}" update >&2
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only "openmpi=$version" >&2)
orig=$(ls "$work"/openmpi_*.orig.tar.* | head -1)
rm -rf "$dir"
mkdir -p "$dir"
tar -xf "$orig" -C "$dir" --wildcards '*.h' "openmpi-$upstream/VERSION"
touch "$dir/.complete"
echo "$dir/openmpi-$upstream"
