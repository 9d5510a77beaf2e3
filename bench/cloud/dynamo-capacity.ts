/**
 * The capacity DynamoDB counts, per request and per partition key, on a simulated clock: the
 * request units an on-demand table bills, the load on each partition key over the last second
 * (a sliding window of ten 100 ms slots), the per-partition limits DynamoDB enforces (1,000
 * write and 3,000 read units per second by default) and what was refused for exceeding them.
 *
 * The whole table has limits too. An on-demand table serves at first its warm throughput (a
 * new table's: 4,000 write and 12,000 read units per second, unless more was declared) and
 * then up to twice the peak it took half an hour earlier; never more than the table's quota
 * (40,000 units per second each way by default). Besides what it took, each key and the table
 * keep the load they were offered (taken plus refused): a limit that refuses requests caps what
 * is taken, never what is asked.
 */

export type CapacityKind = 'read' | 'write';

/** One item's worth of capacity a request asks of a partition. */
export interface Demand {
  table: string;
  /** The partition key's value (its string form). */
  pk: string;
  kind: CapacityKind;
  units: number;
}

export interface PartitionLimits {
  /** Write request units per second one partition key may take. Default 1,000. */
  writeUnitsPerSecond?: number;
  /** Read request units per second one partition key may take. Default 3,000. */
  readUnitsPerSecond?: number;
}

/** An on-demand table's throughput, request units per second. */
export interface TableLimits {
  /** What the table serves from the start (its warm throughput). Default 4,000 (a new table's). */
  warmWriteUnitsPerSecond?: number;
  /** Default 12,000 (a new table's). */
  warmReadUnitsPerSecond?: number;
  /** The most the table may take, whatever its peaks (the account's per-table quota). Default 40,000. */
  writeQuotaPerSecond?: number;
  readQuotaPerSecond?: number;
}

/** How long a table's peak takes to become the base of its next doubling (DynamoDB's 30 minutes). */
export const TABLE_SCALING_MS = 30 * 60_000;

/** On-demand prices, USD per million request units. Defaults: us-east-1 (since November 2024). */
export interface RequestUnitPrices {
  writePerMillion?: number;
  readPerMillion?: number;
}

const SLOT_MS = 100;
const SLOTS = 10;

/** Units taken in the last second, by 100 ms slot. */
class Window {
  private slot = Number.NEGATIVE_INFINITY;
  private readonly units = new Float64Array(SLOTS);
  peak = 0;
  peakAt = 0;
  total = 0;

  /** Units in the second ending with `slot` (older slots are forgotten on the way). */
  load(slot: number): number {
    this.advance(slot);
    let sum = 0;
    for (let i = 0; i < SLOTS; i++) sum += this.units[i]!;
    return sum;
  }

  add(slot: number, units: number, at: number): number {
    this.advance(slot);
    this.units[slot % SLOTS] = this.units[slot % SLOTS]! + units;
    this.total += units;
    const load = this.load(slot);
    if (load > this.peak) {
      this.peak = load;
      this.peakAt = at;
    }
    return load;
  }

  private advance(slot: number): void {
    if (slot <= this.slot) return;
    const steps = Math.min(SLOTS, slot - this.slot);
    for (let i = 1; i <= steps; i++) this.units[(slot - steps + i) % SLOTS] = 0;
    this.slot = slot;
  }
}

interface PartitionLoad {
  table: string;
  pk: string;
  /** Made on the partition's first read or write: most keys only ever see one kind. */
  read?: Window;
  write?: Window;
  /** What was asked of it, taken or refused. */
  offeredRead?: Window;
  offeredWrite?: Window;
  /** Requests refused for this key (or for its table, while the request was on it). */
  refused: number;
}

/** One table's load: taken, offered, and the peaks its on-demand capacity follows. */
interface TableLoad {
  read: Window;
  write: Window;
  offeredRead: Window;
  offeredWrite: Window;
  /** Each rise of the taken peak: its time and value, for the capacity half an hour on. */
  readPeaks: { at: number; peak: number }[];
  writePeaks: { at: number; peak: number }[];
  refused: number;
}

export interface HotPartition {
  table: string;
  pk: string;
  /** The most units it took in any one-second window. */
  peakUnitsPerSecond: number;
  /** Simulated ms (since the meter started) when that peak was reached. */
  atMs: number;
  /** Units it took in all. */
  totalUnits: number;
}

/** One partition key's load, as {@link CapacityMeter.loads} reports it. */
export interface PartitionLoadReport {
  table: string;
  pk: string;
  read?: { peakUnitsPerSecond: number; totalUnits: number };
  write?: { peakUnitsPerSecond: number; totalUnits: number };
  /** The most asked of it in any one second, taken or refused. */
  offered: { peakReadUnitsPerSecond: number; peakWriteUnitsPerSecond: number };
  /** Requests refused while on this key. */
  refused: number;
}

