/**
 * The parity check of an import: the imported suite re-scores the outputs the other tool graded,
 * and each check's verdicts are set against that tool's grades. A check decided without a model
 * must reproduce every grade (any difference, or an item it could not compare, fails the check);
 * a model check gives its agreement and Cohen's kappa with their intervals (from the run's own
 * report, so the figures are the ones `assay run` prints) and the items that flipped.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Check } from '../../shared/families/checks/suite.js';
import { checkNames } from '../../shared/families/checks/suite.js';
import { readGrade } from '../../shared/families/checks/task.js';

interface Figure {
  value: number | null;
  ci?: [number, number];
  reason?: string;
}

export interface CheckParity {
  check: string;
  /** Decided without a model: it must reproduce every grade. */
  deterministic: boolean;
  /** Items with a grade given and a verdict made. */
  compared: number;
  /** Items with a grade given but no verdict (the item failed, or was invalid). */
  notCompared: number;
  agreement: Figure;
  kappa: Figure;
  flipped: { id: string; given: boolean; now: boolean; reason?: string }[];
  /** Deterministic: every grade reproduced; model checks: undefined (agreement is a figure, not a verdict). */
  reproduced?: boolean;
}

const usesModel = (check: Check): boolean =>
  check.type === 'model' || (check.type === 'formula' && Object.values(check.checks).some(usesModel));

/** The parity of each check that has the other tool's grades (`gold`), from a finished run folder. */
export async function parityOf(runDir: string, checks: readonly Check[]): Promise<CheckParity[]> {
  const report = JSON.parse(await readFile(join(runDir, 'report.json'), 'utf8')) as {
    scores: Record<string, { metrics: Record<string, Figure> }>;
  };
  const names = checkNames(checks);
  const graded = checks.flatMap((check, i) =>
    check.gold ? [{ check, name: names[i]!, gold: check.gold }] : [],
  );
  const out = new Map<string, CheckParity>(
    graded.map(({ check, name }) => [
      name,
      {
        check: name,
        deterministic: !usesModel(check),
        compared: 0,
        notCompared: 0,
        agreement: report.scores[name]?.metrics.accuracy ?? { value: null },
        kappa: report.scores[name]?.metrics.passKappa ?? { value: null },
        flipped: [],
      },
    ]),
  );
  const lines = createInterface({
    input: createReadStream(join(runDir, 'results.jsonl')),
    crlfDelay: Infinity,
  });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const result = JSON.parse(line) as {
      itemId: string;
      input?: Record<string, string>;
      scores?: Record<string, { value?: boolean; explanation?: string }>;
    };
    for (const { name, gold } of graded) {
      const given = readGrade(result.input?.[gold]);
      if (typeof given !== 'boolean') continue;
      const parity = out.get(name)!;
      const score = result.scores?.[name];
      if (typeof score?.value !== 'boolean') {
        parity.notCompared += 1;
        continue;
      }
      parity.compared += 1;
      if (score.value !== given)
        parity.flipped.push({
          id: result.itemId,
          given,
          now: score.value,
          ...(score.explanation ? { reason: score.explanation } : {}),
        });
    }
  }
  for (const parity of out.values())
    if (parity.deterministic) parity.reproduced = parity.flipped.length === 0 && parity.notCompared === 0;
  return [...out.values()];
}

const number = (f: Figure) =>
  f.value === null
    ? `n/a${f.reason ? ` (${f.reason})` : ''}`
    : `${f.value.toFixed(3)}${f.ci ? ` [${f.ci[0].toFixed(3)}, ${f.ci[1].toFixed(3)}]` : f.reason ? ` (${f.reason})` : ''}`;

/** Parity as lines for the terminal: a verdict per deterministic check, figures per model check, the first flips. */
export function parityText(parities: readonly CheckParity[], shown = 10): string[] {
  const lines: string[] = [];
  for (const p of parities) {
    const head = p.deterministic
      ? `${p.check}: ${p.reproduced ? 'REPRODUCED' : 'NOT REPRODUCED'} — ${p.compared - p.flipped.length} of ${p.compared} grades the same`
      : `${p.check} (model): agreement ${number(p.agreement)}, Cohen's kappa ${number(p.kappa)}, ${p.flipped.length} of ${p.compared} flipped`;
    lines.push(
      head + (p.notCompared > 0 ? `; ${p.notCompared} graded items not scored here (see errors.txt)` : ''),
    );
    for (const f of p.flipped.slice(0, shown))
      lines.push(
        `  ${f.id}: given ${f.given ? 'pass' : 'fail'}, now ${f.now ? 'pass' : 'fail'}${f.reason ? ` (${f.reason})` : ''}`,
      );
    if (p.flipped.length > shown) lines.push(`  … and ${p.flipped.length - shown} more (parity.json)`);
  }
  return lines;
}
