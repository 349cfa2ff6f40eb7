#include "ompi_config.h"

#include "coll_hanx.h"
#include "../collx_glue/collx_glue.h"

const char *mca_coll_hanx_component_version_string = "collx hanx collective component";

static int hanx_open(void);
static int hanx_close(void);
static int hanx_register(void);

mca_coll_hanx_component_t mca_coll_hanx_component = {
    .super = {
        .collm_version = {
            COLLX_COLL_BASE_VERSION,
            .mca_component_name = "hanx",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = hanx_open,
            .mca_close_component = hanx_close,
            .mca_register_component_params = hanx_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = collx_glue_init_query,
        .collm_comm_query = mca_coll_hanx_comm_query,
    },
    .priority = 0,
};

static int hanx_open(void)
{
    mca_coll_hanx_component.output = collx_glue_open_output(mca_coll_hanx_component.verbose);
    return mca_coll_hanx_tuning_open();
}

static int hanx_close(void)
{
    mca_coll_hanx_tuning_close();
    collx_glue_watch_fini();
    collx_glue_close_output(&mca_coll_hanx_component.output);
    return OMPI_SUCCESS;
}

static int hanx_register(void)
{
    mca_coll_hanx_component_t *c = &mca_coll_hanx_component;
    const mca_base_component_t *v = &c->super.collm_version;

    collx_glue_register_int(v, "priority",
                            "Priority of coll/hanx (negative: never selected; 0: loaded but "
                            "lower than tuned; set e.g. 100 to use it)",
                            0, -1, 10000, OPAL_INFO_LVL_6, &c->priority);
    collx_glue_register_int(v, "verbose",
                            "Verbosity of coll/hanx: 1 = selection, hierarchy and fallbacks, "
                            "10 = every call",
                            0, 0, 100, OPAL_INFO_LVL_9, &c->verbose);
    collx_glue_register_nodes(v, &c->ranks_per_node, &c->round_robin);
    collx_glue_register_int(v, "ranks_per_socket",
                            "0: socket groups inside a node from hwloc (see socket_level); N > 0: "
                            "impose a level of synthetic groups of N consecutive ranks of a node",
                            0, 0, 1 << 24, OPAL_INFO_LVL_6, &c->ranks_per_socket);
    collx_glue_register_int(v, "socket_level",
                            "1: add a socket level inside the nodes where some node has ranks on "
                            "several sockets; 0: nodes and leaders only",
                            1, 0, 1, OPAL_INFO_LVL_6, &c->socket_level);
    collx_glue_register_int_settable(v, "default_algorithm",
                            "What runs where no tuning rule names an algorithm: 0 hanx's built-in "
                            "choice per collective and size (for bandwidth-bound bcast, allgather "
                            "and alltoall the cost model's on the measured machine: "
                            "model_measure; where the measured link between nodes takes less "
                            "than 6x the time per byte within a node, a blocking bcast from "
                            "64 KiB and allgather(v) from 128 KiB blocks (non-blocking: "
                            "512 KiB, 256 KiB) the previous module, and on a machine kept in "
                            "model_cache an allreduce from 1 MiB (non-blocking: 512 KiB); "
                            "an allgather(v) of 32 KiB blocks or more on 2 nodes "
                            "or more and at most 64 ranks: the node ring, every rank's block "
                            "broadcast at once round the nodes), 1 the hierarchical algorithm, 2 the "
                            "previous module, 3 allreduce and reduce_scatter(_block) as split "
                            "rails (where nodes are of one size; the one flag's too, from 64 KiB "
                            "of reduce_scatter vector), allgather(v) on the node ring and the rest "
                            "hierarchical, 4 the cost model's choice "
                            "(model_* parameters; docs/cost-model.md); settable through MPI_T "
                            "(collx-tune measures with it)",
                            0, 0, 4, OPAL_INFO_LVL_6, &c->default_algorithm);
    /* the cost model's machine (default_algorithm 4), in adaptx's lp_*
     * units (bench.sh prints a machine's links in microseconds); the
     * defaults: this VM's unlimited emulated links */
    static const struct {
        const char *name, *help;
        int deflt;
    } model_vars[5] = {
        {"model_intra_alpha_ns", "latency of a message within a node, ns", 800},
        {"model_intra_beta_ps_per_byte", "time per byte within a node, ps (100 = 10 GB/s)", 100},
        {"model_inter_alpha_ns", "latency of a message between nodes, ns", 6000},
        {"model_inter_beta_ps_per_byte",
         "time per byte of a node's link, shared by its ranks sending at once, ps (400 = "
         "2.5 GB/s; 8000 = 1 Gbit/s)", 400},
        {"model_gamma_ps_per_byte", "time per byte of a local reduction, ps", 250}};
    char model_help[5][160];
    for (int i = 0; i < 5; ++i) {
        snprintf(model_help[i], sizeof(model_help[i]),
                 "Cost model (default_algorithm 4): %s; settable through MPI_T", model_vars[i].help);
        collx_glue_register_int_settable(v, model_vars[i].name, model_help[i], model_vars[i].deflt,
                                         1, INT32_MAX, OPAL_INFO_LVL_6, &c->model[i]);
    }
    collx_glue_register_int(v, "model_measure",
                            "Cost model: 1 = measure the machine when a communicator's hierarchy "
                            "is built (its rank 0 ping-pongs 8 B and streams 512 KiB to a rank "
                            "of its node and to the next node's leader, times a local sum, and "
                            "broadcasts the result; a communicator whose ranks all hold the same "
                            "last result takes it) instead of the model_* parameters; the built-in choice "
                            "(default_algorithm 0) follows the measured model for "
                            "bandwidth-bound calls that do not reduce (data of at least 16 "
                            "latencies of the link between nodes); 0 = the parameters, "
                            "and the built-in choice never asks the model",
                            1, 0, 1, OPAL_INFO_LVL_6, &c->model_measure);
    c->model_cache = "";
    (void)mca_base_component_var_register(v, "model_cache",
        "Cost model: the file where hanx keeps the machines it measured (model_measure), one "
        "line per set of nodes (each node's host name and number of ranks), so that every "
        "later run on the same nodes takes the first run's measurement instead of measuring "
        "again (docs/mca-parameters.md).  Only on a kept machine does the built-in choice "
        "let a reduction follow the measurement (on links between nodes that are not the "
        "bottleneck, allreduce from 1 MiB: the previous module), since a reduction's bits "
        "depend on its algorithm.  Empty: $XDG_CACHE_HOME/collx/machines, else "
        "$HOME/.cache/collx/machines; none: keep nothing.  Delete the file, or its line, "
        "after the network changes",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &c->model_cache);
    collx_glue_register_int_settable(v, "bcast_segment_size",
                            "Segment size in bytes of the pipelined bcast (0: tuning file, else "
                            "256 KiB from 512 KiB messages on); settable through MPI_T",
                            0, 0, INT32_MAX, OPAL_INFO_LVL_6, &c->bcast_segment_size);
    collx_glue_register_int_settable(v, "reduce_segment_size",
                            "Segment size in bytes of the pipelined reduce (0: tuning file, else "
                            "64 KiB from 512 KiB messages on); settable through MPI_T",
                            0, 0, INT32_MAX, OPAL_INFO_LVL_6, &c->reduce_segment_size);
    collx_glue_register_int_settable(v, "allreduce_segment_size",
                            "Segment size in bytes of the pipelined allreduce (0: tuning file, "
                            "else 32 KiB from 256 KiB messages on); settable through MPI_T",
                            0, 0, INT32_MAX, OPAL_INFO_LVL_6, &c->allreduce_segment_size);
    collx_glue_register_int(v, "ordered_max_bytes",
                            "Largest buffer (communicator size x message) that hanx gathers to "
                            "fold a reduction in rank order where its levels cannot keep the "
                            "order (non-commutative ops on round-robin placements; scan/exscan "
                            "there); beyond it the call goes to the previous module",
                            64 << 20, 0, INT32_MAX, OPAL_INFO_LVL_6, &c->ordered_max_bytes);
    c->tuning_file = "";
    (void)mca_base_component_var_register(v, "tuning_file",
        "JSON tuning file (docs/tuning-file.md, written by collx-tune): per collective, "
        "communicator shape and message size, the algorithm (hierarchical or previous) and "
        "segment size.  Empty: built-in defaults; a bad file is reported, then the defaults used",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->tuning_file);
    collx_glue_register_preference(v, "low_preference",
        "ompi_comm_coll_preference given to the node-level sub-communicators (components "
        "before ^ preferred, after ^ excluded; hanx is always excluded)",
        "^hanx", OPAL_INFO_LVL_5, &c->low_preference);
    collx_glue_register_preference(v, "up_preference",
        "ompi_comm_coll_preference given to the inter-node (leaders') sub-communicator "
        "(hanx is always excluded)",
        "^hanx", OPAL_INFO_LVL_5, &c->up_preference);
    collx_glue_register_int(v, "blocking_schedule",
        "How blocking bcast, reduce, allreduce and barrier run their stages on the event-driven "
        "schedules of the non-blocking calls (a stage of a segment starts when its input is "
        "done, one per communicator at a time): 0 = the innermost level's stages as blocking "
        "collectives, the others as i-collectives; 1 = every stage as an i-collective, as a "
        "non-blocking call runs them; a call of one segment runs its stages one after the "
        "other, as blocking collectives, either way",
        0, 0, 1, OPAL_INFO_LVL_5, &c->blocking_schedule);
    collx_glue_register_int(v, "root_rail",
        "Hierarchical bcast and reduce from a root that does not lead its node, on nodes of "
        "one size: 1 = on the root's rail (the ranks at the root's place of every "
        "node, made at the first blocking such call) and inside each node from or to the rank "
        "at that place, two stages; 0 = through the node leaders (the root to its leader, the "
        "leaders, the nodes), three stages",
        1, 0, 1, OPAL_INFO_LVL_5, &c->root_rail);
    /* (settable: read at every call, so that collx-tune can measure the
     * levels' trees on one communicator) */
    c->low_var = collx_glue_register_tree_setting(v, "low_algorithm",
        "Algorithm of the levels below the leaders' in bcast, reduce, allreduce (blocking and "
        "not): module = the sub-communicator's Open MPI module (low_preference), or a collx "
        "tree run by hanx itself, event-driven on the PML: binomial, in_order_binomial, binary, "
        "knomial, chain, pipeline (linear pipelining), linear, ring, recursive_doubling (topo: as "
        "binomial there).  Left at its default (set nowhere) or set to auto, an ireduce, or an "
        "iallreduce below 256 KiB, runs the collx binomial tree there, and a reduce_scatter on "
        "split rails the ring's reduce-scatter half in the node (hanx's built-in choice; "
        "elsewhere the module).  Read at every call; settable through MPI_T (collx-tune "
        "measures the levels' trees so, and hanx's built-in choice with auto)",
        "module", HANX_LEVEL_AUTO, -1, OPAL_INFO_LVL_5, &c->low_text);
    c->up_var = collx_glue_register_tree_setting(v, "up_algorithm",
        "Algorithm of the leaders' level (across nodes), as low_algorithm: module (the "
        "sub-communicator's Open MPI module, up_preference) or a collx tree.  Left at its "
        "default (set nowhere), a reduce of 64 KiB or more, an ireduce and an iallreduce below "
        "256 KiB run the collx binomial tree there, but an allreduce of 4 KiB or more and an "
        "iallreduce below 256 KiB between two nodes the collx recursive_doubling, and a "
        "reduce_scatter on split rails the ring "
        "on the rails (hanx's built-in choice); so does auto.  Read at every "
        "call; settable through MPI_T",
        "module", HANX_LEVEL_AUTO, -1, OPAL_INFO_LVL_5, &c->up_text);
    collx_glue_register_tree_setting(v, "flat_algorithm",
        "none, or a collx tree that runs every bcast, reduce and allreduce (blocking and not) "
        "of a communicator as one flat tree over all its ranks, where no tuning rule says "
        "otherwise: binomial, in_order_binomial, binary, knomial, chain, pipeline (linear "
        "pipelining), linear, topo (on hanx's node map), ring, recursive_doubling.  Read when a "
        "communicator's hierarchy "
        "is built; settable through MPI_T (collx-tune measures the flat trees so)",
        "none", NULL, -1, OPAL_INFO_LVL_5, &c->flat_text);
    collx_glue_report_params(v);
    return OMPI_SUCCESS;
}
