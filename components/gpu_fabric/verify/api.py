"""Raw ``GET`` access to the Kubernetes API: live through the official client, recorded, or replayed.

``verify`` reads only a handful of paths (discovery, ``/api/v1/nodes``, each node's
``/proxy/configz``, the stack's objects), always as raw JSON bytes: configz must be read with
``_preload_content=False`` anyway (the client would otherwise hand back a Python repr, not JSON),
and raw bytes are exactly what a recording should hold. A recording is a folder with
``recording.json`` (an index of ``GET <path>`` -> status and body file) and one body file per
response, so a team can attach a cluster's state to an issue and CI can replay it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol
from urllib.parse import parse_qsl, urlsplit

RECORDING_INDEX = "recording.json"
RECORDING_FORMAT = "gpu-fabric-verify-recording/v1"


class ClusterUnavailable(Exception):
    """The cluster cannot be reached, refused the credential, or answered something unusable."""


class RecordingError(Exception):
    """A ``--replay`` folder is missing, malformed, or lacks a response ``verify`` needs."""


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
            raise ClusterUnavailable(f"{what}: the answer is not JSON (is this a Kubernetes API server?)") from None

    def reason(self) -> str:
        """The ``message`` of a Kubernetes ``Status`` body, else the start of the body."""
        try:
            message = json.loads(self.body).get("message")
        except (ValueError, AttributeError):
            message = None
        text = message or self.body.decode("utf-8", "replace").strip()
        return f"HTTP {self.status}" + (f": {text[:200]}" if text else "")


class Transport(Protocol):
    """Something that answers ``GET <path>`` (path may carry a query string)."""

    def get(self, path: str) -> Response:
        """Return the response to ``GET path``; raise :class:`ClusterUnavailable` when there is none."""


def refuse_credential(path: str, response: Response) -> None:
    """401/403 mean the credential is refused or lacks a permission ``verify`` needs: stop, exit 2."""
    if response.status in (401, 403):
        what = "refused the credential" if response.status == 401 else "forbids the credential"
        raise ClusterUnavailable(f"the cluster {what} for GET {path}: {response.reason()}")


class LiveTransport:
    """``GET`` through a ``kubernetes.client.ApiClient`` (authentication, TLS, proxies as configured)."""

    def __init__(self, api_client: Any, timeout: tuple[float, float] = (5.0, 30.0)):
        self._client = api_client
        self._timeout = timeout

    @property
    def host(self) -> str:
        """The API server URL."""
        return str(self._client.configuration.host)

    def get(self, path: str) -> Response:
        """One request; HTTP errors come back as responses, transport errors as ``ClusterUnavailable``."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        parts = urlsplit(path)
        try:
            answer = self._client.call_api(
                parts.path, "GET", query_params=parse_qsl(parts.query) or None,
                header_params={"Accept": "application/json"}, auth_settings=["BearerToken"],
                _preload_content=False, _request_timeout=self._timeout,
            )
            body = answer.data
            answer.release_conn()  # read in full: the connection goes back to the pool for the next reader
            return Response(answer.status, body)
        except ApiException as error:
            if not error.status:  # TLS failures and unpreparable requests carry status 0
                raise ClusterUnavailable(f"cannot reach {self.host}: {_first_line(error.reason)}") from None
            body = error.body if isinstance(error.body, bytes) else str(error.body or "").encode()
            return Response(int(error.status), body)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            reason = getattr(error, "reason", None) or error
            raise ClusterUnavailable(f"cannot reach {self.host}: {_first_line(str(reason))}") from None


def _first_line(text: Any) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else "no reason given"


