#!/bin/bash
# A relocatable copy of this machine's Open MPI 4.1 runtime (Debian 12 packages),
# for running the GPU checks on a machine without Open MPI or a network:
#   contrib/ompi-bundle.sh DIR        then, there:  . DIR/env.sh; DIR/selftest.sh
# No symlinks are used inside the bundle (every library is a regular file named by its SONAME).
set -euo pipefail
[ $# = 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
B=$(mkdir -p "$1" && cd "$1" && pwd)
ML=/usr/lib/x86_64-linux-gnu
rm -rf "$B"; mkdir -p "$B/usr/bin" "$B/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" "$B/usr/share/openmpi" "$B/deps/pmix2/lib/pmix" "$B/deps/pmix2/share/pmix" "$B/etc/openmpi"
BL=$B/usr/lib/x86_64-linux-gnu
PL=$BL/openmpi/lib/openmpi3
cp_real() { install -m 0755 "$(readlink -f "$1")" "$2"; }

# binaries (mpirun/mpiexec are alternatives symlinks to orterun: copy as regular files)
for b in orterun orted ompi_info orte-info orte-clean; do cp_real /usr/bin/$b "$B/usr/bin/$b"; done
cp_real /usr/bin/orterun "$B/usr/bin/mpirun"; cp_real /usr/bin/orterun "$B/usr/bin/mpiexec"

# core libs (named by SONAME)
for l in libmpi.so.40 libopen-rte.so.40 libopen-pal.so.40 libmpi_cxx.so.40 \
         libmca_common_sm.so.40 libmca_common_ompio.so.41 libmca_common_monitoring.so.50; do
  cp_real $ML/$l "$BL/$l"; done

# plugins from the libopenmpi3 package only, minus ucx/ofi/psm/verbs/openib/netlink/oshmem ones
dpkg -L libopenmpi3 | grep '/openmpi3/mca_.*\.so$' | while read -r p; do
  n=$(basename "$p")
  case $n in
    *ucx*|*ofi*|*psm*|*openib*|*verbs*|mca_reachable_netlink.so|mca_atomic_*|mca_memheap_*|mca_scoll_*|mca_spml_*|mca_sshmem_*) continue;;
  esac
  cp_real "$p" "$PL/$n"
done

# help/data files
dpkg -L openmpi-common | grep -E '^/usr/share/openmpi/[^/]*\.(txt|ini|supp)$' | while read -r f; do
  [ -L "$f" ] && continue; install -m 0644 "$f" "$B/usr/share/openmpi/"; done
install -m 0644 /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$B/etc/openmpi/"

