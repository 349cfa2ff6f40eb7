#!/bin/bash
# Dependencies (Debian packages, root) and a build in the source tree.
# Extra arguments go to ./configure on the first build.
set -e
cd "$(dirname "$0")/.."
contrib/install-deps.sh
[ -x configure ] || ./autogen.sh
[ -f Makefile ] || ./configure "$@"
make -j"$(nproc)"
