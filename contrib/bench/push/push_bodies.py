# SPDX-License-Identifier: BSD-2-Clause
"""The request bodies of the in-database push benchmarks (statements.py, instructions.py): fresh
batches of `batch` inserts into the example's item table, ids counting up from 1."""

import json
import uuid


class PushBodies:
    """Calling it gives the next batch's JSON text; last_pk is the last id it used."""

    def __init__(self, client, schema, batch):
        self.client, self.schema, self.batch = client, schema, batch
        self.last_pk = 0

    def __call__(self):
        ms = []
        for _ in range(self.batch):
            self.last_pk += 1
            ms.append({"mutation_id": str(uuid.uuid4()), "table": "item",
                       "pk": {"field": "id", "value": str(self.last_pk)},
                       "authored_schema": self.schema, "operation": "insert",
                       "client_version": "2026-01-01T00:00:00Z", "columns": {"qty": 1}})
        return json.dumps({"client_id": self.client, "client_generation": 1, "batch_id": str(uuid.uuid4()),
                           "schema": self.schema, "mutations": ms})
