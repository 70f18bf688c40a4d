"""The NATS URL parser against round trips of generated settings: server lists with
credentials on each server, secrets with any printable character (``@ : ? / , %``), options.
Whatever the URL, no secret reaches ``repr``, ``str``, ``redacted_url`` or a ValueError.

The rule under test (``ConnectionSettings.from_url``): ``,`` separates servers; a server's
userinfo ends at its last ``@``; the options start at the first ``?`` after it. So ``:``,
``/``, ``?`` and ``@`` may stand raw in a password, and ``,`` and ``%`` must be encoded."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from natsobj import ConnectionSettings
from natsobj.cli import cli
from natsobj.settings import CONSISTENCY_LEVELS
from tests.security.support import exception_text

MARK = "\u00a7"  # in every generated secret and nowhere else, so a leak cannot be a coincidence

printable = st.characters(
    categories=("L", "N", "P", "S", "Zs"), exclude_characters=MARK, codec="utf-8"
)
text = st.text(printable, min_size=1, max_size=12)
risky = st.text(st.sampled_from("@:?/,%&=#+ "), max_size=4)  # the characters URLs cut on


def secret(kind: str) -> st.SearchStrategy[str]:
    return st.builds(lambda a, b: f"{a}{MARK}{kind}{b}", text | risky, text | risky)


hostnames = st.from_regex(r"[a-z][a-z0-9-]{0,8}(\.[a-z][a-z0-9-]{0,8}){0,2}", fullmatch=True)
ipv4 = st.ip_addresses(v=4).map(str)
servers = st.lists(st.tuples(hostnames | ipv4, st.integers(1, 65535)), min_size=1, max_size=4)
options = st.fixed_dictionaries(
    {},
    optional={
        "domain": text,
        "name": text,
        "inbox_prefix": text,
        "consistency": st.sampled_from(CONSISTENCY_LEVELS),
        "connect_timeout": st.floats(0.1, 60).map(lambda f: round(f, 3)),
        "nkey_seed": secret("N"),
    },
)
credentials = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"user": text, "password": secret("P") | st.just("")}),
    st.fixed_dictionaries({"token": secret("T")}),
)


@dataclass
class Case:
    scheme: str
    hosts: list[tuple[str, int]]
    credentials: dict[str, str]
    options: dict[str, object] = field(default_factory=dict)

    @property
    def secrets(self) -> list[str]:
        values = [self.credentials.get("password"), self.credentials.get("token")]
        return [v for v in [*values, self.options.get("nkey_seed")] if v]

    def expected(self) -> ConnectionSettings:
        urls = [f"{self.scheme}://{host}:{port}" for host, port in self.hosts]
        return ConnectionSettings(servers=urls, **self.credentials, **self.options)

    def userinfo(self, *, raw: bool) -> str:
        """``user:password@`` or ``token@``, percent-encoded (``raw``: the password as it is,
        which the rule allows unless it holds a ``,`` or ``%``)."""
        if "token" in self.credentials:
            return quote(self.credentials["token"], safe="") + "@"
        if "user" not in self.credentials:
            return ""
        password = self.credentials["password"]
        if not (raw and password_may_stay_raw(password)):
            password = quote(password, safe="")
        return f"{quote(self.credentials['user'], safe='')}:{password}@"

    def url(self, *, raw: bool = False, on_every_server: bool = False) -> str:
        userinfo = self.userinfo(raw=raw)
        pieces = []
        for index, (host, port) in enumerate(self.hosts):
            if index == 0 or on_every_server:
                pieces.append(f"{self.scheme}://{userinfo}{host}:{port}")
            else:
                pieces.append(f"{host}:{port}")
        query = urlencode({k: str(v) for k, v in self.options.items()})
        return ",".join(pieces) + (f"?{query}" if query else "")


def password_may_stay_raw(password: str) -> bool:
    return not ({",", "%"} & set(password))


cases = st.builds(Case, st.sampled_from(["nats", "tls"]), servers, credentials, options)


def assert_hidden(shown: str, secrets: list[str]) -> None:
    for value in secrets:
        for form in (value, quote(value, safe="")):
            assert form not in shown, f"secret leaked into {shown[:300]!r}"


def shown(parsed: ConnectionSettings) -> str:
    return repr(parsed) + str(parsed) + parsed.redacted_url()


@settings(max_examples=300, deadline=None)
@given(cases, st.booleans(), st.booleans())
def test_url_round_trip(case: Case, raw: bool, on_every_server: bool):
    parsed = ConnectionSettings.from_url(case.url(raw=raw, on_every_server=on_every_server))
    assert parsed == case.expected()
    assert_hidden(shown(parsed), case.secrets)


@settings(max_examples=150, deadline=None)
@given(cases)
def test_server_lists_handed_over_as_they_are(case: Case):
    """The Airflow 'servers' extra, Dagster and Spark pass a list of URLs, not one URL."""
    case.options = {}
    parsed = ConnectionSettings(servers=case.url(on_every_server=True).split(","))
    assert parsed == case.expected()
    assert_hidden(shown(parsed), case.secrets)


@settings(max_examples=150, deadline=None)
@given(cases.filter(lambda c: c.credentials), secret("X"))
def test_different_credentials_per_server_are_refused_without_a_secret(case: Case, other: str):
    key = "token" if "token" in case.credentials else "password"
    first = case.url(on_every_server=True).split("?")[0].split(",")[0]
    second = Case(case.scheme, [("other", 4222)], {**case.credentials, key: other}).url()
    for url in (f"{first},{second}", f"{second},{first}"):
        with pytest.raises(ValueError, match="different credentials") as err:
            ConnectionSettings.from_url(url)
        assert_hidden(exception_text(err.value), [*case.secrets, other])
    with pytest.raises(ValueError) as err:
        ConnectionSettings(servers=[first, second])
    assert_hidden(exception_text(err.value), [*case.secrets, other])


@settings(max_examples=150, deadline=None)
@given(cases, st.sampled_from(["unknown-option", "http", "no-host"]))
def test_parse_errors_name_no_secret(case: Case, mistake: str):
    url = case.url(raw=True)
    if mistake == "unknown-option":
        url += ("&" if case.options else "?") + "colour=blue"
    elif mistake == "http":
        url = "http" + url[len(case.scheme) :]
    else:
        url = url.replace(f"{case.hosts[0][0]}:{case.hosts[0][1]}", "", 1)
    with pytest.raises(ValueError) as err:
        ConnectionSettings.from_url(url)
    assert_hidden(exception_text(err.value), case.secrets)


# -- the cases found by hand ---------------------------------------------------------------------


def test_credentials_on_each_server_of_a_list():
    parsed = ConnectionSettings.from_url("nats://alice:pw@h1:4222,nats://alice:pw@h2:4222")
    assert parsed.servers == ["nats://h1:4222", "nats://h2:4222"]
    assert (parsed.user, parsed.password) == ("alice", "pw")


def test_a_raw_question_mark_in_a_password_does_not_cut_the_url():
    parsed = ConnectionSettings.from_url("nats://alice:p?w/x@h1:4222,h2:4222?domain=hub")
    assert parsed.servers == ["nats://h1:4222", "nats://h2:4222"]
    assert (parsed.password, parsed.domain) == ("p?w/x", "hub")


def test_a_comma_in_an_option_value_stays_in_the_option():
    parsed = ConnectionSettings.from_url("nats://h1:4222?name=a,b")
    assert (parsed.servers, parsed.name) == (["nats://h1:4222"], "a,b")


RAW_COMMA_URLS = [
    "nats://alice:Sx9q,Zk7w@host:4222",  # server "alice:Sx9q", token "Zk7w"
    "nats://alice:Sx9q,Zk7w@h1:4222,h2:4222",
    "nats://alice:Sx9q,Zk7w:Wm3v@host",  # user "Zk7w", password "Wm3v"
    "nats://alice:Sx9q,4222@host",  # a piece that reads as a port
    "nats://alice:Sx9q@Zk7w,Wm3v@host",  # a piece that reads as a host
]


@pytest.mark.parametrize("url", RAW_COMMA_URLS)
def test_a_raw_comma_in_a_password_shows_no_piece_of_it(url: str) -> None:
    """Issue 28: a raw ``,`` in a password split it into a server and a token, so a piece of
    it appeared in ``repr``, the redacted URL and the CLI's error. The URL is refused, and
    neither the error nor the CLI shows any piece."""
    password = url.partition("alice:")[2].rpartition("@")[0]
    pieces = [p for p in re.split(r"[,:@]", password) if len(p) >= 4 and not p.isdigit()]
    with pytest.raises(ValueError, match="percent-encoded") as err:
        ConnectionSettings.from_url(url)
    assert_hidden(exception_text(err.value), pieces)
    result = CliRunner().invoke(cli, ["--url", url, "ls"])
    assert result.exit_code != 0
    assert_hidden(result.output + result.stderr, pieces)
