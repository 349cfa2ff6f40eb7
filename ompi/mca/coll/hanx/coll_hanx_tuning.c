/*
 * Per-call choices of coll/hanx: the tuning file named by
 * coll_hanx_tuning_file (docs/tuning-file.md), else built-in defaults.
 *
 * A rule is looked up by (collective, nodes, largest node, bytes), where
 * bytes is the same on every rank -- the whole message for bcast, reduce,
 * allreduce, scan, exscan; one rank's block for gather, scatter,
 * allgather, alltoall, reduce_scatter_block; the whole vector for
 * allgatherv and reduce_scatter; 0 for barrier and for gatherv, scatterv,
 * alltoallv, whose sizes only some ranks know.
 */
#include "ompi_config.h"

#include <string.h>
#include <strings.h>

#include "coll_hanx.h"
#include "collx/collx_rules.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

/* What an "algorithm" may say: for every collective "hierarchical" and
 * "previous"; for bcast, reduce and allreduce also "flat:TREE", the whole
 * call as one collx tree over all ranks (TREE: collx_tree_name); for
 * allreduce, reduce_scatter and reduce_scatter_block also "split", split
 * rails (coll_hanx_pipeline.c, coll_hanx_scan.c); for allgather and
 * allgatherv also "node_ring" (has_node_ring). */
static char flat_names[COLLX_TREE_COUNT][32];

static int has_flat(int coll)
{
    return COLLX_COLL_BCAST == coll || COLLX_COLL_REDUCE == coll || COLLX_COLL_ALLREDUCE == coll;
}

static int has_split(int coll)
{
    return COLLX_COLL_ALLREDUCE == coll || COLLX_COLL_REDUCE_SCATTER == coll ||
           COLLX_COLL_REDUCE_SCATTER_BLOCK == coll;
}

/* allgather(v)'s node ring: every rank's block broadcast at once round
 * the nodes (coll_hanx_gather.c, collx_allgather_start) */
static int has_node_ring(int coll)
{
    return COLLX_COLL_ALLGATHER == coll || COLLX_COLL_ALLGATHERV == coll;
}

/* The names collective coll's rules may give, into list; their number. */
static int known_algorithms(int coll, const char **list)
{
    int n = 0;
    list[n++] = "hierarchical";
    list[n++] = "previous";
    for (int k = 0; has_flat(coll) && k < COLLX_TREE_COUNT; ++k) list[n++] = flat_names[k];
    if (has_split(coll)) list[n++] = "split";
    if (has_node_ring(coll)) list[n++] = "node_ring";
    return n;
}

int mca_coll_hanx_tuning_open(void)
{
    mca_coll_hanx_component_t *c = &mca_coll_hanx_component;
    char err[1024];
    c->rules = NULL;
    if (NULL == c->tuning_file || '\0' == c->tuning_file[0]) return OMPI_SUCCESS;
    const char *algorithms[4 + COLLX_TREE_COUNT];
    for (int k = 0; k < COLLX_TREE_COUNT; ++k)
        snprintf(flat_names[k], sizeof(flat_names[k]), COLLX_FLAT_PREFIX "%s", collx_tree_name(k));
    collx_rules_t *r = collx_rules_load(c->tuning_file, err, sizeof(err));
    for (const char *const *coll = collx_coll_names(); r && *coll; ++coll)
        if (collx_rules_check_algorithms(r, *coll, algorithms,
                                         known_algorithms(collx_coll_from_name(*coll), algorithms),
                                         err, sizeof(err))) {
            collx_rules_free(r);
            r = NULL;
        }
    if (NULL == r) {
        /* one message for the job (every rank reads the same file) */
        collx_glue_help_job("bad-tuning-file", 2, c->tuning_file, err);
        return OMPI_SUCCESS; /* defaults */
    }
    HANX_LOG(1, "coll:hanx: %zu rules from %s", collx_rules_count(r), c->tuning_file);
    c->rules = r;
    return OMPI_SUCCESS;
}

