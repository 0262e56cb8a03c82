"""Lists read back by digest (``storage/string_lists.py``): those this process wrote or
read come from memory, any other from the database, and both are the list written."""

from __future__ import annotations

from pathlib import Path

from ctxledger_collector.storage.database import make_engine
from ctxledger_collector.storage.migrate import upgrade
from ctxledger_collector.storage.statements import Statements
from ctxledger_collector.storage.string_lists import KNOWN_LISTS, ListWriter, read_lists


def test_a_list_reads_back_the_same_from_memory_and_from_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ctxledger.db'}"
    upgrade(url)
    engine = make_engine(url)
    sql = Statements("sqlite")
    values = [f"call_{i}" for i in range(300)] + ["结果", "é"]
    writer = ListWriter()
    digest = writer.ref(values)
    assert digest is not None
    with engine.begin() as connection:
        writer.store(connection, sql)
    with engine.connect() as connection:
        from_memory = read_lists(connection, sql, [digest])
        assert KNOWN_LISTS.get_many([digest]) == {digest: tuple(values)}
        KNOWN_LISTS.forget_all()
        assert KNOWN_LISTS.get_many([digest]) == {}
        from_database = read_lists(connection, sql, [digest])
    engine.dispose()
    assert from_memory == from_database == {digest: tuple(values)}
    assert KNOWN_LISTS.get_many([digest]) == {digest: tuple(values)}  # kept once read


def test_the_lists_kept_are_bounded_by_their_items() -> None:
    writer = ListWriter()
    KNOWN_LISTS.forget_all()
    kept = KNOWN_LISTS.max_items
    KNOWN_LISTS.max_items = 10
    try:
        first = writer.ref([f"a{i}" for i in range(6)])
        second = writer.ref([f"b{i}" for i in range(6)])
        assert first is not None and second is not None
        assert set(KNOWN_LISTS.get_many([first, second])) == {second}
        too_long = writer.ref([f"c{i}" for i in range(11)])
        assert too_long is not None and KNOWN_LISTS.get_many([too_long]) == {}
    finally:
        KNOWN_LISTS.max_items = kept
