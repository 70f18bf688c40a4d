"""Listing from the stream's subject state (natsobj.aio.listing): the same objects as a full
consumer scan, for prefixes, globs and deletes, and the same again on the scan fallback."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import uuid
from collections.abc import Iterator

import fsspec
import fsspec.asyn
import pytest
from fsspec.asyn import AsyncFileSystem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import natsobj
from benchmarks.scale import directory_of, fill_store, object_name
from natsobj.aio import listing
from natsobj.local.embedded import NatsServerProcess
from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo
from natsobj.paths import listing_prefix, under
from natsobj.sync import run
from tests.security.support import with_userinfo

FALLBACK_LOG = "listing by consumer scan"

TREE = [
    "raw/2024/a.csv",
    "raw/2024/b.csv",
    "raw/2024/old/c.csv",
    "raw/2025/d.json",
    "rawdata/e.csv",
    "reports/é/ü.txt",
    "reports/漢字/f.csv",
    "top.txt",
]


def scanned(store: natsobj.ObjectStore, include_deleted: bool = False) -> list[ObjectInfo]:
    """Every current object through today's consumer scan (the reference)."""

    async def collect() -> list[ObjectInfo]:
        return [
            info
            async for batch in listing._scan_batches(
                store.aio.bucket_stream, listing.make_filter(None, None), include_deleted
            )
            for info in batch
        ]

    return run(collect())


def expected(
    infos: list[ObjectInfo], prefix: str | None = None, glob: str | None = None
) -> dict[str, tuple]:
    """The reference filter: a string prefix and the one project matcher for globs."""
    matcher = NameMatcher(glob, "glob") if glob else None
    return {
        i.name: fingerprint(i)
        for i in infos
        if i.name.startswith(prefix or "") and (matcher is None or matcher.matches(i.name))
    }


def fingerprint(info: ObjectInfo) -> tuple:
    return (info.sequence, info.mtime, info.digest, info.size, info.nuid, info.deleted)


def as_map(infos: list[ObjectInfo]) -> dict[str, tuple]:
    mapped = {i.name: fingerprint(i) for i in infos}
    assert len(mapped) == len(infos), "a name was listed twice"
    return mapped


@pytest.fixture
def tree(store):
    for name in TREE:
        store.put(name, name.encode())
    store.delete("raw/2024/b.csv")
    return store


@pytest.mark.parametrize(
    ("prefix", "glob"),
    [
        (None, None),
        ("raw/", None),
        ("raw", None),
        ("raw/2024/", None),
        ("reports/é/", None),
        ("reports/漢", None),
        ("nothing/", None),
        (None, "raw/*/*.csv"),
        (None, "raw/**.csv"),
        ("raw/", "**/[ab].csv"),
        (None, "*.txt"),
    ],
)
def test_listing_equals_the_full_scan(tree, prefix, glob, caplog):
    caplog.set_level(logging.INFO, logger="natsobj.aio.listing")
    for include_deleted in (False, True):
        reference = expected(scanned(tree, include_deleted), prefix, glob)
        listed = tree.list(prefix=prefix, glob=glob, include_deleted=include_deleted)
        assert as_map(listed) == reference
        assert [i.name for i in listed] == sorted(reference)
        streamed = list(tree.iter_list(prefix=prefix, glob=glob, include_deleted=include_deleted))
        assert as_map(streamed) == reference
    assert FALLBACK_LOG not in caplog.text  # the subject-state path answered


def _ordered(store: natsobj.ObjectStore, prefix: str | None, lower: str, **kw) -> tuple:
    """``(names, following)`` of one batch of the ordered listing."""

    async def one() -> tuple:
        ordered = await listing.open_ordered(store.aio.bucket_stream, prefix=prefix)
        assert ordered is not None, "the name index gave no ordered listing"
        try:
            infos, following = await ordered.batch(lower, **kw)
        finally:
            await ordered.close()
        return [i.name for i in infos], following

    return run(one())


