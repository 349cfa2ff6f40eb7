/*
 * collx tuning rules: the C API over the tuning-file reader of the core.
 *
 * A tuning file (docs/tuning-file.md) maps (collective, communicator shape,
 * message size) to an algorithm, per-level submodule preferences or collx
 * trees and a segment size.  coll/hanx reads one named by coll_hanx_tuning_file; the
 * autotuner writes them through the C++ API (rules.hpp).
 *
 * Every function catches all C++ exceptions: failures come back as NULL or a
 * non-zero return plus a message in `err` (when err is not NULL and errlen is
 * not 0; the message is truncated to fit and always NUL-terminated).  A
 * loaded collx_rules_t is immutable: concurrent lookups from several threads
 * are safe.
 */
#ifndef COLLX_COLLX_RULES_H
#define COLLX_COLLX_RULES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct collx_rules collx_rules_t;

/* What a lookup found.  Strings point into the rules object and stay valid
 * until collx_rules_free. */
typedef struct collx_rule {
    int found;               /* 1 when a rule matched */
    int index;               /* 0-based rule index in the file, -1 when none */
    int line;                /* line of the rule in the file, 0 when none */
    const char *algorithm;   /* NULL when the rule does not say */
    long long segment_bytes; /* -1 when the rule does not say */
    const char *low;         /* NULL when not said */
    const char *up;          /* NULL when not said */
    const char *low_algorithm; /* "module" or a collx tree name; NULL when not said */
    const char *up_algorithm;  /* the same for the leaders' level */
} collx_rule_t;

/* Reads and validates a tuning file.  On any problem the whole file is
 * rejected: NULL, and err holds "path:line: problem". */
collx_rules_t *collx_rules_load(const char *path, char *err, size_t errlen);

/* Same for text in memory; `name` stands for the file in messages (NULL:
 * "<string>"). */
collx_rules_t *collx_rules_parse(const char *text, const char *name, char *err, size_t errlen);

/* The first rule in file order for `collective` whose given ranges all
 * contain the query.  A negative nodes or ranks_per_node means "unknown": it
 * matches only rules that do not constrain that dimension.  Fills *out (when
 * not NULL; found = 0, index = -1 ... when nothing matches or r/collective is
 * NULL) and returns 1 when a rule matched, else 0. */
int collx_rules_lookup(const collx_rules_t *r, const char *collective, long long nodes,
                       long long ranks_per_node, unsigned long long bytes, collx_rule_t *out);

/* Number of rules; 0 for NULL. */
size_t collx_rules_count(const collx_rules_t *r);

/* The name given at load/parse (the path for collx_rules_load); "" for NULL. */
const char *collx_rules_name(const collx_rules_t *r);

/* 0 when every rule for `collective` that names an algorithm names one of
 * known[0..nknown-1]; else non-zero with err =
 * 'file:line: rule K: unknown algorithm "x" for allreduce (known: a, b, c)'
 * (line of the "algorithm" value, K counts rules from 1).  Also non-zero for
 * r or collective NULL or an unknown collective name. */
int collx_rules_check_algorithms(const collx_rules_t *r, const char *collective,
                                 const char *const *known, size_t nknown, char *err, size_t errlen);

void collx_rules_free(collx_rules_t *r);

#ifdef __cplusplus
}
#endif

#endif /* COLLX_COLLX_RULES_H */
