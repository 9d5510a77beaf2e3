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

Two more costs that grew with the work in flight are cut the same way, without changing what
moto answers (see `constant_time_lookups`): each request listed moto's package folder (a stat
per service) to find its backend, and each message a ReceiveMessage delivered computed every
attribute of its queue (counting all its messages, several times over) to read the retention
period, so a receive of ten on a queue of 2,000 messages took seconds.

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


def constant_time_lookups():
    """moto's per-request backend lookup and per-message retention check, without the rescans."""
    from moto import backends
    from moto.sqs.models import SQSBackend
    from moto.core.utils import unix_time

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules

    def is_message_valid_based_on_retention_period(self, queue_name, message):
        queue = self.get_queue(queue_name)
        return int(queue.message_retention_period) + message.sent_timestamp / 1000 > unix_time()

    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))
    item_backup_transactions()
    constant_time_lookups()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, Serialised(app), threaded=True)


if __name__ == "__main__":
    main()
