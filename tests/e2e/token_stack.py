# SPDX-License-Identifier: BSD-2-Clause
"""Bearer tokens in front of the e2e stack, as doc/operations.md "Bearer tokens" sets them up
(tests/e2e/test_tokens.pgt, tests/web/test_web_tokens.pgt):
- TokenEndpoint: the shop's own token endpoint that nginx's auth_request asks (python's
  http.server on 127.0.0.1): 200 and the user in Synchro-User for a token it knows, 401
  otherwise; it records every token it saw and can renew a refused token into a file;
- bearer_nginx_site(): conf/nginx/synchro.conf edited as the section says: its include lines
  of the shipped conf/nginx/synchro-bearer.conf and synchro-bearer-endpoint.conf;
- oidc_apache_snippet(), JwksServer and make_jwt(): conf/apache/synchro-oidc.conf after
  synchro-proxy-fcgi.conf, keys made with openssl and published as a JWK set on 127.0.0.1,
  JWTs signed RS256 and ES256 with them (openssl dgst);
- responder_requests(): how many requests the responders answered (their /metrics), to show
  a refused token never reached one."""

import base64
import http.server
import json
import os
import re
import ssl
import subprocess
import threading
import time

import synchro_e2e as e2e

BEARER_LINES = ("auth_basic ", "auth_basic_user_file ")
APACHE_BASIC_LINES = ("AuthType Basic", "AuthName ", "AuthBasicProvider ", "AuthUserFile ", "Require valid-user")


class TokenEndpoint:
    """tokens: {token: user}. renew: {refused token: (file, fresh token)}: when that token is
    refused, the fresh one is written to the file first (a renewer's work), then 401."""

    def __init__(self):
        self.tokens = {}
        self.renew = {}
        # tokens answered 200 with no Synchro-User header: an endpoint that names nobody
        self.no_user = set()
        self.seen = []
        self.lock = threading.Lock()
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                auth = self.headers.get("Authorization", "")
                token = auth[7:] if auth[:7].lower() == "bearer " else None
                with endpoint.lock:
                    endpoint.seen.append((self.path, token))
                    user = endpoint.tokens.get(token) if token else None
                    if user is None and token in endpoint.renew:
                        path, fresh = endpoint.renew.pop(token)
                        with open(path + ".new", "w") as f:
                            f.write(fresh + "\n")
                        os.replace(path + ".new", path)
                self.send_response(200 if user or token in endpoint.no_user else 401)
                if user:
                    self.send_header("Synchro-User", user)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", e2e.free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _conf(name):
    with open(os.path.join(e2e.SRC, "conf", name)) as f:
        return f.read()


# The lines doc/operations.md "Bearer tokens" tells a sysadmin to put in the site.
INCLUDE_V3 = "include snippets/synchro-bearer.conf;"
INCLUDE_SERVER = "include snippets/synchro-bearer-endpoint.conf;"


def bearer_nginx_site(site, endpoint_port, directory):
    """The stack's nginx site (conf/nginx/synchro.conf with its paths) edited as
    doc/operations.md says: the shipped snippets copied to snippets/ beside nginx.conf (the
    endpoint's address this test's), in /v3/ the auth_basic lines replaced by INCLUDE_V3, and
    INCLUDE_SERVER beside the locations."""
    snippets = os.path.join(directory, "snippets")
    os.makedirs(snippets, exist_ok=True)
    os.chmod(snippets, 0o755)
    for name, text in (("synchro-bearer.conf", _conf("nginx/synchro-bearer.conf")),
                       ("synchro-bearer-endpoint.conf", _conf("nginx/synchro-bearer-endpoint.conf")
                        .replace("127.0.0.1:9180", "127.0.0.1:%d" % endpoint_port))):
        path = os.path.join(snippets, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
    lines = site.split("\n")
    at = [i for i, line in enumerate(lines) if line.strip().startswith(BEARER_LINES)]
    assert len(at) == 2, "conf/nginx/synchro.conf: expected the auth_basic lines, got %r" % at
    lines[at[-1]] = "        " + INCLUDE_V3
    for i in reversed(at[:-1]):
        del lines[i]
    site = "\n".join(lines)
    return site.replace("    location / {", "    %s\n\n    location / {" % INCLUDE_SERVER, 1)


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_keys(directory):
    """An RSA key and a P-256 key, made with openssl, with self-signed certificates:
    {"rs256": (key, cert), "es256": (key, cert)} paths, and a second RSA key (not trusted)."""
    keys = {}
    for name, alg in (("rs256", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                      ("es256", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                      ("other", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])):
        key = os.path.join(directory, "idp-%s.key" % name)
        cert = os.path.join(directory, "idp-%s.crt" % name)
        subprocess.run(["openssl", "genpkey"] + alg + ["-out", key], check=True, capture_output=True)
        subprocess.run(["openssl", "req", "-x509", "-new", "-key", key, "-subj", "/CN=synchro-test-idp",
                        "-days", "2", "-out", cert], check=True, capture_output=True)
        os.chmod(cert, 0o644)
        keys[name] = (key, cert)
    # the JWK set's HTTPS server (mod_auth_openidc fetches it over https only)
    key, cert = os.path.join(directory, "tls.key"), os.path.join(directory, "tls.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2"],
                   check=True, capture_output=True)
    os.chmod(cert, 0o644)
    keys["tls"] = (key, cert)
    return keys


def _der_ecdsa_to_raw(der):
    """An ECDSA signature from DER (SEQUENCE of two INTEGERs) to JOSE's r || s, 32 octets each."""
    assert der[0] == 0x30
    pos = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7f)
    out = b""
    for _ in range(2):
        assert der[pos] == 0x02
        n = der[pos + 1]
        v = der[pos + 2:pos + 2 + n].lstrip(b"\0")
        out += v.rjust(32, b"\0")
        pos += 2 + n
    return out


