"""A git repository served over HTTPS on a loopback address, for ``pulumi package add <git URL>@<tag>``.

Pulumi takes a package from git only by an ``https://`` (or ``git://``, read as https) URL: a ``file://``
URL is refused ("unknown URL scheme", pulumi v3.274.1 sdk/go/common/workspace/plugins.go,
``parsePluginSpecFromURL``), and a plain path is a local folder, not a repository at a tag. Its git client
is go-git, which speaks git's "smart" HTTP protocol only; so this serves a bare repository with git's own
``git http-backend`` (the CGI program of git-http-backend(1)) behind Python's HTTP server, over TLS with a
throwaway self-signed certificate made by ``openssl``. The pulumi CLI (Go) trusts that certificate
through ``SSL_CERT_FILE`` (Go's crypto/x509 reads it on Linux, root_unix.go).

The server listens on port 443 of a random address in 127.0.0.0/8 (all loopback on Linux), because the
URL must not name a port: ``pulumi package add https://127.0.0.1:<port>/...`` clones and generates the SDK,
then takes the source for a local path (Go's url.Parse refuses "127.0.0.1:<port>/..." once the scheme is
stripped, and ``IsLocalPluginPath`` reads a parse error as "local", pkg/resource/plugin/host.go) and
panics on the missing folder (pkg/cmd/pulumi/packagecmd/package_add.go:230, ``f.IsDir()`` of a nil
FileInfo) before it writes Pulumi.yaml. A port-less URL, as every real git host has, does not meet that.
"""

from __future__ import annotations

import errno
import http.server
import os
import random
import shutil
import ssl
import subprocess
import threading
from pathlib import Path
from typing import Optional


def _http_backend() -> str:
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()
    backend = Path(exec_path) / "git-http-backend"
    if not backend.is_file():
        raise RuntimeError(f"git-http-backend is not in git's exec path {exec_path}: cannot serve a repository")
    return str(backend)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: "_Server"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._backend()

    def do_POST(self) -> None:  # noqa: N802
        self._backend()

    def log_message(self, format: str, *args) -> None:  # the test's output stays the engine's
        self.server.requests.append(self.requestline)

    def _backend(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        # The CGI variables git-http-backend(1) reads ("ENVIRONMENT"); GIT_HTTP_EXPORT_ALL serves the
        # repository without a git-daemon-export-ok file.
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "SERVER_PROTOCOL": self.request_version,
        }
        for header in ("Content-Encoding", "Git-Protocol"):
            if self.headers.get(header):
                env["HTTP_" + header.upper().replace("-", "_")] = self.headers[header]
        done = subprocess.run([self.server.backend], input=body, capture_output=True, env=env, timeout=120)
        head, separator, payload = done.stdout.partition(b"\r\n\r\n")
        if not separator:
            head, separator, payload = done.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        if done.returncode != 0 or not separator:
            status, headers, payload = 500, [("Content-Type", "text/plain")], done.stderr
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(http.server.ThreadingHTTPServer):
    root: Path
    backend: str
    requests: list[str]


class GitHttpsServer:
    """``https://<127.x.y.z>/<owner>/<name>.git``: bare copies of repositories, until ``stop()``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.root = folder / "repositories"
        self.root.mkdir(parents=True)
        self.certificate = folder / "server.pem"
        self.address = ""
        self._server: Optional[_Server] = None

    def _listen(self) -> _Server:
        for _ in range(20):
            address = f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"
            try:
                return _Server((address, 443), _Handler)
            except PermissionError as error:
                raise RuntimeError(
                    "cannot listen on port 443 of a loopback address (needs root or CAP_NET_BIND_SERVICE): a git "
                    "URL with a port makes pulumi v3.274.1's `package add` panic (see tests/e2e/git_https.py)"
                ) from error
            except OSError as error:
                if error.errno != errno.EADDRINUSE:
                    raise
        raise RuntimeError("no free loopback address with port 443 after 20 tries")

    def start(self) -> "GitHttpsServer":
        if shutil.which("openssl") is None:
            raise RuntimeError("openssl is not on PATH: it makes the server's throwaway certificate")
        server = self._listen()
        self.address = server.server_address[0]
        key = self.folder / "server.key"
        made = subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={self.address}",
             "-addext", f"subjectAltName=IP:{self.address}", "-keyout", str(key), "-out", str(self.certificate)],
            capture_output=True, text=True)
        if made.returncode != 0:
            server.server_close()
            raise RuntimeError(f"openssl could not make a certificate for {self.address}: {made.stderr}")
        server.root, server.backend, server.requests = self.root, _http_backend(), []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificate, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, name="git-https", daemon=True).start()
        self._server = server
        return self

    def publish(self, repository: Path, owner: str, name: str) -> str:
        """A bare clone of ``repository`` (every branch and tag) served as ``<owner>/<name>.git``; its URL.

        The owner segment is not decoration: Pulumi names a git package's namespace after the first path
        segment (pkg/cmd/pulumi/packages/packages.go, ``setSpecNamespace``), and "<name>.git" is refused by
        the schema's namespace pattern ("failed to bind schema ... #/namespace: does not match pattern")."""
        assert self._server is not None, "start() first"
        bare = self.root / owner / f"{name}.git"
        done = subprocess.run(["git", "clone", "--quiet", "--bare", str(repository), str(bare)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"git clone --bare {repository}: {done.stderr}")
        return f"https://{self.address}/{owner}/{name}.git"

    @property
    def requests(self) -> list[str]:
        """The request lines served so far (what the client asked for)."""
        return list(self._server.requests) if self._server is not None else []

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
