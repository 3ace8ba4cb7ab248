"""What near-duplicate pairs teach about a host's URLs (crawler.policy.duplicateurls)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.duplicateurls import (
    Evidence,
    evidence_needed,
    is_rule,
    links_signature,
    query_view,
    removals,
    rewrite,
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


def found(url: str) -> dict[Evidence, str]:
    return dict(removals(url))


def test_each_query_pair_taken_out_is_a_rule_to_check():
    assert found(f"{H}/s/?a=1&b=2") == {
        Evidence("param:a=1", "/s/"): f"{H}/s/?b=2",
        Evidence("param:a=*", "1"): f"{H}/s/?b=2",
        Evidence("param:b=2", "/s/"): f"{H}/s/?a=1",
        Evidence("param:b=*", "2"): f"{H}/s/?a=1",
        Evidence("query:/s/", "a&b"): f"{H}/s/",
        Evidence("segments:1:s", "/"): f"{H}/?a=1&b=2",
    }


def test_a_whole_query_taken_out_is_counted_by_its_keys():
    assert found(f"{H}/shop/?size=m&color=red")[Evidence("query:/shop/", "color&size")]
    assert found(f"{H}/shop/?color=blue")[Evidence("query:/shop/", "color")] == (
        f"{H}/shop/"
    )
    # Two values of one key are one piece of evidence: ?page=2 and ?page=3 of a
    # listing never teach that its queries are copies.
    assert Evidence("query:/l", "page") in found(f"{H}/l?page=2")
    assert Evidence("query:/l", "page") in found(f"{H}/l?page=3")


def test_each_run_of_segments_taken_out_is_a_rule_to_check():
    assert found(f"{H}/print/page/1.html") == {
        Evidence("segments:1:print", "/page/1.html"): f"{H}/page/1.html",
        Evidence("segments:1:print/page", "/1.html"): f"{H}/1.html",
        Evidence("segments:2:page", "/print/1.html"): f"{H}/print/1.html",
    }
    assert found(f"{H}/print/") == {Evidence("segments:1:print", "/"): f"{H}/"}
    assert (
        found(f"{H}/m/amp/news/x.html")[Evidence("segments:1:m/amp", "/news/x.html")]
        == f"{H}/news/x.html"
    )


def test_the_last_segment_and_empty_ones_are_never_taken_out():
    assert found(f"{H}/x.html") == {}
    assert found(f"{H}/") == {}
    assert found(f"{H}/a//x") == {Evidence("segments:1:a", "//x"): f"{H}//x"}


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


def test_a_path_s_query_rule_drops_any_query_of_that_path_only():
    rules = {"query:/shop/"}
    assert rewrite(f"{H}/shop/?color=teal&size=m", rules) == f"{H}/shop/"
    assert rewrite(f"{H}/shop/?page=9", rules) == f"{H}/shop/"
    assert rewrite(f"{H}/shop/c/1/?color=teal", rules) == f"{H}/shop/c/1/?color=teal"
    assert rewrite(f"{H}/shop", rules) == f"{H}/shop"
    assert rewrite(f"{H}/shop/", rules) == f"{H}/shop/"


def test_number_segments_are_one_path_to_a_query_rule():
    assert Evidence("query:/shop/c/{n}/", "color") in found(f"{H}/shop/c/2/?color=red")
    rules = {"query:/shop/c/{n}/"}
    assert rewrite(f"{H}/shop/c/7/?size=m", rules) == f"{H}/shop/c/7/"
    assert rewrite(f"{H}/shop/c/x7/?size=m", rules) == f"{H}/shop/c/x7/?size=m"
    assert rewrite(f"{H}/shop/c/7/8/?size=m", rules) == f"{H}/shop/c/7/8/?size=m"
    assert is_rule("query:/shop/c/{n}/")


def test_a_rule_for_any_value_needs_one_piece_more():
    assert evidence_needed("param:color=*", 2) == 3
    assert evidence_needed("param:color=red", 2) == 2
    assert evidence_needed("segments:1:docs", 2) == 2
    assert evidence_needed("query:/shop/", 2) == 2


def test_a_well_known_copy_marker_needs_one_pair():
    for rule in (
        "param:print=1", "param:print=*", "param:view=print", "param:amp=1",
        "param:format=printable", "segments:1:print", "segments:1:printer-friendly",
    ):  # fmt: skip
        assert is_rule(rule), rule
        assert evidence_needed(rule, 2) == 1, rule
        assert evidence_needed(rule, 0) == 0, rule  # nothing learnt at all
    # Elsewhere in the path, or another value: the usual need.
    for rule in ("segments:2:print", "param:view=list", "param:print=0"):
        assert evidence_needed(rule, 2) == 2, rule


def test_a_learnt_rule_rewrites_to_the_url_it_was_checked_against():
    for url in (
        f"{H}/page/1.html?print=1",
        f"{H}/print/page/1.html",
        f"{H}/m/amp/x",
        f"{H}/shop/?color=red",
    ):
        for evidence, shorter in removals(url):
            assert is_rule(evidence.rule)
            if not evidence.rule.endswith("=*"):
                assert rewrite(url, {evidence.rule}) == shorter


def test_damaged_rules_are_told_apart():
    assert is_rule("param:print=1")
    assert is_rule("segments:1:print")
    assert is_rule("param:color=*")
    assert is_rule("query:/shop/")
    damaged_rules = (
        "", "param:", "segments:x:print", "segments:0:a", "junk", "r:x",
        "query:", "query:shop", "query:/a b", "query:/a?b", f"query:/{'a' * 600}",
    )  # fmt: skip
    for damaged in damaged_rules:
        assert not is_rule(damaged), damaged


urls = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda path, query: f"{H}/{path}?{query}",
        st.text(max_size=30),
        st.text(max_size=30),
    ),
)


@given(urls)
def test_hostile_urls_give_only_rules_as_written(url):
    for evidence, _ in removals(url):
        assert is_rule(evidence.rule), evidence


@given(urls, st.sets(st.text(max_size=20), max_size=4))
def test_rewrite_never_raises(url, rules):
    assert isinstance(rewrite(url, {r for r in rules if is_rule(r)}), str)


def test_a_query_view_knows_its_listing_s_other_views():
    color = query_view(f"{H}/shop/c/1/?color=red")
    assert color is not None
    assert color.rule == "query:/shop/c/{n}/"
    assert color.where == "color"
    size = query_view(f"{H}/shop/c/2/?size=s&sort=new")
    assert size is not None
    assert color.sibling(size.entry) == "size&sort"  # other keys, the same listing
    both = query_view(f"{H}/shop/c/1/?color=blue&size=m")
    assert both is not None
    assert color.sibling(both.entry) is None  # shares a key
    elsewhere = query_view(f"{H}/blog/?size=s")
    assert elsewhere is not None
    assert color.sibling(elsewhere.entry) is None  # another listing
    assert query_view(f"{H}/shop/") is None


def test_a_view_entry_keeps_no_url_and_odd_keys_survive():
    view = query_view(f"{H}/shop/?a%20b=1&c%2Cd=2&e:f=3")
    assert view is not None
    assert "/shop/" not in view.entry
    assert " " not in view.entry
    other = query_view(f"{H}/shop/?x=1")
    assert other is not None
    assert other.sibling(view.entry) == "a b&c,d&e:f"


@given(urls, st.text(max_size=40))
def test_hostile_view_entries_never_raise(url, entry):
    view = query_view(url)
    if view is not None:
        assert view.sibling(entry) is None or isinstance(view.sibling(entry), str)