/** One table's load over the run: its peaks taken and offered, its limits, what it refused. */
export interface TableLoadReport {
  peakWriteUnitsPerSecond: number;
  peakReadUnitsPerSecond: number;
  peakOfferedWriteUnitsPerSecond: number;
  peakOfferedReadUnitsPerSecond: number;
  refused: number;
  limits: Required<TableLimits>;
}

export interface SecondOfLoad {
  /** Seconds since the meter started. */
  second: number;
  writeUnits: number;
  readUnits: number;
  requests: number;
  throttled: number;
}

export interface OperationLoad {
  requests: number;
  writeUnits: number;
  readUnits: number;
  throttled: number;
}

/** What a run of requests cost and where it ran hot; see {@link CapacityMeter.report}. */
export interface CapacityReport {
  /** Write request units consumed (what an on-demand table bills). */
  writeRequestUnits: number;
  /** Read request units consumed (eventually consistent reads count half). */
  readRequestUnits: number;
  /** Units as billed: each total rounded up to a whole unit, and their price. */
  billed: { writeRequestUnits: number; readRequestUnits: number; usd: number };
  requests: number;
  /** Requests refused for exceeding a partition's limit (each attempt the SDK makes counts). */
  throttledRequests: number;
  byOperation: Record<string, OperationLoad>;
  byTable: Record<string, { writeUnits: number; readUnits: number }>;
  hottest: { write?: HotPartition; read?: HotPartition };
  /** The partition keys with the highest peaks, hottest first. */
  hotPartitions: { write: HotPartition[]; read: HotPartition[] };
  perSecond: SecondOfLoad[];
  limits: Required<PartitionLimits>;
  tableLoads: Record<string, TableLoadReport>;
}

export class CapacityMeter {
  private readonly partitions = new Map<string, PartitionLoad>();
  private readonly operations = new Map<string, OperationLoad>();
  private readonly tables = new Map<string, { writeUnits: number; readUnits: number }>();
  private readonly seconds: SecondOfLoad[] = [];
  private readonly limits: Required<PartitionLimits>;
  private readonly tableLimits: Required<TableLimits>;
  private readonly tableLoads = new Map<string, TableLoad>();
  private readonly prices: Required<RequestUnitPrices>;
  private readonly start: number;
  private writeUnits = 0;
  private readUnits = 0;
  private requests = 0;
  private throttled = 0;

  constructor(
    private readonly now: () => number,
    limits: PartitionLimits = {},
    prices: RequestUnitPrices = {},
    tableLimits: TableLimits = {},
  ) {
    this.start = now();
    this.limits = {
      writeUnitsPerSecond: limits.writeUnitsPerSecond ?? 1000,
      readUnitsPerSecond: limits.readUnitsPerSecond ?? 3000,
    };
    this.tableLimits = {
      warmWriteUnitsPerSecond: tableLimits.warmWriteUnitsPerSecond ?? 4000,
      warmReadUnitsPerSecond: tableLimits.warmReadUnitsPerSecond ?? 12000,
      writeQuotaPerSecond: tableLimits.writeQuotaPerSecond ?? 40000,
      readQuotaPerSecond: tableLimits.readQuotaPerSecond ?? 40000,
    };
    this.prices = {
      writePerMillion: prices.writePerMillion ?? 0.625,
      readPerMillion: prices.readPerMillion ?? 0.125,
    };
  }

  /** Counts a request (whatever became of it). */
  request(operation: string): void {
    this.requests += 1;
    this.operation(operation).requests += 1;
    this.second().requests += 1;
  }

  /**
   * The demands (by index) that would take their partition past its limit, taking the demands
   * of the same request on the same partition together. Nothing is recorded.
   */
  over(demands: readonly Demand[]): Set<number> {
    const slot = this.slot();
    const asked = new Map<string, number>();
    for (const d of demands) {
      const id = partitionId(d.table, d.pk, d.kind);
      asked.set(id, (asked.get(id) ?? 0) + d.units);
    }
    const refused = new Set<string>();
    const byTable = new Map<string, number>();
    for (const [id, units] of asked) {
      const [table, pk, kind] = splitId(id);
      const load = this.partitions.get(`${table}\u0000${pk}`);
      const taken = load?.[kind]?.load(slot) ?? 0;
      const limit = kind === 'write' ? this.limits.writeUnitsPerSecond : this.limits.readUnitsPerSecond;
      if (taken + units > limit) refused.add(id);
      byTable.set(`${table}\u0000${kind}`, (byTable.get(`${table}\u0000${kind}`) ?? 0) + units);
    }
    // The table as a whole: past its capacity now, every demand of that kind on it is refused.
    const tableOver = new Set<string>();
    for (const [id, units] of byTable) {
      const [table, kind] = id.split('\u0000') as [string, CapacityKind];
      const load = this.tableLoads.get(table);
      const taken = load?.[kind].load(slot) ?? 0;
      if (taken + units > this.tableCapacity(table, kind)) tableOver.add(id);
    }
    const out = new Set<number>();
    demands.forEach((d, i) => {
      if (refused.has(partitionId(d.table, d.pk, d.kind)) || tableOver.has(`${d.table}\u0000${d.kind}`))
        out.add(i);
    });
    return out;
  }