void mca_coll_hanx_tuning_close(void)
{
    collx_rules_free((collx_rules_t *)mca_coll_hanx_component.rules);
    mca_coll_hanx_component.rules = NULL;
}

/* Built-in defaults, measured on 2 and 4 emulated nodes x 2 ranks
 * (docs/benchmarks.md): every collective hierarchical, except alltoall of
 * larger blocks, where funnelling every block through the node leaders
 * costs more than it saves (tuned's direct exchanges win; allgather, whose
 * blocks cross each node boundary once through the leaders instead of
 * once per rank, stays hanx's at every size: on the levels, or from 32 KiB
 * blocks on the node ring, builtin_allgather);
 * segments from the core's collx_hier_segment_bytes (bcast in 256 KiB
 * segments from 512 KiB on, reduce in 64 KiB from 512 KiB, allreduce in 32 KiB
 * from 256 KiB). */
static const char *default_algorithm(int coll, size_t bytes)
{
    switch (mca_coll_hanx_component.default_algorithm) {
    case 1: return "hierarchical";
    case 2: return "previous";
    case 3: return has_split(coll)       ? "split"
                   : has_node_ring(coll) ? "node_ring"
                                         : "hierarchical";
    } /* (4: these, then mca_coll_hanx_choose asks the model) */
    if (COLLX_COLL_ALLTOALL == coll && bytes > 256) return "previous";
    return NULL;
}

/* coll_hanx_low/up_algorithm as a call reads it: the variable's text is
 * settable through MPI_T, between calls, so each call looks at it; it is
 * parsed again only when it differs from the text parsed last.  Per
 * thread: calls on different communicators may run at once.  A text that
 * names no tree (the start-up one was reported by the register helper; an
 * MPI_T write is not checked) runs the module, said at verbose 1 once per
 * new text. */
typedef struct level_algorithm {
    char text[64]; /* the text last parsed (a longer one names no tree) */
    int parsed;
    int tree;      /* -1 module, else a collx tree */
    int is_auto;   /* "auto": hanx's built-in choice, as when left at its default */
} level_algorithm_t;
static __thread level_algorithm_t low_algorithm, up_algorithm;

static int level_tree(level_algorithm_t *a, const char *text, const char *var)
{
    if (NULL == text) text = ""; /* (an empty value leaves none) */
    if (a->parsed && 0 == strncmp(a->text, text, sizeof(a->text) - 1)) return a->tree;
    snprintf(a->text, sizeof(a->text), "%s", text);
    a->parsed = 1;
    a->is_auto = 0 == strcasecmp(text, HANX_LEVEL_AUTO);
    a->tree = a->is_auto ? -1 : collx_glue_tree_choice(text, "module");
    if (a->tree < -1) {
        HANX_LOG(1, "coll:hanx: coll_hanx_%s \"%s\" names no collx tree: module", var, text);
        a->tree = -1;
    }
    return a->tree;
}

/* 1 where coll_hanx_low (up 0) / up (1) _algorithm leaves that level to
 * hanx's built-in choice: left at its default (set nowhere), or "auto"
 * (which collx-tune writes through MPI_T to measure the built-in choice
 * between its other measurements).  As the call's level_tree read it. */
static int level_builtin(int up)
{
    const level_algorithm_t *a = up ? &up_algorithm : &low_algorithm;
    return a->is_auto || collx_glue_var_is_default(up ? mca_coll_hanx_component.up_var
                                                      : mca_coll_hanx_component.low_var);
}

/* The cost model's machine: m's measured one, else the coll_hanx_model_*
 * parameters'. */
static collx_machine_t machine(const mca_coll_hanx_module_t *m)
{
    const int *p = mca_coll_hanx_component.model;
    return m->measured ? m->machine
                       : (collx_machine_t){p[0] * 1e-3, p[1] * 1e-6, p[2] * 1e-3, p[3] * 1e-6,
                                           p[4] * 1e-6};
}

