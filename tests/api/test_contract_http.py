"""The HTTP contract is whole (issue #8 items 8, 10, 11): every error has one shape, input
is bounded and strictly typed up front, and the OpenAPI document says so.

No browser is involved: each call here is refused before a session is even looked up.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sitekeep import limits
from sitekeep.api.body import FILE_PATHS
from support import Api

pytestmark = pytest.mark.anyio

STATUSES = {"400", "401", "403", "404", "409", "413", "429", "502", "503"}


def assert_error(reply: httpx.Response, status: int, kind: str, field: str | None = None) -> None:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["type"] == kind, error
    assert isinstance(error["message"], str) and error["message"]
    if field is not None:
        assert error.get("field") == field, error


async def test_an_unknown_route_is_404_in_the_error_shape(api: Api) -> None:
    for method, path in (("GET", "/nowhere"), ("POST", "/v1/sessions/k/fly"), ("GET", "/v2")):
        assert_error(await api.http.request(method, path), 404, "not_found")


async def test_a_wrong_method_is_405_with_allow_listing_every_method_of_the_path(
    api: Api,
) -> None:
    # GET and DELETE of /v1/sessions/{key} are two routes: Allow names both.
    reply = await api.http.put("/v1/sessions/k")
    assert_error(reply, 405, "method_not_allowed")
    assert {m.strip() for m in reply.headers["allow"].split(",")} >= {"GET", "DELETE"}
    reply = await api.http.get("/v1/sessions/k/navigate")
    assert_error(reply, 405, "method_not_allowed")
    assert reply.headers["allow"] == "POST"
    reply = await api.http.post("/v1/secrets/s")
    assert {m.strip() for m in reply.headers["allow"].split(",")} >= {"GET", "PUT", "DELETE"}


@pytest.mark.parametrize(
    "content",
    [b"{", b'{"url": }', b"\xff\xfe", b'{"url": "http://a.example.test/"'],
    ids=["open", "missing-value", "not-utf8", "unclosed"],
)
async def test_an_unparsable_body_is_400_in_the_error_shape(api: Api, content: bytes) -> None:
    reply = await api.http.post(
        "/v1/sessions", content=content, headers={"Content-Type": "application/json"}
    )
    assert_error(reply, 400, "invalid_input", "body")


@pytest.mark.parametrize("depth", [limits.MAX_DEPTH + 1, 5000])
async def test_a_body_nested_too_deep_is_400(api: Api, depth: int) -> None:
    content = "[" * depth + "]" * depth
    reply = await api.http.post(
        "/v1/sessions/k/flows", content=content, headers={"Content-Type": "application/json"}
    )
    assert_error(reply, 400, "invalid_input", "body")


async def test_a_body_over_the_limit_is_413_whether_announced_or_streamed(api: Api) -> None:
    big = json.dumps({"text": "x" * (limits.MAX_BODY + 10), "selector": "#q"}).encode()
    reply = await api.http.post("/v1/sessions/k/type", content=big)
    assert_error(reply, 413, "body_too_large", "body")

    async def chunks() -> Any:  # no Content-Length: counted as it arrives
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    reply = await api.http.post(
        "/v1/sessions/k/type", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert_error(reply, 413, "body_too_large", "body")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/sessions", {"insecure": 0}, "insecure"),
        ("/v1/sessions", {"restore_site_data": "yes"}, "restore_site_data"),
        ("/v1/sessions", {"fresh": "true"}, "fresh"),
        ("/v1/sessions", {"key": 12}, "key"),
        ("/v1/sessions/k/read", {"max_chars": "10"}, "max_chars"),
        ("/v1/sessions/k/read", {"max_chars": 10.5}, "max_chars"),
        ("/v1/sessions/k/type", {"selector": "#q", "text": "x", "submit": 1}, "submit"),
        ("/v1/sessions/k/save-site-data", {"indexed_db": "no"}, "indexed_db"),
        (
            "/v1/sessions/k/flows",
            {"steps": [{"op": "read", "max_chars": "5"}]},
            "steps[0].max_chars",
        ),
    ],
)
async def test_types_are_strict_a_lookalike_is_400_naming_the_field(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    assert_error(await api.http.post(path, json=body), 400, "invalid_input", field)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_a_nan_or_infinite_timeout_is_400_naming_the_field(api: Api, constant: str) -> None:
    content = '{"steps": [{"op": "wait_for", "text": "x", "timeout": CONSTANT}]}'
    content = content.replace("CONSTANT", constant)
    reply = await api.http.post(
        "/v1/sessions/k/flows", content=content, headers={"Content-Type": "application/json"}
    )
    assert_error(reply, 400, "invalid_input", "steps[0].timeout")


BIG = "x" * 200_000


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/sessions", {"url": "http://a.example.test/?" + BIG}, "url"),
        ("/v1/sessions/k/navigate", {"url": "http://a.example.test/?" + BIG}, "url"),
        ("/v1/sessions/k/click", {"selector": BIG}, "selector"),
        ("/v1/sessions/k/read", {"selector": BIG}, "selector"),
        ("/v1/sessions/k/type", {"selector": "#q", "text": BIG}, "text"),
        ("/v1/sessions/k/type", {"ref": BIG, "text": "x"}, "ref"),
        ("/v1/sessions/k/press", {"keys": BIG}, "keys"),
        ("/v1/sessions/k/select", {"selector": "#s", "value": BIG}, "value"),
        ("/v1/sessions/k/type-secret", {"selector": "#p", "secret": BIG, "field": "p"}, "secret"),
        ("/v1/sessions/k/flows", {"steps": [{"op": "read"}] * 101}, "steps"),
        ("/v1/sessions/k/flows", {"steps": [{"op": "navigate", "url": BIG}]}, "steps[0].url"),
        ("/v1/sessions", {"key": "k" * 65}, "key"),
    ],
)
async def test_oversize_input_is_400_naming_the_field_before_any_browser(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    assert_error(await api.http.post(path, json=body), 400, "invalid_input", field)
    assert not api.service.parts.browsers._live


async def test_an_oversize_key_in_the_path_is_400_naming_it(api: Api) -> None:
    assert_error(await api.http.get("/v1/sessions/" + "k" * 65), 400, "invalid_input", "key")


async def test_a_member_on_an_admin_route_is_403_before_its_body_is_validated(api: Api) -> None:
    # The api fixture's token is a member's; the body is wrong in every field.
    reply = await api.http.put("/v1/secrets/login", json={"hosts": 5, "values": [], "x": 1})
    assert_error(reply, 403, "forbidden")
    assert_error(await api.http.delete("/admin/sessions/k/history"), 403, "forbidden")
    assert_error(await api.http.get("/admin/runs?limit=banana"), 403, "forbidden")


async def test_openapi_lists_every_error_status_with_the_error_schema_and_no_422(
    api: Api,
) -> None:
    doc = await api.call("GET", "/openapi.json")
    assert "422" not in json.dumps(doc["paths"])
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    error = doc["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    assert set(error["properties"]["error"]["required"]) == {"type", "message"}
    ref = {"$ref": "#/components/schemas/Error"}
    listed: set[str] = set()
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if status != "200":
                    assert response["content"]["application/json"]["schema"] == ref
                    listed.add(status)
            if path not in ("/healthz", "/", "/metrics"):  # the routes without a token
                assert {"401", "503"} <= set(operation["responses"]), (method, path)
                assert operation["security"] == [{"HTTPBearer": []}], (method, path)
            else:
                assert "security" not in operation, (method, path)
    assert listed == STATUSES
    assert doc["components"]["securitySchemes"] == {
        "HTTPBearer": {"type": "http", "scheme": "bearer"}
    }
    navigate = doc["paths"]["/v1/sessions/{key}/navigate"]["post"]["responses"]
    assert set(navigate) >= STATUSES
    for path, method in (  # a session's values: its owner's or an admin's only
        ("/v1/sessions/{key}/storage-state", "get"),
        ("/v1/sessions/{key}/storage-state", "put"),
        ("/v1/sessions/{key}/webdriver", "get"),
        ("/v1/sessions/{key}/site-data/{site}", "get"),
    ):
        assert "403" in doc["paths"][path][method]["responses"], (method, path)
    admin = doc["paths"]["/admin/sessions/{key}/history"]["delete"]["responses"]
    assert {"400", "401", "403", "404"} <= set(admin) and "502" not in admin


async def test_openapi_states_key_patterns_lengths_and_list_sizes(api: Api) -> None:
    doc = await api.call("GET", "/openapi.json")
    params = doc["paths"]["/v1/sessions/{key}"]["get"]["parameters"]
    key = next(p for p in params if p["name"] == "key")["schema"]
    assert key["maxLength"] == limits.MAX_KEY and key["pattern"].startswith("^[A-Za-z0-9]")
    schemas = doc["components"]["schemas"]
    assert schemas["NavigateBody"]["properties"]["url"]["maxLength"] == limits.MAX_URL
    assert schemas["FlowBody"]["properties"]["steps"]["maxItems"] == limits.MAX_STEPS
    typed = doc["paths"]["/v1/sessions/{key}/type"]["post"]["requestBody"]["content"]
    text = typed["application/json"]["schema"]["properties"]["text"]
    assert text["maxLength"] == limits.MAX_TEXT


def _bounded(schema: dict[str, Any], doc: dict[str, Any], where: str) -> list[str]:
    """Where ``schema`` leaves a string, list, number or map without a bound (objects
    without declared properties — a file, a flow step checked per operation — aside)."""
    if "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    missing: list[str] = []
    for option in schema.get("anyOf", []):
        missing += _bounded(option, doc, where)
    kind = schema.get("type")
    if kind == "string" and not ({"maxLength", "enum", "const"} & set(schema)):
        missing.append(f"{where}: a string without maxLength")
    if kind == "array":
        if "maxItems" not in schema:
            missing.append(f"{where}: a list without maxItems")
        missing += _bounded(schema.get("items", {}), doc, f"{where}[]")
    if kind in ("integer", "number") and not {"maximum", "exclusiveMaximum"} & set(schema):
        missing.append(f"{where}: a number without maximum")
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and "maxProperties" not in schema:
            missing.append(f"{where}: a map without maxProperties")
        for name, field in schema.get("properties", {}).items():
            missing += _bounded(field, doc, f"{where}.{name}")
    return missing


async def test_every_route_bounds_every_body_field_and_parameter_in_the_openapi_document(
    api: Api,
) -> None:
    """Strict and bounded like the others, every route (issue #24: the live-session body
    took a 20,000-character URL): each string has a maxLength, each list a maxItems, each
    number a maximum, each map a maxProperties; JSON bodies forbid unknown fields."""
    doc = await api.call("GET", "/openapi.json")
    missing: list[str] = []
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            where = f"{method.upper()} {path}"
            for param in operation.get("parameters", []):
                missing += _bounded(param["schema"], doc, f"{where} {param['name']}")
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            schema = body["schema"]
            missing += _bounded(schema, doc, f"{where} body")
            if "$ref" in schema:
                named = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
                if named.get("additionalProperties") is not False:
                    missing.append(f"{where} body: unknown fields are not refused")
    assert missing == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "http://a.example.test/?" + "x" * 20_000}, "url"),
        ({"browser": "opera"}, "browser"),
        ({"key": "no spaces please"}, "key"),
        ({"key": 5}, "key"),
        ({"profile": "p" * 65}, "profile"),
        ({"country": ["de"]}, "country"),
        ({"fresh": True}, "fresh"),
    ],
)
async def test_a_live_session_body_is_strict_and_bounded_like_an_opens(
    api: Api, body: dict[str, Any], field: str
) -> None:
    assert_error(await api.http.post("/v1/live-sessions", json=body), 400, "invalid_input", field)
    assert not api.service.parts.browsers._live


def _json_operations(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(method, path with its parameters filled, first body field)`` of every
    operation that takes JSON — but a file, which its reader checks by its format's rules
    (``tests/api/test_import_refusals.py``)."""
    found = []
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if path.endswith(FILE_PATHS):
                continue
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            schema = body["schema"]
            if "$ref" in schema:
                schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
            first = next(iter(schema.get("properties", {})), "anything")
            filled = path.replace("{key}", "k").replace("{ident}", "0123456789abcdef")
            filled = filled.replace("{name}", "n").replace("{id_}", "0123456789abcdef")
            found.append((method.upper(), filled, first))
    return found


