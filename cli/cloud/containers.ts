/**
 * The local cloud's Lambda containers. A function's invocations run in containers: worker
 * threads, each with a module graph of its own (its own composition root, SDK clients and
 * caches, as a Lambda container has), its own environment and its own /tmp folder, reused for
 * later invocations while warm, at most `concurrency` of them per function at once. Each is held
 * to the function's limits, as Lambda holds it:
 *
 * - timeout: an invocation still running at the function's timeout has its thread terminated;
 *   it fails with "Task timed out after N seconds", and the next invocation starts a new one;
 * - memory: the thread's heap is limited (see {@link heapLimits}); a thread that runs out of it
 *   is ended by Node, and the invocation fails with "Runtime exited: out of memory". Lambda counts
 *   the whole process, so memory outside the JS heap counts too (buffers, WebAssembly memory a
 *   decompressor grew): the container measures its heap and that memory every
 *   {@link MEMORY_CHECK_MS}, says the most an invocation used (as Lambda's "Max Memory Used"),
 *   and a container past the function's memory is ended the same way;
 * - /tmp: the container's folder is measured every {@link TMP_CHECK_MS} while an invocation runs
 *   and once at its end; holding more than the function's storage ends the thread, and the
 *   invocation fails with "No space left on device".
 *
 * A killed container's /tmp goes with it. An idle container does not keep the process alive,
 * and the folders left at exit are removed then.
 */
