"""A directory the crawl writes is tried at start, making nothing, or named in one
line with the setting."""

from __future__ import annotations

import pytest

from crawler.context.directories import (
    UnwritableDirectoryError,
    check_writable_directory,
)


@pytest.mark.parametrize("exists", [True, False])
def test_a_directory_it_can_write_or_make_passes_and_nothing_is_left(tmp_path, exists):
    path = tmp_path / "a" / "b"
    if exists:
        path.mkdir(parents=True)
    check_writable_directory(path, "PAGESTORE_URL")
    assert path.exists() == exists
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # the trial file


def test_a_file_in_the_way_is_named_with_the_setting(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    with pytest.raises(UnwritableDirectoryError) as raised:
        check_writable_directory(blocker / "pages", "PAGESTORE_URL")
    assert str(raised.value) == (
        f"PAGESTORE_URL {blocker / 'pages'} is not writable: Not a directory "
        f"({blocker})"
    )


def test_a_file_named_as_the_directory_is_not_a_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    with pytest.raises(
        UnwritableDirectoryError, match=r"WARC_URL .* is not a directory"
    ):
        check_writable_directory(blocker, "WARC_URL")
