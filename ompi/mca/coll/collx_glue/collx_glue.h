/*
 * Glue shared by the collx components: Open MPI's PML as a collx
 * transport, datatype descriptions for the core, result mapping,
 * show_help registration and MCA-variable helpers.  C, because Open MPI's
 * internal headers do not compile as C++.
 */
#ifndef COLLX_GLUE_H
#define COLLX_GLUE_H

#include "ompi_config.h"

#include "collx/collx.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/coll.h"
#include "opal/mca/base/mca_base_var.h"

BEGIN_C_DECLS

/* ------------------------------------------------ Open MPI 4.1 and 5.0
 * What differs between the series the glue builds against, in one place.
 * The coll framework's interface version: 2.0.0 in 4.1, 2.4.0 in 5.0
 * (same entry points; 5.0 adds the MPI-4 persistent ones). */
#if defined(MCA_COLL_BASE_VERSION_2_4_0)
#define COLLX_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
#define COLLX_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif
/* The communicator's (local) context id, for log messages. */
#if OMPI_MAJOR_VERSION >= 5
#define COLLX_COMM_CID(comm) ((int)ompi_comm_get_local_cid(comm))
#else
#define COLLX_COMM_CID(comm) ((int)ompi_comm_get_cid(comm))
#endif
/* The component structure's symbol, the one a component DSO exports
 * (4.1's OMPI_MODULE_DECLSPEC is gone in 5.0). */
#define COLLX_COMPONENT_EXPORT __attribute__((visibility("default")))
/* 5.0 runs persistent collectives (MPI_Bcast_init, ...) through coll. */
#define COLLX_OMPI_5 (OMPI_MAJOR_VERSION >= 5)

/* Fill `t` with the PML transport over `comm`. */
void collx_glue_transport(collx_transport_t *t, struct ompi_communicator_t *comm);

/* Describe `dt` for the core. */
void collx_glue_dtype(collx_dtype_t *d, struct ompi_datatype_t *dt);

/* Start the core's reduction (all: allreduce, root ignored) of MPI
 * arguments over transport t: MPI_IN_PLACE becomes the core's NULL send
 * buffer (at the root only, for a reduce) and the op's commutativity is
 * asked.  Returns a COLLX_* code. */
int collx_glue_reduce_start(const collx_transport_t *t, const collx_dtype_t *d, const void *sbuf,
                            void *rbuf, size_t count, struct ompi_op_t *op, int root, int all,
                            int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                            collx_op_t **out);

/* Drive `op` to completion through opal_progress, free it and return an
 * OMPI error code. */
int collx_glue_wait(collx_op_t *op);

/* A non-blocking collective's request: an nbc request (the MPI layer may
 * attach datatypes to it) driven by a collx operation, completed by the
 * operation's notification, freed by MPI_Wait/Test/Request_free. */
typedef struct collx_request_t {
    ompi_coll_base_nbc_request_t super;
    collx_op_t *op;
    /* persistent requests only: starts the operation again at each
     * MPI_Start (collx_*_start with `notify` and &req->op), and its
     * arguments, free()d with the request */
    int (*restart)(struct collx_request_t *req, const collx_notify_t *notify);
    /* the call's own data, released with the request: by free_args when
     * set, else by free() */
    void *args;
    void (*free_args)(void *args);
} collx_request_t;
OBJ_CLASS_DECLARATION(collx_request_t);

/* A new active collective request and the notification that completes it;
 * pass `notify` to collx_*_start with &req->op as the operation out-param.
 * On a failed start call collx_glue_request_abandon(req) (which releases
 * its args too). */
collx_request_t *collx_glue_request_new(collx_notify_t *notify);
void collx_glue_request_abandon(collx_request_t *req);

/* The end of a call started on `r` (collx status `started`): abandoned
 * (and that status returned as an OMPI code) if it did not start; else
 * handed to the caller in *req, or waited for and freed where req is NULL
 * (a blocking call). */
int collx_glue_request_finish(collx_request_t *r, int started, ompi_request_t **req);

/* A persistent collective request (MPI_Bcast_init, ...; MPIX_ in 4.1),
 * inactive: every MPI_Start calls restart(req, notify), which starts the
 * operation; MPI_Wait/Test complete it, MPI_Request_free frees it and
 * `args`.  NULL (args not taken) when out of memory. */
typedef int (*collx_restart_fn)(collx_request_t *req, const collx_notify_t *notify);
collx_request_t *collx_glue_persistent_new(collx_restart_fn restart, void *args);

