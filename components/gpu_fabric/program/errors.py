"""A stack program that fails, said in one line: the program's file and line and the exception, instead of a
traceback through gpu-fabric and Pulumi's runtime (:func:`gpu_fabric.program.render.render_stack` raises these).
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Optional

from gpu_fabric.config.base import ConfigError
from gpu_fabric.config.stack_file import StackFileError


class StackNotFoundError(FileNotFoundError):
    """The stack's ``Pulumi.<stack>.yaml`` does not exist."""


class StackProgramError(RuntimeError):
    """The stack program itself raised (a team's own code): said in one line naming the program's file and
    line and the exception, instead of a traceback through gpu-fabric and Pulumi's runtime."""


def program_failure(path: str, error: Exception) -> StackProgramError:
    """One line for an exception the program raised while it ran (file, line, exception, message)."""
    text = " ".join(str(error).split()) or "(no message)"
    return StackProgramError(f"the stack program {path} raised {type(error).__name__}{_location(path, error)}: {text}")


def _program_frames(path: str, error: BaseException) -> list[traceback.FrameSummary]:
    return [frame for frame in traceback.extract_tb(error.__traceback__)
            if Path(frame.filename).resolve() == Path(path).resolve()]


def _at(frames: list[traceback.FrameSummary]) -> str:
    """`` at FILE:LINE`` of the last of ``frames`` (nothing when there is none)."""
    return f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _location(path: str, error: BaseException) -> str:
    """`` at FILE:LINE``: the program's last frame in ``error``'s traceback, else its last frame at all."""
    return _at(_program_frames(path, error) or traceback.extract_tb(error.__traceback__))


_PULUMI_RESOURCE_LINE = re.compile(r"While processing resource: '([^']*)', type: '([^']*)'")
_PULUMI_RISEN = re.compile(r"(\w+) has risen: ")


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and what it was raised from, outermost first (a cycle ends the walk)."""
    chain: list[BaseException] = []
    current: Optional[BaseException] = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def registration_failure(path: str, error: Exception) -> Exception:
    """An error that left the program's registrations after its body returned (an ``apply`` callback that
    raised, an input that could not be serialized): Pulumi wraps it in ``ValueError("While processing
    resource: ...")`` layers (pulumi/pulumi sdk/python/lib/pulumi/runtime/resource.py, ``do_register``).

    Where the chain still holds gpu-fabric's own refusal, it is raised as it is (reported at its configuration
    path). Anything else becomes one line: the innermost error, where in the program it was raised (when a
    frame of the program is left), and the resource Pulumi was registering. Pulumi does not always keep the
    chain: ``wait_for_rpcs`` (sdk/python/lib/pulumi/runtime/stack.py) re-raises a failed registration's
    ``ValueError`` from itself, so an error raised in an ``apply`` arrives as that ValueError's text alone.
    """
    chain = _causes(error)
    own = next((cause for cause in chain if isinstance(cause, (ConfigError, StackFileError, StackProgramError))), None)
    if own is not None:
        return own
    root = chain[-1]
    # Pulumi keeps no frame of an ``apply`` callback that raised; where none of the program's frames is left,
    # the line names the resource instead of pointing into Pulumi's own code.
    where = _at(next((frames for cause in reversed(chain) if (frames := _program_frames(path, cause))), []))
    resource = next((match for cause in chain if (match := _PULUMI_RESOURCE_LINE.search(str(cause)))), None)
    registering = f" while registering {resource.group(2)} {resource.group(1)!r}" if resource else ""
    kind, text = type(root).__name__, str(root)
    # Pulumi may fold the chain into one message ("While processing ...\nValueError has risen: <inner>"):
    # the innermost layer is the program's own error.
    if layers := list(_PULUMI_RISEN.finditer(text)):
        kind, text = layers[-1].group(1), text[layers[-1].end():]
    text = " ".join(text.split()) or "(no message)"
    return StackProgramError(f"the stack program {path} raised {kind}{where}{registering}: {text}")


def program_exit(where: str, exited: SystemExit) -> StackProgramError:
    """One line for a program that ended itself with ``sys.exit`` (or ``raise SystemExit``): the code, and where."""
    at = _at(_program_frames(where.removeprefix("the stack program "), exited))
    return StackProgramError(
        f"{where} exited early (sys.exit({exited.code!r}){at}), before registering all its resources; a render or "
        "check of part of a program is refused")


def program_ended(where: str, how: str) -> StackProgramError:
    """One line for a program whose process ended before it reported its render complete (``os._exit``,
    ``exec``, a signal): how it ended, as :mod:`gpu_fabric.program.completion` saw it."""
    return StackProgramError(
        f"{where} exited early (its process ended: {how}) before the render was complete; a render or check of "
        "part of a program is refused")
