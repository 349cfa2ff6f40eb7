#include "collx_glue.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi.h"
#include "ompi/mca/coll/base/coll_base_functions.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

/* ------------------------------------------------------------ transport */

static int xfer_done(ompi_request_t *req)
{
    void *token = req->req_complete_cb_data;
    int status = req->req_status.MPI_ERROR;
    /* We own the request: release it here and tell the PML we did (return
     * 1), so nobody waits on it. */
    ompi_request_free(&req);
    collx_xfer_complete(token, status == MPI_SUCCESS ? 0 : status);
    return 1;
}

static int pml_isend(void *ctx, const void *buf, size_t count, const collx_dtype_t *dt, int peer,
                     int tag, void *token)
{
    ompi_request_t *req = NULL;
    int rc = MCA_PML_CALL(isend(buf, (int)count, (ompi_datatype_t *)dt->handle, peer, tag,
                                MCA_PML_BASE_SEND_STANDARD, (ompi_communicator_t *)ctx, &req));
    if (OMPI_SUCCESS != rc) return rc;
    ompi_request_set_callback(req, xfer_done, token);
    return 0;
}

static int pml_irecv(void *ctx, void *buf, size_t count, const collx_dtype_t *dt, int peer, int tag,
                     void *token)
{
    ompi_request_t *req = NULL;
    int rc = MCA_PML_CALL(irecv(buf, (int)count, (ompi_datatype_t *)dt->handle, peer, tag,
                                (ompi_communicator_t *)ctx, &req));
    if (OMPI_SUCCESS != rc) return rc;
    ompi_request_set_callback(req, xfer_done, token);
    return 0;
}

static int local_reduce(void *ctx, const void *in, void *inout, size_t count,
                        const collx_dtype_t *dt, void *op)
{
    (void)ctx;
    return PMPI_Reduce_local(in, inout, (int)count, (MPI_Datatype)dt->handle, (MPI_Op)op);
}

static int local_copy(void *ctx, void *dst, const void *src, size_t count, const collx_dtype_t *dt)
{
    (void)ctx;
    return ompi_datatype_copy_content_same_ddt((ompi_datatype_t *)dt->handle, count, (char *)dst,
                                               (char *)src);
}

void collx_glue_transport(collx_transport_t *t, struct ompi_communicator_t *comm)
{
    t->ctx = comm;
    t->rank = ompi_comm_rank(comm);
    t->size = ompi_comm_size(comm);
    t->isend = pml_isend;
    t->irecv = pml_irecv;
    t->reduce_local = local_reduce;
    t->copy = local_copy;
}

void collx_glue_dtype(collx_dtype_t *d, struct ompi_datatype_t *dt)
{
    ptrdiff_t lb, extent, tlb, textent;
    size_t size;
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &tlb, &textent);
    d->handle = dt;
    d->size = size;
    d->extent = extent;
    d->true_lb = tlb;
    d->true_extent = textent;
}

int *collx_glue_node_map(struct ompi_communicator_t *comm, int ranks_per_node, int round_robin)
{
    const int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    if (ranks_per_node > 0) { /* synthetic nodes: no communication */
        int *map = malloc((size_t)size * sizeof(int));
        if (NULL == map) return NULL;
        const int nodes = (size + ranks_per_node - 1) / ranks_per_node;
        for (int r = 0; r < size; ++r)
            map[r] = round_robin ? r % nodes : r / ranks_per_node * ranks_per_node;
        return map;
    }
    int mine = me;
    for (int r = 0; r < me; ++r) {
        ompi_proc_t *p = ompi_comm_peer_lookup(comm, r);
        if (p && OPAL_PROC_ON_LOCAL_NODE(p->super.proc_flags)) {
            mine = r;
            break;
        }
    }
    int *all = malloc((size_t)size * sizeof(int));
    if (NULL == all) return NULL;
    /* point to point (the ring of coll/base), not the communicator's
     * allgather: that may be a module that builds a hierarchy of its own at
     * first use, nested inside our call (upstream han, on by default in
     * Open MPI 5.0, hung there on 2 nodes) */
    int rc = ompi_coll_base_allgather_intra_ring(&mine, 1, MPI_INT, all, 1, MPI_INT, comm,
                                                 comm->c_coll->coll_allgather_module);
    if (OMPI_SUCCESS != rc) {
        free(all);
        return NULL;
    }
    return all;
}

