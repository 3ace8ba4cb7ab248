"""What near-duplicate pairs teach about a host's URLs (crawler.policy.duplicateurls)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.duplicateurls import (
    Evidence,
    is_rule,
    links_signature,
    needs_more,
    removals,
    rewrite,
    rules_between,
)

H = "http://a.example"


def test_a_copy_under_another_directory_has_its_originals_links_signature():
    original = links_signature(f"{H}/docs/", [f"{H}/docs/a/", f"{H}/docs/b/", f"{H}/"])
    copy = links_signature(
        f"{H}/docs/a/", [f"{H}/docs/a/a/", f"{H}/docs/a/b/", f"{H}/"]
    )
    assert copy == original


def test_a_page_with_other_links_has_another_signature():
    original = links_signature(f"{H}/p.html", [f"{H}/q.html", f"{H}/r.html"])
    printed = links_signature(f"{H}/print/p.html", [f"{H}/"])
    assert printed != original


def test_link_order_and_repeats_do_not_change_the_signature():
    links = [f"{H}/x/1", f"{H}/x/2"]
    assert links_signature(f"{H}/x/", links) == links_signature(
        f"{H}/x/", [*reversed(links), links[0]]
    )


def test_one_query_pair_more_is_evidence_for_removing_it():
    found = rules_between(f"{H}/page/1.html?print=1", f"{H}/page/1.html")
    # The pair at this path, and the key with this value.
    assert found == [
        Evidence("param:print=1", "/page/1.html"),
        Evidence("param:print=*", "1"),
    ]
    # Either order.
    assert rules_between(f"{H}/page/1.html", f"{H}/page/1.html?print=1") == found


def test_a_pair_among_others_is_evidence_too():
    found = rules_between(f"{H}/s/?color=red&sort=price", f"{H}/s/?sort=price")
    assert found == [
        Evidence("param:color=red", "/s/"),
        Evidence("param:color=*", "red"),
    ]


def test_two_pairs_more_or_a_changed_value_teach_nothing():
    assert rules_between(f"{H}/s/?a=1&b=2", f"{H}/s/") == []
    assert rules_between(f"{H}/s/?a=1", f"{H}/s/?a=2") == []


def test_a_run_of_segments_more_is_evidence_for_removing_it():
    found = rules_between(f"{H}/print/page/1.html", f"{H}/page/1.html")
    assert found == [Evidence("segments:1:print", "/page/1.html")]
    assert rules_between(f"{H}/print/", f"{H}/") == [Evidence("segments:1:print", "/")]
    found = rules_between(f"{H}/m/amp/news/x.html", f"{H}/news/x.html")
    assert found == [Evidence("segments:1:m/amp", "/news/x.html")]


def test_an_empty_segment_teaches_nothing():
    assert rules_between(f"{H}/a//x", f"{H}/a/x") == []


def test_three_segments_more_or_other_paths_teach_nothing():
    assert rules_between(f"{H}/a/b/c/x.html", f"{H}/x.html") == []
    assert rules_between(f"{H}/a/x.html", f"{H}/b/x.html") == []
    assert rules_between(f"{H}/a/x.html?p=1", f"{H}/x.html") == []
    assert rules_between(f"{H}/x.html", "http://b.example/x.html?p=1") == []


def test_removals_are_each_query_pair_taken_out():
    found = list(removals(f"{H}/s/?a=1&b=2"))
    assert found == [
        (Evidence("param:a=1", "/s/"), f"{H}/s/?b=2"),
        (Evidence("param:a=*", "1"), f"{H}/s/?b=2"),
        (Evidence("param:b=2", "/s/"), f"{H}/s/?a=1"),
        (Evidence("param:b=*", "2"), f"{H}/s/?a=1"),
    ]
    assert list(removals(f"{H}/s/")) == []


def test_rewrite_removes_what_the_rules_name():
    rules = {"param:print=1", "segments:1:print"}
    assert rewrite(f"{H}/page/7.html?print=1", rules) == f"{H}/page/7.html"
    assert rewrite(f"{H}/print/page/7.html", rules) == f"{H}/page/7.html"
    assert rewrite(f"{H}/print/", rules) == f"{H}/"
    # Another value, another place, or nothing left after the run: unchanged.
    assert rewrite(f"{H}/page/7.html?print=2", rules) == f"{H}/page/7.html?print=2"
    assert rewrite(f"{H}/a/print/7.html", rules) == f"{H}/a/print/7.html"
    assert rewrite(f"{H}/print", rules) == f"{H}/print"
    assert rewrite(f"{H}/x.html?b=2&print=1&a=1", rules) == f"{H}/x.html?b=2&a=1"
    # A key whatever its value.
    assert rewrite(f"{H}/s/?color=teal&size=m", {"param:color=*"}) == f"{H}/s/?size=m"


def test_a_rule_for_any_value_needs_one_piece_more():
    assert needs_more("param:color=*")
    assert not needs_more("param:color=red")
    assert not needs_more("segments:1:print")


def test_a_learnt_rule_undoes_the_pair_that_taught_it():
    for longer, shorter in [
        (f"{H}/page/1.html?print=1", f"{H}/page/1.html"),
        (f"{H}/print/page/1.html", f"{H}/page/1.html"),
        (f"{H}/m/amp/x", f"{H}/x"),
    ]:
        for evidence in rules_between(longer, shorter):
            assert is_rule(evidence.rule)
            assert rewrite(longer, {evidence.rule}) == shorter


def test_damaged_rules_are_told_apart():
    assert is_rule("param:print=1")
    assert is_rule("segments:1:print")
    assert is_rule("param:color=*")
    for damaged in ("", "param:", "segments:x:print", "segments:0:a", "junk", "r:x"):
        assert not is_rule(damaged), damaged


urls = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda path, query: f"{H}/{path}?{query}",
        st.text(max_size=30),
        st.text(max_size=30),
    ),
)


@given(urls, urls)
def test_hostile_urls_teach_only_rules_as_written(url, twin):
    for evidence in rules_between(url, twin):
        assert is_rule(evidence.rule), evidence


@given(urls, st.sets(st.text(max_size=20), max_size=4))
def test_rewrite_never_raises(url, rules):
    assert isinstance(rewrite(url, {r for r in rules if is_rule(r)}), str)
