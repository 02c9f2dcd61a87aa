"""Raw ``GET`` access to the Kubernetes API through the official client's connection pool, bounded.

``verify`` reads only a handful of paths (discovery, ``/api/v1/nodes``, each node's
``/proxy/configz``, the stack's objects), always as raw JSON bytes: configz is not a typed API
(the client would hand back a Python repr, not JSON), and raw bytes are exactly what a recording
(:mod:`gpu_fabric.verify.recording`) should hold. The server is not trusted: every request has its
own deadline and the run's (:class:`Limits`, :class:`Deadline`), bodies are read in pieces up to a
size, and URLs are printed without their credentials.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol
from urllib.parse import urlsplit, urlunsplit

from gpu_fabric.findings.printable import one_line


class ClusterUnavailable(Exception):
    """The cluster cannot be reached, refused the credential, or answered something unusable."""


class RecordingError(Exception):
    """A ``--replay`` folder is missing, malformed, or lacks a response ``verify`` needs."""


DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_TOTAL_TIMEOUT = 300.0
DEFAULT_MAX_BODY_BYTES = 64 * 2**20
"""A list of 5,000 nodes is a few MB per 500-node page; nothing ``verify`` reads comes near 64 MiB."""


@dataclass(frozen=True)
class Limits:
    """How long and how much ``verify`` waits for and reads from a server it does not trust."""

    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    """Seconds one ``GET`` may take from connecting to its last byte (a trickle counts as one long wait)."""
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    """Seconds the whole run may spend on the cluster."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Largest answer read; a longer body is refused, not buffered."""


