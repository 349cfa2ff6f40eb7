#!/bin/bash
# On a fresh Debian 12 machine, as root: install the dependencies, build,
# install coll/hanx and coll/adaptx into the system Open MPI, and run the
# demonstration (bcast/reduce latency, tuned/han/adapt vs hanx/adaptx on 2
# emulated nodes).  Extra arguments go to contrib/demo.sh.
set -e
cd "$(dirname "$0")/.."
contrib/build.sh
make install
echo
echo "installed: $(ompi_info | grep -E 'coll: (hanx|adaptx)' | sed 's/^ *//' | tr '\n' ';')"
echo "enable with: mpirun --mca coll_hanx_priority 100 ... (or coll_adaptx_priority)"
echo
exec contrib/demo.sh "$@"
