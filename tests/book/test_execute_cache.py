"""A build never shows outputs of code that is gone: the execution cache knows a chapter by its
cells only, so a change to the library or to the book's modules drops every cached execution
(book/_ext/attnmath_execute.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_execute import code_digest, drop_stale_executions  # noqa: E402


class _Cache:
    def __init__(self, n):
        self.records = {pk: SimpleNamespace(pk=pk) for pk in range(n)}

    def list_cache_records(self):
        return list(self.records.values())

    def remove_cache(self, pk):
        del self.records[pk]


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "lib" / "attnmath" / "sub").mkdir(parents=True)
    (tmp_path / "lib" / "attnmath" / "flash.py").write_text("X = 1\n")
    (tmp_path / "lib" / "attnmath" / "sub" / "deep.py").write_text("Y = 1\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "figstyle.py").write_text("Z = 1\n")
    (tmp_path / "book" / "01_softmax.md").write_text("# one\n")
    return tmp_path


def test_the_digest_follows_the_library_and_the_books_modules_only(tmp_path):
    root = _tree(tmp_path)
    first = code_digest(root)
    assert code_digest(root) == first
    (root / "book" / "01_softmax.md").write_text("# one, edited\n")  # a chapter: its cells are the cache's key
    assert code_digest(root) == first
    for path in ("lib/attnmath/flash.py", "lib/attnmath/sub/deep.py", "book/figstyle.py"):
        before = code_digest(root)
        (root / path).write_text((root / path).read_text() + "# edited\n")
        assert code_digest(root) != before, path
    before = code_digest(root)
    (root / "lib" / "attnmath" / "new.py").write_text("")
    assert code_digest(root) != before


def test_a_changed_digest_drops_every_cached_execution(tmp_path):
    record = tmp_path / "cache.code-digest"
    cache = _Cache(3)
    assert not drop_stale_executions(cache, record, "a")  # first build: nothing to drop
    assert len(cache.records) == 3 and record.read_text().strip() == "a"
    assert not drop_stale_executions(cache, record, "a")
    assert len(cache.records) == 3
    assert drop_stale_executions(cache, record, "b")
    assert cache.records == {} and record.read_text().strip() == "b"
