import { failedSolve } from '../../family/ask.js';
import type { Solved } from '../../family/types.js';
import type { GecCase } from './case.js';
import { classify } from './classify.js';
import type { GecLabel } from './labels.js';
import type { GecOutput } from './output.js';
import type { EnsembleOptions } from './suite.js';

export interface Vote {
  backend: string;
  label: string;
  weight: number;
}

/**
 * The weighted ensemble: every backend classifies concurrently with the base prompt; the label
 * with the largest total weight wins. A tie goes to the label of the heaviest voter among the
 * tied labels (the earlier backend on equal weights). Failed votes do not count; an item
 * fails only when every vote failed.
 */
export async function judgeEnsemble(c: GecCase, options: EnsembleOptions): Promise<Solved<GecOutput>> {
  const backends = c.ctx.backends;
  const weights = options.weights ?? backends.map(() => 1);
  const answers = await Promise.all(backends.map((backend) => classify(c, `vote:${backend.id}`, backend)));
  const votes: Vote[] = answers.map((answer, i) => ({
    backend: backends[i]!.id,
    label: answer.ok ? answer.value.label : 'Error',
    weight: weights[i] ?? 1,
  }));
  const winner = weightedWinner(votes);
  const details = { votes, tally: tally(votes), unanimous: new Set(votes.map((v) => v.label)).size === 1 };
  if (winner === undefined) {
    const failed = answers.find((a) => !a.ok);
    return failedSolve(
      failed && !failed.ok ? failed : { failure: { kind: 'internal', message: 'no votes' } },
      details,
    );
  }
  const reason = answers.find((a, i) => a.ok && votes[i]!.label === winner);
  const voters = votes.filter((v) => v.label === winner).map((v) => v.backend);
  return {
    ok: true,
    output: {
      label: winner,
      reason: reason?.ok ? reason.value.reason : '',
      decidedBy: `weighted vote (${voters.join(', ')})`,
    },
    details,
  };
}

export function tally(votes: readonly Vote[]): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const vote of votes) {
    if (vote.label !== 'Error') totals[vote.label] = (totals[vote.label] ?? 0) + vote.weight;
  }
  return totals;
}

/** The winning label, or undefined when no vote counts (all failed or all weights zero). */
export function weightedWinner(votes: readonly Vote[]): GecLabel | undefined {
  const totals = tally(votes);
  const best = Math.max(0, ...Object.values(totals));
  if (best <= 0) return undefined;
  const heaviestFirst = votes
    .map((vote, index) => ({ vote, index }))
    .sort((a, b) => b.vote.weight - a.vote.weight || a.index - b.index);
  return heaviestFirst.find(({ vote }) => totals[vote.label] === best)?.vote.label as GecLabel | undefined;
}
