"""Pure parts of `rlark storage`: CLASS:KEY arguments, listing pages (sanitised), and keys that must never become
paths outside the chosen directory."""

from __future__ import annotations

import pytest

from rlark_tui.errors import UsageError
from rlark_tui.model import storage as st


def test_remote_and_location_arguments():
    assert st.parse_remote("s3-rclone:run/a.pt") == st.Remote("s3-rclone", "run/a.pt")
    assert st.parse_location("s3-rclone") == st.Remote("s3-rclone", "")
    assert st.parse_location("s3-rclone/run/ckpt") == st.Remote("s3-rclone", "run/ckpt/")
    assert st.parse_location("s3-rclone:run/") == st.Remote("s3-rclone", "run/")
    assert st.is_remote("s3-rclone:x") and not st.is_remote("./a:b") and not st.is_remote("/tmp/x:y")
    for bad in ("S3:x", "s3-rclone:", "s3-rclone:a\x1b[2Jb"):
        with pytest.raises(UsageError):
            st.parse_remote(bad)


def test_page_rows_are_sanitised_and_relative():
    page = st.parse_page({"objects": [{"key": "run/a\x1b]52;c;eA==\x07.pt", "size": 3, "etag": '"' + "a" * 32 + '"',
                                       "last_modified": "2026-12-01T10:00:00Z"},
                                      {"key": "run/", "size": 0}, {"key": 7}],
                          "common_prefixes": ["run/ckpt/"], "is_truncated": True, "next_marker": "tok"}, "run/")
    assert [(e.name, e.folder) for e in page.entries] == [("ckpt/", True), ("a.pt", False)]
    assert page.entries[1].md5 == "a" * 32 and (page.truncated, page.next_marker) == (True, "tok")
    assert st.human_size(3 << 20) == "3.0 MiB" and st.human_size(None) == "-"


@pytest.mark.parametrize("key", ["run/../../x", "run/../x", "run//x", "run/./x", "run/", "run/a\\..\\x",
                                 "run/a\x00", "run/..", "other/x"])
def test_keys_never_leave_the_chosen_directory(tmp_path, key):
    with pytest.raises(UsageError):
        st.local_target(tmp_path / "dest", key, "run/")


def test_key_below_folder_and_symlink_escape(tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    assert st.local_target(dest, "run/ckpt/a.pt", "run/") == dest / "ckpt" / "a.pt"
    (dest / "link").symlink_to(tmp_path)
    with pytest.raises(UsageError):
        st.local_target(dest, "run/link/x", "run/")
    assert st.download_target(str(dest), "run/../../etc/passwd") == dest / "passwd"
    assert st.download_target(str(dest / "named.bin"), "run/a") == dest / "named.bin"
    assert st.download_target(str(dest / "new") + "/", "run/a") == dest / "new" / "a"
    with pytest.raises(UsageError):
        st.download_target(str(dest), "run/..")


def test_a_listing_that_always_says_truncated_stops_at_the_page_bound():
    from rlark_tui.model.storage import ListingBound, Page, pages

    asked: list[str] = []

    def endless(marker: str) -> Page:
        asked.append(marker)
        return Page((), True, f"m{len(asked)}")

    with pytest.raises(ListingBound, match=r"^storage ls s3/run/: stopped after 5 pages"):
        list(pages(endless, "storage ls s3/run/", max_pages=5))
    assert asked == ["", "m1", "m2", "m3", "m4"]
    repeating = list(pages(lambda marker: Page((), True, "same"), "ls"))
    assert len(repeating) == 2
    assert len(list(pages(lambda marker: Page((), False, "x"), "ls"))) == 1
