"""systemd's manager over its private D-Bus socket: restart, stop and start one unit.

A minimal D-Bus client (D-Bus specification: "Authentication Protocol", "Message Format"): SASL
EXTERNAL authentication, one METHOD_CALL with string arguments, and the METHOD_RETURN or ERROR
that answers it.
"""

import os
import socket
import struct
from typing import Any, Dict, List, Sequence, Tuple

from .errors import AgentError


class SystemdBus:
    """systemd's manager over its private D-Bus socket (what ``systemctl`` uses as root).

    Only the socket is shared with the pod: no capability, no host mount namespace. systemd accepts
    the peer because the pod runs as uid 0 (SO_PEERCRED), exactly as it accepts ``systemctl``.
    """

    PATH = "/org/freedesktop/systemd1"
    INTERFACE = "org.freedesktop.systemd1.Manager"

    def __init__(self, socket_path: str, timeout: float = 30.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._serial = 0

    def restart(self, unit: str) -> None:
        """Queue a restart of ``unit`` (``RestartUnit(unit, "replace")``)."""
        self._call("RestartUnit", unit, "replace")

    def stop(self, unit: str) -> None:
        """Queue a stop of ``unit``."""
        self._call("StopUnit", unit, "replace")

    def start(self, unit: str) -> None:
        """Queue a start of ``unit``."""
        self._call("StartUnit", unit, "replace")

    def _call(self, member: str, *arguments: str) -> None:
        self._serial += 1
        message = method_call(self._serial, self.PATH, self.INTERFACE, member, "org.freedesktop.systemd1", arguments)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(self.timeout)
            try:
                connection.connect(self.socket_path)
            except OSError as error:
                raise AgentError(f"cannot reach systemd at {self.socket_path}: {error}") from None
            authenticate(connection)
            connection.sendall(message)
            kind, fields, body = read_reply(connection, self._serial)
        if kind == 3:
            raise AgentError(f"systemd refused {member}({', '.join(arguments)}): {fields.get(4)}: {body}")


def _pad(buffer: bytearray, alignment: int) -> None:
    buffer.extend(b"\0" * (-len(buffer) % alignment))


def _put_string(buffer: bytearray, text: str) -> None:
    data = text.encode()
    _pad(buffer, 4)
    buffer.extend(struct.pack("<I", len(data)) + data + b"\0")


def _put_signature(buffer: bytearray, text: str) -> None:
    buffer.extend(bytes([len(text)]) + text.encode() + b"\0")


def method_call(serial: int, path: str, interface: str, member: str, destination: str, arguments: Sequence[str]) -> bytes:
    """A little-endian D-Bus METHOD_CALL with string arguments (D-Bus specification, "Message Format")."""
    body = bytearray()
    for argument in arguments:
        _put_string(body, argument)
    fields: List[Tuple[int, str, str]] = [(1, "o", path), (2, "s", interface), (3, "s", member), (6, "s", destination)]
    if arguments:
        fields.append((8, "g", "s" * len(arguments)))
    message = bytearray(b"l\x01\x00\x01" + struct.pack("<II", len(body), serial))
    length_at = len(message)
    message.extend(b"\0\0\0\0")
    start = len(message)  # the array's elements are structs: 8-aligned, and 16 already is
    for code, signature, value in fields:
        _pad(message, 8)
        message.append(code)
        _put_signature(message, signature)
        if signature == "g":
            _put_signature(message, value)
        else:
            _put_string(message, value)
    struct.pack_into("<I", message, length_at, len(message) - start)
    _pad(message, 8)
    return bytes(message + body)


def authenticate(connection: socket.socket) -> None:
    """SASL EXTERNAL authentication with this process's uid (D-Bus specification, "Authentication Protocol")."""
    uid = str(os.getuid()).encode().hex()
    connection.sendall(b"\0AUTH EXTERNAL " + uid.encode() + b"\r\n")
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = connection.recv(1)
        if not chunk:
            raise AgentError("systemd closed the connection during authentication")
        line += chunk
    if not line.startswith(b"OK "):
        raise AgentError(f"systemd refused authentication as uid {os.getuid()}: {line.strip().decode(errors='replace')}")
    connection.sendall(b"BEGIN\r\n")


def _receive(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise AgentError("systemd closed the connection before replying")
        data += chunk
    return data


def parse_message(data: bytes) -> Tuple[int, Dict[int, Any], List[str]]:
    """(message type, header fields by code, leading string arguments of the body) of one message."""
    order = "<" if data[0:1] == b"l" else ">"
    kind = data[1]
    body_length, _serial, fields_length = struct.unpack(order + "III", data[4:16])
    fields: Dict[int, Any] = {}
    position, end = 16, 16 + fields_length
    while position < end:
        position += -position % 8
        code = data[position]
        signature_length = data[position + 1]
        signature = data[position + 2:position + 2 + signature_length].decode()
        position += signature_length + 3
        if signature in ("s", "o"):
            position += -position % 4
            (length,) = struct.unpack(order + "I", data[position:position + 4])
            fields[code] = data[position + 4:position + 4 + length].decode()
            position += 4 + length + 1
        elif signature == "u":
            position += -position % 4
            (fields[code],) = struct.unpack(order + "I", data[position:position + 4])
            position += 4
        elif signature == "g":
            length = data[position]
            fields[code] = data[position + 1:position + 1 + length].decode()
            position += length + 2
        else:
            raise AgentError(f"unexpected D-Bus header field type {signature!r}")
    body_start = end + (-end % 8)
    body = data[body_start:body_start + body_length]
    strings: List[str] = []
    position = 0
    for letter in fields.get(8, ""):
        if letter not in "so":
            break
        position += -position % 4
        (length,) = struct.unpack(order + "I", body[position:position + 4])
        strings.append(body[position + 4:position + 4 + length].decode())
        position += 4 + length + 1
    return kind, fields, strings


def read_reply(connection: socket.socket, serial: int) -> Tuple[int, Dict[int, Any], str]:
    """Read messages until the METHOD_RETURN (2) or ERROR (3) answering ``serial``."""
    while True:
        head = _receive(connection, 16)
        order = "<" if head[0:1] == b"l" else ">"
        body_length, _, fields_length = struct.unpack(order + "III", head[4:16])
        header_end = 16 + fields_length
        rest = _receive(connection, header_end + (-header_end % 8) - 16 + body_length)
        kind, fields, strings = parse_message(head + rest)
        if kind in (2, 3) and fields.get(5) == serial:
            return kind, fields, strings[0] if strings else ""