int collx_glue_rc(int rc)
{
    switch (rc) {
    case COLLX_OK: return OMPI_SUCCESS;
    case COLLX_ERR_NOMEM: return OMPI_ERR_OUT_OF_RESOURCE;
    case COLLX_ERR_ARG: return OMPI_ERR_BAD_PARAM;
    case COLLX_ERR_UNSUPPORTED: return OMPI_ERR_NOT_SUPPORTED;
    default: return OMPI_ERROR;
    }
}

int collx_glue_reduce_start(const collx_transport_t *t, const collx_dtype_t *d, const void *sbuf,
                            void *rbuf, size_t count, struct ompi_op_t *op, int root, int all,
                            int tag, const collx_tuning_t *tun, const collx_notify_t *notify,
                            collx_op_t **out)
{
    int commute = 0;
    PMPI_Op_commutative((MPI_Op)op, &commute);
    const int in_place = MPI_IN_PLACE == sbuf && (all || t->rank == root);
    const void *mine = in_place ? NULL : sbuf;
    if (all)
        return collx_allreduce_start(t, mine, rbuf, count, d, op, commute, tag, tun, notify, out);
    return collx_reduce_start(t, mine, rbuf, count, d, op, commute, root, tag, tun, notify, out);
}

int collx_glue_wait(collx_op_t *op)
{
    int status = COLLX_OK;
    while (!collx_op_test(op, &status)) opal_progress();
    collx_op_free(op);
    return collx_glue_rc(status);
}

/* ------------------------------------------------------------- requests */

