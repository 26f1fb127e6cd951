/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * web_vfs.c: SQLite's storage in the browser, an sqlite3_vfs over the Origin Private File
 * System (OPFS).
 *
 * Layer: middle of src/web (doc/hacking.md).
 * Notes: Its file methods call FileSystemSyncAccessHandle's read, write, truncate, getSize
 * and flush through EM_JS. They are synchronous in a dedicated Worker. But
 * createSyncAccessHandle() is asynchronous. So the worker (worker.ts, opfsOpen) opens the
 * store's files before any C code runs: the database, its -wal and its -journal. Each has
 * one handle, held for the life of the worker. A handle locks its file, so one worker at a
 * time uses a store. xOpen finds a pre-opened handle by name. It fails with SQLITE_CANTOPEN
 * when there is none. Nothing ever falls back to memory storage. Only SQLite's temporary
 * files live in memory: those with no name or DELETEONCLOSE, never durable by definition.
 *
 * Durability. xSync is flush(), which the OPFS makes durable. The store runs WAL with
 * synchronous = FULL. So every commit is synced before it returns, as natively.
 *
 * Writes behind. Each write() call of a sync access handle costs far more than its bytes.
 * SQLite writes a WAL frame's 24-byte header and its page as two calls. A profile of a
 * 10,000-intent sync spent a third of the worker's time in write(). So an OPFS file keeps
 * the bytes SQLite writes at contiguous offsets in a buffer (at most WB_MAX). It writes
 * them in one call: before a read that overlaps them, a truncate, a size, a close or a
 * write elsewhere, and first thing in xSync. Every byte written before an xSync is written
 * and flushed when it returns, as before. So a commit is as durable as without the buffer.
 * What a buffer loses in a killed tab was never synced, and SQLite never counted on it.
 *
 * "Deleting" a journal truncates it; the handle stays open. xAccess calls a file present
 * when it is not empty. It goes by name and does not see a buffer. That is safe: SQLite asks
 * about a journal or a WAL only when it does not hold it open, and a file's close writes
 * what it held back. Locks are no-ops. The handle's own lock keeps other workers out. The
 * client opens one connection in locking_mode EXCLUSIVE, so WAL needs no shm. SQLite is
 * built with SQLITE_OS_OTHER. This is the only VFS, registered by sqlite3_os_init().
 */
#include "config.h"

#include <emscripten.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sqlite3.h"

/* --- the JS side: Module.syOpfs.files[name] is a FileSystemSyncAccessHandle --- */

EM_JS(int, opfs_has, (const char *name), {
	var f = Module["syOpfs"];
	return f && f.files[UTF8ToString(name)] ? 1 : 0;
});

EM_JS(int, opfs_read, (const char *name, void *buf, int n, double at), {
	try {
		var h = Module["syOpfs"].files[UTF8ToString(name)];
		return h.read(HEAPU8.subarray(buf, buf + n), {at : at});
	} catch (e) {
		Module["syOpfs"].lastError = String(e);
		return -1;
	}
});

EM_JS(int, opfs_write, (const char *name, const void *buf, int n, double at), {
	try {
		var h = Module["syOpfs"].files[UTF8ToString(name)];
		return h.write(HEAPU8.subarray(buf, buf + n), {at : at});
	} catch (e) {
		Module["syOpfs"].lastError = String(e);
		return -1;
	}
});

EM_JS(int, opfs_truncate, (const char *name, double size), {
	try {
		Module["syOpfs"].files[UTF8ToString(name)].truncate(size);
		return 0;
	} catch (e) {
		Module["syOpfs"].lastError = String(e);
		return -1;
	}
});

EM_JS(double, opfs_size, (const char *name), {
	try {
		return Module["syOpfs"].files[UTF8ToString(name)].getSize();
	} catch (e) {
		Module["syOpfs"].lastError = String(e);
		return -1;
	}
});

EM_JS(int, opfs_flush, (const char *name), {
	try {
		Module["syOpfs"].files[UTF8ToString(name)].flush();
		Module["syOpfs"].flushes++;
		return 0;
	} catch (e) {
		Module["syOpfs"].lastError = String(e);
		return -1;
	}
});

/* --- files ------------------------------------------------------------------ */

/* The most bytes an OPFS file holds back before writing them (one write() call). */
#define WB_MAX (1 << 20)

typedef struct {
	sqlite3_file base;
	char *name;            /* an OPFS file: its handle's name; NULL for a memory file */
	unsigned char *mem;    /* a temporary file's bytes */
	sqlite3_int64 mem_len, mem_cap;
	unsigned char *wb;     /* an OPFS file's bytes written behind: [wb_at, wb_at + wb_len) */
	sqlite3_int64 wb_at;
	int wb_len, wb_cap;
} opfs_file;

