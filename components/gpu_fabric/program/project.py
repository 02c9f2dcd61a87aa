"""The Pulumi project a render runs: its name, its stack program and where its stack files live.

A render must produce the URNs ``pulumi preview`` of *that* project produces, so the project name
comes from the project's own ``Pulumi.yaml`` (``name:``), never from this library. Pulumi's
``Pulumi.yaml`` keys read here (pulumi/pulumi ``sdk/go/common/workspace/project.go``, ``Project``):

* ``name`` -- the project name, the second part of every URN;
* ``main`` -- the program: a folder holding ``__main__.py`` or a ``.py`` file, relative to the
  project (the Python language host runs it as ``__main__``);
* ``stackConfigDir`` -- the folder holding ``Pulumi.<stack>.yaml``.

Both default to the project folder itself, as Pulumi has them: "``main``: Path to the Pulumi
program, relative to the location of Pulumi.yaml. The default is the current working directory"
and ``stackConfigDir``, "Config directory location relative to the location of Pulumi.yaml"
(https://www.pulumi.com/docs/iac/concepts/projects/project-file/); without it the engine looks for
``Pulumi.<stack>.yaml`` beside ``Pulumi.yaml`` (pulumi/pulumi ``sdk/go/common/workspace/paths.go``,
``DetectProjectStackPath``). So a project as ``pulumi new python`` makes it -- ``Pulumi.yaml``,
``__main__.py`` and ``Pulumi.<stack>.yaml`` in one folder -- renders as it is. gpu-fabric's own
layout sets both keys (``main: stacks/``, ``stackConfigDir: stacks``: this repository's
``Pulumi.yaml``). A folder with no ``Pulumi.yaml`` at all is not a Pulumi project; gpu-fabric reads
it in its own layout (``stacks/``, project name ``gpu-fabric``), which is what a bare folder of stack
files and the test fixtures hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_fabric.config.syntax import pulumi_project_name


PROJECT_FILE = "Pulumi.yaml"
DEFAULT_PROJECT_NAME = "gpu-fabric"
PULUMI_DEFAULT_FOLDER = "."
"""``main`` and ``stackConfigDir`` when ``Pulumi.yaml`` leaves them out: the project folder (Pulumi's defaults)."""
DEFAULT_PROGRAM = "stacks"
DEFAULT_STACK_CONFIG_DIR = "stacks"
"""``main`` and ``stackConfigDir`` of a folder without ``Pulumi.yaml``: gpu-fabric's own layout."""

STACK_PROGRAM_TEXT = "from gpu_fabric.program.stack import build_stack\n\nbuild_stack()\n"
"""The whole stack program a project needs (this repository's ``stacks/__main__.py`` without its docstring)."""


class ProjectError(ValueError):
    """The project cannot be rendered: its ``Pulumi.yaml`` is unreadable or its program is missing.

    The message is one line that names the file and says what to add.
    """


@dataclass(frozen=True)
class Project:
    """What a render needs to know about a Pulumi project folder."""

    folder: Path
    name: str
    """The project name (``Pulumi.yaml`` ``name``): the project part of every URN."""
    main: str
    """The program as ``Pulumi.yaml`` spells it (``main``), relative to :attr:`folder`."""
    stack_config_dir: str
    """The folder of the ``Pulumi.<stack>.yaml`` files, relative to :attr:`folder`."""

    @property
    def stacks_folder(self) -> Path:
        """Where ``Pulumi.<stack>.yaml`` files are."""
        return self.folder / self.stack_config_dir

    @property
    def program_path(self) -> Path:
        """The program file: ``main`` itself when it is a file, else its ``__main__.py``."""
        path = self.folder / self.main
        return path if path.suffix == ".py" else path / "__main__.py"

    def require_program(self) -> Path:
        """:attr:`program_path`, or a :class:`ProjectError` saying (in one line) what to add."""
        path = self.program_path
        if path.is_file():
            return path
        add = "; ".join(line for line in STACK_PROGRAM_TEXT.splitlines() if line)
        beside = self.folder / DEFAULT_PROGRAM / "__main__.py"
        if self.main == PULUMI_DEFAULT_FOLDER and beside.is_file():
            # gpu-fabric's layout under a Pulumi.yaml that does not say so: Pulumi would not find it either.
            raise ProjectError(
                f"project {self.name!r} has no stack program: {path} does not exist, and {PROJECT_FILE} sets no `main:` "
                f"(Pulumi's default is the project folder); add `main: {DEFAULT_PROGRAM}/` to "
                f"{self.folder / PROJECT_FILE} to run {beside}")
        where = "__main__.py beside Pulumi.yaml" if self.main == PULUMI_DEFAULT_FOLDER else f"{path}"
        raise ProjectError(
            f"project {self.name!r} has no stack program: {path} does not exist; add {where} containing `{add}`, "
            f"or set `main:` in {self.folder / PROJECT_FILE} to your own program")

    def stack_file_refusal(self, stack: str, path: Path) -> str:
        """Why ``Pulumi.<stack>.yaml`` at ``path`` cannot be read: absent (with the stacks there are), or
        what it is instead of a regular file (a FIFO, a folder, a link loop: said, never read)."""
        from gpu_fabric.config.safe_files import path_kind
        from gpu_fabric.config.suggestions import did_you_mean

        kind = path_kind(path)
        if kind is not None:
            return f"stack {stack!r}: {path} is {kind}, not a regular file"
        available = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in path.parent.glob("Pulumi.*.yaml"))
        return (f"no stack {stack!r}: {path} does not exist (stacks: {', '.join(available) or 'none'})"
                + did_you_mean(stack, available) + self.stack_file_hint(stack) + self.subfolder_hint(stack))

    def subfolder_hint(self, stack: str) -> str:
        """When ``Pulumi.<stack>.yaml`` is missing from :attr:`stacks_folder` but sits one folder below it: that
        Pulumi does not look there (else ``""``)."""
        # Pulumi reads <stackConfigDir>/Pulumi.<stack>.yaml and nothing below it (pulumi/pulumi
        # sdk/go/common/workspace/paths.go, DetectProjectStackPath); one level is looked at, not a whole tree.
        below = sorted(self.stacks_folder.glob(f"*/Pulumi.{stack}.yaml"))
        if not below:
            return ""
        return (f"; {below[0]} is in a subfolder, and Pulumi reads stack files only from {self.stacks_folder} "
                f"(stackConfigDir): move it there, or give its folder a {PROJECT_FILE} of its own and use it as the project")

    def stack_file_hint(self, stack: str) -> str:
        """When ``Pulumi.<stack>.yaml`` is missing from :attr:`stacks_folder` but sits in gpu-fabric's
        ``stacks/`` and ``Pulumi.yaml`` sets no ``stackConfigDir``: what to add (else ``""``)."""
        elsewhere = self.folder / DEFAULT_STACK_CONFIG_DIR / f"Pulumi.{stack}.yaml"
        if self.stack_config_dir != PULUMI_DEFAULT_FOLDER or not (self.folder / PROJECT_FILE).is_file() \
                or not elsewhere.is_file():
            return ""
        return (f"; {elsewhere} exists, but {PROJECT_FILE} sets no `stackConfigDir:` (Pulumi's default is the project "
                f"folder): add `stackConfigDir: {DEFAULT_STACK_CONFIG_DIR}` to {self.folder / PROJECT_FILE}")


