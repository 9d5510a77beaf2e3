import type { DecisionSpan } from './suite.js';

/** What the cleanup family keeps of an item's two passes. */
export interface CleanupOutput {
  /** Pass 2's cleaned_text; undefined when its answer was not JSON with a string cleaned_text. */
  cleaned?: string;
  /** Pass 1's candidate_text, when it parsed. */
  candidate?: string;
  decisions: DecisionSpan[];
  /** Pass 1 parsed with a string candidate_text and valid decision_spans. */
  draftValid: boolean;
  /** What was wrong with each pass's answer, when something was. */
  problems: string[];
}