/* Writes the bytes held back, if any: 0, or -1 (the handle's write failed). */
static int wb_flush(opfs_file *p)
{
	if (p->wb_len == 0)
		return 0;
	int n = p->wb_len;
	p->wb_len = 0;
	return opfs_write(p->name, p->wb, n, (double)p->wb_at) == n ? 0 : -1;
}

/* Holds n bytes at `at` back when they extend or overwrite the held bytes (or start them);
 * 1: held, 0: not (the caller writes them itself, after wb_flush), -1: out of memory. */
static int wb_hold(opfs_file *p, const void *buf, int n, sqlite3_int64 at)
{
	if (p->wb_len > 0 && (at < p->wb_at || at > p->wb_at + p->wb_len))
		return 0;
	if (p->wb_len == 0)
		p->wb_at = at;
	sqlite3_int64 end = at + n - p->wb_at;
	if (end > WB_MAX)
		return 0;
	if (end > p->wb_cap) {
		int cap = p->wb_cap ? p->wb_cap : 65536;
		while (cap < end)
			cap *= 2;
		unsigned char *w = realloc(p->wb, (size_t)cap);
		if (w == NULL)
			return -1;
		p->wb = w;
		p->wb_cap = cap;
	}
	memcpy(p->wb + (at - p->wb_at), buf, (size_t)n);
	if (end > p->wb_len)
		p->wb_len = (int)end;
	return 1;
}

static int f_close(sqlite3_file *f)
{
	opfs_file *p = (opfs_file *)f;
	int rc = p->name != NULL && wb_flush(p) != 0 ? SQLITE_IOERR_WRITE : SQLITE_OK;
	free(p->name);
	free(p->mem);
	free(p->wb);
	p->name = NULL;
	p->mem = NULL;
	p->wb = NULL;
	return rc;
}

