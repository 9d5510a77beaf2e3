import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { gecFamily } from '../../../shared/families/gec/task.js';
import type { AnyTaskFamily, ReportSection, TaskContext } from '../../../shared/family/types.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import type { Item, ItemResult } from '../../../shared/model/model.js';
import type { CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { promptRenderer } from '../../../shared/use-cases/score-item.js';
import { type ScriptedAnswer, ScriptedProvider } from '../../fakes/scripted-provider.js';
import { startVendorFake, type VendorFake, type WireJson } from '../../fakes/vendor-fake.js';
import { NO_ENCODERS, REPO, suite } from '../../helpers.js';

/** Answers by which prompt is asking (sub-judges are told apart by their instructions). */
function byPrompt(rules: [RegExp, ScriptedAnswer | ((r: CompletionRequest) => ScriptedAnswer)][]) {
  return (request: CompletionRequest): ScriptedAnswer => {
    const rule = rules.find(([pattern]) => pattern.test(`${request.system ?? ''}\n${request.prompt}`));
    if (!rule) throw new Error(`no scripted answer for: ${request.prompt.slice(0, 80)}`);
    return typeof rule[1] === 'function' ? rule[1](request) : rule[1];
  };
}

/** The family's report section of results, from one tally over them. */
function familySection(
  suite: unknown,
  results: readonly ItemResult[],
): ReportSection | Promise<ReportSection> {
  const tally = (gecFamily as AnyTaskFamily).reportTally!(suite as never)!;
  for (const result of results) tally.add(result);
  return tally.section();
}

const NONSENSE = /nonsense detector/;
const MEANING = /meaning-change detector/;
const QUALITY = /text quality assessor/;
const PAIR = /check grammatical correctness/;

async function judge(overrides: Record<string, unknown>, providers: LlmProvider[], item: Item) {
  const run = await prepareRun({
    suite: suite({ backends: providers.map((p) => p.id), ...overrides }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: 'data.csv',
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
  const stages: string[] = [];
  const ctx: TaskContext = {
    suite: run.suite,
    prompts: run.prompts,
    paths: gecFamily.promptPaths(run.suite),
    backends: providers,
    ...NO_ENCODERS,
    render: promptRenderer(gecFamily, run),
    call: async (stage, provider, request) => {
      stages.push(`${stage}@${provider.id}`);
      return provider.complete(request);
    },
  };
  const solved = await gecFamily.solve(item, ctx);
  // The judge's verdict as these tests read it: the label, its reason and what decided it.
  const outcome = solved.ok
    ? {
        status: 'scored',
        prediction: (solved.output as { label: string }).label,
        ...(solved.output as object),
        details: solved.details,
      }
    : { status: 'failed', failure: solved.failure, raw: solved.raw, details: solved.details };
  return { outcome, stages, run };
}

const item = (input: Record<string, string>, gold = 'TP', id = 'i1'): Item => ({ id, row: 1, input, gold });
const EDIT = item({ src: 'He go home.', tgt: 'He goes home.', aligned: 'He {go=>goes} home.', lang: 'en' });

describe('single-prompt methods', () => {
  it('read a labelled answer line when the model ignores the JSON format, without a repair call', async () => {
    const provider = new ScriptedProvider(
      'openai:gpt-4o-mini',
      () => 'Label: **FP 2**\nReason: breaks agreement',
    );
    const { outcome, stages } = await judge({}, [provider], EDIT);
    expect(outcome).toMatchObject({ status: 'scored', prediction: 'FP2' });
    expect(stages).toEqual(['classify@openai:gpt-4o-mini']);
  });

  it('never guess a label from prose: that goes to the repair pass', async () => {
    const provider = new ScriptedProvider('openai:gpt-4o-mini', (_r, n) =>
      n === 1 ? 'This is not TP; I would say FP2.' : '{"label": "FP2", "reason": "agreement"}',
    );
    const { outcome, stages } = await judge({}, [provider], EDIT);
    expect(outcome).toMatchObject({ status: 'scored', prediction: 'FP2' });
    expect(stages).toEqual(['classify@openai:gpt-4o-mini', 'repair@openai:gpt-4o-mini']);
  });
});

describe('modular method', () => {
  const subJudges = (answers: { nonsense?: string; meaning?: string; quality?: string; pair?: string }) =>
    new ScriptedProvider(
      'openai:gpt-4o-mini',
      byPrompt([
        [NONSENSE, answers.nonsense ?? 'SCORE: 0\nREASON: fine'],
        [MEANING, answers.meaning ?? 'SEVERITY: 0\nREASONING: same'],
        [QUALITY, answers.quality ?? 'IMPROVEMENT: 2\nREASONING: fixes agreement'],
        [PAIR, answers.pair ?? 'SOURCE_CORRECT: no\nTARGET_CORRECT: yes\nREASON: agreement'],
      ]),
    );

  it('cascade: runs nonsense, meaning and quality, fuses, and keeps every sub-score', async () => {
    const provider = subJudges({});
    const { outcome, stages } = await judge(
      { method: 'modular', modular: { fusion: 'cascade' } },
      [provider],
      EDIT,
    );
    expect(outcome).toMatchObject({
      status: 'scored',
      prediction: 'TP',
      details: {
        fusion: 'cascade',
        scores: { nonsense: 0, meaning: 0, quality: 2 },
        rule: 'quality ≥ 1 → TP',
      },
    });
    expect(stages.sort()).toEqual(['meaning', 'nonsense', 'quality'].map((s) => `${s}@openai:gpt-4o-mini`));
  });

  it('tp_fp3: runs meaning, quality and pair correctness (no nonsense call)', async () => {
    const provider = subJudges({
      quality: 'IMPROVEMENT: 1',
      pair: '{"source_correct": true, "target_correct": true}',
    });
    const { outcome, stages } = await judge(
      { method: 'modular', modular: { fusion: 'tp_fp3' } },
      [provider],
      EDIT,
    );
    expect(outcome).toMatchObject({
      prediction: 'FP3',
      details: { scores: { sourceCorrect: true, targetCorrect: true } },
    });
    expect(stages.some((s) => s.startsWith('nonsense'))).toBe(false);
  });

  it('a chatty sub-judge answer is repaired once; a second bad one fails the item with the others kept', async () => {
    let qualityCalls = 0;
    const chatty = new ScriptedProvider(
      'openai:gpt-4o-mini',
      byPrompt([
        [NONSENSE, 'SCORE: 0'],
        [MEANING, 'SEVERITY: 1'],
        [QUALITY, () => (++qualityCalls === 1 ? 'It is better, I think.' : 'IMPROVEMENT: +3\nREASONING: ok')],
        [/could not be used/, 'IMPROVEMENT: +3\nREASONING: ok'],
      ]),
    );
    const repaired = await judge({ method: 'modular' }, [chatty], EDIT);
    expect(repaired.outcome).toMatchObject({ status: 'scored', prediction: 'TP' });
    expect(repaired.stages).toContain('quality.repair@openai:gpt-4o-mini');

    const hopeless = new ScriptedProvider(
      'openai:gpt-4o-mini',
      byPrompt([
        [/could not be used/, 'Still better.'],
        [QUALITY, 'Better.'],
        [NONSENSE, 'SCORE: 0'],
        [MEANING, 'SEVERITY: 1'],
      ]),
    );
    const failed = await judge({ method: 'modular' }, [hopeless], EDIT);
    expect(failed.outcome).toMatchObject({
      status: 'failed',
      failure: { kind: 'parse' },
      details: { scores: { nonsense: 0, meaning: 1 } },
    });
  });

  it('edit judge, no edit: answers TN or FN from pair correctness alone', async () => {
    const same = item({ src: 'All good here.', tgt: 'All good here.' }, 'TN');
    const tn = await judge(
      { judge: 'edit', method: 'modular' },
      [subJudges({ pair: 'SOURCE_CORRECT: yes\nTARGET_CORRECT: yes' })],
      same,
    );
    expect(tn.outcome).toMatchObject({ prediction: 'TN' });
    expect(tn.stages).toEqual(['pair@openai:gpt-4o-mini']);
    const fn = await judge(
      { judge: 'edit', method: 'modular' },
      [subJudges({ pair: 'SOURCE_CORRECT: no\nTARGET_CORRECT: no' })],
      same,
    );
    expect(fn.outcome).toMatchObject({ prediction: 'FN' });
  });
});

describe('agent method', () => {
  const toolAnswers: [RegExp, ScriptedAnswer][] = [
    [NONSENSE, 'SCORE: 0\nREASON: coherent'],
    [MEANING, 'SEVERITY: 0\nREASONING: same meaning'],
    [QUALITY, 'IMPROVEMENT: 2\nREASONING: fixes agreement'],
  ];
  const agent = (turns: string[]) => {
    let turn = 0;
    return new ScriptedProvider(
      'openai:gpt-4o-mini',
      byPrompt([...toolAnswers, [/GEC judge agent|Observation:|Error:/, () => turns[turn++] ?? 'Thinking…']]),
    );
  };

  it('calls tools, reads observations, and ends with the Final Answer', async () => {
    const provider = agent([
      'Thought: check meaning.\nAction: meaning_change("He go home.", "He goes home.")',
      'Action: reward_quality(original, suggested)',
      'Thought: enough.\nFinal Answer: TP - fixes subject-verb agreement',
    ]);
    const { outcome, stages } = await judge({ method: 'agent' }, [provider], EDIT);
    expect(outcome).toMatchObject({
      status: 'scored',
      prediction: 'TP',
      reason: 'fixes subject-verb agreement',
      details: { steps: 3, problems: 0 },
    });
    expect(stages.filter((s) => s.startsWith('agent@'))).toHaveLength(3);
    expect(stages).toContain('tool:meaning_change@openai:gpt-4o-mini');
    const observations = provider.requests
      .filter((r) => r.prompt.startsWith('Observation:'))
      .map((r) => r.prompt);
    expect(observations[0]).toMatch(/meaning=0 \(same meaning\)/);
    // `original, suggested` copied from the prompt mean the item's own text.
    const quality = provider.requests.find((r) => QUALITY.test(r.system ?? ''))!;
    expect(quality.prompt).toContain('He go home.');
    // The conversation so far travels with each turn.
    expect(provider.requests.at(-1)!.history).toHaveLength(4);
  });

  it('an unknown tool and a malformed turn become error observations, not crashes', async () => {
    const provider = agent([
      'Action: spell_checker(He goes home.)',
      'I think it is fine.',
      'Final Answer: TN - nothing to do',
      'Final Answer: **fp 3** - optional',
    ]);
    const { outcome } = await judge({ method: 'agent' }, [provider], EDIT);
    expect(outcome).toMatchObject({
      status: 'scored',
      prediction: 'FP3',
      details: { steps: 4, problems: 3 },
    });
    const observations = provider.requests
      .filter((r) => r.prompt.startsWith('Observation:'))
      .map((r) => r.prompt);
    expect(observations[0]).toMatch(/unknown tool spell_checker\. Available tools: nonsense_detector/);
    expect(observations[1]).toMatch(/Error: .*Action.*Final Answer/);
    expect(observations[2]).toMatch(/TN/); // feedback judge: TN is not an allowed label
  });

  it('comprehensive_analysis runs the three sub-judges and the grammar lookup in one observation', async () => {
    const provider = agent([
      'Action: comprehensive_analysis(original, suggested, English)',
      'Final Answer: TP - ok',
    ]);
    const { stages } = await judge({ method: 'agent' }, [provider], EDIT);
    const observation = provider.requests.find((r) => r.prompt.startsWith('Observation:'))!.prompt;
    expect(observation).toMatch(
      /nonsense: nonsense=0 \(coherent\)\nmeaning change: meaning=0[\s\S]*quality: quality=2[\s\S]*grammar rules:\n1\./,
    );
    expect(stages.filter((s) => s.startsWith('tool:comprehensive_analysis'))).toHaveLength(3);
  });

  it('grammar_rag retrieves from the corpus of the item language', async () => {
    const provider = agent([
      'Action: grammar_rag("Ich weiß, das du kommst.", German)',
      'Final Answer: TP - dass',
    ]);
    const german = item({ src: 'Ich weiß, das du kommst.', tgt: 'Ich weiß, dass du kommst.', lang: 'de' });
    await judge({ method: 'agent' }, [provider], german);
    const observation = provider.requests.find((r) => r.prompt.startsWith('Observation:'))!.prompt;
    expect(observation).toMatch(/dass/i);
    expect(observation).not.toMatch(/No grammar corpus/);
  });

  it('the step limit ends as a step_limit failure with the transcript, after one reminder', async () => {
    const provider = agent(Array.from({ length: 10 }, () => 'Action: nonsense_detector(He goes home.)'));
    const { outcome, stages } = await judge({ method: 'agent', agent: { maxSteps: 2 } }, [provider], EDIT);
    expect(outcome).toMatchObject({
      status: 'failed',
      failure: { kind: 'step_limit' },
      details: { steps: 3 },
    });
    expect(stages.filter((s) => s.startsWith('agent@'))).toHaveLength(3);
    expect(provider.requests.filter((r) => r.prompt.includes('You have used all 2 steps'))).toHaveLength(1);
    expect(outcome.status === 'failed' && outcome.raw).toMatch(/nonsense_detector/);
  });
});

describe('agent method through each vendor SDK (HTTP fake)', () => {
  let fake: VendorFake;
  beforeAll(async () => {
    fake = await startVendorFake(({ promptText, systemText }) => {
      if (MEANING.test(systemText)) return { text: 'SEVERITY: 0\nREASONING: same meaning' };
      if (promptText.includes('Observation:')) return { text: 'Final Answer: TP - fixes agreement' };
      return { text: 'Thought: check the meaning.\nAction: meaning_change(original, suggested)' };
    });
  });
  afterAll(() => fake.close());

  it.each([
    // OpenAI's instructions travel as a leading system message, the others' beside the turns.
    ['openai:gpt-4o-mini', (body: WireJson) => body.messages.filter((m: WireJson) => m.role !== 'system')],
    ['anthropic:claude-haiku-4-5', (body: WireJson) => body.messages],
    ['gemini:gemini-2.5-flash', (body: WireJson) => body.contents],
  ])('%s: the conversation travels as alternating turns', async (id, turns) => {
    fake.reset();
    const provider = createProvider(id, { env: fake.env, prices: EMBEDDED_PRICES });
    const { outcome } = await judge({ method: 'agent' }, [provider], EDIT);
    expect(outcome).toMatchObject({ status: 'scored', prediction: 'TP', details: { steps: 2, problems: 0 } });
    const last = fake.requests.at(-1)!;
    expect(last.promptText).toMatch(/Observation: meaning=0 \(same meaning\)/);
    expect(turns(last.body)).toHaveLength(3); // agent prompt, the model's action, the observation
    expect(last.systemText).toMatch(/GEC judge agent/);
  });
});

describe('escalation method', () => {
  const answering = (id: string, label: string) =>
    new ScriptedProvider(id, () => JSON.stringify({ label, reason: `${id} says ${label}` }));
  const NUMBER = item(
    { src: 'I have 2 cats.', tgt: 'I have two cats.', aligned: 'I have {2=>two} cats.' },
    'FP3',
  );

  it('accepts the small model when nothing is risky: one call', async () => {
    const small = answering('openai:gpt-4o-mini', 'TP');
    const { outcome, stages } = await judge(
      { method: 'escalation' },
      [small, answering('openai:gpt-4o', 'FP3')],
      EDIT,
    );
    expect(outcome).toMatchObject({
      prediction: 'TP',
      details: { escalated: false, flags: [], finalized: false },
    });
    expect(stages).toEqual(['small@openai:gpt-4o-mini']);
  });

  it('a risk flag escalates; an agreeing expert settles it without a finalizer', async () => {
    const backends = ['openai:gpt-4o-mini', 'openai:gpt-4o', 'openai:o3'].map((id) => answering(id, 'FP3'));
    const { outcome, stages } = await judge({ method: 'escalation' }, backends, NUMBER);
    expect(outcome).toMatchObject({
      prediction: 'FP3',
      details: { escalated: true, finalized: false, flags: ['number_change'] },
    });
    expect(stages).toEqual(['small@openai:gpt-4o-mini', 'expert@openai:gpt-4o']);
  });

  it('disagreement goes to the finalizer (the last backend), which sees both answers', async () => {
    const finalizer = answering('openai:o3', 'FP3');
    const backends = [answering('openai:gpt-4o-mini', 'FP2'), answering('openai:gpt-4o', 'TP'), finalizer];
    const { outcome, stages } = await judge({ method: 'escalation' }, backends, EDIT);
    expect(outcome).toMatchObject({
      prediction: 'FP3',
      details: {
        escalated: true,
        finalized: true,
        flags: ['low_trust_label'],
        path: [
          { stage: 'small', label: 'FP2' },
          { stage: 'expert', label: 'TP' },
          { stage: 'finalizer', label: 'FP3' },
        ],
      },
    });
    expect(stages).toEqual(['small@openai:gpt-4o-mini', 'expert@openai:gpt-4o', 'finalizer@openai:o3']);
    expect(finalizer.requests[0]!.prompt).toMatch(/openai:gpt-4o-mini: FP2[\s\S]*openai:gpt-4o: TP/);
  });

  it('with two backends the expert is also the finalizer', async () => {
    const expert = new ScriptedProvider('openai:gpt-4o', (r) =>
      JSON.stringify({ label: /<candidates_nonce>/.test(r.prompt) ? 'FP2' : 'TP', reason: 'x' }),
    );
    const { outcome, stages } = await judge(
      { method: 'escalation' },
      [answering('openai:gpt-4o-mini', 'FP1'), expert],
      EDIT,
    );
    expect(outcome).toMatchObject({ prediction: 'FP2', details: { finalized: true } });
    expect(stages).toEqual(['small@openai:gpt-4o-mini', 'expert@openai:gpt-4o', 'finalizer@openai:gpt-4o']);
  });

  it('a failed finalizer leaves the answer of the largest model that gave one', async () => {
    const broken = new ScriptedProvider('openai:o3', () => 'I cannot decide.');
    const backends = [answering('openai:gpt-4o-mini', 'FP2'), answering('openai:gpt-4o', 'TP'), broken];
    const { outcome } = await judge({ method: 'escalation' }, backends, EDIT);
    expect(outcome).toMatchObject({
      status: 'scored',
      prediction: 'TP',
      reason: expect.stringMatching(/finalizer failed: finalizer: unparseable answer/),
      details: {
        finalized: true,
        path: [{ label: 'FP2' }, { label: 'TP' }, { stage: 'finalizer', label: 'Error' }],
      },
    });
  });

  it('escalate labels and flags are configurable', async () => {
    const backends = [answering('openai:gpt-4o-mini', 'FP2'), answering('openai:gpt-4o', 'TP')];
    const { outcome, stages } = await judge(
      { method: 'escalation', escalation: { escalateLabels: ['FP1'], escalateFlags: [] } },
      backends,
      NUMBER,
    );
    expect(outcome).toMatchObject({ prediction: 'FP2', details: { escalated: false } });
    expect(stages).toHaveLength(1);
  });

  it('the optional LLM router decides routing in the same call', async () => {
    const small = new ScriptedProvider('openai:gpt-4o-mini', () =>
      JSON.stringify({ label: 'TP', reason: 'ok', escalate: true, risk: ['names'] }),
    );
    const { outcome, stages } = await judge(
      { method: 'escalation', escalation: { router: 'llm' } },
      [small, answering('openai:gpt-4o', 'TP')],
      EDIT,
    );
    expect(outcome).toMatchObject({
      prediction: 'TP',
      details: { router: 'llm', escalated: true, flags: ['names'] },
    });
    expect(small.requests[0]!.system).toMatch(/decide whether a larger model should check/);
    expect(stages).toEqual(['small@openai:gpt-4o-mini', 'expert@openai:gpt-4o']);
  });

  it('a failed small answer escalates (Error is a low-trust label) and the expert answers alone', async () => {
    const broken = new ScriptedProvider('openai:gpt-4o-mini', () => 'no idea');
    const { outcome } = await judge(
      { method: 'escalation' },
      [broken, answering('openai:gpt-4o', 'TP')],
      EDIT,
    );
    expect(outcome).toMatchObject({
      status: 'scored',
      prediction: 'TP',
      details: { path: [{ label: 'Error' }, { label: 'TP' }], finalized: false },
    });
  });
});

describe('weighted ensemble', () => {
  const voters = (labels: string[]) =>
    labels.map(
      (label, i) => new ScriptedProvider(`openai:m${i}`, () => JSON.stringify({ label, reason: label })),
    );

  it('the heaviest total wins; every vote is kept', async () => {
    const { outcome } = await judge(
      { method: 'ensemble', ensemble: { weights: [1, 1, 3] } },
      voters(['TP', 'TP', 'FP3']),
      EDIT,
    );
    expect(outcome).toMatchObject({
      prediction: 'FP3',
      details: { tally: { TP: 2, FP3: 3 }, unanimous: false },
    });
  });

  it('equal weights: majority; a tie goes to the earlier backend; failed votes do not count', async () => {
    expect((await judge({ method: 'ensemble' }, voters(['TP', 'FP2', 'FP2']), EDIT)).outcome).toMatchObject({
      prediction: 'FP2',
    });
    expect((await judge({ method: 'ensemble' }, voters(['FP3', 'TP']), EDIT)).outcome).toMatchObject({
      prediction: 'FP3',
    });
    const [a, b] = voters(['TP', 'FP2']);
    const broken = new ScriptedProvider('openai:broken', () => 'garbage');
    const { outcome } = await judge({ method: 'ensemble' }, [broken, b!, a!], EDIT);
    expect(outcome).toMatchObject({ prediction: 'FP2', details: { votes: [{ label: 'Error' }, {}, {}] } });
  });
});

describe('method metrics in the report', () => {
  const result = (
    gold: string,
    prediction: string,
    details: Record<string, unknown>,
    stages: Record<string, number>,
  ): ItemResult => ({
    schemaVersion: 2,
    runId: 'r',
    itemId: `${Math.random()}`,
    row: 1,
    status: 'scored',
    gold,
    scores: { label: { kind: 'label', value: prediction } },
    input: {},
    details,
    stages: Object.fromEntries(
      Object.entries(stages).map(([stage, costUsd]) => [
        stage,
        { calls: 1, cachedCalls: 0, costUsd, latencyMs: 1, usage: { input: 1, output: 1, cached: 0 } },
      ]),
    ),
    simulated: false,
    finishedAt: '',
  });

  it('escalation: rates, routes, flags, and the small model alone against the whole method', async () => {
    const path = (...labels: string[]) =>
      labels.map((label, i) => ({ stage: ['small', 'expert', 'finalizer'][i], backend: 'x', label }));
    const results = [
      result(
        'TP',
        'TP',
        { escalated: false, finalized: false, flags: [], path: path('TP') },
        { small: 0.001 },
      ),
      result(
        'FP1',
        'FP1',
        { escalated: true, finalized: false, flags: ['number_change'], path: path('FP2', 'FP1') },
        { small: 0.001, expert: 0.01 },
      ),
      result(
        'FP3',
        'FP3',
        { escalated: true, finalized: true, flags: ['low_trust_label'], path: path('FP1', 'TP', 'FP3') },
        { small: 0.001, expert: 0.01, finalizer: 0.05 },
      ),
      result(
        'TP',
        'TP',
        { escalated: false, finalized: false, flags: [], path: path('TP') },
        { small: 0.001 },
      ),
    ];
    const method = (
      await familySection(suite({ method: 'escalation', backends: ['sim:a', 'sim:b'] }), results)
    ).metrics!.method as Record<string, unknown>;
    expect(method).toMatchObject({
      escalationRate: 0.5,
      finalizerRate: 0.25,
      flags: { number_change: 1, low_trust_label: 1 },
      paths: { small: 2, 'small→expert': 1, 'small→expert→finalizer': 1 },
    });
    const [small, whole] = method.accuracyVsCost as { accuracy: number; costUsd: number }[];
    expect(small!.accuracy).toBe(0.5);
    expect(small!.costUsd).toBeCloseTo(0.004, 10);
    expect(whole!.accuracy).toBe(1);
    expect(whole!.costUsd).toBeCloseTo(0.074, 10);
  });

  it('modular: re-fuses the kept sub-scores with every rule set that has its inputs', async () => {
    const scores = { nonsense: 0, meaning: 1, quality: 0, sourceCorrect: true, targetCorrect: true };
    const results = [
      result('FP3', 'FP3', { fusion: 'cascade', scores }, { nonsense: 0.001 }),
      result(
        'TP',
        'TP',
        { fusion: 'cascade', scores: { ...scores, quality: 2, sourceCorrect: false } },
        { nonsense: 0.001 },
      ),
    ];
    const method = (await familySection(suite({ method: 'modular' }), results)).metrics!.method as {
      fusions: Record<string, { accuracy: number }>;
    };
    expect(method.fusions.cascade!.accuracy).toBe(1);
    expect(method.fusions.tp_fp3!.accuracy).toBe(1);
  });
  it('ensemble: each member alone (labels and vote costs) and the unanimous share', async () => {
    const votes = (a: string, b: string) => [
      { backend: 'sim:a', label: a, weight: 1 },
      { backend: 'sim:b', label: b, weight: 1 },
    ];
    const results = [
      result(
        'TP',
        'TP',
        { votes: votes('TP', 'TP'), unanimous: true },
        { 'vote:sim:a': 0.001, 'vote:sim:b': 0.002 },
      ),
      result(
        'FP1',
        'FP1',
        { votes: votes('FP2', 'FP1'), unanimous: false },
        { 'vote:sim:a': 0.001, 'vote:sim:b': 0.002 },
      ),
      result(
        'TN',
        'TN',
        { votes: votes('TN', 'FP3'), unanimous: false },
        { 'vote:sim:a': 0.001, 'vote:sim:b': 0.002 },
      ),
      // Without gold it counts for nothing.
      {
        ...result('TP', 'TP', { votes: votes('TP', 'TP'), unanimous: true }, { 'vote:sim:a': 1 }),
        gold: undefined,
      },
    ];
    const method = (await familySection(suite({ method: 'ensemble', backends: ['sim:a', 'sim:b'] }), results))
      .metrics!.method as { items: number; unanimousRate: number; accuracyVsCost: Record<string, unknown>[] };
    expect(method.items).toBe(3);
    expect(method.unanimousRate).toBe(1 / 3);
    expect(method.accuracyVsCost.map((p) => [p.policy, p.n, p.accuracy])).toEqual([
      ['sim:a', 3, 2 / 3],
      ['sim:b', 3, 2 / 3],
      ['ensemble', 3, 1],
    ]);
    expect(method.accuracyVsCost.map((p) => p.costUsd)).toEqual([
      0.001 + 0.001 + 0.001,
      0.002 + 0.002 + 0.002,
      0.003 + 0.003 + 0.003,
    ]);
  });

  it('agent: steps, tool calls by tool, bad turns and step-limit failures', async () => {
    const agent = (steps: number, tools: string[], problems?: number) => ({
      steps,
      tools,
      ...(problems === undefined ? {} : { problems }),
    });
    const stopped: ItemResult = {
      ...result('TP', 'TP', agent(8, ['lookup(x)']), { agent: 0.01 }),
      status: 'failed',
      scores: {},
      failure: { kind: 'step_limit', message: 'no final answer in 8 steps' },
    };
    const results = [
      result('TP', 'TP', agent(3, ['grammar_rag(en)', 'lookup(go)'], 1), { agent: 0.002 }),
      result('FP1', 'FP2', agent(2, ['grammar_rag(en)']), { agent: 0.001 }),
      stopped,
    ];
    const method = (await familySection(suite({ method: 'agent' }), results)).metrics!.method as Record<
      string,
      unknown
    >;
    expect(method).toMatchObject({
      items: 3,
      meanSteps: 13 / 3,
      toolCalls: { grammar_rag: 2, lookup: 2 },
      badTurns: 1,
      stepLimit: 1,
    });
    const [whole] = method.accuracyVsCost as { n: number; accuracy: number }[];
    // The failed item predicts Error: left out of accuracy (the AQUA convention).
    expect(whole).toMatchObject({ policy: 'agent', n: 2, accuracy: 0.5 });
  });
});
