"""A render is complete only when the process that ran the program says so (issue 40).

Each program here registers a Pod with ``hostPID: true`` (a mandatory ``kubelet-host-access`` violation)
and then tries to end the process that runs it by a route that patching ``os._exit`` never saw. Each
must end as a refusal (exit 2, one line naming how the program's process ended) or, where the route
acts only after the render was reported, with the violation (exit 1) -- never exit 0. The commands run
as users run them, in a process of their own: a route that worked would end the test run itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.stack_configs import PROJECT_DIR
from support.team_program import PROGRAM, SUBPROCESS_ENV as ENV, project
from support.git_repo import commit_everything

HOST_PID_POD = (
    "import pulumi_kubernetes as k8s\n"
    "k8s.core.v1.Pod('debug', metadata={'name': 'debug', 'namespace': 'default'},\n"
    "                spec={'hostPID': True, 'containers': [{'name': 'shell', 'image': 'busybox'}]})\n")
VIOLATING = PROGRAM + HOST_PID_POD
VIOLATION = "[kubelet-host-access]"


def command(name: str, folder: Path) -> list[str]:
    extra = ["--out", str(folder / "out")] if name == "render" else []
    return [sys.executable, "-m", "gpu_fabric.cli", name, "--project", str(folder), "--stack", "seed-rdma", "--quiet",
            *extra]


def run(name: str, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command(name, folder), capture_output=True, text=True, timeout=300, env=ENV)


def python_code(code: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -c code`` in a process of its own (a render there starts from nothing), its output captured."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=ENV)


def refused(outcome: subprocess.CompletedProcess, program: Path, how: str) -> None:
    """Exit 2, one line on stderr naming the program and how its process ended, nothing on stdout."""
    assert outcome.returncode == 2, outcome.stdout + outcome.stderr
    assert outcome.stdout == "" and outcome.stderr.count("\n") == 1 and "Traceback" not in outcome.stderr
    assert f"the stack program {program} exited early (its process ended: {how}) before the render was " \
           "complete" in outcome.stderr, outcome.stderr


ENDS_ITS_PROCESS = {
    "posix._exit(0) mid-body": ("import posix\nposix._exit(0)\n", "exit code 0"),
    "libc _exit through ctypes": ("import ctypes\nctypes.CDLL(None)._exit(0)\n", "exit code 0"),
    "os.execv of /bin/true": ("import os\nos.execv('/bin/true', ['true'])\n",
                              "replaced by exec of /bin/true, which ended with exit code 0"),
    "a signal": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "killed by SIGKILL"),
}


@pytest.mark.parametrize("name", ["check", "render"])
@pytest.mark.parametrize("case", list(ENDS_ITS_PROCESS))
def test_a_program_that_ends_its_process_mid_body_is_refused(tmp_path, name, case):
    ending, how = ENDS_ITS_PROCESS[case]
    folder, program = project(tmp_path, PROGRAM + ending + HOST_PID_POD)
    refused(run(name, folder), program, how)
    assert not (folder / "out").exists()


def test_an_atexit_handler_cannot_turn_a_violation_into_exit_0(tmp_path):
    # The handler ran as the command's interpreter exited and replaced its exit code 1 with 0.
    folder, _ = project(tmp_path, "import atexit, posix\natexit.register(posix._exit, 0)\n" + VIOLATING)
    outcome = run("check", folder)
    assert outcome.returncode == 1, outcome.stdout + outcome.stderr
    assert VIOLATION in outcome.stdout and "1 mandatory" in outcome.stdout


def test_a_thread_that_ends_the_process_after_the_body_returned_never_gives_exit_0(tmp_path):
    # The thread waits for the body's last line, then ends the process while Pulumi's registrations settle
    # (or, later, while the policies run): whichever it meets, the render is refused or the violation stands.
    folder, program = project(tmp_path, (
        "import posix, threading\nbody_returned = threading.Event()\n"
        "threading.Thread(target=lambda: (body_returned.wait(), posix._exit(0))).start()\n")
        + VIOLATING + "body_returned.set()\n")
    outcome = run("check", folder)
    if outcome.returncode == 1:
        assert VIOLATION in outcome.stdout
    else:
        refused(outcome, program, "exit code 0")


def test_a_signal_handler_of_the_program_never_acts_while_the_policies_run(tmp_path):
    # A repeating SIGALRM whose handler exits (0) once it interrupts the policy pack: in the command's own
    # process, it ended `check` with exit 0 in the middle of the policies.
    folder, _ = project(tmp_path, (
        "import signal, sys\n\n"
        "def handler(signum, frame):\n"
        "    while frame is not None:\n"
        "        if '/gpu_fabric/policies/' in frame.f_code.co_filename:\n"
        "            sys.exit(0)\n"
        "        frame = frame.f_back\n\n"
        "signal.signal(signal.SIGALRM, handler)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)\n") + VIOLATING)
    outcome = run("check", folder)
    assert outcome.returncode == 1, outcome.stdout + outcome.stderr
    assert VIOLATION in outcome.stdout


FORK_IDIOM = "import os\nif os.fork() == 0:\n    os._exit(0)\nos.wait()\n"


@pytest.mark.parametrize("program, code", [(PROGRAM, 0), (VIOLATING, 1)])
def test_the_fork_idiom_works_as_under_pulumi(tmp_path, program, code):
    # The grandchild's os._exit(0) ends the grandchild; the program goes on and gets its normal verdict.
    # Patched to raise, os._exit sent the grandchild on through the command (and check hung).
    folder, _ = project(tmp_path, FORK_IDIOM + program)
    outcome = run("check", folder)
    assert outcome.returncode == code, outcome.stdout + outcome.stderr
    assert outcome.stdout.count("stack seed-rdma: ") == 1 and "exited early" not in outcome.stderr
    assert (VIOLATION in outcome.stdout) == (code == 1)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie the container's init has not reaped has ended


def test_a_grandchild_holding_the_pipe_open_does_not_hold_the_command(tmp_path):
    # The grandchild keeps every descriptor of the program's process -- the report pipe included -- until the
    # test releases it: the command decides from its child's exit, not from the pipe's end of file.
    release, pid_file = tmp_path / "release", tmp_path / "grandchild.pid"
    folder, _ = project(tmp_path / "project", (
        "import os, time\n"
        "if os.fork() == 0:\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        f"    for _ in range(2400):\n"
        f"        if os.path.exists({str(release)!r}):\n"
        "            break\n"
        "        time.sleep(0.05)\n"
        "    os._exit(0)\n") + VIOLATING)
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(command("check", folder), stdout=stdout, stderr=stderr, env=ENV)
        try:
            code = process.wait(timeout=110)
        finally:
            release.touch()
            process.kill()
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
    assert code == 1, out.read_text() + err.read_text()
    # Once released, the grandchild ended there: it never went on as a second command.
    assert out.read_text().count("stack seed-rdma: ") == 1 and VIOLATION in out.read_text()
    assert err.read_text() == ""




def test_diff_refuses_a_base_whose_program_ends_its_process(tmp_path):
    # The base renders in a worker process; when that process died, the base was rendered again in the
    # command's process, which the program then ended with exit 0 and an empty stdout.
    root = tmp_path / "platform"
    folder, _ = project(root, "import posix\nposix._exit(0)\n" + PROGRAM)
    (root / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    commit_everything(root)
    (root / "stacks" / "__main__.py").write_text(PROGRAM)
    outcome = subprocess.run([sys.executable, "-m", "gpu_fabric.cli", "diff", "--base", "main", "--stack", "seed-rdma",
                              "--project", str(root), "--markdown"], capture_output=True, text=True, timeout=300, env=ENV)
    assert outcome.returncode == 2, outcome.stdout + outcome.stderr
    assert outcome.stdout == "" and outcome.stderr.count("\n") == 1, outcome.stderr
    assert outcome.stderr.startswith("gpu-fabric diff: stack 'seed-rdma' at base main (")
    assert "the stack program stacks/__main__.py exited early (its process ended: exit code 0)" in outcome.stderr


GRPC_CHILD = """
import os
from gpu_fabric.program.completion import grpc_without_fork_handlers
grpc_without_fork_handlers()
assert os.environ.get("GRPC_ENABLE_FORK_SUPPORT") == {setting!r}
from concurrent import futures
import grpc
server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{{port}}")).result(timeout=30)
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    import time
    time.sleep(0.3)
    os.write(write_end, str(len(os.listdir("/proc/self/task"))).encode())
    os._exit(0)
