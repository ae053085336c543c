"""A password or API key is never printed, in any form a user can write a source: a URL whose
password holds `#`, `/`, `?` or `@` unencoded (libpq accepts several), percent-encoded, as a
`password=` query parameter, a libpq key=value string (quoted values included), or $PGPASSWORD;
in every place a source is named: error lines, the header of a successful command, the TUI's
subtitle. A key=value string and libpq's PG* variables are Postgres sources, as for psql."""

from __future__ import annotations

import pytest

SECRET = "s3cr3t-Zq"
FAILING = [  # nothing listens on port 1: the connection fails, the message names the source
    f"postgresql://alice:{SECRET}#x@127.0.0.1:1/db",
    f"postgresql://alice:{SECRET}/x@127.0.0.1:1/db",
    f"postgresql://alice:{SECRET}?x@127.0.0.1:1/db",
    f"postgresql://alice:{SECRET}@x@127.0.0.1:1/db",
    f"postgresql://alice:{SECRET.replace('-', '%2D')}@127.0.0.1:1/db",
    f"postgresql://alice@127.0.0.1:1/db?sslmode=disable&password={SECRET}",
    f"host=127.0.0.1 port=1 dbname=db user=alice password={SECRET}",
    f"host=127.0.0.1 port=1 dbname=db user=alice password='{SECRET} with space'",
    f"host=127.0.0.1 port=1 password = '{SECRET}\\'q' dbname=db",
]


@pytest.mark.parametrize("spec", FAILING)
def test_a_failing_source_never_prints_its_password(run, spec, pg_server):
    r = run("threads", "--db", spec)
    assert r.code == 2, (r.code, r.err)
    assert len(r.err.strip().splitlines()) <= 2
    assert SECRET not in r.out + r.err, r.err
    assert SECRET.replace("-", "%2D") not in r.err, r.err
    assert "internal error" not in r.err


def test_a_key_value_string_is_a_postgres_source(run, pg_samples):
    dbname = pg_samples.rsplit("/", 1)[1]
    r = run("threads", "--db", f"dbname={dbname} password='{SECRET} x'")
    assert r.code == 0, r.err
    assert "bakery-plan" in r.out
    assert SECRET not in r.out + r.err
    assert "password=***" in r.out  # the source, named without its password


def test_libpq_variables_name_a_postgres_source(run, pg_samples, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no default database file here
    monkeypatch.delenv("STATECTL_DB", raising=False)
    monkeypatch.delenv("DATABASE_URI", raising=False)
    monkeypatch.setenv("PGDATABASE", pg_samples.rsplit("/", 1)[1])
    monkeypatch.setenv("PGPASSWORD", SECRET)
    r = run("threads")
    assert r.code == 0, r.err
    assert "bakery-plan" in r.out
    assert SECRET not in r.out + r.err


@pytest.mark.parametrize("form", ["url-query", "key-value"])
def test_a_working_source_is_named_without_its_password(run, pg_samples, form):
    dbname = pg_samples.rsplit("/", 1)[1]
    spec = f"postgresql:///{dbname}?password={SECRET}" if form == "url-query" else f"dbname={dbname} password={SECRET}"
    for args in (["threads"], ["log", "bakery-plan"], ["show", "nope"]):
        r = run(*args, "--db", spec)
        assert r.code in (0, 3), r.err
        assert SECRET not in r.out + r.err, args


async def test_the_tui_subtitle_never_shows_the_password(pg_samples):
    from statectl.tui import make_app

    dbname = pg_samples.rsplit("/", 1)[1]
    app = make_app(f"dbname={dbname} password={SECRET}", poll=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert SECRET not in str(app.sub_title)
        assert "***" in str(app.sub_title)
        await pilot.press("q")


def test_redaction_of_every_form():
    from statectl.secrets import redact

    for spec in FAILING:
        shown = redact(spec)
        assert SECRET not in shown, (spec, shown)
        assert "***" in shown, (spec, shown)
    assert redact("postgresql:///statectl") == "postgresql:///statectl"
    assert redact("/data/checkpoints.sqlite") == "/data/checkpoints.sqlite"


def test_an_api_key_never_goes_over_plain_http_to_another_host(run, monkeypatch):
    """--api-key (or $LANGSMITH_API_KEY) with an http:// URL of another machine: refused before any
    connection, unless --insecure; to this machine (`langgraph dev`) it is sent as before."""
    monkeypatch.delenv("LANGSMITH_API_KEY", raising=False)
    monkeypatch.delenv("LANGGRAPH_API_KEY", raising=False)
    monkeypatch.delenv("LANGCHAIN_API_KEY", raising=False)
    r = run("threads", "--db", "http://deploy.example.invalid:2024", "--api-key", "lsv2_pt_secret_value_123456")
    assert r.code == 2
    assert r.err == (
        "statectl: an API key would go to deploy.example.invalid over plain http://, unencrypted "
        "(use https://, or --insecure to send it anyway)\n"
    )
    monkeypatch.setenv("LANGSMITH_API_KEY", "lsv2_pt_secret_value_123456")
    r = run("threads", "--db", "http://deploy.example.invalid:2024")
    assert "over plain http://" in r.err
    # to this machine: the key may go (the refusal is not what stops this one: nothing listens there)
    r = run("threads", "--db", "http://127.0.0.1:9", "--timeout", "2")
    assert r.code == 2
    assert "over plain http://" not in r.err
    assert "lsv2_pt_secret_value_123456" not in r.err


@pytest.mark.parametrize("form", ["-o", "--output="])
def test_a_password_in_any_argument_is_never_echoed(run, form):
    """`export -o URL` (a URL given where a file is wanted): the message about the path it cannot
    write names it without its password, as a source's messages do."""
    from conftest import SAMPLES

    secret = "0utput-Pw9"  # (its own: no earlier test has made statectl remember it)
    url = f"postgresql://alice:{secret}@127.0.0.1:1/db"
    r = run("export", "--all", "--db", str(SAMPLES / "agent.sqlite"), *(["-o", url] if form == "-o" else [form + url]))
    assert r.code == 2, r.err
    assert "cannot write" in r.err
    assert secret not in r.out + r.err, r.err
