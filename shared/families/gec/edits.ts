/**
 * Edit spans of a GEC pair. From the `aligned` column (`They{ have to=> must} deal`) when the
 * dataset has one, else from the smallest differing middle of src and tgt.
 */

export interface EditSpan {
  old: string;
  new: string;
}

const SPAN = /\{([^{}]*?)=>([^{}]*?)\}/g;

export function spansFromAligned(aligned: string): EditSpan[] {
  return Array.from(aligned.matchAll(SPAN), (m) => ({ old: m[1]!, new: m[2]! }));
}

/** One span covering everything between the common prefix and suffix (character level). */
export function spansFromPair(src: string, tgt: string): EditSpan[] {
  const span = differingSpan(src, tgt);
  return span ? [{ old: span.old, new: span.new }] : [];
}

function differingSpan(src: string, tgt: string): (EditSpan & { start: number }) | undefined {
  if (src === tgt) return undefined;
  let start = 0;
  while (start < src.length && start < tgt.length && src[start] === tgt[start]) start += 1;
  let endSrc = src.length;
  let endTgt = tgt.length;
  while (endSrc > start && endTgt > start && src[endSrc - 1] === tgt[endTgt - 1]) {
    endSrc -= 1;
    endTgt -= 1;
  }
  // Widen to word boundaries so a span reads as words, not fragments.
  while (start > 0 && /\S/.test(src[start - 1]!)) start -= 1;
  while (endSrc < src.length && /\S/.test(src[endSrc]!)) {
    endSrc += 1;
    endTgt += 1;
  }
  return { start, old: src.slice(start, endSrc), new: tgt.slice(start, endTgt) };
}

export function editSpans(src: string, tgt: string, aligned?: string): EditSpan[] {
  const fromAligned = aligned ? spansFromAligned(aligned) : [];
  return fromAligned.length > 0 ? fromAligned : spansFromPair(src, tgt);
}

/** `{old=>new}` notation of a pair, as prompts show it. */
export function formatSpans(spans: EditSpan[]): string {
  return spans.length === 0 ? '(no edit)' : spans.map((s) => `{${s.old}=>${s.new}}`).join(' ');
}

/** The aligned sentence, rebuilt from the pair when the dataset has none. */
export function alignedText(src: string, tgt: string, aligned?: string): string {
  if (aligned && aligned.trim() !== '') return aligned;
  const span = differingSpan(src, tgt);
  if (!span) return src;
  return `${src.slice(0, span.start)}{${span.old}=>${span.new}}${src.slice(span.start + span.old.length)}`;
}
