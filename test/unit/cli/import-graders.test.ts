/**
 * The importers' mapping of each grader kind, on definitions built from OpenAI's published
 * grader examples (the sentiment label_model eval, the multi grader of name and email) and on a
 * record log in the form openai/evals' `oaieval` writes. The e2e tests run whole published files.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importEvalsRegistry } from '../../../cli/import/evals-registry.js';
import { importOpenAiEvals } from '../../../cli/import/openai-evals.js';
import { providerId } from '../../../cli/import/promptfoo.js';
import { REPO, tempDir } from '../../helpers.js';

/** The label_model criterion of OpenAI's "Sentiment" eval example, as published. */
const SENTIMENT = {
  type: 'label_model',
  model: 'o3-mini',
  input: [
    {
      role: 'developer',
      content:
        "Classify the sentiment of the following statement as one of 'positive', 'neutral', or 'negative'",
    },
    { role: 'user', content: 'Statement: {{item.input}}' },
  ],
  passing_labels: ['positive'],
  labels: ['positive', 'neutral', 'negative'],
  name: 'Example label grader',
};

/** The multi grader of OpenAI's grader guide: a fuzzy match of a JSON output's name, a string check of its email. */
const NAME_EMAIL = {
  type: 'multi',
  graders: {
    name: {
      name: 'name_grader',
      type: 'text_similarity',
      input: '{{sample.output_json.name}}',
      reference: '{{item.name}}',
      evaluation_metric: 'fuzzy_match',
      pass_threshold: 0.9,
    },
    email: {
      name: 'email_grader',
      type: 'string_check',
      input: '{{sample.output_json.email}}',
      reference: '{{item.email}}',
      operation: 'eq',
    },
  },
  calculate_output: '(name + email) / 2',
};

async function importCriteria(criteria: unknown[], items: unknown[]) {
  const dir = await tempDir();
  await writeFile(join(dir, 'eval.json'), JSON.stringify({ name: 'Graders', testing_criteria: criteria }));
  await writeFile(join(dir, 'items.jsonl'), items.map((i) => JSON.stringify(i)).join('\n'));
  return importOpenAiEvals({ eval: join(dir, 'eval.json'), items: join(dir, 'items.jsonl') });
}

describe('OpenAI Evals graders', () => {
  it('each kind as its check; python, meteor and a grader reading the output JSON refused with the reason', async () => {
    const plan = await importCriteria(
      [
        SENTIMENT,
        {
          type: 'string_check',
          name: 'not yes',
          input: '{{sample.output_text}}',
          reference: 'yes',
          operation: 'ne',
        },
        {
          type: 'string_check',
          name: 'mentions',
          input: '{{sample.output_text}}',
          reference: '{{item.topic}}',
          operation: 'ilike',
        },
        {
          type: 'text_similarity',
          name: 'bleu',
          input: '{{sample.output_text}}',
          reference: '{{item.ideal}}',
          evaluation_metric: 'bleu',
          pass_threshold: 0.3,
        },
        {
          type: 'text_similarity',
          name: 'meteor',
          input: '{{sample.output_text}}',
          reference: '{{item.ideal}}',
          evaluation_metric: 'meteor',
          pass_threshold: 0.3,
        },
        {
          type: 'score_model',
          name: 'score',
          model: 'gpt-4.1',
          input: [{ role: 'user', content: 'Rate {{sample.output_text}} for {{item.input}}' }],
          range: [1, 7],
          pass_threshold: 5,
        },
        { type: 'python', name: 'code', source: 'def grade(sample, item): return 1.0' },
        NAME_EMAIL,
      ],
      [
        {
          item: { input: 'I love it', topic: 'love', ideal: 'I love it' },
          sample: { output_text: 'love it' },
        },
      ],
    );
    const suite = plan.suites[0]!.suite as {
      checks: { checks: Record<string, unknown>[] };
      backends: string[];
    };
    expect(suite.checks.checks).toEqual([
      expect.objectContaining({
        type: 'model',
        name: 'Example_label_grader',
        labels: ['positive', 'neutral', 'negative'],
        passing: ['positive'],
        backend: 'openai:o3-mini',
      }),
      expect.objectContaining({ type: 'equals', name: 'not_yes', value: 'yes', not: true }),
      expect.objectContaining({ type: 'contains', name: 'mentions', values: ['{topic}'], ignoreCase: true }),
      expect.objectContaining({ type: 'similarity', metric: 'bleu', reference: '{ideal}', threshold: 0.3 }),
      expect.objectContaining({
        type: 'model',
        name: 'score',
        range: [1, 7],
        threshold: 5,
        backend: 'openai:gpt-4.1',
      }),
    ]);
    expect(suite.backends).toEqual(['openai:o3-mini', 'openai:gpt-4.1']);
    expect(plan.refused).toEqual([
      {
        what: 'grader "meteor" (text_similarity)',
        reason: expect.stringMatching(/^evaluation_metric meteor is not computed by Assay/),
      },
      { what: 'grader "code" (python)', reason: expect.stringMatching(/runs code Assay does not run/) },
      {
        what: expect.stringMatching(/^grader "multi 8" \(multi\)/),
        reason: expect.stringMatching(/sample\.output_json\.name.*only the output text/),
      },
    ]);
    // The grader's messages, each data placeholder in its own tag section.
    expect(plan.files['prompts/Example_label_grader.md']).toBe(
      "developer:\nClassify the sentiment of the following statement as one of 'positive', 'neutral', or 'negative'\n\nuser:\nStatement: <input>{input}</input>\n",
    );
  });

  it('a multi grader of the output text becomes a formula check of its graders', async () => {
    const plan = await importCriteria(
      [
        {
          ...NAME_EMAIL,
          name: 'both',
          graders: {
            name: { ...NAME_EMAIL.graders.name, input: '{{sample.output_text}}' },
            email: { ...NAME_EMAIL.graders.email, input: '{{sample.output_text}}' },
          },
          pass_threshold: 0.5,
        },
      ],
      [{ item: { name: 'Ada Lovelace', email: 'ada@example.com' }, sample: { output_text: 'Ada Lovelace' } }],
    );
    const [check] = (plan.suites[0]!.suite as { checks: { checks: Record<string, unknown>[] } }).checks
      .checks;
    expect(check).toMatchObject({
      type: 'formula',
      formula: '(name + email) / 2',
      threshold: 0.5,
      checks: {
        name: { type: 'similarity', metric: 'fuzzy_match', threshold: 0.9 },
        email: { type: 'equals', value: '{email}' },
      },
    });
  });
});

