"""Keys a gateway in production gets its keys from: the environment, and a secret an
orchestrator mounted (a Kubernetes Secret volume: files that are symlinks into ``..data/``,
mode 0644, in a world-writable sticky tmpfs), built here as the kubelet builds it, in a mount
namespace of the gateway's own. The rule for local files stays: the same layout in a plain
directory is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.gateway.conftest import ACCESS_KEY, SECRET, make_s3
from tests.gateway.processes import GatewayProcess

VERSION = "..2026_11_29_00_00_00.000000001"
# the kubelet's layout: DIR/credentials.toml -> ..data/credentials.toml, ..data -> VERSION
KUBELET = """
set -e
dir=$1 source=$2 mode=$3 mount=$4
shift 4
if [ "$mount" = mount ]; then mount -t tmpfs -o mode=1777 tmpfs "$dir"; fi
mkdir -m 755 "$dir/$VERSION"
cp "$source" "$dir/$VERSION/credentials.toml"
chmod "$mode" "$dir/$VERSION/credentials.toml"
ln -s "$VERSION" "$dir/..data"
ln -s ..data/credentials.toml "$dir/credentials.toml"
exec "$@"
"""


def kubelet(secret_dir: Path, source: Path, *, mode: str = "0644", mount: bool = True):  # type: ignore[no-untyped-def]
    secret_dir.mkdir()
    return (
        "unshare", "--mount", "sh", "-c", KUBELET, "kubelet",
        str(secret_dir), str(source), mode, "mount" if mount else "plain",
    )  # fmt: skip


def print_env(
    nats_url: str, wrapper: tuple[str, ...], credentials: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*wrapper, sys.executable, "-m", "natsobj.cli", "--url", nats_url, "gateway",
         "--credentials", str(credentials), "--print-env"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "VERSION": VERSION},
    )  # fmt: skip


def test_a_kubernetes_secret_volume_is_a_credentials_file(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    secret_dir = tmp_path / "secret"
    with GatewayProcess(
        nats_url, tmp_path / "gateway.log",
        "--credentials", str(secret_dir / "credentials.toml"), "--workers", "1",
        wrapper=kubelet(secret_dir, credentials_file), env={"VERSION": VERSION},
    ) as gateway:  # fmt: skip
        s3 = make_s3(gateway.endpoint)
        s3.create_bucket(Bucket="mounted")
        assert "mounted" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
        assert gateway.terminate() == 0


@pytest.mark.parametrize(
    ("mode", "mount", "refusal"),
    [
        ("0644", False, "Too many levels of symbolic links"),  # not mounted: the local rule
        ("0666", True, "others can change it"),
    ],
)
def test_a_secret_others_could_change_is_refused(
    nats_url: str, credentials_file: Path, tmp_path: Path, mode: str, mount: bool, refusal: str
) -> None:
    secret_dir = tmp_path / "secret"
    done = print_env(
        nats_url,
        kubelet(secret_dir, credentials_file, mode=mode, mount=mount),
        secret_dir / "credentials.toml",
    )
    assert done.returncode != 0
    assert refusal in done.stderr
    assert SECRET not in done.stdout


def test_a_docker_secret_bind_mounted_as_a_file_is_a_credentials_file(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    source = tmp_path / "host-secret.toml"
    source.write_text(credentials_file.read_text())
    source.chmod(0o644)
    target = tmp_path / "run-secrets" / "credentials.toml"
    target.parent.mkdir()
    target.touch()
    bind = f'mount --bind {source} {target} && exec "$@"'
    done = print_env(nats_url, ("unshare", "--mount", "sh", "-c", bind, "docker"), target)
    assert done.returncode == 0, done.stderr
    assert f"NATSOBJ_GATEWAY_ACCESS_KEY={ACCESS_KEY}" in done.stdout
    # the same file, not mounted: the local rule (0644 is readable by others) refuses it
    refused = print_env(nats_url, (), source)
    assert refused.returncode != 0 and "users other than you can read it" in refused.stderr


def test_a_mounted_secret_whose_link_leads_out_is_refused(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.toml"
    outside.write_text(credentials_file.read_text())
    secret_dir = tmp_path / "secret"
    wrapper = kubelet(secret_dir, credentials_file)
    planted = f'ln -s {outside} "$dir/planted.toml"\nexec "$@"'
    wrapper = (*wrapper[:4], KUBELET.replace('exec "$@"', planted), *wrapper[5:])
    done = print_env(nats_url, wrapper, secret_dir / "planted.toml")
    assert done.returncode != 0
    assert "leads out of the mount" in done.stderr


def test_a_key_from_the_environment(nats_url: str, tmp_path: Path) -> None:
    env = {
        "NATSOBJ_GATEWAY_ACCESS_KEY": ACCESS_KEY,
        "NATSOBJ_GATEWAY_SECRET": SECRET,
    }
    with GatewayProcess(nats_url, tmp_path / "gateway.log", "--workers", "1", env=env) as gateway:
        make_s3(gateway.endpoint).list_buckets()
        with pytest.raises(ClientError, match="SignatureDoesNotMatch"):
            make_s3(gateway.endpoint, secret="not-the-secret").list_buckets()
        assert gateway.terminate() == 0