async def test_a_lone_surrogate_or_an_unbounded_number_in_any_json_body_is_400_naming_it(
    api: Api,
) -> None:
    """Issue #24: a lone surrogate reached a store or a JSON writer (500), a 5,000-digit
    integer Python's converter (500). Every route that takes JSON — and MCP's — refuses
    both before it runs, naming the field."""
    doc = await api.call("GET", "/openapi.json")
    operations = [*_json_operations(doc), ("POST", "/mcp", "params")]
    assert len(operations) > 20
    poisons = [
        ('{"FIELD": "a\\ud800b"}', "FIELD"),
        ('{"FIELD": [{"inner": "\\udc00"}]}', "FIELD[0].inner"),
        ('{"FIELD": {"k\\ud83d": 1}}', "FIELD"),
        ('{"FIELD": ' + "9" * 5000 + "}", "FIELD"),
        ('{"FIELD": [1, -' + "1" * 30 + "]}", "FIELD[1]"),
        ('{"FIELD": 1e400}', "FIELD"),
    ]
    for method, path, first in operations:
        for content, field in poisons:
            reply = await api.http.request(
                method,
                path,
                content=content.replace("FIELD", first),
                headers={"Content-Type": "application/json"},
            )
            assert_error(reply, 400, "invalid_input", field.replace("FIELD", first))
    assert not api.service.parts.browsers._live


@pytest.mark.parametrize(
    "path",
    [
        "/v1/profiles/%ED%A0%80",
        "/v1/profiles/a%ED%B0%80b/storage-state?format=%ED%A0%80",
        "/v1/sessions/k/storage-state?format=%ED%A0%80",
        "/v1/sessions/k/site-data/%ED%A0%80",
        "/v1/secrets/%ED%A0%80",
        "/v1/proxies/%ED%A0%80",
        "/admin/sessions/k/journal?after=%ED%A0%80",
        "/v1/live-sessions/%ED%A0%80/ticket",
    ],
)
async def test_surrogate_bytes_in_a_path_or_query_are_never_a_server_error(
    api: Api, path: str
) -> None:
    for method in ("GET", "POST", "PUT", "DELETE"):
        reply = await api.http.request(method, path)
        assert reply.status_code < 500, (method, path, reply.text)
        assert set(reply.json()) == {"error"}, reply.text
