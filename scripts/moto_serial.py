"""moto_server that handles one request at a time.

moto's backends are not safe under concurrent requests: seen in our pipeline tests under CPU
load, two concurrent TransactWriteItems with `attribute_not_exists` on the same key both
succeeded (an item counted twice), and concurrent ReceiveMessage calls on one queue handed a
message to two receivers and lost another. Real AWS serialises these; so does this wrapper,
by taking a lock around each request. Connections are still accepted concurrently.

moto's TransactWriteItems backs up every table it names with a deep copy before it writes, to
put them back if the transaction is cancelled: on a single-table design that is the whole
table, twice per call, so each transaction costs time in proportion to everything stored (a
2,000-item run spent most of its time copying). Behind the lock nothing else changes the
table meanwhile, so backing up only the items the transaction names is the same rollback:
see `item_backup_transactions`.

Usage: python3 scripts/moto_serial.py -H 127.0.0.1 -p PORT
"""
import argparse
import copy
import os
import threading

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


class Serialised:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            # Build the whole response under the lock: moto may compute it lazily.
            return list(self.app(environ, start_response))


def item_backup_transactions():
    """TransactWriteItems that backs up the items it names, not their tables (see above)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    whole_table_backup = DynamoDBBackend.transact_write_items

    def named_items(backend, transact_items):
        """(table, hash key, range key, a copy of the item or None) per operation; None if unreadable."""
        saved = []
        for entry in transact_items:
            try:
                _, op = next(iter(entry.items()))
                table = backend.tables.get(op.get("TableName"))
                if table is None:
                    continue
                attrs = op["Item"] if "Item" in op else op["Key"]
                hash_value = DynamoType(attrs[table.hash_key_attr])
                range_value = (
                    DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
                )
                current = table.get_item(hash_value, range_value)
            except Exception:
                # A malformed request: moto's own checks answer it, with its own backup.
                return None
            # Updates change the stored item in place: keep a copy.
            saved.append((table, hash_value, range_value, copy.deepcopy(current)))
        return saved

    def restore(saved):
        # Last first: an item named twice ends as it was before the first.
        for table, hash_value, range_value, item in reversed(saved):
            if item is None:
                table.delete_item(hash_value, range_value)
            elif range_value is not None:
                table.items[hash_value][range_value] = item
            else:
                table.items[hash_value] = item

    def transact_write_items(self, transact_items):
        saved = named_items(self, transact_items)
        if saved is None:
            return whole_table_backup(self, transact_items)
        # moto's whole-table "backup" becomes the table itself, and its rollback a no-op.
        Table.__deepcopy__ = lambda table, memo: table
        try:
            return whole_table_backup(self, transact_items)
        except BaseException:
            restore(saved)
            raise
        finally:
            del Table.__deepcopy__

    DynamoDBBackend.transact_write_items = transact_write_items


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))
    item_backup_transactions()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, Serialised(app), threaded=True)


if __name__ == "__main__":
    main()
