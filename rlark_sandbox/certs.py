"""Client certificates of the sandbox's rlark-server: issuing them with the sandbox CA, reading their
permission metadata (X.509 extension OID 1.3.6.1.4.1.99999.32, a JSON object of strings) and revocation.

Follows the platform's auth/cert/x509.go (the extension's value is the raw JSON bytes, not critical) and
server/sign.go (admin metadata; a certificate is revoked by serial number and subject key id).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rlark_sandbox.tls import ensure_certificates

META_OID = x509.ObjectIdentifier("1.3.6.1.4.1.99999.32")
ADMIN_METADATA = {"cert-role": "admin", "permission:admin": "true", "kubernetes-impersonation": "-"}


def _ca(tls_dir: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca_path, _, _ = ensure_certificates(tls_dir)
    ca = x509.load_pem_x509_certificate(ca_path.read_bytes())
    key = serialization.load_pem_private_key((tls_dir / "ca.key").read_bytes(), None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{tls_dir / 'ca.key'} is not the EC key tls.py makes for the sandbox CA")
    return ca, key


def issue(tls_dir: Path, metadata: dict[str, str], *, days: float = 365,
          not_before: dt.datetime | None = None) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) of a client certificate signed by the sandbox CA, carrying
    `metadata` in the permission extension, valid from `not_before` (default: 5 minutes ago) for `days`."""
    ca, ca_key = _ca(tls_dir)
    start = not_before or dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    key = ec.generate_private_key(ec.SECP256R1())
    role = metadata.get("cert-role", "client")
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"rlark-{role}"),
                                     x509.NameAttribute(NameOID.ORGANIZATION_NAME, "RLinf")]))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .add_extension(x509.UnrecognizedExtension(META_OID, json.dumps(metadata).encode()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def metadata(cert: x509.Certificate) -> dict[str, str]:
    """The permission metadata of a certificate; {} when it has none or it is not a JSON object."""
    try:
        extension = cert.extensions.get_extension_for_oid(META_OID).value
        if not isinstance(extension, x509.UnrecognizedExtension):
            return {}
        meta = json.loads(extension.value)
    except (x509.ExtensionNotFound, ValueError):
        return {}
    return {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}


def identity(cert: x509.Certificate) -> tuple[str, str]:
    """(serial number in decimal, subject key id in hex): what the platform revokes by."""
    try:
        ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest.hex()
    except x509.ExtensionNotFound:
        ski = ""
    return str(cert.serial_number), ski


class Revocations:
    """Revoked (serial, subject key id) pairs; thread-safe; in memory, as the platform's cache is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._revoked: set[tuple[str, str]] = set()

    def revoke(self, cert_pem: bytes) -> None:
        self.revoke_identity(*identity(x509.load_pem_x509_certificate(cert_pem)))

    def revoke_identity(self, serial: str, subject_key_id: str) -> None:
        with self._lock:
            self._revoked.add((serial, subject_key_id))

    def revoked(self, cert: x509.Certificate) -> bool:
        with self._lock:
            return identity(cert) in self._revoked
