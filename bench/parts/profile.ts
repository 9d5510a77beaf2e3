/** Where a `node --cpu-prof` profile spends its time: self time per function, the top ones first. */
import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { ROOT } from './data.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  /** `function (file:line)`, paths relative to the repository (node_modules/… for dependencies). */
  where: string;
  selfMs: number;
  share: number;
}

/** The `top` functions by self time, plus the share of samples idle (waiting on I/O). */
export async function profileSummary(
  path: string,
  top = 12,
): Promise<{ lines: ProfileLine[]; idleShare: number }> {
  const profile = JSON.parse(await readFile(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const frame = byId.get(id)!.callFrame;
    totalUs += delta;
    if (frame.functionName === '(idle)') {
      idleUs += delta;
      return;
    }
    const file = frame.url.startsWith('file://') ? relative(ROOT, new URL(frame.url).pathname) : frame.url;
    const where = `${frame.functionName || '(anonymous)'} (${file || 'native'}${file ? `:${frame.lineNumber + 1}` : ''})`;
    selfUs.set(where, (selfUs.get(where) ?? 0) + delta);
  });
  const busyUs = Math.max(1, totalUs - idleUs);
  const lines = [...selfUs]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([where, us]) => ({ where, selfMs: Math.round(us / 1000), share: +(us / busyUs).toFixed(3) }));
  return { lines, idleShare: +(idleUs / Math.max(1, totalUs)).toFixed(3) };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const { lines, idleShare } = await profileSummary(process.argv[2]!, Number(process.argv[3] ?? 25));
  process.stdout.write(`idle ${(idleShare * 100).toFixed(1)}%\n`);
  for (const l of lines)
    process.stdout.write(
      `${(l.share * 100).toFixed(1).padStart(5)}%  ${String(l.selfMs).padStart(6)} ms  ${l.where}\n`,
    );
}
