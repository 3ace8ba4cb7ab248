"""A directory the crawl writes is made and tried at start, or named in one line."""

from __future__ import annotations

import pytest

from crawler.context.directories import UnwritableDirectoryError, writable_directory


def test_a_missing_directory_is_made_and_left_empty(tmp_path):
    path = tmp_path / "a" / "b"
    assert writable_directory(path, "PAGESTORE_DIR") == path
    assert path.is_dir()
    assert list(path.iterdir()) == []  # the trial file is gone


def test_a_file_in_the_way_is_named_with_the_setting(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    with pytest.raises(UnwritableDirectoryError) as raised:
        writable_directory(blocker / "pages", "PAGESTORE_DIR")
    assert str(raised.value) == (
        f"PAGESTORE_DIR {blocker / 'pages'} is not writable: Not a directory"
    )


def test_a_file_named_as_the_directory_is_not_a_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    with pytest.raises(
        UnwritableDirectoryError, match=r"WARC_DIR .* is not a directory"
    ):
        writable_directory(blocker, "WARC_DIR")
