"""``gpu_fabric.config.safe_files``: the folder-handle file operations ``render --out`` and ``verify --record/--replay`` use."""

import os
from pathlib import PurePosixPath

import pytest

from gpu_fabric.config.safe_files import Folder, UnsafeFileError


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "root").mkdir()
    with Folder.open(tmp_path / "root") as handle:
        yield handle


def test_read_refuses_links_fifos_folders_and_oversize(folder, tmp_path):
    (tmp_path / "outside").write_text("secret")
    (folder.path / "link").symlink_to(tmp_path / "outside")
    os.mkfifo(folder.path / "fifo")
    (folder.path / "dir").mkdir()
    (folder.path / "big").write_bytes(b"x" * 101)
    for name, kind in (("link", "a symbolic link"), ("fifo", "a FIFO"), ("dir", "a folder")):
        with pytest.raises(UnsafeFileError, match=f"{name} is {kind}, not a regular file"):
            folder.read(name, 1000)
    with pytest.raises(UnsafeFileError, match="larger than 100 bytes"):
        folder.read("big", 100)
    assert folder.read("big", 101) == b"x" * 101
    with pytest.raises(FileNotFoundError):
        folder.read("absent", 10)


@pytest.mark.parametrize("name", ["..", ".", "a/b", "", "x\0y"])
def test_only_single_names_are_taken(folder, name):
    with pytest.raises(UnsafeFileError, match="is not a single file name"):
        folder.read(name, 10)


def test_write_replaces_a_file_atomically_and_refuses_a_link(folder, tmp_path):
    folder.write("file", b"one")
    inode = os.stat(folder.path / "file").st_ino
    folder.write("file", b"two")
    assert (folder.path / "file").read_bytes() == b"two" and os.stat(folder.path / "file").st_ino != inode
    (tmp_path / "victim").write_text("keep")
    (folder.path / "link").symlink_to(tmp_path / "victim")
    with pytest.raises(UnsafeFileError, match="link is a symbolic link; refusing to write through or over it"):
        folder.write("link", b"evil")
    assert (tmp_path / "victim").read_text() == "keep"
    assert sorted(p.name for p in folder.path.iterdir()) == ["file", "link"], "no temporary file left behind"


def test_walking_never_passes_a_linked_folder(folder, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (folder.path / "k8s").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(UnsafeFileError, match="k8s is a symbolic link, not a folder"):
        folder.walk(PurePosixPath("k8s/a.yaml"), create=True)
    with folder.walk(PurePosixPath("made/deep/a.yaml"), create=True) as parent:
        parent.write("a.yaml", b"ok")
    assert (folder.path / "made" / "deep" / "a.yaml").read_bytes() == b"ok"
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_root_that_is_a_link_is_refused_for_writing_but_may_be_read(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(UnsafeFileError, match="is a symbolic link, not a folder"):
        Folder.open(tmp_path / "alias", create=True)
    with Folder.open(tmp_path / "alias", follow=True) as handle:
        assert handle.kind("anything") is None


def test_a_file_where_a_folder_belongs_is_named_as_such(tmp_path):
    (tmp_path / "plain").write_text("x")
    with pytest.raises(UnsafeFileError, match="plain: is a file, not a folder"):
        Folder.open(tmp_path / "plain", create=True)
    with Folder.open(tmp_path) as handle:
        with pytest.raises(UnsafeFileError, match="plain is a file, not a folder"):
            handle.subfolder("plain")
