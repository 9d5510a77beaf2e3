import { setTimeout as realDelay } from 'node:timers/promises';
import { onTestFinished, vi } from 'vitest';

/**
 * Fakes setTimeout/clearTimeout until the test ends: the SDKs' request timeouts, the vendor
 * fake's hangs and the retry waits then run on a clock the test moves, never on the machine's,
 * so a loaded machine cannot change a verdict.
 */
export function fakeClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  onTestFinished(() => {
    vi.useRealTimers();
  });
}

/**
 * Waits until the vendor fake has received `n` requests. Polls on Node's own timers, which the
 * fake clock leaves alone (`vi.waitFor` would move the fake clock as it polls).
 */
export async function requestsSeen(fake: { requests: readonly unknown[] }, n: number): Promise<void> {
  while (fake.requests.length < n) await realDelay(5);
}