  /**
   * What the table serves of `kind` now, request units per second: its warm throughput, or
   * twice the peak it had taken half an hour ago when that is more; at most its quota.
   */
  tableCapacity(table: string, kind: CapacityKind): number {
    const warm =
      kind === 'write' ? this.tableLimits.warmWriteUnitsPerSecond : this.tableLimits.warmReadUnitsPerSecond;
    const quota =
      kind === 'write' ? this.tableLimits.writeQuotaPerSecond : this.tableLimits.readQuotaPerSecond;
    const peaks = this.tableLoads.get(table)?.[kind === 'write' ? 'writePeaks' : 'readPeaks'] ?? [];
    const before = this.now() - this.start - TABLE_SCALING_MS;
    let earlier = 0;
    for (const p of peaks) {
      if (p.at > before) break;
      earlier = p.peak;
    }
    return Math.min(quota, Math.max(warm, 2 * earlier));
  }

  /**
   * Records demands refused (by a key's limit or the table's): they count in what was offered
   * to their keys and table, and once per key and table as a refused request.
   */
  decline(demands: readonly Demand[]): void {
    const slot = this.slot();
    const at = this.now() - this.start;
    const keys = new Set<PartitionLoad>();
    const tables = new Set<TableLoad>();
    for (const d of demands) {
      const load = this.partitionLoad(d.table, d.pk);
      offeredWindow(load, d.kind).add(slot, d.units, at);
      keys.add(load);
      const table = this.tableLoad(d.table);
      (d.kind === 'write' ? table.offeredWrite : table.offeredRead).add(slot, d.units, at);
      tables.add(table);
    }
    for (const load of keys) load.refused += 1;
    for (const table of tables) table.refused += 1;
  }

  /** Records units taken (by a request that went ahead, or a conditional write that failed). */
  charge(operation: string, demands: readonly Demand[]): void {
    const slot = this.slot();
    const at = this.now() - this.start;
    const op = this.operation(operation);
    const second = this.second();
    for (const d of demands) {
      const load = this.partitionLoad(d.table, d.pk);
      load[d.kind] ??= new Window();
      load[d.kind]!.add(slot, d.units, at);
      offeredWindow(load, d.kind).add(slot, d.units, at);
      const tableLoad = this.tableLoad(d.table);
      const taken = d.kind === 'write' ? tableLoad.write : tableLoad.read;
      const before = taken.peak;
      taken.add(slot, d.units, at);
      (d.kind === 'write' ? tableLoad.offeredWrite : tableLoad.offeredRead).add(slot, d.units, at);
      if (taken.peak > before)
        (d.kind === 'write' ? tableLoad.writePeaks : tableLoad.readPeaks).push({ at, peak: taken.peak });
      const table = this.tables.get(d.table) ?? { writeUnits: 0, readUnits: 0 };
      this.tables.set(d.table, table);
      if (d.kind === 'write') {
        this.writeUnits += d.units;
        op.writeUnits += d.units;
        table.writeUnits += d.units;
        second.writeUnits += d.units;
      } else {
        this.readUnits += d.units;
        op.readUnits += d.units;
        table.readUnits += d.units;
        second.readUnits += d.units;
      }
    }
  }

  /** Counts a request refused for exceeding a partition's limit. */
  refuse(operation: string): void {
    this.throttled += 1;
    this.operation(operation).throttled += 1;
    this.second().throttled += 1;
  }

  /** Every partition key's load so far: its peak units in any one second and its total, by kind. */
  loads(): PartitionLoadReport[] {
    return [...this.partitions.values()].map((p) => ({
      table: p.table,
      pk: p.pk,
      ...(p.read
        ? { read: { peakUnitsPerSecond: round(p.read.peak), totalUnits: round(p.read.total) } }
        : {}),
      ...(p.write
        ? { write: { peakUnitsPerSecond: round(p.write.peak), totalUnits: round(p.write.total) } }
        : {}),
      offered: {
        peakReadUnitsPerSecond: round(p.offeredRead?.peak ?? 0),
        peakWriteUnitsPerSecond: round(p.offeredWrite?.peak ?? 0),
      },
      refused: p.refused,
    }));
  }