/* Split rails as the one flag runs them (collx_allreduce_builtin): in
 * COLLX_SPLIT_RING_SEGMENT_BYTES, the collx ring on the rails where
 * coll_hanx_up_algorithm is left at its default; a tuning rule's segment
 * or up_algorithm (rule, or NULL) decides over them. */
static void split_on_ring(const collx_rule_t *rule, hanx_choice_t *out)
{
    out->algorithm = "split";
    if (NULL == rule || rule->segment_bytes < 0) out->segment_bytes = COLLX_SPLIT_RING_SEGMENT_BYTES;
    if ((NULL == rule || NULL == rule->up_algorithm) && level_builtin(1))
        out->up_tree = COLLX_TREE_RING;
}

static int is_reduce_scatter(int coll)
{
    return COLLX_COLL_REDUCE_SCATTER == coll || COLLX_COLL_REDUCE_SCATTER_BLOCK == coll;
}

/* coll_hanx_default_algorithm 4: the cost model's choice for this call
 * (collx_model_choose) on m's shape, with the segment in *out (the
 * built-in one, or a tuning rule's that names no algorithm: rule, else
 * NULL): the built-in choice (an allreduce's from collx_allreduce_builtin)
 * unless the model predicts another at most COLLX_MODEL_MARGIN of its
 * time; a collective the model does not cover keeps the built-in choice.
 * A rule that names an algorithm is followed and the model not asked. */
static void model_choice(const mca_coll_hanx_module_t *m, int coll, size_t bytes,
                         const collx_rule_t *rule, hanx_choice_t *out)
{
    const collx_machine_t mach = machine(m);
    double us[COLLX_MODEL_COUNT];
    const int ar = COLLX_COLL_ALLREDUCE == coll ? collx_allreduce_builtin(bytes, m->nnodes, m->size,
                                                                          m->split_parts, m->blocks)
                                                : COLLX_ALLREDUCE_LEVELS;
    const int split = out->algorithm && !strcmp(out->algorithm, "split"); /* (reduce_scatter) */
    const int builtin = out->algorithm && !strcmp(out->algorithm, "previous") ? COLLX_MODEL_PREVIOUS
                        : out->algorithm && !strcmp(out->algorithm, "node_ring")
                            ? COLLX_MODEL_NODE_RING
                        : COLLX_ALLREDUCE_SPLIT_RING == ar || split ? COLLX_MODEL_SPLIT
                        : COLLX_ALLREDUCE_FLAT_RING == ar           ? COLLX_MODEL_FLAT_RING
                                                                    : COLLX_MODEL_HIER;
    /* (the model has no topo tree: a small allreduce's baseline is the
     * levels, as before stop 38) */
    const int a = collx_model_choose(coll, m->nnodes, m->max_node_size, m->split_parts > 0, bytes,
                                     out->segment_bytes, builtin, &mach, us);
    if (a < 0) return;
    out->flat_tree = -1; /* (the built-in ring is among the model's choices) */
    if (COLLX_MODEL_FLAT_PIPELINE == a) out->flat_tree = COLLX_TREE_PIPELINE;
    else if (COLLX_MODEL_FLAT_RING == a) out->flat_tree = COLLX_TREE_RING;
    else if (COLLX_MODEL_SPLIT == a && is_reduce_scatter(coll)) out->algorithm = "split";
    else if (COLLX_MODEL_SPLIT == a) split_on_ring(rule, out);
    else out->algorithm = collx_model_algorithm_name(a);
    HANX_LOG(10, "coll:hanx: model: %s of %zu bytes on %d nodes of up to %d, segments of %zu "
                 "bytes: previous %.1f, hierarchical %.1f, split %.1f, flat:pipeline %.1f, "
                 "flat:ring %.1f, node_ring %.1f us (-1: none); built-in %s: %s",
             collx_coll_name(coll), bytes, m->nnodes, m->max_node_size, out->segment_bytes,
             us[COLLX_MODEL_PREVIOUS],
             us[COLLX_MODEL_HIER], us[COLLX_MODEL_SPLIT], us[COLLX_MODEL_FLAT_PIPELINE],
             us[COLLX_MODEL_FLAT_RING], us[COLLX_MODEL_NODE_RING],
             collx_model_algorithm_name(builtin), collx_model_algorithm_name(a));
}