def redact_secret(body: bytes) -> bytes:
    """A ``Secret`` body with every value replaced by ``[redacted]``; any other body unchanged.

    A recording is made to be attached to issues; whether a Secret exists is all ``verify`` needs.
    """
    try:
        document = json.loads(body)
    except ValueError:
        return body
    if not isinstance(document, dict) or document.get("kind") != "Secret":
        return body
    for key in ("data", "stringData"):
        if isinstance(document.get(key), dict):
            document[key] = {name: "[redacted]" for name in document[key]}
    annotations = (document.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and "kubectl.kubernetes.io/last-applied-configuration" in annotations:
        annotations["kubectl.kubernetes.io/last-applied-configuration"] = "[redacted]"
    return json.dumps(document, sort_keys=True).encode()


def _body_file(path: str) -> str:
    # Readable and unique: the path's words, then a short hash of the exact path and query.
    words = re.sub(r"[^A-Za-z0-9._-]+", "_", path.strip("/"))[:120]
    return f"{words}-{hashlib.sha256(path.encode()).hexdigest()[:10]}.json"


class RecordingTransport:
    """Pass every ``GET`` to ``inner`` and keep the raw answer; :meth:`save` writes the folder."""

    def __init__(self, inner: Transport, folder: Path):
        self._inner = inner
        self._folder = Path(folder)
        self._responses: dict[str, Response] = {}
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        """The recorded server."""
        return str(getattr(self._inner, "host", ""))

    def get(self, path: str) -> Response:
        """Ask the live cluster and remember the answer (a Secret's values are not kept)."""
        response = self._inner.get(path)
        with self._lock:
            self._responses[path] = Response(response.status, redact_secret(response.body))
        return response

    @property
    def recorded(self) -> int:
        """How many responses are held."""
        return len(self._responses)

    def save(self) -> None:
        """Write ``recording.json`` and one body file per response (an earlier index in the folder is replaced)."""
        try:
            self._folder.mkdir(parents=True, exist_ok=True)
            index = {}
            for path in sorted(self._responses):
                response = self._responses[path]
                body = _body_file(path)
                (self._folder / body).write_bytes(response.body)
                index[f"GET {path}"] = {"status": response.status, "body": body}
            document = {"format": RECORDING_FORMAT, "server": self.host, "responses": index}
            (self._folder / RECORDING_INDEX).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        except OSError as error:
            raise RecordingError(f"cannot write the recording to {self._folder}: {error.strerror or error}") from None


class ReplayTransport:
    """Answer from a folder :class:`RecordingTransport` wrote; a path it lacks is an error."""

    def __init__(self, folder: Path):
        self._folder = Path(folder)
        index_path = self._folder / RECORDING_INDEX
        try:
            document = json.loads(index_path.read_text())
        except FileNotFoundError:
            raise RecordingError(f"{index_path} does not exist (record one with --record DIR)") from None
        except (OSError, ValueError) as error:
            raise RecordingError(f"{index_path} is not a readable JSON recording: {_first_line(error)}") from None
        if not isinstance(document, dict) or document.get("format") != RECORDING_FORMAT:
            raise RecordingError(f"{index_path}: not a {RECORDING_FORMAT} recording (format: "
                                 f"{document.get('format') if isinstance(document, dict) else None!r})")
        responses = document.get("responses")
        if not isinstance(responses, dict):
            raise RecordingError(f"{index_path}: 'responses' must be a mapping of 'GET <path>' to status and body")
        self._index: dict[str, tuple[int, str]] = {}
        for key, entry in responses.items():
            if (not isinstance(key, str) or not key.startswith("GET ") or not isinstance(entry, dict)
                    or not isinstance(entry.get("status"), int) or not isinstance(entry.get("body"), str)
                    or Path(entry["body"]).name != entry["body"]):
                raise RecordingError(f"{index_path}: entry {key!r} needs an integer 'status' and a 'body' file name")
            self._index[key[len("GET "):]] = (entry["status"], entry["body"])
        self.host = str(document.get("server") or self._folder)

    def get(self, path: str) -> Response:
        """The recorded answer to ``GET path``."""
        entry: Optional[tuple[int, str]] = self._index.get(path)
        if entry is None:
            raise RecordingError(f"{self._folder / RECORDING_INDEX} holds no response for GET {path} "
                                 "(recorded for another stack or an older verify?)")
        status, body = entry
        try:
            return Response(status, (self._folder / body).read_bytes())
        except OSError as error:
            raise RecordingError(f"{self._folder / body}: {error.strerror or error}") from None
