#include "ompi_config.h"

#include <stdio.h>

#include "coll_adaptx.h"
#include "../collx_glue/collx_glue.h"

const char *mca_coll_adaptx_component_version_string = "collx adaptx collective component";

static int adaptx_open(void);
static int adaptx_close(void);
static int adaptx_register(void);

mca_coll_adaptx_component_t mca_coll_adaptx_component = {
    .super = {
        .collm_version = {
            COLLX_COLL_BASE_VERSION,
            .mca_component_name = "adaptx",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = adaptx_open,
            .mca_close_component = adaptx_close,
            .mca_register_component_params = adaptx_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = collx_glue_init_query,
        .collm_comm_query = mca_coll_adaptx_comm_query,
    },
    .priority = 0,
};

static int adaptx_open(void)
{
    mca_coll_adaptx_component.output = collx_glue_open_output(mca_coll_adaptx_component.verbose);
    return OMPI_SUCCESS;
}

static int adaptx_close(void)
{
    collx_glue_close_output(&mca_coll_adaptx_component.output);
    return OMPI_SUCCESS;
}

static const int default_tree[ADAPTX_NCOLLS] = {COLLX_TREE_BINOMIAL, COLLX_TREE_BINOMIAL,
                                                 COLLX_TREE_BINOMIAL};

static int adaptx_register(void)
{
    mca_coll_adaptx_component_t *c = &mca_coll_adaptx_component;
    const mca_base_component_t *v = &c->super.collm_version;
    char name[64], help[768];

    collx_glue_register_int(v, "priority",
                            "Priority of coll/adaptx (negative: never selected; 0: loaded but "
                            "lower than tuned; set e.g. 100 to use it)",
                            0, -1, 10000, OPAL_INFO_LVL_6, &c->priority);
    collx_glue_register_int(v, "verbose",
                            "Verbosity of coll/adaptx: 1 = selection and fallbacks, "
                            "10 = every call",
                            0, 0, 100, OPAL_INFO_LVL_9, &c->verbose);
    for (int k = 0; k < ADAPTX_NCOLLS; ++k) {
        const char *n = collx_coll_name(k);
        snprintf(name, sizeof(name), "%s_algorithm", n);
        snprintf(help, sizeof(help),
                 "Tree of MPI_%s and its non-blocking form: binomial, in_order_binomial, "
                 "binary, knomial (radix = fanout), chain (fanout chains), pipeline (one "
                 "chain: linear pipelining), linear, topo (node leaders first, then within "
                 "each node), ring (allreduce: reduce-scatter + allgather around the ranks; "
                 "otherwise the pipeline chain), recursive_doubling (allreduce: log2 P "
                 "pairwise exchanges; otherwise binomial).%s",
                 n, k == ADAPTX_BCAST ? ""
                                      : " A non-commutative op uses the order-preserving "
                                        "variant of the same shape (binomial for topo).");
        collx_glue_register_tree(v, name, help, default_tree[k], OPAL_INFO_LVL_5,
                                 &c->coll[k].tree);
        snprintf(name, sizeof(name), "%s_segment_size", n);
        snprintf(help, sizeof(help),
                 "Bytes per pipelined segment of MPI_%s (whole elements, at least one). 0 = "
                 "automatic: for pipeline/chain the LP optimum sqrt(n*alpha/((P-2)*beta)) "
                 "from lp_alpha_ns and lp_beta_ps_per_byte, else %d",
                 n, (int)collx_tree_segment_bytes(k, COLLX_TREE_BINOMIAL, 0, 0, 0, 0, 0));
        collx_glue_register_int(v, name, help, 0, 0, 1 << 30, OPAL_INFO_LVL_5,
                                &c->coll[k].segment_size);
        snprintf(name, sizeof(name), "%s_fanout", n);
        snprintf(help, sizeof(help),
                 "Radix of the knomial tree / number of chains of the chain tree for MPI_%s", n);
        collx_glue_register_int(v, name, help, 4, 1, 1024, OPAL_INFO_LVL_6, &c->coll[k].fanout);
    }
    collx_glue_register_int(v, "max_send_requests",
                            "Most sends one collective keeps outstanding at a time (per "
                            "direction for allreduce)",
                            8, 1, 1 << 20, OPAL_INFO_LVL_6, &c->max_send_requests);
    collx_glue_register_int(v, "max_recv_requests",
                            "Most receives one collective keeps outstanding at a time (per "
                            "direction for allreduce)",
                            8, 1, 1 << 20, OPAL_INFO_LVL_6, &c->max_recv_requests);
    collx_glue_register_nodes(v, &c->ranks_per_node, &c->round_robin); /* (the topo tree's) */
    collx_glue_register_int(v, "lp_alpha_ns",
                            "LP cost model: fixed cost of one segment on a link (per-message "
                            "overhead), nanoseconds; sets the automatic segment size of "
                            "pipeline and chain trees",
                            COLLX_LP_ALPHA_NS_DEFAULT, 1, 1 << 30, OPAL_INFO_LVL_6,
                            &c->lp_alpha_ns);
    collx_glue_register_int(v, "lp_beta_ps_per_byte",
                            "LP cost model: time per byte on a link, picoseconds (8000 = "
                            "1 Gbit/s, 80 = 100 Gbit/s)",
                            COLLX_LP_BETA_PS_DEFAULT, 1, 1 << 30, OPAL_INFO_LVL_6,
                            &c->lp_beta_ps_per_byte);
    collx_glue_report_params(v);
    return OMPI_SUCCESS;
}