/* A level's algorithm as its parameter gives it (tree; -1 the module), or,
 * where the parameter leaves it to hanx (level_builtin), the core's
 * built-in tree for the call if it has one (collx_hier_level_tree). */
static int builtin_level(int tree, int coll, size_t bytes, int up, int ranks, int nonblocking)
{
    if (tree >= 0) return tree;
    const int builtin = collx_hier_level_tree(coll, bytes, up, ranks, nonblocking);
    return builtin >= 0 && level_builtin(up) ? builtin : tree;
}

/* The one flag's allreduce (collx_allreduce_builtin): one collx ring over
 * all ranks, or split rails with the collx ring on the rails (where
 * coll_hanx_up_algorithm is left at its default: set, it decides) and the
 * node's module inside the node (the ring's halves there measured no
 * better on 2 ranks per node), in the core's segments, or a small blocking
 * one as one collx topo tree over all ranks on hanx's nodes where neither
 * level's algorithm is set, or the levels as *out already says. */
static void builtin_allreduce(const mca_coll_hanx_module_t *m, size_t bytes, int nonblocking,
                              hanx_choice_t *out)
{
    switch (collx_allreduce_builtin(bytes, m->nnodes, m->size, m->split_parts, m->blocks)) {
    case COLLX_ALLREDUCE_FLAT_RING:
        out->flat_tree = COLLX_TREE_RING;
        break;
    case COLLX_ALLREDUCE_SPLIT_RING:
        split_on_ring(NULL, out);
        break;
    case COLLX_ALLREDUCE_FLAT_TOPO:
        if (!nonblocking && level_builtin(0) && level_builtin(1)) out->flat_tree = COLLX_TREE_TOPO;
        break;
    }
}

/* The one flag's reduce_scatter(_block) (collx_reduce_scatter_builtin,
 * on the whole vector): split rails, or the levels as *out already says. */
static void builtin_reduce_scatter(const mca_coll_hanx_module_t *m, int coll, size_t bytes,
                                   hanx_choice_t *out)
{
    const size_t vector = COLLX_COLL_REDUCE_SCATTER_BLOCK == coll ? bytes * (size_t)m->size
                                                                  : bytes;
    if (collx_reduce_scatter_builtin(vector, m->nnodes, m->split_parts)) out->algorithm = "split";
}

/* The size the built-in rules take for a call of `bytes`: an
 * allgatherv's average block (its `bytes` are the whole), else `bytes`. */
static size_t rule_bytes(const mca_coll_hanx_module_t *m, int coll, size_t bytes)
{
    return COLLX_COLL_ALLGATHERV == coll ? bytes / (size_t)m->size : bytes;
}

/* The one flag's allgather(v) (collx_allgather_node_ring, on the average
 * block): the node ring, or the levels as *out already says. */
static void builtin_allgather(const mca_coll_hanx_module_t *m, int coll, size_t bytes,
                              hanx_choice_t *out)
{
    if (collx_allgather_node_ring(rule_bytes(m, coll, bytes), m->nnodes, m->size))
        out->algorithm = "node_ring";
}

/* A reduce_scatter(_block) on split rails, however chosen (built in, a
 * rule, coll_hanx_default_algorithm 3): the collx ring's reduce-scatter
 * half on each level whose algorithm neither the rule (or NULL) nor a set
 * coll_hanx_low/up_algorithm gives, as the one flag runs them. */
static void reduce_scatter_rings(const collx_rule_t *rule, hanx_choice_t *out)
{
    if (NULL == out->algorithm || strcmp(out->algorithm, "split")) return;
    if ((NULL == rule || NULL == rule->low_algorithm) && level_builtin(0))
        out->low_tree = COLLX_TREE_RING;
    if ((NULL == rule || NULL == rule->up_algorithm) && level_builtin(1))
        out->up_tree = COLLX_TREE_RING;
}

