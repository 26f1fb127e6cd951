/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cfg.h: synchro.conf: the one table of configuration options, the ini reader and typed
 * getters.
 */
#ifndef SY_STORE_CFG_H
#define SY_STORE_CFG_H

#include "synchro/common.h"

typedef enum {
	SY_CFG_STRING, /* the rest of the line, whitespace-trimmed; may be empty */
	SY_CFG_INT,    /* decimal integer in [min, max] */
	SY_CFG_MODE,   /* octal file mode, 0..0777 (e.g. 0660) */
	SY_CFG_ENUM    /* one of the words of `choices` ("stderr|syslog") */
} sy_cfg_type;

/* One option of synchro.conf (documented in synchro.conf(5) and conf/synchro.conf.sample). */
typedef struct {
	const char *section;
	const char *key;
	sy_cfg_type type;
	const char *def;     /* default, as it would be written in the file */
	const char *doc;     /* one-line description */
	long long min, max;  /* SY_CFG_INT */
	const char *choices; /* SY_CFG_ENUM: "a|b|c" */
} sy_cfg_option;

/* The table of every option, in documentation order; *count receives its length. */
const sy_cfg_option *sy_cfg_options(size_t *count);

typedef struct sy_cfg sy_cfg;

/*
 * Reads an ini file: "[section]" lines, "key = value" lines, whole-line comments
 * starting with '#' or ';', blank lines; whitespace around names and values is
 * trimmed; there is no quoting and no inline comment (a value may contain '#').
 * Unknown sections and keys, duplicate keys, keys outside a section and values of the
 * wrong type are errors naming "path:line"; values are never echoed (conninfo may
 * hold a password). A file that every user may read (mode o+r) while its [database]
 * conninfo or pull_conninfo holds a password is refused. Returns a new configuration the
 * caller frees with sy_cfg_free(); NULL with *err set.
 */
SY_MUST_CHECK sy_cfg *sy_cfg_load(const char *path, sy_error *err);
/* The same from memory; name stands for the path in messages. */
SY_MUST_CHECK sy_cfg *sy_cfg_parse(const char *text, size_t len, const char *name, sy_error *err);
/* Accepts NULL. */
void sy_cfg_free(sy_cfg *cfg);

/*
 * Typed getters. cfg may be NULL (every option at its default). section/key must name
 * an option of the table with the getter's type (SY_CFG_INT and SY_CFG_MODE for
 * sy_cfg_int; SY_CFG_STRING and SY_CFG_ENUM for sy_cfg_str); anything else is a
 * programming error and aborts. Strings live as long as cfg.
 */
const char *sy_cfg_str(const sy_cfg *cfg, const char *section, const char *key);
long long sy_cfg_int(const sy_cfg *cfg, const char *section, const char *key);
/* Whether the file set the option (as opposed to its default applying). */
bool sy_cfg_is_set(const sy_cfg *cfg, const char *section, const char *key);
/* The path the configuration was read from ("" for defaults / NULL cfg). */
const char *sy_cfg_path(const sy_cfg *cfg);

/*
 * Checks one value against an option's type; false with a short reason in *why
 * (e.g. "expected an integer in 1..256"). Used by the reader and by the table's test.
 */
bool sy_cfg_value_valid(const sy_cfg_option *opt, const char *value, const char **why);

#endif