  /** Each table's load so far: taken and offered peaks, its limits and the requests it refused. */
  tableReport(): Record<string, TableLoadReport> {
    return Object.fromEntries(
      [...this.tableLoads].map(([name, t]) => [
        name,
        {
          peakWriteUnitsPerSecond: round(t.write.peak),
          peakReadUnitsPerSecond: round(t.read.peak),
          peakOfferedWriteUnitsPerSecond: round(t.offeredWrite.peak),
          peakOfferedReadUnitsPerSecond: round(t.offeredRead.peak),
          refused: t.refused,
          limits: { ...this.tableLimits },
        },
      ]),
    );
  }

  private partitionLoad(table: string, pk: string): PartitionLoad {
    const key = `${table}\u0000${pk}`;
    let load = this.partitions.get(key);
    if (!load) {
      load = { table, pk, refused: 0 };
      this.partitions.set(key, load);
    }
    return load;
  }

  private tableLoad(table: string): TableLoad {
    let load = this.tableLoads.get(table);
    if (!load) {
      load = {
        read: new Window(),
        write: new Window(),
        offeredRead: new Window(),
        offeredWrite: new Window(),
        readPeaks: [],
        writePeaks: [],
        refused: 0,
      };
      this.tableLoads.set(table, load);
    }
    return load;
  }

  report(topN = 5): CapacityReport {
    const hot = (kind: CapacityKind): HotPartition[] =>
      [...this.partitions.values()]
        .filter((p) => (p[kind]?.peak ?? 0) > 0)
        .sort((a, b) => b[kind]!.peak - a[kind]!.peak)
        .slice(0, topN)
        .map((p) => ({
          table: p.table,
          pk: p.pk,
          peakUnitsPerSecond: round(p[kind]!.peak),
          atMs: p[kind]!.peakAt,
          totalUnits: round(p[kind]!.total),
        }));
    const write = hot('write');
    const read = hot('read');
    const billedWrite = Math.ceil(this.writeUnits - 1e-9);
    const billedRead = Math.ceil(this.readUnits - 1e-9);
    return {
      writeRequestUnits: round(this.writeUnits),
      readRequestUnits: round(this.readUnits),
      billed: {
        writeRequestUnits: billedWrite,
        readRequestUnits: billedRead,
        usd: (billedWrite * this.prices.writePerMillion + billedRead * this.prices.readPerMillion) / 1e6,
      },
      requests: this.requests,
      throttledRequests: this.throttled,
      // Copies: a report is a snapshot, not a view of the counts as they go on.
      byOperation: Object.fromEntries([...this.operations].map(([name, load]) => [name, { ...load }])),
      byTable: Object.fromEntries([...this.tables].map(([name, units]) => [name, { ...units }])),
      hottest: { ...(write[0] ? { write: write[0] } : {}), ...(read[0] ? { read: read[0] } : {}) },
      hotPartitions: { write, read },
      perSecond: this.seconds.filter(Boolean).map((second) => ({ ...second })),
      limits: this.limits,
      tableLoads: this.tableReport(),
    };
  }

  private slot(): number {
    return Math.floor((this.now() - this.start) / SLOT_MS);
  }

  private second(): SecondOfLoad {
    const second = Math.floor((this.now() - this.start) / 1000);
    let entry = this.seconds[second];
    if (!entry) {
      entry = { second, writeUnits: 0, readUnits: 0, requests: 0, throttled: 0 };
      this.seconds[second] = entry;
    }
    return entry;
  }

  private operation(name: string): OperationLoad {
    let op = this.operations.get(name);
    if (!op) {
      op = { requests: 0, writeUnits: 0, readUnits: 0, throttled: 0 };
      this.operations.set(name, op);
    }
    return op;
  }
}

function offeredWindow(load: PartitionLoad, kind: CapacityKind): Window {
  if (kind === 'write') {
    load.offeredWrite ??= new Window();
    return load.offeredWrite;
  }
  load.offeredRead ??= new Window();
  return load.offeredRead;
}

function partitionId(table: string, pk: string, kind: CapacityKind): string {
  return `${table}\u0000${pk}\u0000${kind}`;
}

function splitId(id: string): [string, string, CapacityKind] {
  const [table, pk, kind] = id.split('\u0000') as [string, string, CapacityKind];
  return [table, pk, kind];
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** Write request units of a write touching an item of `bytes` (1 per KB, at least 1). */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024));
}

/** Read request units of reading `bytes` (1 per 4 KB strongly consistent, half that eventually; at least one read). */
export function readUnits(bytes: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(bytes / 4096));
  return consistent ? units : units / 2;
}