size_t mca_coll_hanx_segment_bytes(int coll, size_t choice_bytes)
{
    const mca_coll_hanx_component_t *c = &mca_coll_hanx_component;
    const int set = COLLX_COLL_BCAST == coll       ? c->bcast_segment_size
                    : COLLX_COLL_REDUCE == coll    ? c->reduce_segment_size
                    : COLLX_COLL_ALLREDUCE == coll ? c->allreduce_segment_size
                                                   : -1; /* (barrier: no segments) */
    return set < 0 ? 0 : set ? (size_t)set : choice_bytes;
}

/* 1 where a blocking call of `bytes` runs every stage as an
 * i-collective, as a non-blocking call does (mca_coll_hanx_run_blocking:
 * coll_hanx_blocking_schedule 1, and more than one segment of
 * mca_coll_hanx_segment_bytes -- the call's is one where bytes do not
 * exceed it, save for segments smaller than one element; by default level
 * 0's stages are blocking collectives, and one segment's all are). */
static int stages_on_schedules(int coll, size_t bytes, size_t segment_bytes)
{
    if (!mca_coll_hanx_component.blocking_schedule) return 0;
    const size_t seg = mca_coll_hanx_segment_bytes(coll, segment_bytes);
    return seg > 0 && bytes > seg;
}

