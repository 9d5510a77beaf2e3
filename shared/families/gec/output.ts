import type { GecLabel } from './labels.js';

/** What a GEC judge produces for one edit: its label, its reason, and what decided it. */
export interface GecOutput {
  label: GecLabel;
  reason: string;
  /** The backend that judged, or the rule that fired (modular fusion, escalation stage). */
  decidedBy: string;
}
