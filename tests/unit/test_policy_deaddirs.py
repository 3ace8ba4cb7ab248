"""Unit tests for crawler/policy/deaddirs.py: a directory of only missing pages is
dead after TRAPS_DEAD_DIRECTORY_PAGES of them, one page found keeps it alive, and a
host's root never dies."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.deaddirs import DeadDirectories, directory_of
from tests.unit.properties import PROPERTY

H = "http://a.example"


def test_the_directory_is_the_path_up_to_its_last_slash():
    assert directory_of(f"{H}/old/article/3.html?x=1#top") == f"{H}/old/article/"
    assert directory_of(f"{H}/old/article/") == f"{H}/old/article/"
    assert directory_of(f"{H}/old") is None  # the root's
    assert directory_of(f"{H}/") is None
    assert directory_of(H) is None
    assert directory_of("/old/a.html") is None
    assert directory_of("mailto:x@a.example") is None


def test_a_directory_dies_at_its_third_missing_page():
    dead = DeadDirectories(3)
    assert not dead.record(f"{H}/old/1.html", 404)
    assert not dead.record(f"{H}/old/2.html", 410)
    assert not dead.is_dead(f"{H}/old/4.html")
    assert dead.record(f"{H}/old/3.html", 404)  # this one made it dead
    assert dead.is_dead(f"{H}/old/4.html")
    assert dead.is_dead(f"{H}/old/?page=2")
    # Its subfolders, its parent and other hosts are directories of their own.
    assert not dead.is_dead(f"{H}/old/sub/1.html")
    assert not dead.is_dead(f"{H}/x.html")
    assert not dead.is_dead("http://b.example/old/4.html")


def test_one_page_found_keeps_a_directory_alive_for_good():
    dead = DeadDirectories(3)
    dead.record(f"{H}/blog/a.html", 200)
    for n in range(10):
        assert not dead.record(f"{H}/blog/gone-{n}.html", 404)
    assert not dead.is_dead(f"{H}/blog/b.html")


def test_other_answers_count_for_nothing():
    dead = DeadDirectories(2)
    for status in (301, 403, 500, 503, 429):
        dead.record(f"{H}/d/{status}.html", status)
    assert not dead.is_dead(f"{H}/d/x.html")


def test_the_root_directory_never_dies_and_zero_turns_it_off():
    dead = DeadDirectories(1)
    dead.record(f"{H}/gone.html", 404)
    assert not dead.is_dead(f"{H}/other.html")
    off = DeadDirectories(0)
    off.record(f"{H}/old/1.html", 404)
    assert not off.is_dead(f"{H}/old/2.html")


def test_the_least_recently_used_directories_are_forgotten():
    dead = DeadDirectories(1, memory=2)
    dead.record(f"{H}/a/1.html", 404)
    dead.record(f"{H}/b/1.html", 404)
    dead.record(f"{H}/c/1.html", 404)
    assert not dead.is_dead(f"{H}/a/2.html")
    assert dead.is_dead(f"{H}/c/2.html")


@PROPERTY
@given(
    answers=st.lists(
        st.tuples(st.text(max_size=40), st.sampled_from([200, 404, 410, 500])),
        max_size=20,
    ),
    url=st.text(max_size=40),
)
def test_hostile_urls_never_raise(answers, url):
    dead = DeadDirectories(2)
    for answered, status in answers:
        dead.record(answered, status)
    assert dead.is_dead(url) in (True, False)