OBJ_CLASS_INSTANCE(collx_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

static void request_done(void *ctx, int status)
{
    collx_request_t *r = ctx;
    r->super.super.req_status.MPI_ERROR = COLLX_OK == status ? MPI_SUCCESS : MPI_ERR_INTERN;
    ompi_request_complete(&r->super.super, true);
}

static int request_free(ompi_request_t **request)
{
    collx_request_t *r = (collx_request_t *)*request;
    /* MPI forbids freeing an active collective request (MPI-3.1 5.12) */
    if (!REQUEST_COMPLETE(*request)) return MPI_ERR_REQUEST;
    if (r->op) collx_op_free(r->op);
    r->op = NULL;
    if (r->free_args) r->free_args(r->args);
    else free(r->args);
    r->args = NULL;
    OMPI_REQUEST_FINI(*request);
    (*request)->req_state = OMPI_REQUEST_INVALID;
    OBJ_RELEASE(*request);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

static collx_request_t *request_new(bool persistent)
{
    collx_request_t *r = OBJ_NEW(collx_request_t);
    if (NULL == r) return NULL;
    ompi_request_t *q = &r->super.super;
    OMPI_REQUEST_INIT(q, persistent); /* persistent: inactive, complete */
    q->req_type = OMPI_REQUEST_COLL;
    q->req_free = request_free;
    q->req_cancel = request_cancel;
    q->req_status.MPI_SOURCE = 0;
    q->req_status.MPI_TAG = 0;
    q->req_status.MPI_ERROR = MPI_SUCCESS;
    q->req_status._cancelled = 0;
    q->req_status._ucount = 0;
    r->op = NULL;
    r->restart = NULL;
    r->args = NULL;
    r->free_args = NULL;
    return r;
}

collx_request_t *collx_glue_request_new(collx_notify_t *notify)
{
    collx_request_t *r = request_new(false);
    if (NULL == r) return NULL;
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    notify->fn = request_done;
    notify->ctx = r;
    return r;
}

/* MPI_Start(all) of our persistent requests: the last run's operation is
 * finished (the request is inactive), free it and start the next. */
static int persistent_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        collx_request_t *r = (collx_request_t *)requests[i];
        ompi_request_t *q = &r->super.super;
        if (r->op) collx_op_free(r->op);
        r->op = NULL;
        q->req_complete = REQUEST_PENDING;
        q->req_state = OMPI_REQUEST_ACTIVE;
        q->req_status.MPI_ERROR = MPI_SUCCESS;
        collx_notify_t n = {request_done, r};
        int rc = r->restart(r, &n);
        if (OMPI_SUCCESS != rc) { /* not started: inactive again */
            q->req_state = OMPI_REQUEST_INACTIVE;
            q->req_complete = REQUEST_COMPLETED;
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

collx_request_t *collx_glue_persistent_new(collx_restart_fn restart, void *args)
{
    collx_request_t *r = request_new(true);
    if (NULL == r) return NULL;
    r->super.super.req_start = persistent_start;
    r->restart = restart;
    r->args = args;
    return r;
}

void collx_glue_request_abandon(collx_request_t *r)
{
    if (r->free_args) r->free_args(r->args);
    else free(r->args);
    r->args = NULL;
    OMPI_REQUEST_FINI(&r->super.super);
    r->super.super.req_state = OMPI_REQUEST_INVALID;
    OBJ_RELEASE(r);
}

int collx_glue_request_finish(collx_request_t *r, int started, ompi_request_t **req)
{
    if (COLLX_OK != started) {
        collx_glue_request_abandon(r);
        return collx_glue_rc(started);
    }
    ompi_request_t *q = &r->super.super;
    if (NULL == req) return ompi_request_wait(&q, MPI_STATUS_IGNORE);
    *req = q;
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------- watched sub-requests */

typedef struct watched {
    ompi_request_t *req;
    void *token;
} watched_t;

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static watched_t *watch_list = NULL;
static size_t watch_n = 0, watch_cap = 0;
static volatile int watch_registered = 0;

static int watch_progress(void)
{
    if (0 == watch_n) return 0; /* (a racy read: the next call sees it) */
    watched_t done[64];
    size_t nd = 0;
    if (pthread_mutex_trylock(&watch_lock)) return 0; /* another thread polls */
    for (size_t i = 0; i < watch_n && nd < 64;) {
        if (REQUEST_COMPLETE(watch_list[i].req)) {
            done[nd++] = watch_list[i];
            watch_list[i] = watch_list[--watch_n];
        } else {
            ++i;
        }
    }
    pthread_mutex_unlock(&watch_lock);
    /* completions start the next steps, which watch new requests: unlocked */
    for (size_t i = 0; i < nd; ++i) {
        int status = done[i].req->req_status.MPI_ERROR;
        ompi_request_free(&done[i].req);
        collx_xfer_complete(done[i].token, MPI_SUCCESS == status ? 0 : status);
    }
    return (int)nd;
}

int collx_glue_watch(ompi_request_t *req, void *token)
{
    pthread_mutex_lock(&watch_lock);
    if (!watch_registered) {
        int rc = opal_progress_register(watch_progress);
        if (OPAL_SUCCESS != rc) {
            pthread_mutex_unlock(&watch_lock);
            return rc;
        }
        watch_registered = 1;
    }
    if (watch_n == watch_cap) {
        size_t cap = watch_cap ? 2 * watch_cap : 64;
        watched_t *l = realloc(watch_list, cap * sizeof(*l));
        if (NULL == l) {
            pthread_mutex_unlock(&watch_lock);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        watch_list = l;
        watch_cap = cap;
    }
    watch_list[watch_n].req = req;
    watch_list[watch_n].token = token;
    ++watch_n;
    pthread_mutex_unlock(&watch_lock);
    return OMPI_SUCCESS;
}

void collx_glue_watch_fini(void)
{
    if (watch_registered) opal_progress_unregister(watch_progress);
    watch_registered = 0;
    free(watch_list);
    watch_list = NULL;
    watch_n = watch_cap = 0;
}

/* ------------------------------------------------------------ show_help */

void collx_glue_register_help(void)
{
    static int done = 0;
    if (done) return;
    done = 1;
#ifdef COLLX_HELP_DIR
    opal_show_help_add_dir(COLLX_HELP_DIR);
#endif
#ifdef COLLX_SRC_HELP_DIR
    opal_show_help_add_dir(COLLX_SRC_HELP_DIR);
#endif
}

/* ------------------------------------------------------ component helpers */

int collx_glue_open_output(int verbose)
{
    collx_glue_register_help();
    if (verbose <= 0) return -1;
    int output = opal_output_open(NULL);
    opal_output_set_verbosity(output, verbose);
    return output;
}

void collx_glue_close_output(int *output)
{
    if (*output >= 0) opal_output_close(*output);
    *output = -1;
}

void collx_glue_release_prev(collx_prev_t *prev)
{
#define COLLX_RELEASE(api)                                                                 \
    if (prev->api##_module) OBJ_RELEASE(prev->api##_module);                              \
    prev->api##_module = NULL;
    COLLX_PREV_APIS(COLLX_RELEASE)
#undef COLLX_RELEASE
}

int collx_glue_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    return OMPI_SUCCESS;
}

/* --------------------------------------------------------- MCA variables */

/* Problems found while a component registers its variables, shown in one
 * show_help message by collx_glue_report_params (one message per bad
 * parameter would each repeat the same explanation). */
static char problems[8192];
static size_t problems_len = 0;

static void add_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add_problem(const char *fmt, ...)
{
    if (problems_len >= sizeof(problems) - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(problems + problems_len, sizeof(problems) - problems_len, fmt, ap);
    va_end(ap);
    if (n > 0) problems_len += (size_t)n;
    if (problems_len >= sizeof(problems)) problems_len = sizeof(problems) - 1;
}

int collx_glue_first_rank(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    return NULL == r || 0 == strcmp(r, "0");
}

#define COLLX_HELP_ARGS 6

void collx_glue_help_job(const char *topic, int nargs, ...)
{
    if (!collx_glue_first_rank()) return;
    char *a[COLLX_HELP_ARGS] = {NULL};
    va_list ap;
    va_start(ap, nargs);
    for (int k = 0; k < nargs && k < COLLX_HELP_ARGS; ++k) a[k] = va_arg(ap, char *);
    va_end(ap);
    for (int k = 0; k < COLLX_HELP_ARGS; ++k)
        if (NULL == a[k]) a[k] = "";
    collx_glue_register_help();
    /* rendered here and written to our stderr (which mpirun forwards
     * reliably), not relayed through ORTE's show_help channel */
    char *text = opal_show_help_string("help-coll-collx.txt", topic, true, a[0], a[1], a[2], a[3],
                                       a[4], a[5]);
    if (NULL == text) return;
    fputs(text, stderr);
    fflush(stderr);
    free(text);
}

/* The value as the user wrote it, when it came from the environment (where
 * mpirun also puts --mca options for the ranks); NULL otherwise. */
static const char *user_text(const mca_base_component_t *comp, const char *name)
{
    char env[256];
    snprintf(env, sizeof(env), "OMPI_MCA_%s_%s_%s", comp->mca_type_name, comp->mca_component_name,
             name);
    return getenv(env);
}

/* Strictly parse an integer as Open MPI's MCA base accepts it (decimal,
 * 0x hex or 0 octal, an optional k/m/g suffix): 0 and *out on success, -1
 * when it is not a number (the MCA base silently reads "abc" as 0 and "12abc"
 * as 12), -2 when it does not fit in 64 bits (the MCA base wraps it). */
static int parse_int(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (end == s) return -1;
    if (ERANGE == errno) return -2;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: break;
    }
    while (isspace((unsigned char)*end)) ++end;
    if ('\0' != *end) return -1;
    if (shift && (v > (LLONG_MAX >> shift) || v < (LLONG_MIN >> shift))) return -2;
    *out = shift ? v * (1LL << shift) : v;
    return 0;
}

static int register_int(const mca_base_component_t *comp, const char *name, const char *help,
                        int deflt, int min, int max, mca_base_var_info_lvl_t level, int *storage,
                        int settable)
{
    *storage = deflt;
    int idx = mca_base_component_var_register(
        comp, name, help, MCA_BASE_VAR_TYPE_INT, NULL, 0,
        settable ? MCA_BASE_VAR_FLAG_SETTABLE : 0, level,
        settable ? MCA_BASE_VAR_SCOPE_ALL_EQ : MCA_BASE_VAR_SCOPE_READONLY, storage);
    /* Judge the text the user gave where we have it: the MCA base has
     * already turned nonsense into some int (0, a prefix, a wrapped value). */
    const char *text = user_text(comp, name);
    long long v = *storage;
    int bad = text ? parse_int(text, &v) : 0;
    if (bad || v < min || v > max) {
        char range[96];
        snprintf(range, sizeof(range), "%s%d..%d", bad == -1 ? "a whole number in " : "", min, max);
        char value[64];
        if (text) snprintf(value, sizeof(value), "%s", text);
        else snprintf(value, sizeof(value), "%d", *storage);
        add_problem("\n  Parameter: %s_%s_%s\n  Value:     %s\n  Allowed:   %s\n"
                    "  The default value (%d) is used instead.\n",
                    comp->mca_type_name, comp->mca_component_name, name, value, range, deflt);
        *storage = deflt;
    }
    return idx;
}

int collx_glue_register_int(const mca_base_component_t *comp, const char *name, const char *help,
                            int deflt, int min, int max, mca_base_var_info_lvl_t level,
                            int *storage)
{
    return register_int(comp, name, help, deflt, min, max, level, storage, 0);
}

int collx_glue_register_int_settable(const mca_base_component_t *comp, const char *name,
                                     const char *help, int deflt, int min, int max,
                                     mca_base_var_info_lvl_t level, int *storage)
{
    return register_int(comp, name, help, deflt, min, max, level, storage, 1);
}

void collx_glue_report_params(const mca_base_component_t *comp)
{
    char prefix[128];
    int n = snprintf(prefix, sizeof(prefix), "OMPI_MCA_%s_%s_", comp->mca_type_name,
                     comp->mca_component_name);
    for (char **e = environ; NULL != e && NULL != *e; ++e) {
        if (0 != strncmp(*e, prefix, n)) continue;
        const char *eq = strchr(*e, '=');
        if (NULL == eq) continue;
        char full[256];
        size_t len = (size_t)(eq - *e) - strlen("OMPI_MCA_");
        if (len >= sizeof(full)) len = sizeof(full) - 1;
        memcpy(full, *e + strlen("OMPI_MCA_"), len);
        full[len] = '\0';
        int vari;
        if (OPAL_SUCCESS == mca_base_var_find_by_name(full, &vari)) continue;
        add_problem("\n  Parameter: %s\n  Value:     %s\n  Problem:   %s/%s has no such "
                    "parameter; it is ignored.\n",
                    full, eq + 1, comp->mca_type_name, comp->mca_component_name);
    }
    if (0 == problems_len) return;
    collx_glue_help_job("bad-params", 5, comp->mca_type_name, comp->mca_component_name, problems,
                        comp->mca_type_name, comp->mca_component_name);
    problems_len = 0;
    problems[0] = '\0';
}

void collx_glue_register_nodes(const mca_base_component_t *comp, int *ranks_per_node,
                               int *round_robin)
{
    collx_glue_register_int(comp, "ranks_per_node",
                            "Nodes: 0 = real nodes (Open MPI's locality information); N > 0 = "
                            "synthetic groups of N consecutive ranks, for experiments on one "
                            "machine (one node map for hanx's levels and adaptx's topo tree)",
                            0, 0, 1 << 24, OPAL_INFO_LVL_6, ranks_per_node);
    collx_glue_register_int(comp, "round_robin",
                            "With ranks_per_node: 1 = synthetic nodes take the ranks round-robin "
                            "(rank r on node r mod nodes), as mpirun --map-by node places them",
                            0, 0, 1, OPAL_INFO_LVL_6, round_robin);
}

/* A tree's name, or `extra` for -1 (a choice beside the trees). */
static const char *choice_name(int k, const char *extra)
{
    return k < 0 ? extra : collx_tree_name(k);
}

int collx_glue_tree_choice(const char *text, const char *extra)
{
    if (NULL == text) return -2;
    if (extra && 0 == strcasecmp(text, extra)) return -1;
    const int k = collx_tree_from_name(text);
    return k >= 0 ? k : -2;
}

int collx_glue_var_is_default(int idx)
{
    const mca_base_var_t *var = NULL;
    return idx >= 0 && OPAL_SUCCESS == mca_base_var_get(idx, &var) && NULL != var &&
           MCA_BASE_VAR_SOURCE_DEFAULT == var->mbv_source;
}

static int register_choice(const mca_base_component_t *comp, const char *name, const char *help,
                           int deflt, mca_base_var_info_lvl_t level, int *storage,
                           const char *extra, const char *alias, char *const **text)
{
    /* The variable's storage must outlive the registration: keep one slot
     * per registration (a handful per component). */
    static char *values[32];
    static int nvalues = 0;
    char **slot = nvalues < 32 ? &values[nvalues++] : &values[31];
    *slot = (char *)choice_name(deflt, extra);
    if (text) *text = slot;
    int idx = mca_base_component_var_register(
        comp, name, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, text ? MCA_BASE_VAR_FLAG_SETTABLE : 0,
        level, text ? MCA_BASE_VAR_SCOPE_ALL_EQ : MCA_BASE_VAR_SCOPE_READONLY, slot);
    *storage = deflt;
    if ((NULL == *slot || '\0' == (*slot)[0]) && NULL != user_text(comp, name)) {
        /* set, but to nothing: the MCA base leaves no value */
        add_problem("\n  Parameter: %s_%s_%s\n  Value:     \n  Problem:   empty\n"
                    "  The default (%s) is used instead.\n",
                    comp->mca_type_name, comp->mca_component_name, name,
                    choice_name(deflt, extra));
    } else if (NULL != *slot) {
        int k;
        const int choice =
            alias && 0 == strcasecmp(*slot, alias) ? -1 : collx_glue_tree_choice(*slot, extra);
        if (choice >= -1) {
            *storage = choice;
        } else {
            char options[256] = "";
            for (k = extra ? -1 : 0; k < COLLX_TREE_COUNT; ++k) {
                strncat(options, options[0] ? ", " : "", sizeof(options) - strlen(options) - 1);
                strncat(options, choice_name(k, extra), sizeof(options) - strlen(options) - 1);
            }
            if (alias) {
                strncat(options, ", ", sizeof(options) - strlen(options) - 1);
                strncat(options, alias, sizeof(options) - strlen(options) - 1);
            }
            char dflt[32];
            snprintf(dflt, sizeof(dflt), "%s", choice_name(deflt, extra));
            add_problem("\n  Parameter: %s_%s_%s\n  Value:     %s\n  Choices:   %s\n"
                        "  The default (%s) is used instead.\n",
                        comp->mca_type_name, comp->mca_component_name, name, *slot, options,
                        dflt);
        }
    }
    return idx;
}

int collx_glue_register_tree(const mca_base_component_t *comp, const char *name, const char *help,
                             int deflt, mca_base_var_info_lvl_t level, int *storage)
{
    return register_choice(comp, name, help, deflt, level, storage, NULL, NULL, NULL);
}

int collx_glue_register_tree_or(const mca_base_component_t *comp, const char *name,
                                const char *help, const char *extra, int deflt,
                                mca_base_var_info_lvl_t level, int *storage)
{
    return register_choice(comp, name, help, deflt, level, storage, extra, NULL, NULL);
}

int collx_glue_register_tree_setting(const mca_base_component_t *comp, const char *name,
                                     const char *help, const char *extra, const char *alias,
                                     int deflt, mca_base_var_info_lvl_t level, char *const **text)
{
    int checked; /* (the start-up value: the component reads *text where it uses it) */
    return register_choice(comp, name, help, deflt, level, &checked, extra, alias, text);
}

/* Whether the ompi_comm_coll_preference list `v` excludes `self`: a token
 * "^self", or "self" after the token that starts with '^'. */
static int excludes(const char *v, const char *self, int *prefers)
{
    int excluded = 0, after = 0;
    *prefers = 0;
    const char *p = v;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && '^' == *p) after = 1, ++p, --len;
        if (len == strlen(self) && 0 == strncmp(p, self, len)) {
            if (after) excluded = 1;
            else *prefers = 1;
        }
        p += len;
        if (',' == *p) ++p;
    }
    return excluded;
}

int collx_glue_exclude_self(const char *v, const char *self, char *out, size_t size)
{
    int prefers;
    if (NULL == v) v = "";
    if (excludes(v, self, &prefers) && !prefers) {
        snprintf(out, size, "%s", v);
        return 0;
    }
    /* keep the preferred list without `self`, then exclude it */
    size_t n = 0;
    int after = 0, first_excluded = 1;
    out[0] = '\0';
    const char *p = v;
    while (*p && n + 1 < size) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int starts = len && '^' == *p;
        if (starts) after = 1, ++p, --len;
        int is_self = len == strlen(self) && 0 == strncmp(p, self, len);
        if (len && !is_self) {
            if (after && first_excluded) {
                n += (size_t)snprintf(out + n, size - n, "%s^", n ? "," : "");
                first_excluded = 0;
            } else if (n) {
                n += (size_t)snprintf(out + n, size - n, ",");
            }
            if (n < size) n += (size_t)snprintf(out + n, size - n, "%.*s", (int)len, p);
        }
        p += len;
        if (',' == *p) ++p;
    }
    if (n < size) snprintf(out + n, size - n, "%s%s%s", n ? "," : "", first_excluded ? "^" : "", self);
    return 1;
}

int collx_glue_register_preference(const mca_base_component_t *comp, const char *name,
                                   const char *help, const char *deflt,
                                   mca_base_var_info_lvl_t level, char **storage)
{
    char out[512];
    *storage = (char *)deflt;
    /* settable through MPI_T (collx-tune does so), the same on every rank */
    int idx = mca_base_component_var_register(comp, name, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                              MCA_BASE_VAR_FLAG_SETTABLE, level,
                                              MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
    const char *self = comp->mca_component_name;
    const char *v = *storage ? *storage : "";
    /* the component itself on its own sub-communicators would recurse */
    if (!collx_glue_exclude_self(v, self, out, sizeof(out))) return idx;
    add_problem("\n  Parameter: %s_%s_%s\n  Value:     %s\n  Problem:   %s must stay excluded "
                "from its own sub-communicators\n  \"%s\" is used instead.\n",
                comp->mca_type_name, comp->mca_component_name, name, v, self, out);
    /* the MCA base owns (strdup'ed, frees at finalize) a string variable's
     * storage: hand it a copy of ours */
    char *copy = strdup(out);
    if (NULL != copy) {
        free(*storage);
        *storage = copy;
    }
    return idx;
}
