"""Node ids: a given name, or a stable slot per directory held by a file lock."""

from __future__ import annotations

import pytest

from crawler.frontier.frontierconfig import check_node_name
from crawler.frontier.node.nodeid import node_identity


def test_a_given_name_is_the_id_and_holds_no_lock(tmp_path):
    identity = node_identity("crawler-7", tmp_path)
    assert identity.node_id == "crawler-7"
    assert identity.lock is None
    assert list(tmp_path.iterdir()) == []


def test_two_live_nodes_in_one_directory_get_different_ids(tmp_path):
    first, second = node_identity("", tmp_path), node_identity("", tmp_path)
    assert first.node_id != second.node_id
    assert first.node_id.endswith("-0")
    assert second.node_id.endswith("-1")
    assert first.node_id.rsplit("-", 1)[0] == second.node_id.rsplit("-", 1)[0]
    first.release()
    second.release()


def test_a_freed_slot_gives_its_id_to_the_next_node(tmp_path):
    first = node_identity("", tmp_path)
    first.release()
    again = node_identity("", tmp_path)
    assert again.node_id == first.node_id
    again.release()


@pytest.mark.parametrize("name", ["a b", "x{s01}", "n" * 101, "é"])
def test_a_bad_node_name_is_refused(name):
    with pytest.raises(ValueError, match="FRONTIER_NODE_NAME"):
        check_node_name(name)


def test_a_good_node_name_passes():
    assert check_node_name("worker-03.eu_west") == "worker-03.eu_west"
    assert check_node_name("") == ""
