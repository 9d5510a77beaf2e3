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

Three more costs that grew with the work in flight are cut the same way, without changing what
moto answers (see `constant_time_lookups`): each request listed moto's package folder (a stat
per service) to find its backend, and each message a ReceiveMessage delivered, or a
SendMessage(Batch) sent, computed every attribute of its queue (counting all its messages,
several times over) to read one setting, so a receive of ten on a queue of 2,000 messages took
seconds, and a send of ten on a queue of 500 three seconds (ingest's 5,000 items outlasted its
300 s).

DynamoDB limits a partition key value (an item's hash key) to 1,000 write and 3,000 read
request units per second, whatever the table's billing; moto limits nothing, so no test could
see a design that exceeds them. This wrapper enforces them (see `partition_limits`): a request
that would take more units than its partition key has left is answered as DynamoDB answers it
(ProvisionedThroughputExceededException, or a TransactionCanceledException with a
ThrottlingError) and changes nothing. It also refuses, before any of it is written, a
BatchWriteItem of more than 25 requests or with an item over 400 KB, which moto accepts (or
writes in part). The limits can be lowered per table at run time, and what was enforced read
back, on the same port (see `LimitsControl`):

    POST /_assay/limits         {"table": NAME, "writeUnitsPerSecond": W, "readUnitsPerSecond": R,
                                 "keyPrefix": P} (no "table": the default of every table without
                                its own; a "keyPrefix": the table's limits only for keys with it)
    GET  /_assay/limits?table=NAME
    GET  /_assay/limits/stats?table=NAME   (what was refused, the hottest keys, and what was
                                            served: requests and units by operation)

Usage: python3 scripts/moto_serial.py -H 127.0.0.1 -p PORT
"""
import argparse
import base64
import copy
import inspect
import json
import math
import os
import threading
import time
from collections import deque
from functools import wraps
from urllib.parse import parse_qs

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
    """moto's per-request backend lookup, per-message retention check and per-send queue counts, without the rescans."""
    from moto import backends
    from moto.sqs.models import Message, Queue, SQSBackend
    from moto.core.utils import unix_time

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules

    def is_message_valid_based_on_retention_period(self, queue_name, message):
        queue = self.get_queue(queue_name)
        return int(queue.message_retention_period) + message.sent_timestamp / 1000 > unix_time()

    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period

    # Each message sent reads its queue's attributes for one setting (content-based
    # deduplication), and moto computes them all, counting the queue's messages three times, each
    # message's visibility through a datetime: a send cost time in proportion to the queue's
    # length, so ingest's items went in quadratic time (5,000 items took more than the ingest
    # function's 300 s). While a message is sent nothing reads those counts: they are not made.
    sending = threading.local()
    for name in (
        "approximate_number_of_messages",
        "approximate_number_of_messages_delayed",
        "approximate_number_of_messages_not_visible",
    ):
        count = getattr(Queue, name).fget
        setattr(Queue, name, property(lambda self, count=count: 0 if getattr(sending, "depth", 0) else count(self)))
    send_message = SQSBackend.send_message

    @wraps(send_message)
    def send_without_counts(self, *args, **kwargs):
        sending.depth = getattr(sending, "depth", 0) + 1
        try:
            return send_message(self, *args, **kwargs)
        finally:
            sending.depth -= 1

    SQSBackend.send_message = send_without_counts

    # A receive and each count read every message's visibility, and moto reads the clock through
    # a datetime for each: the same clock, read as a number, costs a fraction of it.
    Message.visible = property(lambda self: time.time() * 1000 > self.visible_at)
    Message.delayed = property(lambda self: time.time() * 1000 < self.delayed_until)


# DynamoDB's partition limits (see the module's docstring). What DynamoDB allows per partition key
# value and per second, on any table; a partition's bucket holds one second's worth.
DEFAULT_UNITS_PER_SECOND = {"write": 1000.0, "read": 3000.0}
WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
MAX_ITEM_BYTES = 400 * 1024
MAX_BATCH_WRITE_REQUESTS = 25
MAX_BATCH_GET_KEYS = 100
MAX_TRANSACTION_ACTIONS = 100
HOT_KEYS_SHOWN = 10
# Float slack, so a bucket refilled to exactly what a request needs lets it through.
EPSILON = 1e-9
THROTTLED = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
    "scaling your table or index so please try again shortly. If exceptions persist, check if you "
    "have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
    "bp-partition-key-design.html"
)


def typed(value):
    """(type, value) of an attribute value: request JSON ({"S": "x"}) or moto's DynamoType."""
    if isinstance(value, dict):
        ((kind, inner),) = value.items()
        return kind, inner
    return value.type, value.value


def utf8_size(text):
    return len(text.encode("utf-8")) if isinstance(text, str) else len(text)


def number_size(text):
    """One byte per two significant digits, one more, and one for a minus sign."""
    text = str(text).strip()
    digits = text.lstrip("+-").lower().split("e")[0].replace(".", "").strip("0")
    return (len(digits) + 1) // 2 + 1 + (1 if text.startswith("-") else 0)


def binary_size(value):
    """Length of the raw bytes; moto keeps some binary values base64-encoded."""
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    padding = len(value) - len(value.rstrip("="))
    return len(value) * 3 // 4 - padding


def attribute_size(value):
    """Bytes DynamoDB counts for one attribute value (its name not included).

    DynamoDB's rule, where it publishes one, and an approximation where it keeps the exact
    arithmetic to itself: a string counts its UTF-8 length, binary its length, a number about one
    byte per two significant digits plus one, a boolean or null one byte, a set the sum of its
    members, a list or a map three bytes plus, per element, one byte and the element's size (and
    for a map the UTF-8 length of the element's name). Exact for strings and binary, which make
    up nearly all of this project's items; a number or a nested element may be off by a byte or
    two, a few percent at most of any item big enough to cost more than one unit.
    """
    kind, inner = typed(value)
    if kind == "S":
        return utf8_size(inner)
    if kind == "N":
        return number_size(inner)
    if kind == "B":
        return binary_size(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(utf8_size(member) for member in inner)
    if kind == "NS":
        return sum(number_size(member) for member in inner)
    if kind == "BS":
        return sum(binary_size(member) for member in inner)
    if kind == "L":
        return 3 + sum(1 + attribute_size(element) for element in inner)
    if kind == "M":
        return 3 + sum(
            1 + utf8_size(name) + attribute_size(element) for name, element in inner.items()
        )
    return utf8_size(str(inner))


def item_size(attrs):
    """An item's size as DynamoDB counts it: each attribute's name (UTF-8) and value."""
    return sum(utf8_size(name) + attribute_size(value) for name, value in attrs.items())


def stored_size(item):
    """A stored moto Item's size, 0 when there is none."""
    return 0 if item is None else item_size(item.attrs)


def write_units(size):
    """Write request units: one per KB, rounded up, at least one."""
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def read_units(size, consistent):
    """Read request units: one per 4 KB, rounded up, at least one; half when eventually consistent."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return units if consistent else units / 2


def key_text(value):
    """A partition key value as the stats show it (binary as base64)."""
    _, inner = typed(value)
    if isinstance(inner, (bytes, bytearray)):
        return base64.b64encode(inner).decode("ascii")
    return str(inner)


class Charge:
    """The bucket a request draws from: a partition key value's reads or writes on a table (or
    on one of its indexes), and the resource DynamoDB names when it refuses them."""

    __slots__ = ("table", "index", "key", "kind", "resource")

    def __init__(self, table, key, kind, index=None):
        self.table = table.name
        self.index = index
        self.key = key_text(key)
        self.kind = kind
        self.resource = f"{table.table_arn}/index/{index}" if index else table.table_arn

    def bucket(self):
        return (self.index, self.key, self.kind)

    def __eq__(self, other):
        return (self.table, self.bucket()) == (other.table, other.bucket())

    def __hash__(self):
        return hash((self.table, self.bucket()))


class Partition:
    """One token bucket (refilled continuously at the table's rate, holding one second's worth)
    and what was drawn from it: units consumed, their peak over any one-second window, requests
    refused."""

    __slots__ = ("tokens", "at", "consumed", "recent", "recent_units", "peak", "throttled")

    def __init__(self, capacity, now):
        self.tokens = capacity
        self.at = now
        self.consumed = 0.0
        self.recent = deque()
        self.recent_units = 0.0
        self.peak = 0.0
        self.throttled = 0

    def refill(self, rate, now):
        self.tokens = min(rate, self.tokens + (now - self.at) * rate)
        self.at = now

    def take(self, units, now):
        self.tokens -= units
        self.consumed += units
        self.recent.append((now, units))
        self.recent_units += units
        while self.recent[0][0] <= now - 1.0:
            self.recent_units -= self.recent.popleft()[1]
        self.peak = max(self.peak, self.recent_units)


class PartitionLimits:
    """The limits in force (DynamoDB's by default, lowered or raised per table at run time), the
    buckets of every partition key seen, and what was refused. Used under the wrapper's lock."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.defaults = dict(DEFAULT_UNITS_PER_SECOND)
        # table name -> {"write": units, "read": units}, only what was set for that table
        self.tables = {}
        # table name -> {(index, partition key, kind): Partition}
        self.partitions = {}
        # table name -> {operation: {kind: requests refused}}
        self.throttled = {}
        # table name -> {operation: {"requests": served, "read": units, "write": units}}
        self.served = {}

    def rate(self, table, kind, key=None):
        """The units a second a partition key of the table gets: the table's own limit, if it has
        one and the key starts with the table's key prefix (when it has one), else the default."""
        own = self.tables.get(table, {})
        prefix = own.get("keyPrefix")
        if prefix is not None and key is not None and not key.startswith(prefix):
            return self.defaults[kind]
        return own.get(kind, self.defaults[kind])

    def partition(self, charge, now):
        """The charge's bucket, refilled up to now (full when first seen)."""
        rate = self.rate(charge.table, charge.kind, charge.key)
        partitions = self.partitions.setdefault(charge.table, {})
        partition = partitions.get(charge.bucket())
        if partition is None:
            partition = partitions[charge.bucket()] = Partition(rate, now)
        else:
            partition.refill(rate, now)
        return partition

    def fits(self, charge, units, now, drawn=0):
        """Whether the charge's bucket holds `units` more than the `drawn` units already promised
        to earlier parts of the same batch. One draw bigger than a full bucket (a 400 KB item on
        a table whose limit was lowered to 10 units a second) passes when the bucket is full and
        leaves it in debt, which later requests wait out; else it could never pass."""
        tokens = self.partition(charge, now).tokens + EPSILON
        rate = self.rate(charge.table, charge.kind, charge.key)
        return tokens - drawn >= units or (not drawn and units > rate and tokens >= rate)

    def take(self, units_by_charge, now, operation):
        """Draws the units of a request served (its condition failed or not), and counts it once
        per table it touched, with its units by read/write."""
        for table in {charge.table for charge in units_by_charge}:
            entry = self.served.setdefault(table, {}).setdefault(
                operation, {"requests": 0, "read": 0.0, "write": 0.0}
            )
            entry["requests"] += 1
        for charge, units in units_by_charge.items():
            self.partition(charge, now).take(units, now)
            self.served[charge.table][operation][charge.kind] += units

    def refuse(self, operation, charges):
        """Counts the request as refused once per table and kind it was refused for, and each
        refused part (an item, a key, an action) on its partition key."""
        for table, kind in {(charge.table, charge.kind) for charge in charges}:
            counts = self.throttled.setdefault(table, {}).setdefault(operation, {})
            counts[kind] = counts.get(kind, 0) + 1
        now = self.clock()
        for charge in charges:
            self.partition(charge, now).throttled += 1

    def set(self, table, write=None, read=None, key_prefix=None):
        """Sets a table's limits, or with no table the default of every table without its own;
        a kind not given keeps its value. With `key_prefix` (a table's only), the table's limits
        hold only for partition keys that start with it (a test throttles one kind of item);
        an empty prefix holds them for every key again."""
        target = self.defaults if table is None else self.tables.setdefault(table, {})
        if write is not None:
            target["write"] = float(write)
        if read is not None:
            target["read"] = float(read)
        if table is not None and key_prefix is not None:
            if key_prefix:
                target["keyPrefix"] = key_prefix
            else:
                target.pop("keyPrefix", None)

    def view(self, table=None):
        """The limits in force for a table (the defaults with no table)."""
        view = {} if table is None else {"table": table}
        view["writeUnitsPerSecond"] = self.rate(table, "write")
        view["readUnitsPerSecond"] = self.rate(table, "read")
        prefix = self.tables.get(table, {}).get("keyPrefix")
        if prefix is not None:
            view["keyPrefix"] = prefix
        return view

    def stats(self, table, top=HOT_KEYS_SHOWN):
        """What was enforced on a table: the limits, the requests refused (by operation and by
        read/write) and its hottest partition keys by peak units per second."""
        by_operation = self.throttled.get(table, {})
        refused = {
            kind: sum(counts.get(kind, 0) for counts in by_operation.values())
            for kind in ("read", "write")
        }
        hot = sorted(
            self.partitions.get(table, {}).items(),
            key=lambda entry: (-entry[1].peak, -entry[1].throttled, -entry[1].consumed),
        )[:top]
        hot_keys = []
        for (index, key, kind), partition in hot:
            entry = {
                "partitionKey": key,
                "kind": kind,
                "peakUnitsPerSecond": partition.peak,
                "consumedUnits": partition.consumed,
                "throttledRequests": partition.throttled,
            }
            if index:
                entry["index"] = index
            hot_keys.append(entry)
        view = self.view(table)
        return {
            "table": table,
            "limits": {
                "writeUnitsPerSecond": view["writeUnitsPerSecond"],
                "readUnitsPerSecond": view["readUnitsPerSecond"],
            },
            "throttledRequests": {
                "total": refused["read"] + refused["write"],
                "read": refused["read"],
                "write": refused["write"],
                "byOperation": {operation: dict(counts) for operation, counts in by_operation.items()},
            },
            "hotKeys": hot_keys,
            "served": {operation: dict(entry) for operation, entry in self.served.get(table, {}).items()},
        }


def throughput_exceeded(charge):
    """DynamoDB's refusal of a request over its partition key's limit: HTTP 400
    ProvisionedThroughputExceededException naming why and which table (or index)."""
    from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, DynamodbException

    error_type = ERROR_TYPE_PREFIX + "ProvisionedThroughputExceededException"
    error = DynamodbException(error_type, THROTTLED)
    reason = (
        ("Index" if charge.index else "Table")
        + ("Write" if charge.kind == "write" else "Read")
        + "KeyRangeThroughputExceeded"
    )
    error.description = json.dumps(
        {
            "__type": error_type,
            "message": THROTTLED,
            "ThrottlingReasons": [{"reason": reason, "resource": charge.resource}],
        }
    )
    return error


class Refusal(Exception):
    """A request refused before it reaches moto, with DynamoDB's error (`error`)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def invalid(message):
    """A Refusal with DynamoDB's ValidationException."""
    from moto.dynamodb.exceptions import MockValidationException

    return Refusal(MockValidationException(message))


class MotoAnswers(Exception):
    """A request this wrapper leaves to moto unchecked: moto refuses it with its own error."""


class Single:
    """A request on one item (PutItem, UpdateItem, DeleteItem, GetItem): refused whole when its
    partition key lacks the units. A write whose condition fails still costs `failed_units`."""

    def __init__(self, operation, charge, units, failed_units=None):
        self.operation = operation
        self.charge = charge
        self.units = units
        self.failed_units = units if failed_units is None else failed_units

    def run(self, limits, perform):
        from moto.dynamodb.exceptions import ConditionalCheckFailed

        now = limits.clock()
        if not limits.fits(self.charge, self.units, now):
            limits.refuse(self.operation, [self.charge])
            raise throughput_exceeded(self.charge)
        try:
            result = perform()
        except ConditionalCheckFailed:
            limits.take({self.charge: self.failed_units}, now, self.operation)
            raise
        limits.take({self.charge: self.units}, now, self.operation)
        return result


def totals(actions, field):
    """Units per bucket: what a request's parts draw from each partition key together."""
    units = {}
    for action in actions:
        units[action["charge"]] = units.get(action["charge"], 0) + action[field]
    return units


class Transaction:
    """TransactWriteItems and TransactGetItems: when a partition key lacks the units for its
    actions, the transaction is cancelled (TransactionCanceledException) with a ThrottlingError
    at each of that key's actions and None at the others, and nothing is written. One cancelled
    by a failed condition costs each action's item as it stood (`failed_units`)."""

    def __init__(self, operation, actions):
        self.operation = operation
        # [{"charge": Charge, "units": .., "failed_units": ..}], in the request's order
        self.actions = actions

    def run(self, limits, perform):
        from moto.dynamodb.exceptions import TransactionCanceledException

        now = limits.clock()
        needed = totals(self.actions, "units")
        short = {charge for charge, units in needed.items() if not limits.fits(charge, units, now)}
        if short:
            limits.refuse(
                self.operation, [a["charge"] for a in self.actions if a["charge"] in short]
            )
            raise TransactionCanceledException(
                [
                    ("ThrottlingError", THROTTLED, None) if a["charge"] in short else (None, None, None)
                    for a in self.actions
                ]
            )
        try:
            result = perform()
        except TransactionCanceledException:
            limits.take(totals(self.actions, "failed_units"), now, self.operation)
            raise
        limits.take(needed, now, self.operation)
        return result


class Batch:
    """BatchWriteItem and BatchGetItem, as DynamoDB answers them: the requests whose partition key
    lacks the units (taken in the request's order) come back unprocessed, in UnprocessedItems or
    UnprocessedKeys, and the others are done; when none can be done, the whole call is refused
    with ProvisionedThroughputExceededException."""

    def __init__(self, operation, parts, regroup, unprocessed_field):
        self.operation = operation
        # [{"table": name, "request": the part as asked, "charge": Charge, "units": ..}]
        self.parts = parts
        # parts -> the RequestItems that asks for them (and only them)
        self.regroup = regroup
        self.unprocessed_field = unprocessed_field

    def run(self, limits, handler, perform):
        now = limits.clock()
        drawn = {}
        done, left = [], []
        for part in self.parts:
            already = drawn.get(part["charge"], 0)
            if limits.fits(part["charge"], part["units"], now, already):
                drawn[part["charge"]] = already + part["units"]
                done.append(part)
            else:
                left.append(part)
        if not left:
            result = perform()
            limits.take(drawn, now, self.operation)
            return result
        if not done:
            limits.refuse(self.operation, [part["charge"] for part in left])
            raise throughput_exceeded(left[0]["charge"])
        handler.body = dict(handler.body, RequestItems=self.regroup(done))
        result = perform()
        limits.take(drawn, now, self.operation)
        limits.refuse(self.operation, [part["charge"] for part in left])
        unprocessed = result.result.setdefault(self.unprocessed_field, {})
        for table, request in self.regroup(left).items():
            if isinstance(request, list):
                unprocessed[table] = unprocessed.get(table, []) + request
            elif table in unprocessed:
                unprocessed[table]["Keys"] = unprocessed[table]["Keys"] + request["Keys"]
            else:
                unprocessed[table] = request
        return result


def locate(backend, table_name, attrs):
    """(table, hash key value, the stored item or None) for an item or a key in a request."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    table = backend.get_table(table_name)
    hash_value = attrs[table.hash_key_attr]
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return table, hash_value, table.get_item(DynamoType(hash_value), range_value)


def size_after_update(table, stored, key, update):
    """The item's size once an UpdateItem (or a transaction's Update) applies: the update run on a
    copy, with moto's own parser and executor. `update` holds the request's UpdateExpression or
    AttributeUpdates, ExpressionAttributeNames and ExpressionAttributeValues."""
    from moto.dynamodb.models.dynamo_type import DynamoType, Item
    from moto.dynamodb.parsing.executors import UpdateExpressionExecutor
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser
    from moto.dynamodb.parsing.validators import UpdateExpressionValidator

    if stored is not None:
        item = copy.deepcopy(stored)
    else:
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        item = Item(DynamoType(key[table.hash_key_attr]), range_value, attrs=dict(key))
    names = update.get("ExpressionAttributeNames") or {}
    values = copy.deepcopy(update.get("ExpressionAttributeValues") or {})
    if update.get("UpdateExpression"):
        validated = UpdateExpressionValidator(
            UpdateExpressionParser.make(update["UpdateExpression"]),
            expression_attribute_names=names,
            expression_attribute_values=values,
            item=item,
            table=table,
        ).validate()
        validated.normalize()
        UpdateExpressionExecutor(validated, item, names).execute()
    elif update.get("AttributeUpdates"):
        item.update_with_attribute_updates(copy.deepcopy(update["AttributeUpdates"]))
    return stored_size(item)


def checked_item_size(attrs):
    """An item's size, refused as DynamoDB refuses an item over 400 KB."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge

    size = item_size(attrs)
    if size > MAX_ITEM_BYTES:
        raise Refusal(ItemSizeTooLarge())
    return size


def write_plan(backend, op_type, op, units_per_write=1):
    """(charge, units, units when its condition fails) of one write: a Put, an Update, a Delete
    or a ConditionCheck, as a request or one of a transaction's actions. A write costs the larger
    of the item before and after it; a failed condition, the item as it was (at least one unit).
    A transaction's ConditionCheck is counted as a write of the item it checks."""
    attrs = op["Item"] if op_type == "Put" else op["Key"]
    table, hash_value, stored = locate(backend, op["TableName"], attrs)
    before = stored_size(stored)
    if op_type == "Put":
        after = checked_item_size(op["Item"])
    elif op_type == "Update":
        try:
            after = size_after_update(table, stored, op["Key"], op)
        except Exception:
            # An update moto will refuse (its error answers it), or one this copy cannot run:
            # it is charged as the item stands.
            after = before
    else:
        after = before
    charge = Charge(table, hash_value, "write")
    units = write_units(max(before, after)) * units_per_write
    return charge, units, write_units(before) * units_per_write


def plan_put_item(handler):
    charge, units, failed = write_plan(handler.dynamodb_backend, "Put", handler.body)
    return Single("PutItem", charge, units, failed)


def plan_update_item(handler):
    charge, units, failed = write_plan(handler.dynamodb_backend, "Update", handler.body)
    return Single("UpdateItem", charge, units, failed)


def plan_delete_item(handler):
    charge, units, failed = write_plan(handler.dynamodb_backend, "Delete", handler.body)
    return Single("DeleteItem", charge, units, failed)


def plan_get_item(handler):
    body = handler.body
    table, hash_value, stored = locate(handler.dynamodb_backend, body["TableName"], body["Key"])
    units = read_units(stored_size(stored), bool(body.get("ConsistentRead")))
    return Single("GetItem", Charge(table, hash_value, "read"), units)


def plan_transact_write_items(handler):
    actions = handler.body["TransactItems"]
    if len(actions) > MAX_TRANSACTION_ACTIONS:
        raise MotoAnswers()
    planned = []
    for action in actions:
        ((op_type, op),) = action.items()
        charge, units, failed = write_plan(handler.dynamodb_backend, op_type, op, units_per_write=2)
        planned.append({"charge": charge, "units": units, "failed_units": failed})
    return Transaction("TransactWriteItems", planned)


def plan_transact_get_items(handler):
    planned = []
    for action in handler.body["TransactItems"]:
        op = action["Get"]
        table, hash_value, stored = locate(handler.dynamodb_backend, op["TableName"], op["Key"])
        units = 2 * read_units(stored_size(stored), True)
        planned.append({"charge": Charge(table, hash_value, "read"), "units": units, "failed_units": 0})
    return Transaction("TransactGetItems", planned)


def plan_batch_write_item(handler):
    request_items = handler.body["RequestItems"]
    if any(len(requests) > MAX_BATCH_WRITE_REQUESTS for requests in request_items.values()):
        raise invalid(
            "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: "
            "Map value must satisfy constraint: [Member must have length less than or equal to "
            f"{MAX_BATCH_WRITE_REQUESTS}, Member must have length greater than or equal to 1]"
        )
    if sum(len(requests) for requests in request_items.values()) > MAX_BATCH_WRITE_REQUESTS:
        raise invalid("Too many items requested for the BatchWriteItem call")
    parts = []
    for table_name, requests in request_items.items():
        for request in requests:
            ((request_type, op),) = request.items()
            op_type = {"PutRequest": "Put", "DeleteRequest": "Delete"}[request_type]
            charge, units, _ = write_plan(
                handler.dynamodb_backend, op_type, dict(op, TableName=table_name)
            )
            parts.append({"table": table_name, "request": request, "charge": charge, "units": units})

    def regroup(chosen):
        grouped = {}
        for part in chosen:
            grouped.setdefault(part["table"], []).append(part["request"])
        return grouped

    return Batch("BatchWriteItem", parts, regroup, "UnprocessedItems")


def plan_batch_get_item(handler):
    request_items = handler.body["RequestItems"]
    if sum(len(request["Keys"]) for request in request_items.values()) > MAX_BATCH_GET_KEYS:
        raise MotoAnswers()
    parts = []
    for table_name, request in request_items.items():
        consistent = bool(request.get("ConsistentRead"))
        for key in request["Keys"]:
            table, hash_value, stored = locate(handler.dynamodb_backend, table_name, key)
            units = read_units(stored_size(stored), consistent)
            parts.append(
                {"table": table_name, "request": key, "charge": Charge(table, hash_value, "read"), "units": units}
            )

    def regroup(chosen):
        grouped = {}
        for part in chosen:
            if part["table"] not in grouped:
                grouped[part["table"]] = dict(request_items[part["table"]], Keys=[])
            grouped[part["table"]]["Keys"].append(part["request"])
        return grouped

    return Batch("BatchGetItem", parts, regroup, "UnprocessedKeys")


class QueryRead:
    """What one Query read, told by moto's table: the table, index and partition key, and the
    size of the items it read before any filter or projection."""

    def __init__(self):
        self.table = None
        self.index = None
        self.hash_value = None
        self.bytes = 0


class CountedFilter:
    """Stands in for a Query's filter: moto's table applies it to every item the key condition
    read (after an index's own projection, before the request's), so it sees what DynamoDB bills."""

    def __init__(self, inner, read):
        self.inner = inner
        self.read = read

    def expr(self, item):
        self.read.bytes += stored_size(item)
        return True if self.inner is None else self.inner.expr(item)


def partition_limits(limits):
    """moto's DynamoDB with DynamoDB's per-partition-key limits, kept by `limits`.

    Each data-plane request is planned first from what it asks and what is stored (the units it
    takes from each partition key, in DynamoDB's units), checked against the buckets, and only
    then handed to moto; what it took is drawn once moto has done it. So a refused request
    changes nothing, and (behind the lock) no other request runs between the check and the
    write. A request that cannot be planned (a missing table, a malformed key) goes to moto
    unchecked, and moto refuses it with its own error. A Query is run first and checked after,
    since only the read tells what it read; reads change nothing, so a refused one leaves no
    trace either. Writes to a table's secondary indexes are not charged (the project's table has
    none), and Scan and PartiQL are not limited.
    """
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler

    planners = {
        "put_item": plan_put_item,
        "update_item": plan_update_item,
        "delete_item": plan_delete_item,
        "get_item": plan_get_item,
        "transact_write_items": plan_transact_write_items,
        "transact_get_items": plan_transact_get_items,
        "batch_write_item": plan_batch_write_item,
        "batch_get_item": plan_batch_get_item,
    }

    def guard(original, planner):
        @wraps(original)
        def guarded(handler):
            try:
                plan = planner(handler)
            except Refusal as refusal:
                raise refusal.error
            except Exception:
                return original(handler)
            if isinstance(plan, Batch):
                return plan.run(limits, handler, lambda: original(handler))
            return plan.run(limits, lambda: original(handler))

        return guarded

    for method, planner in planners.items():
        setattr(DynamoHandler, method, guard(getattr(DynamoHandler, method), planner))

    reading = threading.local()
    table_query = Table.query
    query_signature = inspect.signature(table_query)

    def counted_query(self, *args, **kwargs):
        read = getattr(reading, "read", None)
        if read is None:
            return table_query(self, *args, **kwargs)
        call = query_signature.bind(self, *args, **kwargs)
        read.table = self
        read.index = call.arguments.get("index_name")
        read.hash_value = call.arguments.get("hash_key")
        call.arguments["filter_expression"] = CountedFilter(
            call.arguments.get("filter_expression"), read
        )
        return table_query(*call.args, **call.kwargs)

    Table.query = counted_query
    handler_query = DynamoHandler.query

    @wraps(handler_query)
    def query(handler):
        read = reading.read = QueryRead()
        try:
            result = handler_query(handler)
        finally:
            reading.read = None
        if read.table is None or read.hash_value is None:
            return result
        charge = Charge(read.table, read.hash_value, "read", index=read.index)
        units = read_units(read.bytes, bool(handler.body.get("ConsistentRead")))
        now = limits.clock()
        if not limits.fits(charge, units, now):
            limits.refuse("Query", [charge])
            raise throughput_exceeded(charge)
        limits.take({charge: units}, now, "Query")
        return result

    DynamoHandler.query = query


class ControlError(Exception):
    """A control request this wrapper refuses: answered 400 with the reason."""


class LimitsControl:
    """The control endpoint, on moto's own port: requests under /_assay/ are answered here and
    never reach moto.

    GET  /_assay/limits[?table=NAME]  the limits in force for a table (the defaults with none):
                                      {"table", "writeUnitsPerSecond", "readUnitsPerSecond"}
    POST /_assay/limits               sets them: {"table"?, "writeUnitsPerSecond"?,
                                      "readUnitsPerSecond"?}; no table sets the default of every
                                      table without its own; a kind not given is kept. Answers
                                      the limits now in force, as GET does.
    GET  /_assay/limits/stats?table=NAME[&top=N]  what was enforced on the table: "limits",
                                      "throttledRequests" {"total", "read", "write",
                                      "byOperation": {operation: {"read"|"write": n}}} (a batch
                                      that left some of its parts unprocessed counts as one),
                                      "hotKeys": the N (default 10) partition keys with the
                                      highest peak units per second, each {"partitionKey",
                                      "kind", "peakUnitsPerSecond", "consumedUnits",
                                      "throttledRequests", "index" when on an index}
    """

    PREFIX = "/_assay/"

    def __init__(self, app, limits):
        self.app = app
        self.limits = limits

    def __call__(self, environ, start_response):
        if not environ.get("PATH_INFO", "").startswith(self.PREFIX):
            return self.app(environ, start_response)
        try:
            status, body = self.answer(environ)
        except ControlError as error:
            status, body = "400 Bad Request", {"message": str(error)}
        payload = json.dumps(body).encode("utf-8")
        start_response(
            status, [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
        )
        return [payload]

    def answer(self, environ):
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        table = query.get("table", [None])[0]
        if path == "/_assay/limits" and method == "GET":
            return "200 OK", self.limits.view(table)
        if path == "/_assay/limits" and method == "POST":
            request = self.json_body(environ)
            table = request.get("table")
            if table is not None and (not isinstance(table, str) or not table):
                raise ControlError("table must be a table's name")
            units = {
                field: self.units(request, field)
                for field in ("writeUnitsPerSecond", "readUnitsPerSecond")
            }
            prefix = request.get("keyPrefix")
            if prefix is not None and (table is None or not isinstance(prefix, str)):
                raise ControlError("keyPrefix is a string, and needs a table")
            self.limits.set(table, units["writeUnitsPerSecond"], units["readUnitsPerSecond"], prefix)
            return "200 OK", self.limits.view(table)
        if path == "/_assay/limits/stats" and method == "GET":
            if not table:
                raise ControlError("stats need ?table=NAME")
            top = query.get("top", [str(HOT_KEYS_SHOWN)])[0]
            if not top.isdigit():
                raise ControlError("top must be a whole number")
            return "200 OK", self.limits.stats(table, int(top))
        return "404 Not Found", {"message": f"no control {method} {path}"}

    @staticmethod
    def json_body(environ):
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            request = json.loads(environ["wsgi.input"].read(length) or b"{}")
        except ValueError as error:
            raise ControlError(f"the body is not JSON: {error}")
        if not isinstance(request, dict):
            raise ControlError("the body must be a JSON object")
        unknown = set(request) - {"table", "writeUnitsPerSecond", "readUnitsPerSecond", "keyPrefix"}
        if unknown:
            raise ControlError(f"unknown fields: {', '.join(sorted(unknown))}")
        return request

    @staticmethod
    def units(request, field):
        value = request.get(field)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ControlError(f"{field} must be a positive number")
        if not math.isfinite(value):
            raise ControlError(f"{field} must be finite")
        return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))
    item_backup_transactions()
    constant_time_lookups()
    limits = PartitionLimits()
    partition_limits(limits)
    app = LimitsControl(DomainDispatcherApplication(create_backend_app), limits)
    run_simple(args.host, args.port, Serialised(app), threaded=True)


if __name__ == "__main__":
    main()