static int f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 at)
{
	opfs_file *p = (opfs_file *)f;
	int got;
	if (p->name != NULL && p->wb_len > 0 && at < p->wb_at + p->wb_len && at + n > p->wb_at &&
	    wb_flush(p) != 0)
		return SQLITE_IOERR_READ;
	if (p->name == NULL) {
		got = at >= p->mem_len ? 0 : (int)(p->mem_len - at < n ? p->mem_len - at : n);
		if (got > 0)
			memcpy(buf, p->mem + at, (size_t)got);
	} else {
		got = opfs_read(p->name, buf, n, (double)at);
		if (got < 0)
			return SQLITE_IOERR_READ;
	}
	if (got < n) {
		memset((char *)buf + got, 0, (size_t)(n - got));
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

static int mem_reserve(opfs_file *p, sqlite3_int64 len)
{
	if (len <= p->mem_cap)
		return SQLITE_OK;
	sqlite3_int64 cap = p->mem_cap ? p->mem_cap : 65536;
	while (cap < len)
		cap *= 2;
	unsigned char *m = realloc(p->mem, (size_t)cap);
	if (m == NULL)
		return SQLITE_IOERR_NOMEM;
	memset(m + p->mem_cap, 0, (size_t)(cap - p->mem_cap));
	p->mem = m;
	p->mem_cap = cap;
	return SQLITE_OK;
}

static int f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 at)
{
	opfs_file *p = (opfs_file *)f;
	if (p->name == NULL) {
		int rc = mem_reserve(p, at + n);
		if (rc != SQLITE_OK)
			return rc;
		memcpy(p->mem + at, buf, (size_t)n);
		if (at + n > p->mem_len)
			p->mem_len = at + n;
		return SQLITE_OK;
	}
	int held = wb_hold(p, buf, n, at);
	if (held < 0)
		return SQLITE_IOERR_NOMEM;
	if (held > 0)
		return SQLITE_OK;
	if (wb_flush(p) != 0)
		return SQLITE_IOERR_WRITE;
	held = wb_hold(p, buf, n, at); /* starts a new run, unless n alone is over WB_MAX */
	if (held < 0)
		return SQLITE_IOERR_NOMEM;
	if (held > 0)
		return SQLITE_OK;
	return opfs_write(p->name, buf, n, (double)at) == n ? SQLITE_OK : SQLITE_IOERR_WRITE;
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	opfs_file *p = (opfs_file *)f;
	if (p->name == NULL) {
		if (size < p->mem_len)
			p->mem_len = size;
		return SQLITE_OK;
	}
	if (wb_flush(p) != 0)
		return SQLITE_IOERR_TRUNCATE;
	return opfs_truncate(p->name, (double)size) == 0 ? SQLITE_OK : SQLITE_IOERR_TRUNCATE;
}

static int f_sync(sqlite3_file *f, int flags)
{
	opfs_file *p = (opfs_file *)f;
	(void)flags;
	if (p->name == NULL)
		return SQLITE_OK;
	if (wb_flush(p) != 0)
		return SQLITE_IOERR_FSYNC;
	return opfs_flush(p->name) == 0 ? SQLITE_OK : SQLITE_IOERR_FSYNC;
}

static int f_size(sqlite3_file *f, sqlite3_int64 *size)
{
	opfs_file *p = (opfs_file *)f;
	if (p->name == NULL) {
		*size = p->mem_len;
		return SQLITE_OK;
	}
	if (wb_flush(p) != 0)
		return SQLITE_IOERR_FSTAT;
	double s = opfs_size(p->name);
	if (s < 0)
		return SQLITE_IOERR_FSTAT;
	*size = (sqlite3_int64)s;
	return SQLITE_OK;
}

static int f_lock(sqlite3_file *f, int level)
{
	(void)f;
	(void)level;
	return SQLITE_OK;
}

static int f_check_reserved(sqlite3_file *f, int *out)
{
	(void)f;
	*out = 0;
	return SQLITE_OK;
}

static int f_control(sqlite3_file *f, int op, void *arg)
{
	(void)f;
	(void)op;
	(void)arg;
	return SQLITE_NOTFOUND;
}

static int f_sector(sqlite3_file *f)
{
	(void)f;
	return 4096;
}

static int f_characteristics(sqlite3_file *f)
{
	(void)f;
	/* Powersafe overwrite, as SQLite's unix VFS (the native store's) assumes by default:
	 * a write changes no byte outside its range. Without it, SQLite pads each commit's WAL
	 * frames to a sector boundary with copies of the last frame. Nothing else is assumed
	 * (no atomic or safe-append writes). */
	return SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

static const sqlite3_io_methods opfs_methods = {
        .iVersion = 1,
        .xClose = f_close,
        .xRead = f_read,
        .xWrite = f_write,
        .xTruncate = f_truncate,
        .xSync = f_sync,
        .xFileSize = f_size,
        .xLock = f_lock,
        .xUnlock = f_lock,
        .xCheckReservedLock = f_check_reserved,
        .xFileControl = f_control,
        .xSectorSize = f_sector,
        .xDeviceCharacteristics = f_characteristics,
};

/* --- the VFS ---------------------------------------------------------------- */

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	opfs_file *p = (opfs_file *)f;
	(void)vfs;
	memset(p, 0, sizeof *p);
	if (name != NULL && !(flags & SQLITE_OPEN_DELETEONCLOSE)) {
		if (!opfs_has(name))
			return SQLITE_CANTOPEN; /* not opened by the worker: never memory instead */
		if ((p->name = strdup(name)) == NULL)
			return SQLITE_NOMEM;
	}
	p->base.pMethods = &opfs_methods;
	if (out_flags != NULL)
		*out_flags = flags;
	return SQLITE_OK;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	if (!opfs_has(name))
		return SQLITE_IOERR_DELETE_NOENT;
	if (opfs_truncate(name, 0) != 0 || (sync_dir && opfs_flush(name) != 0))
		return SQLITE_IOERR_DELETE;
	return SQLITE_OK;
}

static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	*out = opfs_has(name) && (flags != SQLITE_ACCESS_EXISTS || opfs_size(name) > 0);
	return SQLITE_OK;
}

static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	if ((int)strlen(name) >= n)
		return SQLITE_CANTOPEN;
	strcpy(out, name);
	return SQLITE_OK;
}

static int v_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	for (int at = 0; at < n; at += 256) /* crypto.getRandomValues */
		if (getentropy(out + at, (size_t)(n - at < 256 ? n - at : 256)) != 0)
			return 0;
	return n;
}

static int v_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	(void)us;
	return 0; /* no blocking in a worker's event loop; one connection never waits */
}

static int v_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* Julian day in milliseconds: the Unix epoch is day 2440587.5 */
	*out = (sqlite3_int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 210866760000000LL;
	return SQLITE_OK;
}

static int v_time(sqlite3_vfs *vfs, double *out)
{
	sqlite3_int64 ms;
	v_time64(vfs, &ms);
	*out = (double)ms / 86400000.0;
	return SQLITE_OK;
}

static int v_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	if (n > 0)
		out[0] = '\0';
	return 0;
}

static sqlite3_vfs opfs_vfs = {
        .iVersion = 2,
        .szOsFile = sizeof(opfs_file),
        .mxPathname = 512,
        .zName = "opfs",
        .xOpen = v_open,
        .xDelete = v_delete,
        .xAccess = v_access,
        .xFullPathname = v_full_pathname,
        .xRandomness = v_randomness,
        .xSleep = v_sleep,
        .xCurrentTime = v_time,
        .xGetLastError = v_last_error,
        .xCurrentTimeInt64 = v_time64,
};

int sqlite3_os_init(void)
{
	return sqlite3_vfs_register(&opfs_vfs, 1);
}

int sqlite3_os_end(void)
{
	return SQLITE_OK;
}