def test_ordered_listing_pages_from_any_name_in_name_order(tree):
    tree.list()  # builds the name index
    live = sorted(name for name in TREE if name != "raw/2024/b.csv")
    # pages of two names: the deleted one is read and left out, the order is the names'
    names, following = _ordered(tree, None, "", limit=2)
    assert (names, following) == (["raw/2024/a.csv"], "raw/2024/b.csv")
    pages, lower = [names], following
    while lower is not None:
        names, lower = _ordered(tree, None, lower, limit=2)
        pages.append(names)
    assert [name for page in pages for name in page] == live
    assert _ordered(tree, "raw/", "raw/2024/old/c.csv", limit=10) == (["raw/2025/d.json"], None)
    assert _ordered(tree, "raw/", "raw/2025/d.json", inclusive=True, limit=10)[0] == [
        "raw/2025/d.json"
    ]
    assert _ordered(tree, "reports/", "", limit=10)[0] == ["reports/é/ü.txt", "reports/漢字/f.csv"]


def test_no_ordered_listing_without_the_name_index(tree, monkeypatch):
    tree.list()
    monkeypatch.setenv("NATSOBJ_NAME_INDEX", "off")
    assert run(listing.open_ordered(tree.aio.bucket_stream)) is None


def test_deleted_objects_only_with_include_deleted(tree):
    assert "raw/2024/b.csv" not in {i.name for i in tree.list(prefix="raw/")}
    (tombstone,) = [i for i in tree.list(prefix="raw/2024/b", include_deleted=True)]
    assert tombstone.deleted and tombstone.size == 0


def test_empty_bucket_lists_nothing(store):
    assert store.list() == []
    assert list(store.iter_list(prefix="x/")) == []


def test_a_bad_glob_fails_before_any_request(store):
    with pytest.raises(ValueError, match="invalid glob"):
        store.list(glob="raw/[z-a].csv")


def test_listings_larger_than_one_batched_get(nats_url, bucket_name, sync_client):
    count = 2 * listing.MULTI_LAST_LIMIT + 300  # three batched gets, pipelined
    run(fill_store(nats_url, bucket_name, count, per_dir=700))
    try:
        store = sync_client.store(bucket_name)
        names = {object_name(i, 700) for i in range(count)}
        assert {i.name for i in store.list()} == names
        assert sum(1 for _ in store.iter_list()) == count
        directory = directory_of(1500, 700)
        listed = store.list(prefix=directory)
        assert [i.name for i in listed] == sorted(n for n in names if n.startswith(directory))
        assert all(i.size == len(i.name.encode()) for i in listed)
        assert as_map(store.list()) == expected(scanned(store))
    finally:
        sync_client.delete_store(bucket_name)


def test_stopping_an_iteration_early_releases_its_subscription(tree, sync_client):
    nc = sync_client.aio.nc
    before = len(nc._subs)
    for _ in tree.iter_list():
        break
    assert len(nc._subs) == before
    assert len(tree.list()) == len(TREE) - 1


# -- property: random names, unicode, '/' segments and deletes ----------------------------------

SEGMENT = st.text(alphabet=st.sampled_from("ab-_.é漢😀 z"), min_size=1, max_size=4)
NAME = st.lists(SEGMENT, min_size=1, max_size=3).map("/".join)


@st.composite
def scenarios(draw):
    names = draw(st.lists(NAME, max_size=20, unique=True))
    deleted = draw(st.sets(st.sampled_from(names))) if names else set()
    source = draw(st.sampled_from(names)) if names else draw(NAME)
    prefix = draw(st.one_of(st.none(), st.integers(0, len(source)).map(lambda n: source[:n])))
    head, _, _ = source.rpartition("/")
    glob = draw(
        st.one_of(
            st.none(),
            st.sampled_from([f"{head}/*" if head else "*", f"{source[:1]}**", "**/*z*", "*"]),
        )
    )
    return names, deleted, prefix, glob


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(scenario=scenarios())
def test_listing_equals_a_full_scan_for_random_names(sync_client, scenario):
    names, deleted, prefix, glob = scenario
    bucket = f"h{uuid.uuid4().hex[:12]}"
    store = sync_client.create_store(bucket)
    try:
        for name in names:
            store.put(name, name.encode())
        for name in deleted:
            store.delete(name)
        for include_deleted in (False, True):
            listed = store.list(prefix=prefix, glob=glob, include_deleted=include_deleted)
            assert as_map(listed) == expected(scanned(store, include_deleted), prefix, glob)
            live = names if include_deleted else [n for n in names if n not in deleted]
            assert {i.name for i in listed} == set(expected_names(live, prefix, glob))
    finally:
        sync_client.delete_store(bucket)


