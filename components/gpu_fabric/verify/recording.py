"""Recordings: the raw answers of one ``verify`` run kept in a folder, and replayed from it.

A recording is a folder with ``recording.json`` (an index of ``GET <path>`` -> status and body file)
and one body file per response, so a team can attach a cluster's state to an issue and CI can replay
it. A Secret's values, credentials in plain text in any object and the server URL's credentials are
never kept. Every file is read and
written through the folder's handle (:mod:`gpu_fabric.config.safe_files`): a link, folder or FIFO
where a recording file belongs is refused, never followed.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Optional

from gpu_fabric.config.safe_files import Folder, UnsafeFileError
from gpu_fabric.config.secrets import LAST_APPLIED, credential_sites, mask_tokens, token_in
from gpu_fabric.verify.api import Limits, RecordingError, Response, Transport, first_line, public_url

RECORDING_INDEX = "recording.json"
RECORDING_FORMAT = "gpu-fabric-verify-recording/v1"


REDACTED = "[redacted]"


def redact_secret(body: bytes) -> bytes:
    """A response body with every secret value replaced by ``[redacted]``; a body without one unchanged.

    A recording is made to be attached to issues; whether a Secret exists is all ``verify`` needs.
    Redacted wherever they are in the body (an object, or the items of a list): a ``Secret``'s
    ``data`` and ``stringData`` and its last-applied annotation; and in any object, whatever the
    project's one detector (:func:`gpu_fabric.config.secrets.credential_sites`) finds: a credential's
    shape in any string (a ``ghp_`` token in an annotation), variables, probe headers, command lines,
    annotations (a last-applied-configuration annotation holding one is redacted whole) and tags.
    """
    try:
        document = json.loads(body)
        changed = _redact(document)
    except (ValueError, RecursionError):
        text = body.decode("utf-8", "replace")  # a log, or JSON too deep to read: mask what the shapes betray
        return body if token_in(text) is None else mask_tokens(text, REDACTED).encode()
    return json.dumps(document, sort_keys=True).encode() if changed else body


def _redact(document: object) -> bool:
    """Redact ``document`` in place; True if anything was."""
    changed = False
    pending: list[object] = [document]
    while pending:  # iteratively: a server's deep nesting cannot exhaust the stack
        node = pending.pop()
        if isinstance(node, dict):
            if node.get("kind") == "Secret":
                for field in ("data", "stringData"):
                    if isinstance(node.get(field), dict) and node[field]:
                        node[field] = {name: REDACTED for name in node[field]}
                        changed = True
                metadata = node.get("metadata")
                annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
                if isinstance(annotations, dict) and isinstance(annotations.get(LAST_APPLIED), str):
                    annotations[LAST_APPLIED] = REDACTED
                    changed = True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    for site in credential_sites(document):
        site.holder[site.key] = REDACTED
        changed = True
    return changed


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
        """The recorded server (credentials masked)."""
        return public_url(str(getattr(self._inner, "host", "")))

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
        """Write ``recording.json`` and one body file per response (an earlier index in the folder is replaced).

        Inside ``DIR`` only: ``DIR`` itself, ``recording.json`` and every body file are written through
        a folder handle, never through a symbolic link, and a folder, FIFO or device in the place of
        one of them is refused (:mod:`gpu_fabric.config.safe_files`).
        """
        try:
            with Folder.open(self._folder, create=True) as folder:
                index = {}
                for path in sorted(self._responses):
                    response = self._responses[path]
                    body = _body_file(path)
                    folder.write(body, response.body)
                    index[f"GET {path}"] = {"status": response.status, "body": body}
                document = {"format": RECORDING_FORMAT, "server": self.host, "responses": index}
                folder.write(RECORDING_INDEX, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode())
        except UnsafeFileError as error:
            raise RecordingError(f"cannot write the recording: {error}") from None
        except OSError as error:
            raise RecordingError(f"cannot write the recording to {self._folder}: {error.strerror or error}") from None


MAX_INDEX_BYTES = 16 * 2**20


class ReplayTransport:
    """Answer from a folder :class:`RecordingTransport` wrote; a path it lacks is an error.

    Every file is read from inside the folder: a body name must be a plain file name, and a
    symbolic link, folder, FIFO or device where a file belongs is refused, not followed.
    """

    def __init__(self, folder: Path, limits: Limits = Limits()):
        self._folder = Path(folder)
        self._limits = limits
        index_path = self._folder / RECORDING_INDEX
        try:
            self._handle = Folder.open(self._folder, follow=True)
        except FileNotFoundError:
            raise RecordingError(f"{index_path} does not exist (record one with --record DIR)") from None
        except UnsafeFileError as error:
            raise RecordingError(str(error)) from None
        try:
            self._index = self._read_index(index_path)
        except BaseException:
            self._handle.close()
            raise
        self.host = self._server

    def _read_index(self, index_path: Path) -> dict[str, tuple[int, str]]:
        try:
            document = json.loads(self._handle.read(RECORDING_INDEX, MAX_INDEX_BYTES))
        except FileNotFoundError:
            raise RecordingError(f"{index_path} does not exist (record one with --record DIR)") from None
        except UnsafeFileError as error:
            raise RecordingError(f"{error}; a recording's files must be regular files inside its folder") from None
        except (OSError, ValueError, RecursionError) as error:
            raise RecordingError(f"{index_path} is not a readable JSON recording: {first_line(error)}") from None
        if not isinstance(document, dict) or document.get("format") != RECORDING_FORMAT:
            raise RecordingError(f"{index_path}: not a {RECORDING_FORMAT} recording (format: "
                                 f"{document.get('format') if isinstance(document, dict) else None!r})")
        responses = document.get("responses")
        if not isinstance(responses, dict):
            raise RecordingError(f"{index_path}: 'responses' must be a mapping of 'GET <path>' to status and body")
        index: dict[str, tuple[int, str]] = {}
        for key, entry in responses.items():
            body = entry.get("body") if isinstance(entry, dict) else None
            if (not key.startswith("GET ") or not isinstance(entry, dict)
                    or not isinstance(entry.get("status"), int) or isinstance(entry.get("status"), bool)
                    or not isinstance(body, str) or not _plain_name(body)):
                raise RecordingError(f"{index_path}: entry {key!r} needs an integer 'status' and a 'body' file name "
                                     "inside the recording's folder")
            index[key[len("GET "):]] = (entry["status"], body)
        server = document.get("server")
        self._server = public_url(server) if isinstance(server, str) and server else str(self._folder)
        return index

    def close(self) -> None:
        """Close the folder handle."""
        self._handle.close()

    def get(self, path: str) -> Response:
        """The recorded answer to ``GET path``."""
        entry: Optional[tuple[int, str]] = self._index.get(path)
        if entry is None:
            raise RecordingError(f"{self._folder / RECORDING_INDEX} holds no response for GET {path} "
                                 "(recorded for another stack or an older verify?)")
        status, body = entry
        try:
            return Response(status, self._handle.read(body, self._limits.max_body_bytes))
        except UnsafeFileError as error:
            raise RecordingError(f"{error}; a recording's files must be regular files inside its folder") from None
        except OSError as error:
            raise RecordingError(f"{self._folder / body}: {error.strerror or error}") from None


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name and Path(name).name == name