void mca_coll_hanx_choose(mca_coll_hanx_module_t *m, int coll, size_t bytes, int nonblocking,
                          hanx_choice_t *out)
{
    collx_rule_t rule;
    const char *collective = collx_coll_name(coll);
    const int ruled = NULL != mca_coll_hanx_component.rules &&
                      collx_rules_lookup((const collx_rules_t *)mca_coll_hanx_component.rules,
                                         collective, m->nnodes, m->max_node_size, bytes, &rule);
    out->algorithm = default_algorithm(coll, bytes);
    out->flat_previous = 0;
    out->segment_bytes = collx_hier_segment_bytes(coll, bytes);
    out->low = out->up = NULL;
    out->low_tree = level_tree(&low_algorithm, *mca_coll_hanx_component.low_text, "low_algorithm");
    out->up_tree = level_tree(&up_algorithm, *mca_coll_hanx_component.up_text, "up_algorithm");
    /* a parameter left at its default: the built-in level algorithm (a
     * rule's low/up_algorithm, below, decides over it) -- the non-blocking
     * calls' where every level runs i-collectives: a non-blocking call, or a
     * blocking one with coll_hanx_blocking_schedule 1 (with the rule's
     * segment where it gives one) */
    const int levels_nb =
        nonblocking ||
        stages_on_schedules(coll, bytes,
                            ruled && rule.segment_bytes >= 0 ? (size_t)rule.segment_bytes
                                                             : out->segment_bytes);
    out->low_tree = builtin_level(out->low_tree, coll, bytes, 0, m->max_node_size, levels_nb);
    out->up_tree = builtin_level(out->up_tree, coll, bytes, 1, m->nnodes, levels_nb);
    /* (coll_hanx_default_algorithm 1 or 2 says what runs: no flat tree) */
    out->flat_tree = has_flat(coll) && 0 == mca_coll_hanx_component.default_algorithm
                         ? m->flat_default : -1;
    /* the model where no rule names the algorithm, with the rule's
     * segment where it gives one */
    const int model = 4 == mca_coll_hanx_component.default_algorithm;
    if (!ruled) {
        /* (reduce_scatter: the model's baseline is the built-in choice; split
         * rails, however chosen, on the rings where no level is named) */
        if ((model || 0 == mca_coll_hanx_component.default_algorithm) && is_reduce_scatter(coll))
            builtin_reduce_scatter(m, coll, bytes, out);
        if ((model || 0 == mca_coll_hanx_component.default_algorithm) &&
            (COLLX_COLL_ALLGATHER == coll || COLLX_COLL_ALLGATHERV == coll))
            builtin_allgather(m, coll, bytes, out);
        if (model) model_choice(m, coll, bytes, NULL, out);
        else if (0 == mca_coll_hanx_component.default_algorithm && out->flat_tree < 0) {
            if (COLLX_COLL_ALLREDUCE == coll) builtin_allreduce(m, bytes, nonblocking, out);
            /* allgather's leaders, where the levels run it (not the node
             * ring, or a datatype the core does not take): the collx ring
             * where the machine's link between nodes is the bottleneck (a
             * set coll_hanx_up_algorithm decides) */
            if (COLLX_COLL_ALLGATHER == coll && out->up_tree < 0 && level_builtin(1)) {
                const collx_machine_t mach = machine(m);
                if (collx_allgather_leaders_ring(&mach, bytes)) out->up_tree = COLLX_TREE_RING;
            }
            /* a large bcast or allgather, or allreduce on a kept machine,
             * blocking or not, on measured links between nodes that are
             * not the bottleneck: the previous module (the model, whose
             * links share their rate among a node's flows, does not
             * describe them); else a bandwidth-bound call on
             * measured links: the model's; neither for a reduction on a
             * machine not kept, whose bits depend on the algorithm, which
             * a fresh measurement may change from run to run (the rules,
             * and a kept machine, do not) */
            if (m->measured && collx_previous_on_fast_links(coll, rule_bytes(m, coll, bytes),
                                                            &m->machine, m->machine_kept,
                                                            nonblocking)) {
                out->algorithm = "previous";
                out->flat_previous = !nonblocking;
                HANX_LOG(10, "coll:hanx: %s%s of %zu bytes on %d nodes: previous module (links "
                             "between nodes %.1fx the time per byte within a node, below %d%s)",
                         nonblocking ? "i" : "", collective, bytes, m->nnodes,
                         collx_links_ratio(&m->machine),
                         COLLX_SLOW_LINK_RATIO, m->machine_kept ? "; machine kept" : "");
            } else if (m->measured && COLLX_COLL_REDUCE != coll && COLLX_COLL_ALLREDUCE != coll &&
                       !is_reduce_scatter(coll) &&
                       collx_model_bandwidth_bound(coll, &m->machine, bytes, m->size))
                model_choice(m, coll, bytes, NULL, out);
        }
        if (is_reduce_scatter(coll)) reduce_scatter_rings(NULL, out);
        return;
    }
    if (rule.algorithm) {  /* the rule's algorithm decides, flat or not */
        out->algorithm = rule.algorithm;
        out->flat_tree = collx_flat_tree(rule.algorithm);
    }
    if (rule.segment_bytes >= 0) out->segment_bytes = (size_t)rule.segment_bytes;
    out->low = rule.low;
    out->up = rule.up;
    /* (the reader took only "module" or a tree's name) */
    if (rule.low_algorithm) out->low_tree = collx_tree_from_name(rule.low_algorithm);
    if (rule.up_algorithm) out->up_tree = collx_tree_from_name(rule.up_algorithm);
    /* (the model where the rule names no algorithm; then a reduce_scatter
     * on split rails, however chosen, on the rings where no level is named) */
    if (model && NULL == rule.algorithm) model_choice(m, coll, bytes, &rule, out);
    if (is_reduce_scatter(coll)) reduce_scatter_rings(&rule, out);
    HANX_LOG(20, "coll:hanx: %s of %zu bytes: rule %d (line %d): %s, segments of %zu bytes, "
                 "low %s, up %s, levels' algorithms %s, %s",
             collective, bytes, rule.index + 1, rule.line,
             out->algorithm ? out->algorithm : "default", out->segment_bytes,
             out->low ? out->low : "(default)", out->up ? out->up : "(default)",
             out->low_tree < 0 ? "module" : collx_tree_name(out->low_tree),
             out->up_tree < 0 ? "module" : collx_tree_name(out->up_tree));
}
