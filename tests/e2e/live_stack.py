# SPDX-License-Identifier: BSD-2-Clause
"""Live updates in a test stack: a mixin for synchro_e2e.Stack (and its subclasses) whose
nginx loads the nchan module and includes conf/nginx/synchro-live.conf where
conf/nginx/synchro.conf shows it; publisher_url() is what [walsync] notify_url gets. The
chaos suite uses the functions."""

import os

import synchro_e2e as e2e

NCHAN = "/usr/lib/nginx/modules/ngx_nchan_module.so"
INCLUDE = "# include /etc/nginx/synchro-live.conf;"


def nchan_missing(name):
    """Why a suite cannot run live updates here (printed as a skip), or None."""
    if not os.path.exists(NCHAN):
        return "%s: SKIP: no %s (Debian: libnginx-mod-nchan)" % (name, NCHAN)
    return None


def live_site(site):
    """The site (conf/nginx/synchro.conf as a stack writes it) with the live locations."""
    if INCLUDE not in site:
        raise AssertionError("conf/nginx/synchro.conf has no '%s'" % INCLUDE)
    return site.replace(INCLUDE, "include %s;" % os.path.join(e2e.SRC, "conf/nginx/synchro-live.conf"))


def load_nchan(conf):
    """nginx.conf at path conf loads the module."""
    with open(conf) as f:
        text = f.read()
    with open(conf, "w") as f:
        f.write("load_module %s;\n%s" % (NCHAN, text))


def publisher_url(port, address="127.0.0.1"):
    return "http://%s:%d/v3/live-publish/" % (address, port)


class LiveSite:
    def nginx_site(self):
        return live_site(super().nginx_site())

    def write_nginx_conf(self, d, site, error_log, workers):
        conf = super().write_nginx_conf(d, site, error_log, workers)
        load_nchan(conf)
        return conf

    def publisher_url(self):
        return publisher_url(self.port)
