"""``sitekeep.address``: the server's own address in every spelling (issue #8 item 5)."""

from __future__ import annotations

import ipaddress

import pytest

from sitekeep.address import Refused, ServerAddress, literal_ip
from sitekeep.errors import OwnAddress
from sitekeep.policy import check_url

PORT = 8700
OWN = ServerAddress.listening(
    "127.0.0.1",
    PORT,
    browser_args=('--host-resolver-rules="MAP *.example.test 127.0.0.1, MAP far.test 10.1.2.3"',),
)

SPELLINGS = [
    "http://127.0.0.1:8700/openapi.json",
    "http://127.1:8700/openapi.json",
    "http://0.0.0.0:8700/",
    "http://0:8700/",
    "http://localhost.:8700/",
    "http://LOCALHOST:8700/",
    "http://app.localhost:8700/",
    "http://2130706433:8700/",
    "http://0x7f000001:8700/",
    "http://0x7f.0.0.1:8700/",
    "http://0177.0.0.1:8700/",
    "http://127.0.0.1.:8700/",
    "http://127.2.3.4:8700/",
    "http://[::1]:8700/",
    "http://[::ffff:127.0.0.1]:8700/",
    "http://[::ffff:7f00:1]:8700/",
    "http://[::]:8700/",
    "http://127%2e0%2e0%2e1:8700/",
    "http://１２７.０.０.１:8700/",
    "http://127。0。0。1:8700/",
    "http://user:pw@127.1:8700/",
    "https://127.1:8700/",
    "http://anything.example.test:8700/admin",  # a name the browser maps to loopback
]


@pytest.mark.parametrize("url", SPELLINGS)
def test_every_spelling_of_the_servers_address_reaches_it(url: str) -> None:
    assert OWN.reaches(url)
    with pytest.raises(OwnAddress) as caught:
        check_url(url, own=OWN)
    assert caught.value.field == "url"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8701/",  # the test sites: same address, another port
        "http://app.example.test:41234/",
        "http://127.1/",  # port 80
        "https://127.0.0.1/",
        "http://far.test:8700/",  # mapped elsewhere
        "http://10.0.0.1:8700/",
        "http://[2001:db8::1]:8700/",
        "http://127.0.0.1:87000/",  # no such port
    ],
)
def test_another_port_or_another_address_is_not_the_server(url: str) -> None:
    assert not OWN.reaches(url)


def test_a_name_resolved_by_the_system_counts_when_a_resolver_is_given() -> None:
    loopback = [ipaddress.ip_address("127.0.0.1")]
    assert not OWN.reaches("http://rebind.invalid:8700/")
    assert OWN.reaches("http://rebind.invalid:8700/", resolve=lambda host: loopback)


def test_firefox_force_resolve_maps_every_name() -> None:
    own = ServerAddress.listening(
        "127.0.0.1", PORT, firefox_prefs={"network.dns.forceResolve": "127.0.0.1"}
    )
    assert own.reaches("http://any.name.test:8700/")


def test_a_server_on_every_address_counts_loopback_and_its_own() -> None:
    own = ServerAddress.listening("0.0.0.0", PORT)
    assert own.reaches("http://127.0.0.1:8700/") and own.reaches("http://[::1]:8700/")


def test_a_server_on_another_address_is_not_reached_through_loopback() -> None:
    own = ServerAddress.listening("10.9.8.7", PORT)
    assert own.reaches("http://10.9.8.7:8700/")
    assert not own.reaches("http://127.0.0.1:8700/")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("[::ffff:127.0.0.1]", "127.0.0.1"),
        ("10.0.0.1", "10.0.0.1"),
    ],
)
def test_literal_addresses_are_read_as_browsers_read_them(host: str, address: str) -> None:
    assert literal_ip(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["example.test", "deadbeef", "127.0.0.1 x", "", "1.2.3.4.5"])
def test_names_are_not_addresses(host: str) -> None:
    assert literal_ip(host) is None


@pytest.mark.anyio
async def test_every_webdriver_endpoint_is_refused_and_each_new_one_announced() -> None:
    """Attacker review C1: the drivers are refused like the server, address and port."""
    args = ('--host-resolver-rules="MAP *.example.test 127.0.0.1"',)
    refused = Refused(OWN, ["http://127.0.0.1:4444/wd/hub"], browser_args=args)
    told: list[int] = []

    async def tell(port: int) -> None:
        told.append(port)

    refused.subscribe(tell)
    await refused.add("http://127.0.0.1:9515")
    await refused.add("ws://127.0.0.1:9515/session/s")  # same socket: nothing new
    await refused.add("ws://127.0.0.1:9222/session/s")
    assert told == [9515, 9222]
    assert refused.ports == {PORT, 4444, 9515, 9222}
    for url in (
        "http://127.1:9515/sessions",
        "http://0x7f000001:9515/session/x/cookie",
        "http://driver.example.test:9515/status",
        "http://[::ffff:127.0.0.1]:4444/status",
        "http://2130706433:9222/",
        "http://127.1:8700/",
    ):
        assert refused.reaches(url), url
        with pytest.raises(OwnAddress):
            check_url(url, own=refused)
    for url in ("http://127.0.0.1:9516/", "http://app.example.test:8080/", "http://10.0.0.1:9515/"):
        assert not refused.reaches(url), url
        assert check_url(url, own=refused) == url
