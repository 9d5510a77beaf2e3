/**
 * The closing sentence of a sweep's gate, the same in sweep.txt, on the terminal and in
 * sweep.html: whether a variant the gate requires failed, and which variants were not promoted.
 * It claims success only when every required variant passed; when the gate requires none, it
 * says so and names the variants it did not promote.
 */

/** What the sentence reads from a sweep report. */
export interface GateOutcomeInput {
  gate: { required: string[]; failedRequired: string[] };
  variants: { name: string; verdict: string }[];
}

export interface GateOutcome {
  /** `bad`: a required variant failed; `good`: every gated variant was promoted (or every required one); `neutral`: otherwise. */
  tone: 'good' | 'bad' | 'neutral';
  text: string;
}

export function gateOutcome({ gate, variants }: GateOutcomeInput): GateOutcome {
  if (gate.failedRequired.length > 0)
    return { tone: 'bad', text: `REQUIRED GATE FAILED for ${gate.failedRequired.join(', ')}` };
  const notPromoted = variants.filter((v) => v.verdict === 'not promoted').map((v) => v.name);
  if (gate.required.length === 0) {
    return notPromoted.length === 0
      ? { tone: 'good', text: 'No variant was required to pass the gate; every variant was promoted.' }
      : {
          tone: 'neutral',
          text: `No variant was required to pass the gate; not promoted: ${notPromoted.join(', ')}.`,
        };
  }
  return {
    tone: 'good',
    text:
      notPromoted.length === 0
        ? 'Every required variant passed the gate.'
        : `Every required variant passed the gate; not promoted (not required): ${notPromoted.join(', ')}.`,
  };
}

/** What {@link sequentialLine} reads of a sweep variant's sequential gate figures. */
export interface SequentialLineInput {
  /** `undecided`: the sequences never settled (some items not counted); the ordinary gate judged the full run. */
  verdict: 'promote' | 'reject' | 'undecided';
  /** The most the verdict may be wrong, whenever the variant stopped: the gate's level. */
  alpha: number;
  /** Items in the order the gate had seen when it settled. */
  settledAfter: number | null;
  /** Items of the dataset (invalid rows included) and those that went to a model. */
  items: number;
  itemsUsed: number;
  /** Items the gate's settling spared: they end as `gate_settled`, no model called. */
  itemsSkipped: number;
  /** Model calls spared: the items spared times the mean calls of an item used. */
  callsSaved: number;
  /** The items spared times the mean cost of an item used (USD); null when no item was used. */
  costSavedUsd: number | null;
}

/**
 * One sentence on what a sequential gate did for a variant, the same in sweep.txt and
 * sweep.html: when it settled, the items it used and spared, what that saved, and the error
 * level its verdict holds at.
 */
export function sequentialLine(s: SequentialLineInput): string {
  const saved =
    s.itemsSkipped === 0
      ? 'no item spared'
      : `${s.itemsSkipped} items not called: ${s.callsSaved} model calls${s.costSavedUsd === null ? '' : ` and about $${s.costSavedUsd.toPrecision(3)}`} saved`;
  const used = `${s.itemsUsed} of ${s.items} items scored`;
  if (s.verdict === 'undecided')
    return `sequential: not settled by the last item (${used}); judged on its full results by the ordinary gate`;
  return `sequential: ${s.verdict === 'promote' ? 'PROMOTE' : 'REJECT'} settled after ${s.settledAfter} items in the gate's order; ${used}, ${saved}; a wrong verdict has probability at most ${s.alpha}, whenever the variant stops (anytime-valid confidence sequences)`;
}