def read_project(folder: Path | str) -> Project:
    """The project of ``folder`` as its ``Pulumi.yaml`` declares it (defaults when there is none)."""
    from gpu_fabric.config.safe_files import path_kind

    folder = Path(folder)
    path = folder / PROJECT_FILE
    kind = path_kind(path)
    if kind is None:
        return Project(folder, DEFAULT_PROJECT_NAME, DEFAULT_PROGRAM, DEFAULT_STACK_CONFIG_DIR)
    if kind != "file":
        # A Pulumi.yaml that is there but unreadable (a link loop, a FIFO, a folder) is no absent one: the
        # defaults would render the stack under another project name, every URN changed.
        raise ProjectError(f"{path} is {kind}, not a regular file; a Pulumi project file must be one")
    from gpu_fabric.config.stack_file import decode_text, parse_yaml, read_input

    try:
        # Read as strictly as a stack file: an alias bomb, deep nesting or a control character is
        # refused at once, never expanded until memory runs out.
        documents = parse_yaml(decode_text(read_input(path)))
    except OSError as error:
        raise ProjectError(f"{path}: cannot be read: {error.strerror or error}") from None
    except ValueError as error:
        raise ProjectError(f"{path}: cannot be read as YAML: {' '.join(str(error).split())}") from None
    if len(documents) > 1:
        raise ProjectError(f"{path}: holds {len(documents)} YAML documents; a Pulumi project file is one mapping")
    document: Any = documents[0] if documents else None
    if not isinstance(document, dict):
        raise ProjectError(f"{path}: a Pulumi project file is a mapping with at least `name:`")
    name = document.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ProjectError(f"{path}: `name:` must be the project name (a non-empty string), found {name!r}")
    try:
        pulumi_project_name(name.strip())
    except ValueError as error:
        # Every command that renders, and the library, read the project here: one refusal for all of them.
        raise ProjectError(f"{path}: `name:` {error}") from None
    main = _relative_setting(path, document, "main", PULUMI_DEFAULT_FOLDER)
    stack_config_dir = _relative_setting(path, document, "stackConfigDir", PULUMI_DEFAULT_FOLDER)
    return Project(folder, name.strip(), main, stack_config_dir)


def _relative_setting(path: Path, document: dict[str, Any], key: str, default: str) -> str:
    value = document.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise ProjectError(f"{path}: `{key}:` must be a path relative to the project, found {value!r}")
    relative = Path(value.strip())
    if relative.is_absolute() or ".." in relative.parts:
        # A render reads only inside the project it was pointed at.
        raise ProjectError(f"{path}: `{key}:` must stay inside the project folder, found {value!r}")
    return relative.as_posix()