def make_jwt(key, alg, kid, claims):
    """A compact JWS of claims signed with the private key file key (RS256 or ES256)."""
    head = _b64(json.dumps({"alg": alg, "typ": "JWT", "kid": kid}, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing = ("%s.%s" % (head, body)).encode()
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=signing, check=True,
                         capture_output=True).stdout
    if alg == "ES256":
        sig = _der_ecdsa_to_raw(sig)
    return "%s.%s.%s" % (head, body, _b64(sig))


def claims(user, audience="synchro", lifetime=600):
    now = int(time.time())
    return {"sub": user, "aud": audience, "iss": "https://idp.test", "iat": now - 5, "exp": now + lifetime}


def jwks(keys):
    """The JWK set of the trusted keys (rs256, es256; not "other"), from openssl's output."""
    out = []
    key, _ = keys["rs256"]
    modulus = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-modulus"], check=True,
                             capture_output=True, text=True).stdout.strip().split("=", 1)[1]
    out.append({"kty": "RSA", "kid": "rs256", "use": "sig", "alg": "RS256",
                "n": _b64(bytes.fromhex(modulus)), "e": "AQAB"})
    key, _ = keys["es256"]
    der = subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-outform", "DER"], check=True,
                         capture_output=True).stdout
    point = der[-65:]  # SubjectPublicKeyInfo of P-256 ends with the point 04 || x || y
    assert point[0] == 4
    out.append({"kty": "EC", "kid": "es256", "use": "sig", "alg": "ES256", "crv": "P-256",
                "x": _b64(point[1:33]), "y": _b64(point[33:])})
    return {"keys": out}


class JwksServer:
    """The identity provider's JWK set address, served over HTTPS on 127.0.0.1 with the
    certificate keys["tls"] (the Apache of the test trusts it: OIDCCABundlePath)."""

    def __init__(self, keys):
        body = json.dumps(jwks(keys)).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", e2e.free_port()), Handler)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(keys["tls"][1], keys["tls"][0])
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.url = "https://127.0.0.1:%d/.well-known/jwks.json" % self.server.server_address[1]
        self.ca = keys["tls"][1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def oidc_apache_snippet(snippet, jwks_url, ca):
    """synchro-proxy-fcgi.conf (with the stack's paths) as doc/operations.md says: its Basic
    lines deleted from /v3/, conf/apache/synchro-oidc.conf after it, the JWK set address this
    test's, whose certificate (ca) Apache trusts (the one line not shipped)."""
    lines = [line for line in snippet.split("\n") if not line.strip().startswith(APACHE_BASIC_LINES)]
    assert len(snippet.split("\n")) - len(lines) == len(APACHE_BASIC_LINES), "synchro-proxy-fcgi.conf's Basic lines changed"
    oidc = _conf("apache/synchro-oidc.conf")
    assert oidc.count("https://idp.example.com/.well-known/jwks.json") == 1
    return ("\n".join(lines) + "\n" + oidc.replace("https://idp.example.com/.well-known/jwks.json", jwks_url)
            + "\nOIDCCABundlePath %s\n" % ca)


def responder_requests(stack):
    """The requests the responders answered on the protocol's routes (their shared counters)."""
    status, _, body = stack.request("GET", "/metrics", user=None, protocol=None)
    assert status == 200, status
    n = 0
    for m in re.finditer(r'^synchro_http_requests_total\{route="([^"]+)",status="[^"]+"\} (\d+)$',
                         body.decode(), re.M):
        if m.group(1) not in ("metrics", "healthz"):
            n += int(m.group(2))
    return n
