#include "ompi_config.h"

#include "coll_adaptx.h"
#include "../collx_glue/collx_glue.h"

const char *mca_coll_adaptx_component_version_string = "collx adaptx collective component";

static int adaptx_open(void);
static int adaptx_close(void);
static int adaptx_register(void);

mca_coll_adaptx_component_t mca_coll_adaptx_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
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

static int adaptx_register(void)
{
    mca_coll_adaptx_component_t *c = &mca_coll_adaptx_component;
    const mca_base_component_t *v = &c->super.collm_version;

    collx_glue_register_int(v, "priority",
                            "Priority of coll/adaptx (negative: never selected; 0: loaded but "
                            "lower than tuned; set e.g. 100 to use it)",
                            0, -1, 10000, OPAL_INFO_LVL_6, &c->priority);
    collx_glue_register_int(v, "verbose",
                            "Verbosity of coll/adaptx: 1 = selection and fallbacks, "
                            "10 = every call",
                            0, 0, 100, OPAL_INFO_LVL_9, &c->verbose);
    collx_glue_register_tree(v, "bcast_algorithm", "Tree used by MPI_Bcast: binomial",
                             COLLX_TREE_BINOMIAL, OPAL_INFO_LVL_5, &c->bcast_tree);
    collx_glue_register_int(v, "bcast_segment_size",
                            "Bytes per pipelined segment of MPI_Bcast (rounded down to whole "
                            "elements, at least one element)",
                            64 * 1024, 1, 1 << 30, OPAL_INFO_LVL_5, &c->bcast_segment_size);
    collx_glue_register_tree(v, "reduce_algorithm",
                             "Tree used by MPI_Reduce with a commutative op: binomial (a "
                             "non-commutative op always uses the order-preserving binomial tree)",
                             COLLX_TREE_BINOMIAL, OPAL_INFO_LVL_5, &c->reduce_tree);
    collx_glue_register_int(v, "reduce_segment_size",
                            "Bytes per pipelined segment of MPI_Reduce (rounded down to whole "
                            "elements, at least one element)",
                            32 * 1024, 1, 1 << 30, OPAL_INFO_LVL_5, &c->reduce_segment_size);
    collx_glue_register_int(v, "max_send_requests",
                            "Most sends one collective keeps outstanding at a time",
                            8, 1, 1 << 20, OPAL_INFO_LVL_6, &c->max_send_requests);
    collx_glue_register_int(v, "max_recv_requests",
                            "Most receives one collective keeps outstanding at a time",
                            8, 1, 1 << 20, OPAL_INFO_LVL_6, &c->max_recv_requests);
    return OMPI_SUCCESS;
}