# PMIx (external, used by mca_pmix_ext3x): lib + its 3 plugins + help files
cp_real $ML/libpmix.so.2 "$B/deps/libpmix.so.2"
install -m 0755 $ML/pmix2/lib/pmix/*.so "$B/deps/pmix2/lib/pmix/"
install -m 0644 $ML/pmix2/share/pmix/*.txt "$B/deps/pmix2/share/pmix/"

# non-glibc dependencies of every copied ELF (transitively; ldd is transitive)
is_sys() { case $1 in linux-vdso*|ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|libutil.so*|libstdc++.so*|libgcc_s.so*|libmvec.so*) return 0;; esac; return 1; }
for f in $(find "$B" -type f \( -name '*.so*' -o -path '*/bin/*' \)); do
  file -b "$f" | grep -q ELF || continue
  ldd "$f" 2>/dev/null | awk '$2=="=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r soname path; do
  is_sys "$soname" && continue
  [ -e "$BL/$soname" ] || [ -e "$B/deps/$soname" ] && continue
  case $path in *openmpi*|*libmpi*|*libopen-*|*libmca_common*) echo "WARN: unexpected ompi dep $soname $path" >&2; continue;; esac
  cp_real "$path" "$B/deps/$soname"
done

# strip
find "$B" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec sh -c 'file -b "$1" | grep -q ELF && strip --strip-unneeded "$1"' _ {} \;


cat >"$B/env.sh" <<'ENV'
# Source this file (bash/zsh/sh) to use the relocatable Open MPI 4.1.4 bundle.
#   . /path/to/ompi/env.sh
# (plain POSIX sh/dash cannot find a sourced file's path: there, set OMPI_BUNDLE=/path/to/ompi first)
if [ -n "${BASH_SOURCE:-}" ]; then OMPI_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
elif [ -n "${ZSH_VERSION:-}" ]; then eval 'OMPI_BUNDLE=$(cd "$(dirname "${(%):-%x}")" && pwd -P)'
elif [ -z "${OMPI_BUNDLE:-}" ]; then echo "env.sh: set OMPI_BUNDLE=/path/to/ompi before sourcing from sh" >&2; return 1 2>/dev/null || exit 1
fi
export OMPI_BUNDLE

# Relocation: all Debian install dirs under /usr are re-rooted by OPAL_PREFIX
# (libdir, pkglibdir=.../openmpi/lib/openmpi3, pkgdatadir=.../share/openmpi, bindir).
# /etc/openmpi is outside the prefix, so it is redirected explicitly.
export OPAL_PREFIX="$OMPI_BUNDLE/usr"
export OPAL_SYSCONFDIR="$OMPI_BUNDLE/etc/openmpi"
export OPAL_PKGLIBDIR="$OPAL_PREFIX/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
export OPAL_PKGDATADIR="$OPAL_PREFIX/share/openmpi"
export OMPI_MCA_mca_base_component_path="$OPAL_PKGLIBDIR"
export OMPI_MCA_orte_default_hostfile="$OPAL_SYSCONFDIR/openmpi-default-hostfile"
# external PMIx 4.2 (libpmix.so.2) shipped in deps/
export PMIX_PREFIX="$OMPI_BUNDLE/deps/pmix2"
export PMIX_MCA_mca_base_component_path="$OMPI_BUNDLE/deps/pmix2/lib/pmix"
export PMIX_MCA_mca_base_component_show_load_errors=0
export PMIX_MCA_pcompress_base_silence_warning=1
# no shared-memory dstore (process-shared locks) and no munge daemon needed in a sandbox
export PMIX_MCA_gds=hash
export PMIX_MCA_psec=native

export PATH="$OPAL_PREFIX/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$OPAL_PREFIX/lib/x86_64-linux-gnu:$OMPI_BUNDLE/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# running as root (gVisor sandbox)
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# single node, shared memory only; gVisor likely lacks CMA (process_vm_readv)
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_osc='^ucx,pt2pt'
# robustness inside a sandbox: launch locally without ssh, don't bind, allow oversubscription
export OMPI_MCA_plm=isolated
export OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_MCA_orte_tmpdir_base=/tmp
export OMPI_MCA_shmem_mmap_enable_nfs_warning=0
export TMPDIR=/tmp
ENV
cat >"$B/selftest.sh" <<'SELF'
#!/bin/bash
# Sanity check of the Open MPI bundle on the target machine.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$HERE/env.sh"
rc=0
echo "== bundle: $OMPI_BUNDLE"
echo "== which mpirun: $(command -v mpirun)"
echo "== ldd libmpi.so.40:"; ldd "$OPAL_PREFIX/lib/x86_64-linux-gnu/libmpi.so.40" || rc=1
echo "== missing libs (should be empty):"
for f in "$OPAL_PREFIX"/bin/* "$OPAL_PREFIX"/lib/x86_64-linux-gnu/*.so* "$OPAL_PREFIX"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so "$OMPI_BUNDLE"/deps/*.so*; do
  ldd "$f" 2>/dev/null | grep -q 'not found' && { echo "  $f:"; ldd "$f" | grep 'not found'; rc=1; }
done
echo "== ompi_info --path (pkglibdir/pkgdatadir/sysconfdir):"
ompi_info --path pkglibdir --path pkgdatadir --path sysconfdir 2>&1 | sed 's/^/  /'
echo "== mpirun -np 2 true"
if timeout 60 mpirun -np 2 true; then echo "PASS: mpirun -np 2 true"; else echo "FAIL: mpirun -np 2 true (rc=$?)"; rc=1; fi
echo "== mpirun -np 2 hostname"
if timeout 60 mpirun -np 2 hostname; then echo "PASS: mpirun -np 2 hostname"; else echo "FAIL: mpirun -np 2 hostname"; rc=1; fi
if [ $rc -ne 0 ]; then
  echo "== network interfaces (PMIx/ORTE need at least loopback UP; fix: ip link set lo up):"
  cat /proc/net/dev 2>&1 | sed 's/^/  /'
  echo "== tmp dir: $TMPDIR"; df -h /tmp 2>&1 | sed 's/^/  /'; ls -ld /tmp /dev/shm 2>&1 | sed 's/^/  /'
  echo "== verbose retry for diagnosis"
  timeout 60 mpirun -np 2 --mca plm_base_verbose 10 --mca ess_base_verbose 10 --mca pmix_base_verbose 10 true 2>&1 | tail -60
fi
[ $rc -eq 0 ] && echo "SELFTEST PASS" || echo "SELFTEST FAIL"
exit $rc
SELF
chmod +x "$B/selftest.sh"
du -sh "$B"
