"""``sitekeep secret set|list|delete`` (SPEC §7): values from stdin only, never shown.

Each test points ``SITEKEEP_DATA_DIR`` at its own temp dir, so the commands open a real key
file and SQLite database there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitekeep.cli.secrets import secret_app
from sitekeep.config import Settings
from support import on_service

USER = "dummy-user-c01d"
PASS = "dummy-pass-7f3a"
HOSTS = ["--host", "app.example.test", "--host", "*.example.test"]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("SITEKEEP_DATABASE_URL", "SITEKEEP_MASTER_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps tables at 80 columns off a terminal
    return tmp_path / "data"


def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
    result = CliRunner().invoke(secret_app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def reveal(data_dir: Path, name: str, key: str, tenant: str = "t1") -> str:
    value: str = on_service(
        Settings(data_dir=data_dir), lambda svc: svc.parts.vault.reveal(tenant, name, key)
    )
    return value


def test_set_reads_a_json_object_from_stdin(data_dir: Path) -> None:
    stdin = f'{{"username": "{USER}", "password": "{PASS}"}}\n'
    code, out, err = run("set", "staging", "--tenant", "t1", *HOSTS, stdin=stdin)
    assert (code, err) == (0, "")
    assert out == "saved secret staging (keys: username, password)\n"
    assert reveal(data_dir, "staging", "password") == PASS
    assert reveal(data_dir, "staging", "username") == USER


def test_set_reads_key_value_lines_verbatim_after_the_first_equals(data_dir: Path) -> None:
    stdin = f"\nusername={USER}\n\n  password={PASS}=x y \r\n\n"
    code, out, _ = run("set", "staging", "--tenant", "t1", *HOSTS, stdin=stdin)
    assert code == 0 and "(keys: username, password)" in out
    assert reveal(data_dir, "staging", "password") == f"{PASS}=x y "


def test_list_shows_names_hosts_and_keys_but_no_value(data_dir: Path) -> None:
    stdin = f"username={USER}\npassword={PASS}\n"
    run("set", "staging", "--tenant", "t1", "--description", "the admin", *HOSTS, stdin=stdin)
    run("set", "other", "--tenant", "t2", "--host", "o.example.test", stdin="token=abc\n")
    code, out, _ = run("list", "--tenant", "t1")
    assert code == 0
    for shown in ("staging", "the admin", "app.example.test", "*.example.test", "username"):
        assert shown in out
    assert "password" in out and "other" not in out
    assert PASS not in out and USER not in out


def test_list_of_an_empty_tenant_says_so(data_dir: Path) -> None:
    assert run("list", "--tenant", "t1")[:2] == (0, "no secrets in tenant t1\n")


def test_delete_removes_the_secret_and_an_unknown_one_exits_2(data_dir: Path) -> None:
    run("set", "staging", "--tenant", "t1", *HOSTS, stdin=f"password={PASS}\n")
    assert run("delete", "staging", "--tenant", "t1")[:2] == (0, "deleted secret staging\n")
    code, out, err = run("delete", "staging", "--tenant", "t1")
    assert code == 2 and out == ""
    assert err.startswith("error: no secret named 'staging' in tenant t1")
    assert run("list", "--tenant", "t1")[1] == "no secrets in tenant t1\n"


def test_a_value_can_never_be_passed_as_an_argument(data_dir: Path) -> None:
    code, _, err = run("set", "staging", "--tenant", "t1", *HOSTS, "--value", PASS)
    assert code == 2 and "No such option" in err
    code, _, _ = run("set", "staging", "--tenant", "t1", *HOSTS, f"password={PASS}")
    assert code == 2
    assert run("list", "--tenant", "t1")[1] == "no secrets in tenant t1\n"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (HOSTS, "", "no values on stdin"),
        (HOSTS, "\n\n", "no values on stdin"),
        (HOSTS, f"username={USER}\n{PASS}\n", "stdin line 2 is not key=value"),
        (HOSTS, f"password={PASS}\npassword={PASS}\n", "stdin line 2 repeats a key"),
        (HOSTS, f'{{"password": "{PASS}"', "stdin is not valid JSON"),
        (HOSTS, f'{{"password": 1234, "x": "{PASS}"}}', "values.password must be"),
        (HOSTS, f'{{"pass word": "{PASS}"}}', "values: key names are"),
        ([], f"password={PASS}\n", "--host: hosts must be a list of 1–32"),
        (["--host", "https://app.example.test"], f"password={PASS}\n", "--host: hosts[0] must be"),
    ],
)
def test_bad_input_prints_one_line_without_the_value_and_exits_2(
    data_dir: Path, args: list[str], stdin: str, message: str
) -> None:
    code, out, err = run("set", "staging", "--tenant", "t1", *args, stdin=stdin)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert PASS not in err and USER not in err
    assert run("list", "--tenant", "t1")[1] == "no secrets in tenant t1\n"


def test_a_bad_name_is_refused(data_dir: Path) -> None:
    code, _, err = run("set", "-x", "--tenant", "t1", *HOSTS, stdin="a=b\n")
    assert code == 2  # "-x" reads as an unknown option: typer refuses it
    code, _, err = run("set", "a/b", "--tenant", "t1", *HOSTS, stdin="a=b\n")
    assert code == 2 and err.startswith("error: NAME: name must be")


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("SITEKEEP_WARM_BROWSERS", "many", "error: bad setting SITEKEEP_WARM_BROWSERS\n"),
        ("SITEKEEP_MASTER_KEY", "not-base64!", "error: SITEKEEP_MASTER_KEY is not base64\n"),
    ],
)
def test_a_bad_setting_exits_2_naming_it(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    assert run("list", "--tenant", "t1") == (2, "", message)
