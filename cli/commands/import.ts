/** `assay import`: another tool's eval as a suite folder, and with --check the parity of its graders. */
import { readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Check } from '../../shared/families/checks/suite.js';
import { visible } from '../../shared/lib/format.js';
import { importEvalsRegistry } from '../import/evals-registry.js';
import { importOpenAiEvals } from '../import/openai-evals.js';
import { type CheckParity, parityOf, parityText } from '../import/parity.js';
import { ImportError, type ImportPlan, writePlan } from '../import/plan.js';
import { importPromptfoo } from '../import/promptfoo.js';
import { runLocal } from '../local-run.js';

export type ImportFormat = 'openai-evals' | 'evals-registry' | 'promptfoo';

export interface ImportFlags {
  out?: string;
  format?: ImportFormat;
  items?: string;
  outputItems?: string;
  run?: string;
  check?: boolean;
  simulate?: boolean;
}

/** The format of a file: a JSON eval definition, an openai/evals registry YAML, or a promptfoo config. */
async function detect(file: string): Promise<ImportFormat> {
  const text = await readFile(file, 'utf8');
  if (/\.json$/i.test(file)) {
    if (text.includes('"testing_criteria"')) return 'openai-evals';
    if (/"results"\s*:\s*\{/.test(text.slice(0, 4096)) && text.includes('"promptIdx"')) return 'promptfoo';
    throw new ImportError(
      `${file}: a JSON file with no testing_criteria (an OpenAI Evals eval definition has them)`,
    );
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new ImportError(`${file}: neither JSON nor YAML: ${(error as Error).message}`);
  }
  const keys = parsed && typeof parsed === 'object' ? Object.values(parsed as Record<string, unknown>) : [];
  if (keys.some((v) => v && typeof v === 'object' && 'class' in v)) return 'evals-registry';
  if (parsed && typeof parsed === 'object' && ('prompts' in parsed || 'tests' in parsed)) return 'promptfoo';
  throw new ImportError(
    `${file}: not an eval Assay imports (an OpenAI Evals definition with testing_criteria, an openai/evals registry YAML, or a promptfoo config with prompts and tests); name it with --format`,
  );
}

function planFor(file: string, format: ImportFormat, flags: ImportFlags): Promise<ImportPlan> {
  if (format === 'openai-evals')
    return importOpenAiEvals({
      eval: file,
      items: flags.items,
      outputItems: flags.outputItems,
      run: flags.run,
    });
  if (format === 'evals-registry') return importEvalsRegistry(file, { outputItems: flags.outputItems });
  return importPromptfoo(file, { outputItems: flags.outputItems });
}

export async function importCommand(file: string, flags: ImportFlags): Promise<void> {
  const format = flags.format ?? (await detect(file));
  const plan = await planFor(file, format, flags);
  const out = flags.out ?? `imported-${basename(file).replace(/\.[^.]+$/, '')}`;
  const written = await writePlan(out, plan);
  const say = (line: string) => process.stdout.write(`${visible(line)}\n`);
  say(`imported ${plan.format} from ${file} into ${out}/:`);
  for (const path of written) say(`  ${path}`);
  for (const note of plan.notes) say(`note: ${note}`);
  for (const r of plan.refused) say(`NOT IMPORTED: ${r.what}: ${r.reason}`);
  for (const s of plan.suites)
    say(`run it: npx assay run ${join(out, s.file)}${flags.simulate ? ' --simulate' : ''}`);
  if (!flags.check) return;
  const graded = plan.suites.some((s) => (s.suite.checks as { checks: Check[] }).checks.some((c) => c.gold));
  if (!graded)
    throw new ImportError(
      '--check re-scores outputs the other tool graded: give them with --output-items FILE (or import a promptfoo results file)',
    );
  const all: { suite: string; parity: CheckParity[] }[] = [];
  for (const s of plan.suites) {
    const runDir = join(out, 'check', s.file.replace(/\.suite\.json$/, ''));
    const outcome = await runLocal({
      suitePath: join(out, s.file),
      outDir: runDir,
      runsDir: join(out, 'check'),
      simulate: flags.simulate,
    });
    if (outcome.unscorable) throw new ImportError(`${s.file}: ${outcome.unscorable}`);
    const checks = (s.suite.checks as { checks: Check[] }).checks;
    const parity = await parityOf(runDir, checks);
    all.push({ suite: s.file, parity });
    say(`\nparity of ${s.file} (${runDir}):`);
    for (const line of parityText(parity)) say(line);
    if (flags.simulate)
      say(
        '!! SIMULATED: the model checks were answered by the simulator; their agreement measures nothing about a grader.',
      );
  }
  await writeFile(join(out, 'check', 'parity.json'), `${JSON.stringify(all, null, 2)}\n`);
  const failed = all.flatMap((a) =>
    a.parity.filter((p) => p.reproduced === false).map((p) => `${a.suite}: ${p.check}`),
  );
  if (failed.length > 0) {
    process.stderr.write(`\nassay: not reproduced by the imported checks: ${failed.join(', ')}\n`);
    process.exitCode = 1;
  }
}
