"""The sandbox's image registry: which digest a pull of an image reference resolves to, reported as the kubelet
reports `status.containerStatuses[].imageID` (`<repo>@sha256:<hex>`).

A digest reference resolves to itself; a tag reference to `sha256:` + the SHA-256 of the full reference text, so
tests can write build records that name the digest a tag will be pulled as.
"""

from __future__ import annotations

import hashlib
import re

_DIGEST = re.compile(r"@(sha256:[0-9a-f]{64})$")


def repository(image: str) -> str:
    """The reference without its tag or digest (`registry:5000/a/b:v1` -> `registry:5000/a/b`)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def digest_of(image: str) -> str:
    """The `sha256:<hex>` a pull of `image` resolves to."""
    match = _DIGEST.search(image)
    if match:
        return match.group(1)
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


def image_id(image: str) -> str:
    """What the kubelet reports as the container's imageID once `image` is pulled."""
    return f"{repository(image)}@{digest_of(image)}"
