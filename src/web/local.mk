# The browser client (configure --enable-web): src/web/build.sh compiles libsynchro-client's
# own sources (the lists below, so nothing drifts) with emcc into src/web/dist, beside the
# TypeScript API; see doc/client.md, "In the browser".
WEB_C = src/web/web.h src/web/web_vfs.c src/web/web_transport.c src/web/web_api.c src/web/web_inspect.c \
	src/web/web_columns.c
WEB_TS = src/web/protocol.ts src/web/synchro.ts src/web/worker.ts src/web/tsconfig.json
WEB_NPM = src/web/package.json src/web/package-lock.json
EXTRA_DIST += $(WEB_C) $(WEB_TS) $(WEB_NPM) src/web/build.sh

if ENABLE_WEB
WEB_INPUTS = $(src_core_libsycore_la_SOURCES) $(src_client_libsyclient_la_SOURCES) $(WEB_C)
all-local: src/web/dist/.built
src/web/dist/.built: $(WEB_INPUTS) $(WEB_TS) $(WEB_NPM) src/web/build.sh config.h
	@echo "  WEB      src/web/dist"; \
	EMCC="$(EMCC)" NPM="$(NPM)" NODE="$(NODE)" WARN_CFLAGS="$(WARN_CFLAGS)" BUILDDIR="$(abs_builddir)" \
	  $(SHELL) $(srcdir)/src/web/build.sh $(srcdir) src/web $(WEB_INPUTS)
	touch $@
endif
clean-local: clean-web
clean-web:
	rm -rf src/web/obj src/web/dist
.PHONY: clean-web