def expected_names(names: list[str], prefix: str | None, glob: str | None) -> list[str]:
    matcher = NameMatcher(glob, "glob") if glob else None
    return [
        n for n in names if n.startswith(prefix or "") and (matcher is None or matcher.matches(n))
    ]


# -- the fallback: servers and permission sets that do not allow subject-state listing ------------


def test_stream_without_direct_get_falls_back_to_the_scan(tree, raw, caplog):
    config = raw.stream_config(tree.bucket)
    config["allow_direct"] = False

    async def update() -> None:
        reply = await raw.nc.request(
            f"$JS.API.STREAM.UPDATE.OBJ_{tree.bucket}", json.dumps(config).encode()
        )
        assert "error" not in json.loads(reply.data)

    run(update())
    caplog.set_level(logging.INFO, logger="natsobj.aio.listing")
    listed = tree.list(prefix="raw/")
    assert FALLBACK_LOG in caplog.text and "does not allow direct gets" in caplog.text
    assert as_map(listed) == expected(scanned(tree), "raw/")
    assert {i.name for i in listed} == {"raw/2024/a.csv", "raw/2024/old/c.csv", "raw/2025/d.json"}


BUCKET = "perms"


def user(name: str, publish: list[str]) -> str:
    allowed = ", ".join(f'"{s}"' for s in publish)
    return (
        f"  {{user: {name}, password: {name}-pw, permissions: {{"
        f' publish: {{allow: [{allowed}]}}, subscribe: {{allow: ["_INBOX.>"]}} }} }}\n'
    )


def readers_config() -> str:
    stream = f"OBJ_{BUCKET}"
    scan = [
        f"$JS.API.CONSUMER.CREATE.{stream}.>",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.>",
        f"$JS.API.CONSUMER.DELETE.{stream}.>",
    ]
    single_gets = [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.DIRECT.GET.{stream}.>"]
    return (
        "authorization { users: [\n"
        "  {user: admin, password: admin-pw}\n"
        # direct gets of one subject only (`DIRECT.GET.<stream>.>`): no batched gets
        + user("single", [*single_gets, *scan])
        + user("noinfo", [f"$JS.API.DIRECT.GET.{stream}", *scan])
        # subject state and batched gets, but no consumers: the name index cannot catch up
        + user("noconsumer", [*single_gets, f"$JS.API.DIRECT.GET.{stream}"])
        + "] }\n"
    )


@pytest.fixture(scope="module")
def perms_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    with NatsServerProcess(tmp_path_factory.mktemp("listing"), config=readers_config()) as server:
        with natsobj.connect(with_userinfo(server.url, "admin:admin-pw")) as admin:
            store = admin.create_store(BUCKET)
            for name in TREE:
                store.put(name, name.encode())
            store.delete("raw/2024/b.csv")
        yield server


@contextlib.contextmanager
def connected(server: NatsServerProcess, name: str) -> Iterator[natsobj.Client]:
    with natsobj.connect(with_userinfo(server.url, f"{name}:{name}-pw")) as client:
        yield client


def test_user_without_batched_direct_get_falls_back_to_the_scan(perms_server, caplog):
    with connected(perms_server, "admin") as admin:
        reference = admin.store(BUCKET).list(prefix="raw/", include_deleted=True)
    caplog.set_level(logging.INFO, logger="natsobj.aio.listing")
    with connected(perms_server, "single") as client:
        store = client.store(BUCKET)
        listed = store.list(prefix="raw/", include_deleted=True)
        assert as_map(listed) == as_map(reference) and len(listed) == 4
        assert FALLBACK_LOG in caplog.text and "batched direct get" in caplog.text
        assert {i.name for i in store.iter_list(glob="**.csv")} == {
            "raw/2024/a.csv",
            "raw/2024/old/c.csv",
            "rawdata/e.csv",
            "reports/漢字/f.csv",
        }


def test_user_without_stream_info_falls_back_to_the_scan(perms_server, caplog):
    """store() needs STREAM.INFO, so this user's store is bound from known config."""
    caplog.set_level(logging.INFO, logger="natsobj.aio.listing")
    with connected(perms_server, "noinfo") as client:
        store = natsobj.ObjectStore(
            natsobj.aio.ObjectStore(
                client.aio, BUCKET, natsobj.model.StreamInfo(config={"allow_direct": True})
            )
        )
        listed = store.list(prefix="reports/")
        assert [i.name for i in listed] == ["reports/é/ü.txt", "reports/漢字/f.csv"]
        assert FALLBACK_LOG in caplog.text and "STREAM.INFO denied" in caplog.text


def test_user_without_consumers_lists_without_catching_up_the_index(
    perms_server, caplog, tmp_path, monkeypatch
):
    monkeypatch.setenv("NATSOBJ_CACHE_DIR", str(tmp_path))
    caplog.set_level(logging.INFO, logger="natsobj.aio")
    with connected(perms_server, "noconsumer") as client:
        store = client.store(BUCKET)
        assert [i.name for i in store.list(prefix="raw/2025/")] == ["raw/2025/d.json"]
        with connected(perms_server, "admin") as admin:  # outside the other tests' prefixes
            admin.store(BUCKET).put("later/new.bin", b"1")
        try:
            listed = [i.name for i in store.list(prefix="later/")]
        finally:
            with connected(perms_server, "admin") as admin:
                admin.store(BUCKET).delete("later/new.bin")
        assert listed == ["later/new.bin"]
    assert "name index not brought up to date" in caplog.text
    assert FALLBACK_LOG not in caplog.text  # the subject-state listing, not the scan


# -- many pages of names (the server sends at most 100,000 subjects per STREAM.INFO) -------------


@pytest.mark.slow
def test_names_spread_over_several_pages(nats_url, sync_client):
    bucket = f"pages{uuid.uuid4().hex[:8]}"
    count = 100_000 + 3 * 500 + 17
    run(fill_store(nats_url, bucket, count))
    try:
        store = sync_client.store(bucket)
        assert sum(1 for _ in store.iter_list()) == count
        for index in (0, 60_000, count - 1):  # first, middle and last page ranges
            directory = directory_of(index)
            names = [i.name for i in store.list(prefix=directory)]
            assert names == sorted(
                n for n in map(object_name, range(count)) if n.startswith(directory)
            )
    finally:
        sync_client.delete_store(bucket)


# -- the faces: fsspec's find/glob/ls answer from one listing, as fsspec's own walk would -----


@pytest.fixture
def fs(nats_url: str):
    return fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)


