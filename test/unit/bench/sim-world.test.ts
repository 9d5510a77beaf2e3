/**
 * The simulated world of the capacity model (bench/cloud/world.ts): while it runs, the
 * process's timers and clocks are simulated, so long waits cost no real time, the SDK's retry
 * backoff waits in simulated time, real file I/O still completes, and everything is put back.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleepFromTimers } from 'node:timers/promises';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { SimAws } from '../../../bench/cloud/clients.js';
import { SimDeadlockError, SimTimeLimitError, SimWorld } from '../../../bench/cloud/world.js';
import { SimClock } from '../../../shared/lib/sim-clock.js';

const TEN_MINUTES = 10 * 60 * 1000;

describe('the simulated world', () => {
  it('runs a ten-minute sleep at once, with Date.now(), new Date() and performance.now() moved ten minutes', async () => {
    const world = new SimWorld({ epochMs: Date.UTC(2025, 5, 1) });
    const realStart = performance.now();
    const seen = await world.run(async () => {
      const before = { date: Date.now(), perf: performance.now() };
      await new Promise((resolve) => setTimeout(resolve, TEN_MINUTES));
      return { before, after: { date: Date.now(), perf: performance.now(), iso: new Date().toISOString() } };
    });
    expect(performance.now() - realStart).toBeLessThan(5_000);
    expect(seen.before.date).toBe(Date.UTC(2025, 5, 1));
    expect(seen.after.date - seen.before.date).toBe(TEN_MINUTES);
    expect(seen.after.perf - seen.before.perf).toBe(TEN_MINUTES);
    expect(seen.after.iso).toBe('2025-06-01T00:10:00.000Z');
  });

  it('simulates node:timers/promises (the adapters sleep with it), intervals and AbortSignal.timeout', async () => {
    const world = new SimWorld();
    const out = await world.run(async () => {
      const start = Date.now();
      await sleepFromTimers(30_000);
      let ticks = 0;
      await new Promise<void>((resolve) => {
        const interval = setInterval(() => {
          ticks += 1;
          if (ticks === 3) {
            clearInterval(interval);
            resolve();
          }
        }, 1_000);
      });
      const cleared = setTimeout(() => {
        ticks += 100;
      }, 10);
      clearTimeout(cleared);
      const aborted = await new Promise<string>((resolve) => {
        AbortSignal.timeout(5_000).addEventListener('abort', (event) =>
          resolve(((event.target as AbortSignal).reason as Error).name),
        );
      });
      return { elapsed: Date.now() - start, ticks, aborted };
    });
    expect(out).toEqual({ elapsed: 38_000, ticks: 3, aborted: 'TimeoutError' });
  });

  it('lets real file I/O finish while simulated time moves on', async () => {
    const world = new SimWorld();
    const path = join(tmpdir(), `assay-sim-world-${process.pid}.txt`);
    try {
      const text = await world.run(async () => {
        await writeFile(path, 'spilled '.repeat(100_000));
        await new Promise((resolve) => setTimeout(resolve, 60_000));
        return readFile(path, 'utf8');
      });
      expect(text).toHaveLength(800_000);
    } finally {
      await rm(path, { force: true });
    }
  });

  it('makes the SDK back off between retries in simulated time', async () => {
    const world = new SimWorld();
    // One write unit a second per partition: the second put is throttled and retried.
    const aws = new SimAws(world, { dynamo: { limits: { writeUnitsPerSecond: 1 } } });
    aws.dynamo.createTable('t');
    const realStart = performance.now();
    const elapsed = await world.run(async () => {
      const { doc } = aws.clients({ maxAttempts: 10 });
      const start = Date.now();
      await doc.send(new PutCommand({ TableName: 't', Item: { pk: 'a', sk: '1' } }));
      await doc.send(new PutCommand({ TableName: 't', Item: { pk: 'a', sk: '2' } }));
      return Date.now() - start;
    });
    const report = aws.report().dynamo;
    expect(report.throttledRequests).toBeGreaterThan(0);
    expect(report.byOperation.PutItem?.requests).toBe(2 + report.throttledRequests);
    // The partition frees its unit a second after the first put; the SDK waited that out.
    expect(elapsed).toBeGreaterThan(900);
    expect(performance.now() - realStart).toBeLessThan(5_000);
  });

  it('puts the real timers and clocks back after a run, even a failed one', async () => {
    const real = {
      setTimeout,
      clearTimeout,
      setInterval,
      Date,
      now: performance.now,
      timeout: AbortSignal.timeout,
      random: Math.random,
    };
    const world = new SimWorld({ seed: 7 });
    await expect(
      world.run(async () => {
        expect(globalThis.setTimeout).not.toBe(real.setTimeout);
        expect(globalThis.Date).not.toBe(real.Date);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect({
      setTimeout,
      clearTimeout,
      setInterval,
      Date,
      now: performance.now,
      timeout: AbortSignal.timeout,
      random: Math.random,
    }).toEqual(real);
    expect(Math.abs(Date.now() - Date.parse(new Date().toISOString()))).toBeLessThan(1_000);
    expect(world.active).toBe(false);
  });

  it('draws the same random numbers under the same seed', async () => {
    const draw = (seed: number) => new SimWorld({ seed }).run(async () => [Math.random(), Math.random()]);
    expect(await draw(42)).toEqual(await draw(42));
    expect(await draw(42)).not.toEqual(await draw(43));
  });

  it('says what is pending when nothing can move, and stops at a time limit', async () => {
    const world = new SimWorld({ deadlockGraceMs: 0 });
    const error = await world.run(new Promise(() => {}), { label: 'the stuck run' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SimDeadlockError);
    expect((error as Error).message).toMatch(/tracked promise\(s\) pending: the stuck run/);
    expect((error as Error).message).toMatch(/0 simulated timer/);

    const forever = world.run(
      async () => {
        for (;;) await new Promise((resolve) => setTimeout(resolve, 1_000));
      },
      { limitMs: 60_000 },
    );
    await expect(forever).rejects.toBeInstanceOf(SimTimeLimitError);
  });
});

describe('the simulated clock under the world', () => {
  it('fires timers due together in the order they were set; a cleared one never, a refreshed one later', async () => {
    const clock = new SimClock();
    const fired: string[] = [];
    for (const name of ['a', 'b', 'c']) clock.setTimeout(() => fired.push(name), 10);
    const cleared = clock.setTimeout(() => fired.push('cleared'), 5);
    clock.clearTimeout(cleared);
    const refreshed = clock.setTimeout(() => fired.push(`refreshed at ${clock.now()}`), 10);
    clock.setTimeout(() => refreshed.refresh(), 8);
    await clock.advance(100);
    expect(fired).toEqual(['a', 'b', 'c', 'refreshed at 18']);
    expect(clock.pending).toBe(0);
  });

  it('keeps its count of pending timers right through thousands cleared', async () => {
    const clock = new SimClock();
    const timers = Array.from({ length: 5000 }, (_, i) => clock.setTimeout(() => {}, 1000 + i));
    for (const timer of timers.slice(0, 4990)) clock.clearTimeout(timer);
    expect(clock.pending).toBe(10);
    let last = 0;
    const done = clock.sleep(10_000).then(() => {
      last = clock.now();
    });
    await clock.runUntil(done);
    expect(last).toBe(10_000);
    expect(clock.fired).toBe(11);
  });
});