os.close(write_end)
os.waitpid(pid, 0)
print(os.read(read_end, 100).decode())
server.stop(None)
"""


@pytest.mark.parametrize("setting", [None, "true"])
def test_a_render_forked_while_a_grpc_server_runs_gets_none_of_grpcs_threads(setting):
    # gRPC's fork handlers restarted its EventEngine threads in the child over a serving process's state (the
    # child then died of SIGSEGV now and then: `check --preview` serves the pack while it renders). A user's own
    # GRPC_ENABLE_FORK_SUPPORT is left in the environment as it was.
    env = {key: value for key, value in ENV.items() if key != "GRPC_ENABLE_FORK_SUPPORT"}
    if setting is not None:
        env["GRPC_ENABLE_FORK_SUPPORT"] = setting
    outcome = subprocess.run([sys.executable, "-c", GRPC_CHILD.format(setting=setting)], capture_output=True,
                             text=True, timeout=120, env=env)
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.stdout.strip() == "1" and "fork_posix" not in outcome.stderr, outcome.stdout + outcome.stderr


def test_check_preview_forks_its_renders_beside_the_served_pack(tmp_path):
    folder, _ = project(tmp_path, VIOLATING)
    outcome = subprocess.run(command("check", folder) + ["--preview"], capture_output=True, text=True, timeout=300,
                             env=ENV)
    assert outcome.returncode == 1 and VIOLATION in outcome.stdout, outcome.stdout + outcome.stderr
    assert outcome.stderr == ""  # gRPC's "skipping fork() handlers" line among others


def test_diff_never_renders_the_base_again_in_its_own_process_when_its_child_dies(tmp_path, monkeypatch):
    import signal

    from gpu_fabric.diff import source

    def render_or_absent(*args):
        if args[3] == "base":  # in the base's forked child: killed as the OOM killer would
            os.kill(os.getpid(), signal.SIGKILL)
        rendered.append(args[3])
        return None, args[3]

    rendered: list[str] = []
    monkeypatch.setattr(source, "_render_or_absent", render_or_absent)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with pytest.raises(source.DiffInputError, match=r"^stack 'seed-rdma' at base main: the base was not rendered: "
                                                    r"its process ended \(killed by SIGKILL\)$"):
        source._both_ends(tmp_path, "seed-rdma", "main", None, tmp_path)
    assert rendered == ["head"]


SECOND_RENDER = """
import sys
from gpu_fabric.program.render import render_stack
render_stack("seed-rdma", {project!r})
assert "pulumi_kubernetes.coordination.v1.Lease" not in sys.modules  # the child imported it; this process did not
dra = render_stack("dra-efa", {project!r})  # imports here first what the first render's child imported
import pulumi_kubernetes
assert "pulumi_kubernetes.coordination.v1.Lease" in sys.modules and "gpu_fabric.kubelet_agent" in sys.modules
assert isinstance(pulumi_kubernetes.coordination.v1.Lease, type)  # the class, not its module
assert isinstance(pulumi_kubernetes.apiextensions.CustomResource, type)
print(len(dra.resources))
"""


def test_a_second_render_starts_with_what_the_first_imported_and_renders_the_same():
    # Each render's child imported the AWS SDK again (480 modules): `check` of four stacks took twice the CPU.
    from gpu_fabric.program.render import render_stack

    outcome = python_code(SECOND_RENDER.format(project=str(PROJECT_DIR)))
    assert outcome.returncode == 0, outcome.stderr
    assert int(outcome.stdout) == len(render_stack("dra-efa", PROJECT_DIR).resources)


HELD_IMPORT_LOCK = """
import _imp
from gpu_fabric.program.render import render_stack
_imp.acquire_lock()  # as a Ctrl-C swallowed inside importlib's own critical section leaves it
print(len(render_stack("seed-rdma", {project!r}).resources))
"""


def test_a_render_forked_while_this_process_holds_the_import_lock_completes():
    # The child inherits a lock its forking thread held, and never returns to the frame that would release it:
    # the SDK's registering threads, which import, waited on it forever (`gpu-fabric diff` hung after a Ctrl-C).
    from gpu_fabric.program.render import render_stack

    outcome = python_code(HELD_IMPORT_LOCK.format(project=str(PROJECT_DIR)), timeout=120)
    assert outcome.returncode == 0, outcome.stderr
    assert int(outcome.stdout) == len(render_stack("seed-rdma", PROJECT_DIR).resources)


WARMED = """
from pulumi import _types
import gpu_fabric.program.render as render
from gpu_fabric.program import shared_imports
loaded = []
render.seen = lambda what: (loaded.append(what), shared_imports.seen(what))
first = render.render_stack("aws-efa", {project!r})
assert loaded[0].models and loaded[0].sdk_types, loaded[0]
second = render.render_stack("aws-efa", {project!r})
assert loaded[1].models == [], loaded[1].models  # built here before the fork: the child built none
assert all(shared_imports._named_class(name).__pydantic_complete__ for name in loaded[0].models)
assert _types._types_from_py_properties.cache_info().currsize >= len(loaded[0].sdk_types) > 0
assert [r.urn for r in first.resources] == [r.urn for r in second.resources]
assert [r.inputs for r in first.resources] == [r.inputs for r in second.resources]
"""


def test_a_second_render_starts_with_the_models_and_type_hints_the_first_built():
    # Built in a child, they died with it: every render built ~10 configuration models and read the SDK's type
    # hints again (a warm render of seed-rdma 140 ms, 85 ms since).
    outcome = python_code(WARMED.format(project=str(PROJECT_DIR)))
    assert outcome.returncode == 0, outcome.stderr


def test_names_in_a_childs_report_that_are_no_model_or_class_are_dropped_not_called():
    # The child runs the team's program, which could write anything in its report: the parent only builds
    # gpu-fabric's configuration models and reads the SDKs' classes it names.
    from gpu_fabric.program import shared_imports

    saved = (set(shared_imports._seen_models), set(shared_imports._seen_sdk_types))
    forged = shared_imports.Loaded([], ["gpu_fabric.program.shared_imports:sys", "gpu_fabric.config.base:Finding"],
                                   ["pulumi:log.warn", "os:system"])
    try:
        shared_imports.seen(forged)
        assert "os:system" not in shared_imports._seen_sdk_types  # not an SDK's module: never kept
        shared_imports.before_the_fork()
        assert not {"gpu_fabric.program.shared_imports:sys", "gpu_fabric.config.base:Finding"} & shared_imports._seen_models
        assert "pulumi:log.warn" not in shared_imports._seen_sdk_types
    finally:
        shared_imports._seen_models.clear()
        shared_imports._seen_models.update(saved[0])
        shared_imports._seen_sdk_types.clear()
        shared_imports._seen_sdk_types.update(saved[1])


EXPECTED = """
import sys
import gpu_fabric.program.render as render
loaded = []
render.seen = lambda what: loaded.append(what)
render.render_stack({stack!r}, {project!r})
print(" ".join(loaded[0].modules))
print("pulumi_aws" in sys.modules)
print(getattr(sys.modules.get("gpu_fabric.aws.catalog.table"), "_bundled_items", None) is not None)
"""


@pytest.mark.parametrize("stack, aws", [("aws-efa", True), ("karpenter-efa", True), ("seed-rdma", False)])
def test_the_first_render_starts_with_what_its_configuration_shows_it_imports(stack, aws):
    # `check` of the four example stacks imported Pulumi's AWS SDK twice: in the first render's child, then here.
    from gpu_fabric.program.shared_imports import KUBERNETES_MODULES
    from gpu_fabric.resources.fabric import AWS_POOL_MODULES

    outcome = python_code(EXPECTED.format(stack=stack, project=str(PROJECT_DIR)))
    assert outcome.returncode == 0, outcome.stderr
    child_imported, parent_has_aws, parent_read_the_table = outcome.stdout.splitlines()
    expected = KUBERNETES_MODULES + (AWS_POOL_MODULES if aws else ())
    assert not [name for name in child_imported.split() if name.startswith(expected)], child_imported
    assert parent_has_aws == str(aws)  # a stack without AWS pools never imports the AWS SDK
    # The bundled EC2 table an AWS pool's render reads: read before the fork, once for every render of the process.
    assert parent_read_the_table == str(aws)
