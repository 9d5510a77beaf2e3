/**
 * What the fault server billed, split by why a request was billed more than once.
 *
 * An answer has *reached* the client when the client's files (its LLM cache, its results) hold
 * it: a verdict by its own id, an answer the client repairs by its request's token (see
 * server.ts). For each answer billed and then asked again:
 * - **paid again after receipt**: the client held the answer when it asked again (a later
 *   process, although the killed one had stored it; or the same process, after storing it).
 *   No fault excuses this: it is the bug class the suite exists to catch, and it must be 0.
 * - **lost in flight at a kill**: the process that asked was killed before it stored the
 *   answer; the next process asks again. No client can avoid paying for these (the chat APIs
 *   have no idempotency key); at most one per request in flight, so at most the concurrency
 *   per kill.
 * - **not received**: the same process asked again without ever storing the answer: it had
 *   given up on the request (its timeout fired before the answer reached it).
 * Answers the client repairs, asked again by the same process, have no id of their own: the
 * server's delivery signal decides (read: paid again after receipt; unread: not received).
 */
import { answerId, answerToken, type BilledAnswer } from './server.js';

export interface BillingSplit {
  /** Answers sent in full (what a vendor bills). */
  billedCalls: number;
  billedUsd: number;
  /** Answers the server saw the client read ({@link BilledAnswer.delivery}) and what they cost. */
  deliveredCalls: number;
  deliveredUsd: number;
  /** Answers sent whose reading is still unknown when the scenario ends (should be 0). */
  deliveryUnknown: number;
  /** Requests billed more than once. */
  billedTwice: number;
  paidAgainAfterReceipt: number;
  lostInFlightAtKills: number;
  lostInFlightUsd: number;
  /** Of those lost at a kill, how many the server saw read (by the runtime, not yet stored). */
  lostInFlightRead: number;
  notReceived: number;
  notReceivedUsd: number;
  /** Of those not received, how many the server nonetheless saw read (the delivery signal's misses). */
  notReceivedRead: number;
  /** Requests billed whose answer is in none of the client's files at the end (should be 0). */
  billedNeverStored: number;
  /** What the report should say: billed − lost in flight − not received. */
  expectedReportUsd: number;
  /** The requests paid again after receipt (their body digests), to look into. */
  paidAgainDigests: string[];
}

/**
 * Splits the ledger. `storedAfter[p]` holds the tokens and ids in the client's files once the
 * process of phase `p` ended (killed or done); the last entry is what the run ends with.
 */
export function splitBilling(
  answers: readonly BilledAnswer[],
  storedAfter: readonly Set<string>[],
): BillingSplit {
  const billed = answers.filter((a) => a.sent);
  const final = storedAfter.at(-1) ?? new Set<string>();
  const byDigest = new Map<string, BilledAnswer[]>();
  for (const a of billed) byDigest.set(a.digest, [...(byDigest.get(a.digest) ?? []), a]);
  const delivered = billed.filter((a) => a.delivery === 'delivered');
  const split: BillingSplit = {
    billedCalls: billed.length,
    billedUsd: sum(billed),
    deliveredCalls: delivered.length,
    deliveredUsd: sum(delivered),
    deliveryUnknown: billed.filter((a) => a.delivery === 'pending').length,
    billedTwice: 0,
    paidAgainAfterReceipt: 0,
    lostInFlightAtKills: 0,
    lostInFlightUsd: 0,
    lostInFlightRead: 0,
    notReceived: 0,
    notReceivedUsd: 0,
    notReceivedRead: 0,
    billedNeverStored: 0,
    expectedReportUsd: 0,
    paidAgainDigests: [],
  };
  const paidAgain = (digest: string) => {
    split.paidAgainAfterReceipt += 1;
    split.paidAgainDigests.push(digest);
  };
  for (const [digest, list] of byDigest) {
    if (!final.has(answerToken(digest))) split.billedNeverStored += 1;
    if (list.length > 1) split.billedTwice += 1;
    for (let i = 0; i + 1 < list.length; i++) {
      const first = list[i]!;
      const again = list[i + 1]!;
      const held = storedAfter[first.phase] ?? new Set<string>();
      if (again.phase > first.phase) {
        if (held.has(first.fault === 'ok' ? answerId(first.serial) : answerToken(digest))) paidAgain(digest);
        else {
          split.lostInFlightAtKills += 1;
          split.lostInFlightUsd += first.usd;
          if (first.delivery === 'delivered') split.lostInFlightRead += 1;
        }
      } else if (first.fault === 'ok' ? held.has(answerId(first.serial)) : first.delivery === 'delivered') {
        paidAgain(digest);
      } else {
        split.notReceived += 1;
        split.notReceivedUsd += first.usd;
        if (first.delivery === 'delivered') split.notReceivedRead += 1;
      }
    }
  }
  split.expectedReportUsd = split.billedUsd - split.lostInFlightUsd - split.notReceivedUsd;
  return split;
}

function sum(answers: readonly BilledAnswer[]): number {
  return answers.reduce((total, a) => total + a.usd, 0);
}