@dataclass
class Deadline:
    """The whole run's deadline: started once, shared by every request."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=-1.0)

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.seconds - (self.clock() - self.started))


def public_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``: what may be printed or recorded.

    A kubeconfig ``server`` may carry credentials in its authority (``https://user:pass@host``).
    """
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return "[unparseable URL]"
    if "@" not in parts.netloc:
        return str(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


def printable(text: str) -> str:
    """Server text on one line, control characters (newlines, terminal escapes) as escapes: the project's one
    escaper (:func:`gpu_fabric.findings.printable.one_line`)."""
    return one_line(text)


def sample(data: bytes, size: int = 80) -> str:
    """The start of what a server sent, printable (for "it sent ..." in a refusal)."""
    text = data[:size].decode("utf-8", "replace")
    return repr(text) + ("..." if len(data) > size else "")


@dataclass(frozen=True)
class Response:
    """An API answer: HTTP status and the raw body."""

    status: int
    body: bytes

    def json(self, what: str) -> Any:
        """The body as JSON; a body that is not JSON means the server is not a Kubernetes API."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise ClusterUnavailable(f"{what}: the answer is not JSON (is this a Kubernetes API server?); "
                                     f"it sent {sample(self.body)}") from None
        except RecursionError:
            raise ClusterUnavailable(f"{what}: the answer's JSON is nested too deeply to be a Kubernetes object") from None

    def reason(self) -> str:
        """The ``message`` of a Kubernetes ``Status`` body, else the start of the body."""
        try:
            document = json.loads(self.body)
        except (ValueError, RecursionError):
            document = None
        message = document.get("message") if isinstance(document, dict) else None
        text = message if isinstance(message, str) and message else self.body.decode("utf-8", "replace").strip()
        text = printable(text[:200])
        return f"HTTP {self.status}" + (f": {text}" if text else "")


class Transport(Protocol):
    """Something that answers ``GET <path>`` (path may carry a query string); ``host`` names it in messages."""

    host: str

    def get(self, path: str) -> Response:
        """Return the response to ``GET path``; raise :class:`ClusterUnavailable` when there is none."""


def refuse_credential(path: str, response: Response) -> None:
    """401/403 mean the credential is refused or lacks a permission ``verify`` needs: stop, exit 2."""
    if response.status in (401, 403):
        what = "refused the credential" if response.status == 401 else "forbids the credential"
        raise ClusterUnavailable(f"the cluster {what} for GET {path}: {response.reason()}")


class LiveTransport:
    """``GET`` through a ``kubernetes.client.ApiClient``'s connection pool (authentication, TLS, proxies
    as configured), bounded by :class:`Limits`: each request runs against its own deadline and the
    run's, its body is read in pieces up to ``max_body_bytes``, and redirects are not followed (an
    API server does not redirect reads; following one would send the credential elsewhere)."""

    def __init__(self, api_client: Any, limits: Limits = Limits(), deadline: Optional[Deadline] = None,
                 connect_timeout: float = 5.0):
        self._client = api_client
        self.limits = limits
        self.deadline = deadline or Deadline(limits.total_timeout)
        self._connect_timeout = connect_timeout

    @property
    def host(self) -> str:
        """The API server URL, credentials masked."""
        return public_url(str(self._client.configuration.host))

    def _budget(self, path: str) -> float:
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise ClusterUnavailable(f"verify's deadline of {self.limits.total_timeout:g}s (--timeout) passed before "
                                     f"GET {path} from {self.host}")
        return min(self.limits.request_timeout, remaining)

    def get(self, path: str) -> Response:
        """One request; HTTP errors come back as responses, transport errors and overruns as ``ClusterUnavailable``."""
        budget = self._budget(path)
        attempt = _Attempt()
        worker = threading.Thread(target=attempt.run, args=(lambda: self._fetch(path, budget, attempt),),
                                  name=f"verify GET {path[:60]}", daemon=True)
        worker.start()
        if not attempt.done.wait(budget):
            attempt.abandon()
            waited = (f"within {budget:g}s (--request-timeout)" if budget >= self.limits.request_timeout
                      else f"before the run's deadline of {self.limits.total_timeout:g}s (--timeout)")
            sent = f"it had sent {attempt.received} bytes of the body: {sample(attempt.head)}" if attempt.started \
                else "it had not sent a complete status line and headers"
            raise ClusterUnavailable(f"GET {path} from {self.host}: no complete answer {waited}; {sent}")
        if attempt.error is not None:
            raise attempt.error
        if attempt.response is None:  # a finished attempt holds a response or an error
            raise ClusterUnavailable(f"GET {path} from {self.host}: no answer")
        return attempt.response

    def _fetch(self, path: str, budget: float, attempt: "_Attempt") -> Response:
        import urllib3

        headers = {"Accept": "application/json", "User-Agent": str(self._client.user_agent)}
        try:
            self._client.update_params_for_auth(headers, [], ["BearerToken"])
        except Exception as error:  # noqa: BLE001 - an exec plugin or token file failing is a reason, not a traceback
            raise ClusterUnavailable(f"cannot get a credential for {self.host}: {first_line(error)}") from None
        timeout = urllib3.Timeout(connect=min(self._connect_timeout, budget), read=budget)
        url = str(self._client.configuration.host).rstrip("/") + path
        try:
            answer = self._client.rest_client.pool_manager.request(
                "GET", url, headers=headers, preload_content=False, redirect=False, timeout=timeout)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            reason = getattr(error, "reason", None) or error
            raise ClusterUnavailable(f"cannot reach {self.host}: {first_line(mask_credentials(str(reason)))}") from None
        attempt.hold(answer)
        try:
            declared = answer.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > self.limits.max_body_bytes:
                raise ClusterUnavailable(f"GET {path} from {self.host}: the answer announces {int(declared)} bytes, more than "
                                         f"{self.limits.max_body_bytes} (--max-body-bytes); not read")
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    break
                attempt.add(chunk)
                if attempt.received > self.limits.max_body_bytes:
                    raise ClusterUnavailable(f"GET {path} from {self.host}: the answer is larger than "
                                             f"{self.limits.max_body_bytes} bytes (--max-body-bytes); stopped reading")
            attempt.complete = True
            return Response(int(answer.status), attempt.body())
        except (urllib3.exceptions.HTTPError, OSError) as error:
            if attempt.abandoned:
                raise ClusterUnavailable(f"GET {path} from {self.host}: abandoned") from None
            reason = getattr(error, "reason", None) or error
            raise ClusterUnavailable(f"GET {path} from {self.host}: the answer broke off after {attempt.received} bytes: "
                                     f"{first_line(mask_credentials(str(reason)))}") from None
        finally:
            attempt.release()


class _Attempt:
    """One request's progress, shared between the thread reading it and the one waiting for it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.response: Optional[Response] = None
        self.error: Optional[BaseException] = None
        self.started = False
        self.abandoned = False
        self.complete = False
        self.received = 0
        self.head = b""
        self._chunks: list[bytes] = []
        self._answer: Any = None
        self._lock = threading.Lock()

    def run(self, work: Callable[[], Response]) -> None:
        try:
            self.response = work()
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread, which raises it
            self.error = error
        finally:
            self.done.set()

    def hold(self, answer: Any) -> None:
        with self._lock:
            self._answer, self.started = answer, True
            if self.abandoned:
                self._shutdown()

    def add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self.received += len(chunk)
        if len(self.head) < 80:
            self.head += chunk[:80]

    def body(self) -> bytes:
        return b"".join(self._chunks)

    def abandon(self) -> None:
        """Stop the reader: shut the socket down so a blocked read returns at once."""
        with self._lock:
            self.abandoned = True
            self._shutdown()

    def _shutdown(self) -> None:
        answer = self._answer
        if answer is None:
            return
        try:
            answer.shutdown()
        except (ValueError, RuntimeError, OSError):
            pass

    def release(self) -> None:
        with self._lock:
            answer, self._answer = self._answer, None
        if answer is not None:
            try:
                if not self.complete:
                    answer.close()  # a partly read connection cannot serve the next request
                answer.release_conn()
            except Exception:  # noqa: BLE001 - releasing a broken connection must not mask the reason
                pass


def mask_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it (``scheme://user:pass@``) replaced by ``***``."""
    # urllib3 and the client put the URL in their reasons; a URL's credentials must not be printed.
    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@", r"\1***@", text)


def first_line(text: Any) -> str:
    """The first line of an error's text (client errors run over several)."""
    lines = str(text).strip().splitlines()
    return lines[0] if lines else "no reason given"
