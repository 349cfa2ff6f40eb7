#!/bin/bash
# Dependencies (Debian packages, root) and a build in the source tree.
# Extra arguments go to ./configure on the first build.  With Open MPI 5
# (Debian 13) the source tree of the installed release is fetched for the
# internal headers Debian omits (contrib/ompi-src.sh), unless
# --with-ompi-src is given.
set -e
cd "$(dirname "$0")/.."
contrib/install-deps.sh
[ -x configure ] || ./autogen.sh
if [ ! -f Makefile ]; then
    major=$(ompi_info --version 2>/dev/null | sed -n 's/.*v\([0-9]*\)\..*/\1/p' | head -1)
    case " $* " in
    *" --with-ompi-src"*) ;;
    *) [ "${major:-4}" -ge 5 ] && set -- --with-ompi-src="$(contrib/ompi-src.sh)" "$@" ;;
    esac
    ./configure "$@"
fi
make -j"$(nproc)"
