"""Lazy-load actions: what an action names, and the scripts it runs in the page.

The scripts are this module's constants, evaluated with data arguments; nothing a
page, a setting or Redis says is ever evaluated as code (a function is found by
property lookups on ``window``).
"""

from __future__ import annotations

import re
from typing import Literal

ActionKind = Literal["scroll", "function", "selector", "either"]
# "name", "a.b.name" or "name()": a function the page defines (else, without the
# parentheses, a CSS selector such as "article" or "div.items").
FUNCTION = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?P<call>\(\))?")
# A name that is no function of the page but may be a CSS selector: tag names and
# classes are lower case without "$" or "_" ("loadMore" or "$init" is a function).
TAG_LIKE = re.compile(r"[a-z][a-z0-9-]*(?:\.[a-z][a-z0-9-]*)*")
# Scroll steps at most: an endless feed stops growing the page's text here.
MAX_SCROLL_STEPS = 30

# Calls the function at a dotted path of window, awaiting a promise it returns;
# false when there is no such function.
CALL_JS = """async (path) => {
  let owner = window, target = window;
  for (const name of path.split(".")) {
    owner = target;
    target = target == null ? undefined : target[name];
  }
  if (typeof target !== "function") return false;
  await target.call(owner);
  return true;
}"""
# Scrolls to the end; returns the height scrolled to.
SCROLL_JS = """() => {
  const element = document.scrollingElement || document.documentElement;
  const height = element.scrollHeight;
  window.scrollTo(0, height);
  return height;
}"""
HEIGHT_JS = "() => (document.scrollingElement || document.documentElement).scrollHeight"
# Installed before the page's own scripts run (an init script): the time of the
# DOM's last change, so that settling counts from it, not from the first look.
QUIET_INIT_JS = """(() => {
  const state = window.__crawlerRenderQuiet = { last: performance.now() };
  new MutationObserver(() => { state.last = performance.now(); }).observe(
    document, { subtree: true, childList: true, attributes: true, characterData: true });
})();"""
# Milliseconds since the DOM last changed (the observer installed on first call if
# the init script could not run).
QUIET_JS = """() => {
  let state = window.__crawlerRenderQuiet;
  if (!state || typeof state.last !== "number") {
    state = window.__crawlerRenderQuiet = { last: performance.now() };
    new MutationObserver(() => { state.last = performance.now(); }).observe(
      document, { subtree: true, childList: true, attributes: true, characterData: true });
  }
  return performance.now() - state.last;
}"""


def action_kind(action: str) -> ActionKind:
    """What a lazy-load action is: "scroll"; a "function" of the page ("name()",
    "app.more", "loadMore"); a "selector"; or "either" for a lower-case name
    ("article", "div.items"): called if the page has such a function, else waited
    for as a selector."""
    if action == "scroll":
        return "scroll"
    match = FUNCTION.fullmatch(action)
    if match is None:
        return "selector"
    if match["call"] is None and TAG_LIKE.fullmatch(action):
        return "either"
    return "function"
