"""``sitekeep.errors`` (the public tree) and ``sitekeep.api.errors`` (its HTTP table, SPEC §5)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI
from pydantic import BaseModel
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # Starlette 1.10 warns once, at import, that its TestClient prefers the httpx2 package;
    # the project depends on httpx. Only that one warning is let through.
    warnings.filterwarnings(
        "ignore", message=r".*install `httpx2`", category=StarletteDeprecationWarning
    )
    from fastapi.testclient import TestClient

import sitekeep.errors as errors_module
from sitekeep.api.errors import install_error_handlers
from sitekeep.args import parse_args
from sitekeep.errors import (
    AssertionFailed,
    BidiError,
    BidiTimeout,
    BodyTooLarge,
    BrowserUnavailable,
    CapacityExceeded,
    ClipboardNotAllowed,
    Conflict,
    Forbidden,
    InvalidInput,
    JournalConflict,
    JournalUnavailable,
    MethodNotAllowed,
    NavigationFailed,
    NoHistoryEntry,
    NotFound,
    OwnAddress,
    RecordTooLarge,
    SecretNotAllowed,
    SessionBusy,
    SitekeepError,
    SnapshotTooLarge,
    StaleRef,
    StoreUnavailable,
    Unauthorized,
    Unreachable,
    error_from_json,
    error_json,
    quoted,
)

# One instance of every public error, and the status SPEC §5 / errors.py give it.
CASES: dict[str, tuple[SitekeepError, int]] = {
    "InvalidInput": (InvalidInput("the url is refused", field="url"), 400),
    "SnapshotTooLarge": (SnapshotTooLarge(size=2_000_000, cap=1_000_000), 400),
    "Unauthorized": (Unauthorized("no bearer token"), 401),
    "Forbidden": (Forbidden("admins only"), 403),
    "NotFound": (NotFound("session", "s1", field="key"), 404),
    "Conflict": (Conflict("the session is busy"), 409),
    "NoHistoryEntry": (NoHistoryEntry(-1), 409),
    "StaleRef": (StaleRef("e3", "the page changed since the snapshot"), 409),
    "SessionBusy": (SessionBusy(120.0), 409),
    "AssertionFailed": (AssertionFailed("the page does not show 'x'"), 409),
    "SecretNotAllowed": (SecretNotAllowed("login", "evil.example.test", field="secret"), 403),
    "CapacityExceeded": (CapacityExceeded("too many sessions", scope="tenant"), 429),
    "NavigationFailed": (NavigationFailed("net::ERR_NAME_NOT_RESOLVED", field="url"), 502),
    "StoreUnavailable": (StoreUnavailable("the session store is down"), 503),
    "BrowserUnavailable": (BrowserUnavailable("the browser is gone"), 503),
    "BidiError": (BidiError("no such frame", "browsingContext.navigate"), 503),
    "BidiTimeout": (BidiTimeout("script.evaluate", 5.0), 503),
    "JournalUnavailable": (JournalUnavailable("no space left for the journal", errno=28), 503),
    "RecordTooLarge": (RecordTooLarge(size=17_000_000, cap=16_777_216), 503),
    "JournalConflict": (JournalConflict(expected="a" * 32, head="b" * 32), 409),
    "Unreachable": (Unreachable("the server at http://127.0.0.1:1 cannot be reached"), 503),
    "BodyTooLarge": (BodyTooLarge(cap=1_048_576), 413),
    "OwnAddress": (OwnAddress(), 403),
    "ClipboardNotAllowed": (ClipboardNotAllowed("Control+C"), 403),
    "MethodNotAllowed": (MethodNotAllowed("PUT", "/v1/sessions/k", ("DELETE", "GET")), 405),
}
FUNCTIONS = {"error_json", "error_from_json", "quoted"}


class Body(BaseModel):
    url: str
    count: int = 0


def raiser(error: SitekeepError) -> Callable[[], None]:
    """A route handler that raises ``error``."""

    def raise_it() -> None:
        raise error

    return raise_it


def make_app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    for name, (error, _) in CASES.items():
        app.add_api_route(f"/raise/{name}", raiser(error), methods=["GET"])

    @app.post("/body")
    def take_body(body: Body) -> dict[str, str]:
        return {"url": body.url}

    return app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(make_app()) as client:
        yield client


def test_all_is_sorted_and_every_name_exists() -> None:
    names = errors_module.__all__
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(errors_module, name), name


def test_all_exports_exactly_the_public_error_tree() -> None:
    public = {
        name
        for name, value in vars(errors_module).items()
        if isinstance(value, type) and issubclass(value, Exception) and not name.startswith("_")
    }
    assert set(errors_module.__all__) - FUNCTIONS == public
    assert all(issubclass(getattr(errors_module, n), SitekeepError) for n in public)


def test_every_public_error_subclass_has_a_status_case() -> None:
    subclasses = {n for n in errors_module.__all__ if n not in {"SitekeepError", *FUNCTIONS}}
    assert subclasses == set(CASES)


@pytest.mark.parametrize(("name", "case"), CASES.items(), ids=list(CASES))
def test_each_error_maps_to_its_spec_status_and_body_shape(
    client: TestClient, name: str, case: tuple[SitekeepError, int]
) -> None:
    error, status = case
    reply = client.get(f"/raise/{name}")
    assert reply.status_code == status
    body = reply.json()
    assert set(body) == {"error"}
    assert body["error"]["type"] == error.type_name
    assert body["error"]["message"] == error.message
    field = getattr(error, "field", None)
    assert body["error"].get("field") == field


def test_error_types_are_distinct_names_a_client_can_branch_on() -> None:
    types = [error.type_name for error, _ in CASES.values()]
    assert len(set(types)) == len(types)


def test_structured_fields_travel_in_the_body(client: TestClient) -> None:
    assert client.get("/raise/SnapshotTooLarge").json()["error"] == {
        "type": "snapshot_too_large",
        "message": CASES["SnapshotTooLarge"][0].message,
        "field": "cookies",
        "size": 2_000_000,
        "cap": 1_000_000,
    }
    assert client.get("/raise/CapacityExceeded").json()["error"]["scope"] == "tenant"
    assert client.get("/raise/BidiError").json()["error"]["code"] == "no such frame"
    assert client.get("/raise/BidiTimeout").json()["error"]["code"] == "timeout"
    assert (
        client.get("/raise/NavigationFailed").json()["error"]["reason"]
        == "net::ERR_NAME_NOT_RESOLVED"
    )


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("NotFound", "key"),
        ("StaleRef", "ref"),
        ("SecretNotAllowed", "secret"),
        ("NavigationFailed", "url"),
        ("OwnAddress", "url"),
        ("ClipboardNotAllowed", "keys"),
    ],
)
def test_an_error_that_blames_one_argument_names_it_in_field(
    client: TestClient, name: str, field: str
) -> None:
    error = client.get(f"/raise/{name}").json()["error"]
    assert error["field"] == field
    assert {"type", "message"} <= set(error)


def test_a_stale_selector_names_the_selector_not_a_ref() -> None:
    error = StaleRef(None, "the page changed", selector="#go")
    assert error.field == "selector" and error.ref is None
    assert "'#go'" in error.message and "ref" not in error.message


def test_a_message_quotes_at_most_a_bounded_prefix_of_what_the_caller_sent() -> None:
    long = "#x" + "y" * 5000
    assert len(NotFound("element", long).message) < 120
    assert len(StaleRef(long, "gone").message) < 200
    assert quoted("#x") == "'#x'" and quoted("a" * 100).endswith("…")
    assert len(SecretNotAllowed("s" * 5000, "h" * 5000).message) < 250
    # a frame's src hostname is the page's to choose: the structured host is cut too
    assert len(str(error_json(SecretNotAllowed("s", "h" * 5000))["host"])) <= 254
    with pytest.raises(InvalidInput) as unknown_op:
        parse_args("x" * 5000, {})
    assert len(unknown_op.value.message) < 400


def test_every_error_has_a_field_attribute_none_unless_one_argument_is_to_blame() -> None:
    assert Conflict("busy").field is None
    assert error_from_json({"type": "conflict", "message": "m"}).field is None
    assert error_from_json({"type": "not_found", "message": "m", "field": "key"}).field == "key"


def test_a_hostile_error_body_sets_only_the_structured_fields() -> None:
    """What answers at the client's URL may not be sitekeep: a body naming ``__class__``
    or a method must still give a SitekeepError, its methods intact."""
    body = {"type": "not_found", "message": "m", "__class__": "x", "with_traceback": 1}
    error = error_from_json({**body, "field": "key"})
    assert isinstance(error, NotFound) and error.field == "key"
    assert callable(error.with_traceback)


def test_method_not_allowed_lists_the_methods_in_allow(client: TestClient) -> None:
    reply = client.get("/raise/MethodNotAllowed")
    assert reply.headers["allow"] == "DELETE, GET"
    assert reply.json()["error"]["allow"] == ["DELETE", "GET"]


def test_unauthorized_asks_for_a_bearer_token(client: TestClient) -> None:
    assert client.get("/raise/Unauthorized").headers["www-authenticate"] == "Bearer"


def test_a_body_validation_error_is_400_naming_the_field(client: TestClient) -> None:
    reply = client.post("/body", json={"url": "https://a.example.test/", "count": "many"})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "invalid_input"
    assert error["field"] == "count"
    assert "count" in error["message"]


def test_a_missing_body_field_is_400_naming_it(client: TestClient) -> None:
    reply = client.post("/body", json={"count": 1})
    assert reply.status_code == 400
    assert reply.json()["error"]["field"] == "url"


@pytest.mark.parametrize(("name", "case"), CASES.items(), ids=list(CASES))
def test_each_error_body_rebuilds_the_same_class_with_its_fields(
    client: TestClient, name: str, case: tuple[SitekeepError, int]
) -> None:
    error, _ = case
    rebuilt = error_from_json(client.get(f"/raise/{name}").json()["error"])
    assert type(rebuilt) is type(error)
    assert rebuilt.message == error.message
    for field in ("field", "code", "scope", "cap", "size", "ref", "secret", "host", "reason"):
        assert getattr(rebuilt, field, None) == getattr(error, field, None), field


def test_an_unknown_error_type_rebuilds_as_the_root() -> None:
    rebuilt = error_from_json({"type": "from_a_newer_server", "message": "m"})
    assert type(rebuilt) is SitekeepError and rebuilt.message == "m"
