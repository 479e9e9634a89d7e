"""``sitekeep.browser.banned``: the ports every browser refuses at its network layer from
its start (issue #24, attacked afresh: what the BiDi guard does not see)."""

from __future__ import annotations

from sitekeep.browser.banned import PORTS_PREF, chromium_args, firefox_prefs

RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1, MAP *.other.test 127.0.0.1"'


def test_chromium_gets_the_bans_ahead_of_its_own_rules_in_one_flag() -> None:
    args = chromium_args(("--lang=en", RULES), [9515, 8700, 443, 80])
    assert args == (
        "--lang=en",
        "--host-resolver-rules=MAP *:8700 ~NOTFOUND, MAP *:9515 ~NOTFOUND, "
        "MAP *.example.test 127.0.0.1, MAP *.other.test 127.0.0.1",
    )
    assert chromium_args(("--lang=en",), [8700]) == (
        "--lang=en",
        "--host-resolver-rules=MAP *:8700 ~NOTFOUND",
    )


def test_a_default_port_is_never_banned() -> None:
    assert chromium_args((RULES,), [80, 443]) == (RULES,)
    assert firefox_prefs([("a", 1)], [80, 443]) == (("a", 1),)


def test_firefox_bans_the_ports_besides_those_a_pref_bans_already() -> None:
    prefs = firefox_prefs([("a", 1), (PORTS_PREF, "6000, 7000")], [8700, 6000])
    assert prefs == (("a", 1), (PORTS_PREF, "6000,7000,8700"))
