import { once } from 'node:events';
import type { WriteStream } from 'node:fs';

/**
 * Closes a file stream that is being given up (its write failed, or the work it was for did),
 * and waits until it is closed: a stream still opening its file would otherwise create it after
 * a clean-up removed it (or its folder). Its own errors are not waited for: the caller is already
 * handling the one that stopped it.
 */
export async function discard(file: WriteStream): Promise<void> {
  if (file.closed) return;
  const closed = once(file, 'close').catch(() => undefined);
  file.destroy();
  await closed;
}