import { randomUUID } from 'node:crypto';
import { type Dirent, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { lstat, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ServiceError } from '../../shared/model/errors.js';
import type { LambdaContextOptions } from './lambda-context.js';

/** What a function's containers run and the limits they are held to. */
export interface ContainerConfig {
  /**
   * The function: one of the stack's by its layout name (`ingest`, `worker`, `deadLetter`,
   * `aggregate`, `batchPoller`), or the `file:` URL of a module that exports `handler`.
   */
  module: string;
  /** The function's memory, MB (the layout's FUNCTION_MEMORY_MB). */
  memoryMb: number;
  /** The function's /tmp, MB (the layout's FUNCTION_TMP_MB). */
  tmpMb: number;
  /** The function's timeout, ms. */
  timeoutMs: number;
  /** The function's environment; each container adds `TMPDIR`, its own /tmp folder. */
  env: Readonly<Record<string, string | undefined>>;
}

/**
 * What the runtime takes of a function's memory besides the old generation (where a function's
 * data lives): its code, stacks, the young generation and buffers outside the heap, MB. Lambda
 * counts the whole process against the function's memory.
 */
export const RUNTIME_MARGIN_MB = 64;
/** The young generation of a container, MB: small, as the margin holds it. */
export const YOUNG_GENERATION_MB = 16;
/** How often a running invocation's /tmp is measured, ms. */
export const TMP_CHECK_MS = 200;
/** How often a container measures its memory (its JS heap and what lies outside it), ms. */
export const MEMORY_CHECK_MS = 100;

const MIB = 1024 * 1024;

/** The heap limits of a container of a function with `memoryMb` of memory. */
export function heapLimits(memoryMb: number): {
  maxOldGenerationSizeMb: number;
  maxYoungGenerationSizeMb: number;
} {
  return {
    maxOldGenerationSizeMb: Math.max(16, memoryMb - RUNTIME_MARGIN_MB),
    maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
  };
}

/**
 * Why a container ended during an invocation: killed at its timeout, out of memory, /tmp full,
 * its runtime exited (an uncaught error, a failed init, `process.exit`), or stopped with its run.
 */
export type KillReason = 'timeout' | 'memory' | 'tmp' | 'exited' | 'stopped';

/** An invocation failed because its container ended; `reason` says why. */
export class ContainerKilledError extends ServiceError {
  override readonly name = 'ContainerKilledError';
  constructor(
    readonly reason: KillReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The container that ran an invocation. */
export interface ContainerReport {
  /** The worker thread's id: the same for invocations of one warm container. */
  threadId: number;
  /** The container was started for this invocation. */
  cold: boolean;
  /** For a cold start: how long loading the function's module took (Lambda's init duration), ms. */
  initMs?: number;
  /** Its /tmp folder (removed with the container). */
  tmpDir: string;
  /** Set when the container ended during the invocation. */
  killed?: KillReason;
  /** The most memory the container held during the invocation (its JS heap and outside it), MB. */
  maxMemoryMb?: number;
}

/** What an invocation in a container gave: the handler's response, or its error (or the container's end). */
export type ContainerOutcome =
  | { ok: true; response: unknown; container: ContainerReport }
  | { ok: false; error: unknown; container: ContainerReport };

/** What a container starts with (its `workerData`). */
export interface ContainerData {
  module: string;
  tmpDir: string;
  /** The function's memory, MB: a container that holds more says so. */
  memoryMb: number;
  /** How often it measures what it holds, ms ({@link MEMORY_CHECK_MS}). */
  memoryCheckMs: number;
}

/** An invocation posted to a container. */
export interface ToContainer {
  id: number;
  event: unknown;
  context: LambdaContextOptions;
}

/** What a container posts back: once ready (its module loaded), then one reply per invocation. */
export type FromContainer =
  | { type: 'ready'; threadId: number }
  | { type: 'response'; id: number; response: unknown; maxMemoryMb?: number }
  | {
      type: 'error';
      id: number;
      error: { name: string; message: string; stack?: string };
      maxMemoryMb?: number;
    }
  /** The container holds more than the function's memory (it is ended). */
  | { type: 'memory'; usedMb: number; outsideHeapMb: number };

/**
 * Running from the TypeScript sources (vitest, tsx) or from the bundle (dist/, the packed CLI):
 * this module's own file says which. From the sources, a container loads tsx before its entry;
 * from dist/, the entry and the functions are JavaScript already.
 */
const FROM_SOURCES = import.meta.url.endsWith('.ts');
const ENTRY = new URL(FROM_SOURCES ? './container.ts' : './container.js', import.meta.url);
/**
 * `--import tsx` loads tsx in a worker thread only on the Node versions that tell their own
 * module-hooks thread apart (22.22 and later); before that tsx registers itself on the main
 * thread alone. tsx-thread.mjs registers it through its API, which works in a thread on every
 * version this package supports.
 */
const EXEC_ARGV = FROM_SOURCES ? ['--import', new URL('./tsx-thread.mjs', import.meta.url).href] : [];

/**
 * The containers of a run: one {@link ContainerPool} per function, their /tmp folders under one
 * temporary root (made on first use).
 */
export class Containers {
  private rootDir: string | undefined;
  private readonly pools = new Map<string, ContainerPool>();
  private closedFlag = false;
  private readonly removeAtExit = () => {
    if (this.rootDir) rmSync(this.rootDir, { recursive: true, force: true });
  };

  /** True once {@link close} was called: no container starts after it. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** The folder of the containers' /tmp folders. */
  root(): string {
    if (!this.rootDir) {
      this.rootDir = mkdtempSync(join(tmpdir(), 'assay-containers-'));
      process.once('exit', this.removeAtExit);
    }
    return this.rootDir;
  }

  /** The containers of `functionName` (made by the first call; later calls return the same pool). */
  pool(functionName: string, config: ContainerConfig, concurrency = 1): ContainerPool {
    let pool = this.pools.get(functionName);
    if (!pool) {
      pool = new ContainerPool(this, functionName, config, concurrency);
      this.pools.set(functionName, pool);
    }
    return pool;
  }

  /**
   * Terminates every container (an invocation in progress fails as stopped); their /tmp goes
   * with them. A later invocation starts a new container.
   */
  async stop(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.stop()));
  }

  /** Terminates every container and removes the root; no container starts after. */
  async close(): Promise<void> {
    this.closedFlag = true;
    await this.stop();
    if (this.rootDir) {
      process.off('exit', this.removeAtExit);
      await rm(this.rootDir, { recursive: true, force: true });
      this.rootDir = undefined;
    }
  }
}

/** One function's containers. */
export class ContainerPool {
  /** Warm containers waiting for an invocation, the latest used last. */
  private readonly idle: Container[] = [];
  /** Every container not yet ended. */
  private readonly live = new Set<Container>();
  /** Invocations waiting for a container (all `concurrency` of them busy). */
  private readonly waiting: (() => void)[] = [];
  private started = 0;

  constructor(
    private readonly containers: Containers,
    readonly functionName: string,
    readonly config: ContainerConfig,
    readonly concurrency: number,
  ) {}

  /**
   * Runs one invocation of the function in a warm container, or a new one: posts the event with
   * a context counted down to the function's timeout, and returns the response or the error.
   * A container that passed a limit is terminated (and its /tmp removed) before this returns.
   */
  async invoke(event: unknown, where: { region?: string; account?: string } = {}): Promise<ContainerOutcome> {
    const { container, cold } = await this.acquire();
    try {
      return await this.run(container, cold, event, where);
    } finally {
      if (container.ended === undefined) this.idle.push(container);
      this.waiting.shift()?.();
    }
  }

  /** Terminates every container of the function. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.live].map((container) => container.kill('stopped', 'Container stopped: its run ended')),
    );
  }

  private async acquire(): Promise<{ container: Container; cold: boolean }> {
    for (;;) {
      if (this.containers.closed) {
        throw new ContainerKilledError(
          'stopped',
          `${this.functionName}: the local cloud's containers are closed`,
        );
      }
      const warm = this.idle.pop();
      // One that ended while idle is on its way out of the pool.
      if (warm?.ended !== undefined) continue;
      if (warm) return { container: warm, cold: false };
      if (this.live.size < this.concurrency) return { container: this.start(), cold: true };
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private start(): Container {
    this.started += 1;
    const tmpDir = join(this.containers.root(), `${this.functionName}-${this.started}`);
    const container = new Container(this.config, tmpDir, () => {
      this.live.delete(container);
      const at = this.idle.indexOf(container);
      if (at >= 0) this.idle.splice(at, 1);
      this.waiting.shift()?.();
    });
    this.live.add(container);
    return container;
  }

  private async run(
    container: Container,
    cold: boolean,
    event: unknown,
    where: { region?: string; account?: string },
  ): Promise<ContainerOutcome> {
    const report = (): ContainerReport => ({
      threadId: container.threadId,
      cold,
      ...(cold && container.initMs !== undefined ? { initMs: container.initMs } : {}),
      tmpDir: container.tmpDir,
      ...(container.ended ? { killed: container.ended.reason } : {}),
    });
    const failed = async (): Promise<ContainerOutcome> => {
      await container.gone;
      return { ok: false, error: container.ended, container: report() };
    };
    container.worker.ref();
    try {
      // The init phase (loading the module) is not timed: Lambda gives it time of its own.
      if (!(await container.ready)) return await failed();
      const { timeoutMs, memoryMb, tmpMb } = this.config;
      const context: LambdaContextOptions = {
        functionName: this.functionName,
        ...where,
        deadline: Date.now() + timeoutMs,
        memoryMb,
        requestId: randomUUID(),
      };
      const timer = setTimeout(() => {
        void container.kill('timeout', `Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
      }, timeoutMs);
      const watch = watchTmp(container, tmpMb);
      let reply: FromContainer | undefined;
      try {
        reply = await container.invoke(event, context);
      } finally {
        clearTimeout(timer);
        await watch.stop();
      }
      if (container.ended === undefined) {
        const bytes = await bytesUnder(container.tmpDir);
        if (bytes > tmpMb * MIB) void container.kill('tmp', tmpFull(bytes, tmpMb));
      }
      if (container.ended !== undefined || reply === undefined) return await failed();
      const measured = (): ContainerReport =>
        reply && 'maxMemoryMb' in reply && reply.maxMemoryMb !== undefined
          ? { ...report(), maxMemoryMb: reply.maxMemoryMb }
          : report();
      if (reply.type === 'response') return { ok: true, response: reply.response, container: measured() };
      if (reply.type === 'error') return { ok: false, error: rebuilt(reply.error), container: measured() };
      throw new Error(`${this.functionName}: unexpected reply from its container (${reply.type})`);
    } finally {
      // An idle container does not keep the process alive.
      if (container.ended === undefined) container.worker.unref();
    }
  }
}

/** One container: a worker thread running cli/cloud/container.ts for one function. */
class Container {
  readonly worker: Worker;
  readonly threadId: number;
  /** True once the function's module is loaded; false when the thread ended before that. */
  readonly ready: Promise<boolean>;
  /** Settles once the thread has ended and its /tmp is removed. */
  readonly gone: Promise<void>;
  /** Why the thread ended (or is ending), once it has. */
  ended: ContainerKilledError | undefined;
  /** How long loading the function's module took, ms, once it has. */
  initMs: number | undefined;
  private readonly startedAt = performance.now();
  private invocations = 0;
  private reply: ((message: FromContainer | undefined) => void) | undefined;

  constructor(
    private readonly config: ContainerConfig,
    readonly tmpDir: string,
    onGone: () => void,
  ) {
    mkdirSync(tmpDir);
    this.worker = new Worker(ENTRY, {
      workerData: {
        module: config.module,
        tmpDir,
        memoryMb: config.memoryMb,
        memoryCheckMs: MEMORY_CHECK_MS,
      } satisfies ContainerData,
      env: { ...config.env },
      execArgv: EXEC_ARGV,
      resourceLimits: heapLimits(config.memoryMb),
    });
    this.threadId = this.worker.threadId;
    let setReady: (ready: boolean) => void = () => {};
    this.ready = new Promise((resolve) => {
      setReady = resolve;
    });
    this.worker.on('message', (message: FromContainer) => {
      if (message.type === 'ready') {
        this.initMs = Math.round(performance.now() - this.startedAt);
        setReady(true);
      } else if (message.type === 'memory') {
        void this.kill(
          'memory',
          `Runtime exited: out of memory (${message.usedMb} MB used of the function's ${this.config.memoryMb} MB, ${message.outsideHeapMb} MB of it outside the JS heap)`,
        );
      } else {
        const reply = this.reply;
        this.reply = undefined;
        reply?.(message);
      }
    });
    this.worker.on('error', (error) => {
      this.ended ??= this.crashed(error);
    });
    this.gone = new Promise((resolve) => {
      this.worker.once('exit', (code) => {
        this.ended ??= new ContainerKilledError('exited', `Runtime exited with code ${code}`);
        setReady(false);
        const reply = this.reply;
        this.reply = undefined;
        reply?.(undefined);
        void rm(tmpDir, { recursive: true, force: true })
          .catch(() => {})
          .finally(() => {
            onGone();
            resolve();
          });
      });
    });
  }

  /** Posts an invocation; settles with the container's reply, or undefined if the thread ended first. */
  invoke(event: unknown, context: LambdaContextOptions): Promise<FromContainer | undefined> {
    if (this.ended !== undefined) return Promise.resolve(undefined);
    this.invocations += 1;
    const message: ToContainer = { id: this.invocations, event, context };
    return new Promise((resolve) => {
      this.reply = resolve;
      this.worker.postMessage(message);
    });
  }

  /** Terminates the thread (once; the first reason stands); settles once it is gone. */
  kill(reason: KillReason, message: string): Promise<void> {
    this.ended ??= new ContainerKilledError(reason, message);
    void this.worker.terminate();
    return this.gone;
  }

  private crashed(error: Error): ContainerKilledError {
    if ((error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
      const { maxOldGenerationSizeMb } = heapLimits(this.config.memoryMb);
      return new ContainerKilledError(
        'memory',
        `Runtime exited: out of memory (a heap of ${maxOldGenerationSizeMb} MB, the function's ${this.config.memoryMb} MB less the runtime's)`,
        { cause: error },
      );
    }
    const phase = this.initMs === undefined ? ' during init' : '';
    return new ContainerKilledError(
      'exited',
      `Runtime exited${phase} with error: ${error.name}: ${error.message}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * Measures a container's /tmp every {@link TMP_CHECK_MS} until stopped, and kills the container
 * when it holds more than `tmpMb`.
 */
function watchTmp(container: Container, tmpMb: number): { stop(): Promise<void> } {
  let stopped = false;
  let walking: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    walking = bytesUnder(container.tmpDir).then((bytes) => {
      if (stopped) return;
      if (bytes > tmpMb * MIB) void container.kill('tmp', tmpFull(bytes, tmpMb));
      else timer = setTimeout(check, TMP_CHECK_MS);
    });
  };
  timer = setTimeout(check, TMP_CHECK_MS);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await walking;
    },
  };
}

function tmpFull(bytes: number, tmpMb: number): string {
  return `No space left on device: /tmp holds ${(bytes / MIB).toFixed(1)} MB of ${tmpMb} MB`;
}

/** The bytes of the files under `dir` (what the handler wrote; a file removed meanwhile counts nothing). */
async function bytesUnder(dir: string): Promise<number> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  const sizes = await Promise.all(
    entries.map(async (entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return bytesUnder(path);
      if (!entry.isFile()) return 0;
      return lstat(path).then(
        (stats) => stats.size,
        () => 0,
      );
    }),
  );
  return sizes.reduce((sum, size) => sum + size, 0);
}

/** A handler's error, as its container described it, rebuilt in this thread. */
function rebuilt({ name, message, stack }: { name: string; message: string; stack?: string }): Error {
  const error = new Error(message);
  error.name = name;
  if (stack) error.stack = stack;
  return error;
}
