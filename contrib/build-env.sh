# Sourced by the contrib scripts that run our components from a build tree
# ($build): load the build's components in front of Open MPI's own (the
# first copy in the path wins; the system directory must stay in it), and
# no tuning file from the caller's environment (it would change what the
# plain hanx contender / the tuner measures).
use_build_components() {
    local pkglibdir
    pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
    [ -f "$build/.libs/mca_coll_hanx.so" ] &&
        export OMPI_MCA_mca_base_component_path="$build/.libs:$pkglibdir" \
            PMIX_MCA_mca_base_component_show_load_errors=0  # Open MPI 5's PMIx reads the path too
    unset OMPI_MCA_coll_hanx_tuning_file
}