/* Sub-requests of collx schedules (collx_pipeline_start): `req`, a
 * non-blocking collective a step started on a sub-communicator, is watched
 * from Open MPI's progress engine; once complete it is freed and
 * collx_xfer_complete(token, status) reports it.  Watching polls the
 * requests' completion flags (no completion callback: a callback would run
 * inside the progress of the module that owns the request).  The progress
 * function is registered at the first watch; collx_glue_watch_fini (at
 * component close) unregisters it. */
int collx_glue_watch(ompi_request_t *req, void *token);
void collx_glue_watch_fini(void);

/* Node number of every rank of `comm` (the lowest rank of its node): the
 * one node map of both components (adaptx's topo tree, hanx's node level).
 * From Open MPI's locality information and one point-to-point allgather on
 * `comm` (call it at the same point on all ranks, inside a collective); or,
 * with ranks_per_node > 0, synthetic nodes of that many consecutive ranks
 * (round_robin: rank r on node r mod nodes, as mpirun --map-by node places
 * them), computed locally.  malloc'd; NULL on failure. */
int *collx_glue_node_map(struct ompi_communicator_t *comm, int ranks_per_node, int round_robin);

/* Register the component's ranks_per_node and round_robin, the node map's
 * synthetic nodes (the same two parameters in hanx and adaptx). */
void collx_glue_register_nodes(const mca_base_component_t *comp, int *ranks_per_node,
                               int *round_robin);

/* Map a collx core return code to an OMPI one. */
int collx_glue_rc(int collx_rc);

/* Component open/close helpers: an opal_output stream when verbose > 0
 * (else -1), and the help files registered. */
int collx_glue_open_output(int verbose);
void collx_glue_close_output(int *output);

/* collm_init_query of both components: nothing to check. */
int collx_glue_init_query(bool enable_progress_threads, bool enable_mpi_threads);

/* What ran before a collx module on a communicator, per collective it
 * provides: the cases it does not handle go there. */
#define COLLX_PREV_APIS(X)                                                                 \
    X(bcast) X(reduce) X(allreduce) X(ibcast) X(ireduce) X(iallreduce) X(ibarrier)        \
    X(allgather) X(iallgather)                                                             \
    X(allgatherv) X(gather) X(gatherv) X(scatter) X(scatterv) X(barrier) X(reduce_scatter) \
    X(reduce_scatter_block) X(ireduce_scatter) X(ireduce_scatter_block) X(scan) X(exscan)  \
    X(alltoall) X(alltoallv) X(bcast_init)                                                 \
    X(reduce_init) X(allreduce_init)
typedef struct collx_prev_t {
#define COLLX_PREV_FIELD(api)                                                              \
    mca_coll_base_module_##api##_fn_t api;                                                 \
    mca_coll_base_module_t *api##_module;
    COLLX_PREV_APIS(COLLX_PREV_FIELD)
#undef COLLX_PREV_FIELD
} collx_prev_t;

/* Release every module retained in `prev` (module destructors). */
void collx_glue_release_prev(collx_prev_t *prev);

/* In module enable: remember (and retain) the module that provided `api`
 * before us on `comm`, for the cases we hand back.  Fails the enable when
 * there is none. */
