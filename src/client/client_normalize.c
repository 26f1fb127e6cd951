/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_normalize.c: the same-row normalizations before sealing. They are a pure decision
 * over a chain of unsealed intents of one row.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#normalization (the table below).
 * Notes: The chains and what they become:
 *
 *   insert, update...          -> one insert with the final authored fields
 *   insert, update..., delete  -> no server effect (cancelled_before_send)
 *   update, update...          -> one update from the original known base
 *   update, update..., delete  -> one delete from that original base
 *   delete, ...                -> the delete alone: delete-then-update is never
 *                                 normalized (protocol version 3 has no resurrection)
 *
 * The records folded away become superseded_before_send or cancelled_before_send
 * (client_seal.c). They are never deleted.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"

void sy_cl_normalize(const sy_cl_chain_item *items, size_t n, sy_cl_norm *out)
{
	out->kind = SY_CL_NORM_SINGLE;
	out->consumed = 1;
	out->op = items[0].op;
	if (items[0].op == SY_OP_DELETE)
		return;
	size_t i = 1;
	while (i < n && items[i].op == SY_OP_UPDATE)
		i++;
	if (i < n && items[i].op == SY_OP_DELETE) {
		out->consumed = i + 1;
		if (items[0].op == SY_OP_INSERT) {
			out->kind = SY_CL_NORM_CANCELLED;
		} else {
			out->kind = SY_CL_NORM_MERGED;
			out->op = SY_OP_DELETE;
		}
		return;
	}
	/* An insert after the chain (after a cancelled insert, say) starts a chain of its own. */
	out->consumed = i;
	if (i > 1)
		out->kind = SY_CL_NORM_MERGED;
}

char *sy_cl_merge_columns(const char *const *columns, size_t n, sy_client_error *err)
{
	sy_json_doc *doc = sy_json_doc_new();
	sy_json *o = doc != NULL ? sy_json_new_object(doc) : NULL;
	char *text = NULL;
	if (o == NULL)
		goto nomem;
	/* Later fields win: walk from the newest and keep the first of each name. */
	for (size_t k = n; k-- > 0;) {
		if (columns[k] == NULL)
			continue;
		sy_error e = {0};
		sy_json_doc *d = sy_json_parse(columns[k], strlen(columns[k]), &e);
		if (d == NULL) {
			sy_json_doc_free(doc);
			sy_cl_fail(err,
			           e.code == SY_ERR_NOMEM ? SY_CLIENT_ENOMEM : SY_CLIENT_ESTORE,
			           "stored columns: %s", e.message);
			return NULL;
		}
		const sy_json *r = sy_json_doc_root(d);
		for (size_t i = 0; r->type == SY_JSON_OBJECT && i < r->u.object.count; i++) {
			const sy_json_member *m = &r->u.object.members[i];
			if (sy_json_get(o, m->key) != NULL)
				continue;
			if (!sy_json_object_putn(doc, o, m->key, m->key_len,
			                         sy_json_copy(doc, m->value))) {
				sy_json_doc_free(d);
				goto nomem;
			}
		}
		sy_json_doc_free(d);
	}
	text = sy_cl_jcs(o, NULL);
	sy_json_doc_free(doc);
	if (text == NULL)
		sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	return text;
nomem:
	sy_json_doc_free(doc);
	sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	return NULL;
}
