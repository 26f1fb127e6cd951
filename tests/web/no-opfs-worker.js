// SPDX-License-Identifier: BSD-2-Clause
// test_web's browser without OPFS: the client's own worker, with the sync access handles
// taken away before any request reaches it (the import runs first, then this module's
// body, then the worker's messages). Synchro.open must fail with estore, never keep the
// store in memory.
import "./worker.js";

delete FileSystemFileHandle.prototype.createSyncAccessHandle;