#define COLLX_SAVE_PREV(prev, comm, api)                                                  \
    do {                                                                                  \
        if (NULL == (comm)->c_coll->coll_##api##_module) return OMPI_ERROR;               \
        (prev).api = (comm)->c_coll->coll_##api;                                          \
        (prev).api##_module = (comm)->c_coll->coll_##api##_module;                        \
        OBJ_RETAIN((prev).api##_module);                                                  \
    } while (0)

/* The same where a previous module is not required: none leaves the
 * entry NULL (persistent collectives, which not every stack provides). */
#define COLLX_SAVE_PREV_IF_ANY(prev, comm, api)                                           \
    do {                                                                                  \
        (prev).api = (comm)->c_coll->coll_##api;                                          \
        (prev).api##_module = (comm)->c_coll->coll_##api##_module;                        \
        if (NULL != (prev).api##_module) OBJ_RETAIN((prev).api##_module);                 \
    } while (0)

/* Make our help files known to opal_show_help (idempotent). */
void collx_glue_register_help(void);

/* Register an int MCA variable of `comp` whose value must lie in
 * [min, max]; an out-of-range user value is replaced by the default and
 * reported by collx_glue_report_params; so is a value from the environment that is
 * not a number or overflows (which the MCA base accepts silently). */
int collx_glue_register_int(const mca_base_component_t *comp, const char *name, const char *help,
                            int deflt, int min, int max, mca_base_var_info_lvl_t level,
                            int *storage);
/* The same, also writable at run time through MPI_T (MPI_T_cvar_write, on
 * every rank with the same value): for values read at each call. */
int collx_glue_register_int_settable(const mca_base_component_t *comp, const char *name,
                                     const char *help, int deflt, int min, int max,
                                     mca_base_var_info_lvl_t level, int *storage);

/* Whether this process is rank 0 of MPI_COMM_WORLD, or not started by
 * mpirun (ompi_info, singletons). */
int collx_glue_first_rank(void);

/* A show_help message of help-coll-collx.txt about the job's configuration
 * (the same on every rank), `nargs` (at most 6) string arguments: shown by
 * the first rank only, rendered in show_help style and written to its
 * stderr.  Relayed through Open MPI 4.1.4's show_help channel, such
 * messages sent while MPI_Init runs were garbled and dropped in about half
 * of the runs with 4 ranks ("ORTE_ERROR_LOG: Data unpack would read past
 * end of buffer in file orte/util/show_help.c"). */
void collx_glue_help_job(const char *topic, int nargs, ...);

/* At the end of a component's register function: report, in one show_help
 * message, every value the register helpers rejected and every
 * OMPI_MCA_<type>_<component>_* variable in the environment -- where
 * mpirun also puts --mca options for the ranks -- that names none of the
 * component's parameters (a typo would otherwise be silently ignored).
 * Shown by the first rank only (collx_glue_first_rank). */
void collx_glue_report_params(const mca_base_component_t *comp);

/* Register a string MCA variable naming a tree (collx_tree_name); an
 * unknown name is reported and the default used.  *storage receives the
 * collx_tree_kind_t value. */
int collx_glue_register_tree(const mca_base_component_t *comp, const char *name, const char *help,
                             int deflt, mca_base_var_info_lvl_t level, int *storage);

/* The same, with one more choice beside the trees: `extra` (e.g.
 * "module"), stored as -1. */
int collx_glue_register_tree_or(const mca_base_component_t *comp, const char *name,
                                const char *help, const char *extra, int deflt,
                                mca_base_var_info_lvl_t level, int *storage);

/* The same, settable through MPI_T (scope: the same on every rank): *text
 * receives the address of the variable's current text, which the
 * component reads where it uses the choice (collx_glue_tree_choice); a bad
 * start-up value is reported as for collx_glue_register_tree_or.  `alias`
 * (or NULL): one more word the start-up check takes, which the component
 * reads itself (hanx's "auto"). */
int collx_glue_register_tree_setting(const mca_base_component_t *comp, const char *name,
                                     const char *help, const char *extra, const char *alias,
                                     int deflt, mca_base_var_info_lvl_t level, char *const **text);

/* What `text` names: a tree kind, -1 for `extra` (case-insensitive), -2
 * for anything else. */
int collx_glue_tree_choice(const char *text, const char *extra);

/* 1 when the MCA variable of index `idx` still holds its default value
 * (set neither on the command line, the environment, a file nor through
 * MPI_T), 0 otherwise or when idx is not a variable. */
int collx_glue_var_is_default(int idx);

/* Register a string MCA variable holding an ompi_comm_coll_preference list
 * for the component's own sub-communicators ("a,b,^c": a and b preferred,
 * c excluded).  A list that prefers the component or does not exclude it
 * (it would recurse into itself) is rewritten to exclude it, and that is
 * reported by collx_glue_report_params.  Settable through MPI_T: the
 * component applies collx_glue_exclude_self to the value it reads. */
int collx_glue_register_preference(const mca_base_component_t *comp, const char *name,
                                   const char *help, const char *deflt,
                                   mca_base_var_info_lvl_t level, char **storage);

/* The preference list `v` as it must be for the sub-communicators of
 * component `self` (written to out): itself unless it prefers `self` or
 * does not exclude it, else the preferred list without `self`, then
 * `self` excluded ("tuned,hanx" -> "tuned,^hanx", "" -> "^hanx").
 * Returns 1 when it had to be rewritten. */
int collx_glue_exclude_self(const char *v, const char *self, char *out, size_t size);

END_C_DECLS

#endif
