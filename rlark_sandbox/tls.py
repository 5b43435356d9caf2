"""TLS material of one sandbox state dir: a private CA and a loopback server certificate signed by it.
Generated once (files ca.crt, ca.key, server.crt, server.key; keys mode 0600) and reused across restarts;
a state dir from before ca.key was kept gets a new CA. The CA also signs client certificates (certs.py).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rlark_tui.local.fsutil import write_private


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def ensure_certificates(tls_dir: Path) -> tuple[Path, Path, Path]:
    """(ca.crt, server.crt, server.key) in `tls_dir`, created when missing (with ca.key next to them)."""
    tls_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_crt, crt, key_path = tls_dir / "ca.crt", tls_dir / "server.crt", tls_dir / "server.key"
    if all(p.exists() for p in (ca_crt, tls_dir / "ca.key", crt, key_path)):
        return ca_crt, crt, key_path
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rlark-sandbox-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=3650))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rlark-sandbox")]))
              .issuer_name(ca_name).public_key(server_key.public_key())
              .serial_number(x509.random_serial_number())
              .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=3650))
              .add_extension(x509.SubjectAlternativeName([
                  x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
    write_private(tls_dir / "ca.key", _key_pem(ca_key))
    write_private(key_path, _key_pem(server_key))
    write_private(crt, server.public_bytes(serialization.Encoding.PEM))
    write_private(ca_crt, ca.public_bytes(serialization.Encoding.PEM))
    return ca_crt, crt, key_path


class _AlertBeforeClose(ssl.SSLObject):
    """A server-side TLS object whose failed handshake lets the peer read the TLS alert, as Go's server does.

    asyncio closes the connection at once on a handshake error and drops the alert OpenSSL wrote (the client
    then sees only "connection closed"); this answers "want more data" instead, so asyncio sends the alert and
    waits; the client reads it (`certificate required`, `certificate expired`) and hangs up."""

    _failure: ssl.SSLError | None = None

    def do_handshake(self) -> None:
        if self._failure is not None:
            raise ssl.SSLWantReadError()
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError as exc:
            self._failure = exc
            raise ssl.SSLWantReadError() from None


def server_context(tls_dir: Path, client_certificates: bool = False) -> ssl.SSLContext:
    """The listener's context; with `client_certificates`, mutual TLS: a client without a certificate signed
    by the sandbox CA fails in the handshake with a TLS alert (rlark-server's `RequireAndVerifyClientCert`)."""
    ca, crt, key = ensure_certificates(tls_dir)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(crt, key)
    if client_certificates:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_verify_locations(ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.set_alpn_protocols(["http/1.1"])
        ctx.sslobject_class = _AlertBeforeClose
    return ctx
