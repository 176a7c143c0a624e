"""The files mdshell writes on its own (docs/files.md): all caches under one directory that
every writer honours, one switch that writes none, and a TLS client key never on disk in the
clear."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from mdshell import files
from mdshell.source.quorum import tls
from mdshell.source.quorum.errors import LiveError
from mdshell.spark import settings

from .conftest import FIXTURES, run_cli
from .kafka.certs import PEM, make_ca, make_server


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (files.CACHE_ENV, files.NO_CACHE_ENV, "XDG_CACHE_HOME", settings.LOG_ENV):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_cache_dir_is_mdshell_cache_then_xdg_then_home(
        tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("HOME", str(tmp_path / "home"))
    assert files.cache_dir() == str(tmp_path / "home" / ".cache" / "mdshell")
    clean_env.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    assert files.cache_dir() == str(tmp_path / "home" / ".cache" / "mdshell")
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert files.cache_dir() == str(tmp_path / "xdg" / "mdshell")
    clean_env.setenv(files.CACHE_ENV, str(tmp_path / "mine"))
    assert files.cache_dir() == str(tmp_path / "mine")


def test_spark_files_go_under_mdshell_cache(tmp_path: Path,
                                            clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    clean_env.setenv(files.CACHE_ENV, str(tmp_path / "mine"))
    assert settings.log_path() == str(tmp_path / "mine" / "spark" / f"spark-{os.getpid()}.log")
    assert settings.cache_dir() == str(tmp_path / "mine")  # the class archive's folder too


def test_no_cache_writes_no_decoder_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = ("-d", str(FIXTURES / "cluster-basic"), "tree", "/image")
    on = run_cli(*args, env={files.CACHE_ENV: str(cache)})
    assert on.returncode == 0 and list(cache.glob("decoders-*.marshal"))
    other = tmp_path / "other"
    off = run_cli(*args, env={files.CACHE_ENV: str(other), files.NO_CACHE_ENV: "1"})
    assert off.returncode == 0 and off.stdout == on.stdout and off.stderr == ""
    assert not other.exists()


def test_no_cache_keeps_spark_logs_and_archive_out(tmp_path: Path,
                                                  clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(files.CACHE_ENV, str(tmp_path))
    clean_env.setenv(files.NO_CACHE_ENV, "1")
    assert settings.log_path() == os.devnull
    settings.prune_logs()
    pytest.importorskip("pyspark")
    from mdshell.spark import classarchive

    assert classarchive.plan().options == ""
    assert list(tmp_path.iterdir()) == []


class SpyContext(ssl.SSLContext):
    """A real context that notes what the file it is given holds while it loads it."""

    seen: list[tuple[str, bytes]]

    def load_cert_chain(self, certfile: str, keyfile: str | None = None,  # type: ignore[override]
                        password: str | None = None) -> None:
        self.seen.append((certfile, Path(certfile).read_bytes()))
        super().load_cert_chain(certfile, keyfile, password)


def _context() -> SpyContext:
    ctx = SpyContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.seen = []
    return ctx


def _assert_sealed(ctx: SpyContext, clear_key: bytes) -> None:
    ((path, held),) = ctx.seen
    assert b"-----BEGIN ENCRYPTED PRIVATE KEY-----" in held
    assert b"-----BEGIN PRIVATE KEY-----" not in held and clear_key not in held
    assert b"-----BEGIN CERTIFICATE-----" in held
    assert not Path(path).exists()


def _client() -> tuple[bytes, bytes, object, object]:
    key, cert = make_server(make_ca("test CA"))
    clear = key.private_bytes(PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    return clear, cert.public_bytes(PEM), key, cert


def test_a_pem_client_key_is_encrypted_on_disk_and_removed(tmp_path: Path) -> None:
    clear, chain, _, _ = _client()
    store = tmp_path / "client.pem"
    store.write_bytes(clear + chain)  # key first, as Kafka's PEM stores often are
    ctx = _context()
    tls._keystore(ctx, {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(store)})
    _assert_sealed(ctx, clear.split(b"\n")[1])
    inline = _context()
    tls._keystore(inline, {"ssl.keystore.key": clear.decode(),
                           "ssl.keystore.certificate.chain": chain.decode()})
    _assert_sealed(inline, clear.split(b"\n")[1])


def test_a_pkcs12_client_key_is_encrypted_on_disk_and_removed(tmp_path: Path) -> None:
    clear, _, key, cert = _client()
    store = tmp_path / "client.p12"
    store.write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", key, cert, None,  # type: ignore[arg-type]
        serialization.BestAvailableEncryption(b"pass")))
    ctx = _context()
    tls._keystore(ctx, {"ssl.keystore.location": str(store), "ssl.keystore.password": "pass"})
    _assert_sealed(ctx, clear.split(b"\n")[1])


def test_an_encrypted_pem_key_needs_its_password(tmp_path: Path) -> None:
    _, chain, key, _ = _client()
    locked = key.private_bytes(PEM, serialization.PrivateFormat.PKCS8,  # type: ignore[attr-defined]
                               serialization.BestAvailableEncryption(b"secret"))
    store = tmp_path / "locked.pem"
    store.write_bytes(chain + locked)
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(store)}
    ctx = _context()
    tls._keystore(ctx, {**props, "ssl.key.password": "secret"})
    assert len(ctx.seen) == 1
    with pytest.raises(LiveError, match=r"cannot use the key and certificate.*ssl\.key\.password"):
        tls._keystore(_context(), {**props, "ssl.key.password": "wrong"})