def walked_find(fs, path: str, **options) -> list[str]:
    """fsspec's own find: a walk that lists one directory level at a time."""
    return fsspec.asyn.sync(fs.loop, functools.partial(AsyncFileSystem._find, fs), path, **options)


@pytest.mark.parametrize("sub", ["", "/raw", "/raw/2024", "/reports/漢字", "/top.txt", "/ra"])
def test_fs_find_equals_fsspecs_walk(tree, fs, sub):
    path = tree.bucket + sub
    for withdirs in (False, True):
        assert fs.find(path, withdirs=withdirs) == walked_find(fs, path, withdirs=withdirs)
    assert fs.find(path, maxdepth=1) == walked_find(fs, path, maxdepth=1)


def test_fs_glob_and_ls_see_the_listing(tree, fs):
    bucket = tree.bucket
    assert fs.glob(f"{bucket}/raw/*/*.csv") == [f"{bucket}/raw/2024/a.csv"]
    assert fs.glob(f"{bucket}/raw/**/*.csv") == [
        f"{bucket}/raw/2024/a.csv",
        f"{bucket}/raw/2024/old/c.csv",
    ]
    assert fs.ls(f"{bucket}/raw", detail=False) == [f"{bucket}/raw/2024", f"{bucket}/raw/2025"]
    assert fs.ls(f"{bucket}/raw/2024/a.csv", detail=False) == [f"{bucket}/raw/2024/a.csv"]
    assert fs.isdir(f"{bucket}/reports/é") and not fs.exists(f"{bucket}/raw/2024/b.csv")


@pytest.mark.parametrize("prefix", ["", ".", "raw", "raw/", "raw//", "raw/2024/a.csv", "/raw"])
def test_listing_prefix_finds_the_object_and_the_directory(tree, prefix):
    """What `natsobj ls` and fsspec's ls ask for: the object named ``prefix`` and everything in
    the directory ``as_dir(prefix)``, from one narrowed listing."""
    everything = tree.list()
    narrowed = tree.list(prefix=listing_prefix(prefix))
    wanted = {i.name for i in everything if i.name == prefix} | {
        i.name for i in under(everything, prefix)
    }
    assert wanted <= {i.name for i in narrowed}
