/**
 * How a cost with unpriced calls is said: its dollar figures leave those calls out, so it is
 * never shown as a plain figure (and never as $0), but as unpriced, naming the models.
 */

/** A cost as reports carry it; `priced` absent (a report written before it was recorded) reads as priced. */
export interface PricedCost {
  totalUsd: number;
  priced?: boolean;
  unpriced?: string[];
}

/** True when every call of the cost had a price. */
export const isPriced = (cost: Pick<PricedCost, 'priced'>): boolean => cost.priced !== false;

/** `unpriced (openai:my-finetune)`: the word and the models that had no price. */
export function unpricedLabel(cost: Pick<PricedCost, 'unpriced'>): string {
  const models = cost.unpriced ?? [];
  return models.length > 0 ? `unpriced (${models.join(', ')})` : 'unpriced';
}

/** What a reader does about it, after the label. */
export const UNPRICED_HINT =
  'no price in the price table: give one with run.prices in the suite or --prices FILE; the dollar figures leave these calls out';