describe('openai/evals record logs', () => {
  it("a run's sampling and match events give each sample its output and grade, by the sample id's index", async () => {
    const dir = await tempDir();
    const log = join(dir, 'log.jsonl');
    const events = [
      {
        run_id: 'r',
        event_id: 0,
        sample_id: 'test-match.s1.simple-v0.0',
        type: 'sampling',
        data: { prompt: [], sampled: ['time'] },
      },
      {
        run_id: 'r',
        event_id: 1,
        sample_id: 'test-match.s1.simple-v0.0',
        type: 'match',
        data: { correct: true, expected: ['time'], picked: 'time', sampled: 'time' },
      },
      {
        run_id: 'r',
        event_id: 2,
        sample_id: 'test-match.s1.simple-v0.2',
        type: 'match',
        data: { correct: false, expected: ['15'], picked: null, sampled: '2015' },
      },
    ];
    await writeFile(log, `${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
    const plan = await importEvalsRegistry(
      join(REPO, 'test/fixtures/import/openai-evals-registry/registry/evals/test-basic.yaml'),
      {
        outputItems: log,
      },
    );
    const rows = plan.files['data/test-match.jsonl']!.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => [r.output, r.grade])).toEqual([
      ['time', 'pass'],
      ['', ''],
      ['2015', 'fail'],
    ]);
    const suite = plan.suites.find((s) => s.file === 'test-match.suite.json')!.suite as {
      dataset: { columns: { output: string } };
      checks: { checks: { gold?: string }[] };
    };
    expect(suite.dataset.columns.output).toBe('output');
    expect(suite.checks.checks[0]!.gold).toBe('grade');
  });
});

describe('promptfoo provider ids', () => {
  it("as Assay's: the API kind dropped, Vertex as Gemini", () => {
    expect(providerId('openai:chat:gpt-4o')).toBe('openai:gpt-4o');
    expect(providerId('anthropic:messages:claude-3-5-sonnet-latest')).toBe(
      'anthropic:claude-3-5-sonnet-latest',
    );
    expect(providerId('vertex:gemini-2.0-flash')).toBe('gemini:gemini-2.0-flash');
    expect(providerId('openai:gpt-4.1-mini')).toBe('openai:gpt-4.1-mini');
  });
});
